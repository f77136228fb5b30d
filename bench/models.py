"""Builds and runs seed.mlir and every JAX model on every board, in f32 and with each
--quantize mode; records flash bytes (total and constants), RAM bytes, retired
instructions per inference, compile seconds and (quantized) accuracy against f32.

Writes bench/results/models.json and bench/results/models.md (a table), so a change
can be compared with the last run (`git diff bench/results`). Instruction counts come
from QEMU (exact and repeatable); sizes from the ELF.

Usage: python bench/models.py [--boards B,B] [--models M,M] [--quantize none,fp16,...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.emu.run import run_image  # noqa: E402
from toolchain.loader import load_graph, random_inputs  # noqa: E402
from toolchain.passes import QuantizeOptions  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.report.accuracy import compare_outputs  # noqa: E402
from toolchain.report.size import size_report  # noqa: E402
from toolchain.target import load_board  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"
BOARDS = ["x86-64", "aarch64", "riscv32", "cortex-m4"]


def models() -> dict[str, Path]:
    found = {"seed": ROOT / "examples" / "seed.mlir"}
    for p in sorted((SHARED / "jax").glob("*.mlir")):
        found[p.stem] = p
    return found


def inputs_for(path: Path, graph) -> list[np.ndarray]:
    npz = path.with_suffix(".npz")
    if npz.exists():
        data = np.load(npz)
        return [data[f"input_{i}"] for i in range(len(graph.inputs))]
    return random_inputs(graph, seed=0)


def bench_one(path: Path, board_name: str, work: Path, mode: str) -> dict:
    board = load_board(board_name)
    start = time.perf_counter()
    graph = load_graph(path)
    inputs = inputs_for(path, graph)
    float_out = run_graph(load_graph(path), inputs)
    build = compile_graph(graph, board, work / f"{path.stem}-{board_name}-{mode}",
                          log=lambda _: None, quantize=QuantizeOptions(mode))
    compile_s = time.perf_counter() - start
    want = run_graph(build.graph, inputs)  # the quantized graph the firmware computes
    size = size_report(build)
    run = run_image(board, build.elf, inputs)
    ok = run.exit_code == 0 and run.outputs is not None
    if ok:
        got = decode_outputs(module_outputs(build.module), run.outputs)
        ok = all(np.isclose(g, w, rtol=1e-5, atol=1e-6).all() for g, w in zip(got, want))
    acc = compare_outputs(want, float_out)
    return {"model": path.stem, "board": board_name, "quantize": mode,
            "flash_bytes": size.flash_total, "constants_bytes": size.flash["constants"],
            "ram_bytes": size.ram_total, "module_bytes": len(build.module),
            "arena_bytes": build.program.arena_size, "dispatches": len(build.program.steps),
            "instructions": run.instructions, "compile_seconds": round(compile_s, 2),
            "cosine_vs_f32": round(acc.cosine_similarity, 7),
            "top1_vs_f32": acc.top1_agreement, "check": "ok" if ok else "MISMATCH"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default="")
    ap.add_argument("--quantize", default="none,fp16,int8-weights")
    args = ap.parse_args()
    chosen = models()
    if args.models:
        chosen = {k: v for k, v in chosen.items() if k in args.models.split(",")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-bench-") as tmp:
        for name, path in chosen.items():
            for mode in args.quantize.split(","):
                for board in args.boards.split(","):
                    row = bench_one(path, board, Path(tmp), mode)
                    rows.append(row)
                    print(f"{name:12} {mode:12} {board:10} flash {row['flash_bytes']:>8} "
                          f"const {row['constants_bytes']:>8} ram {row['ram_bytes']:>7} "
                          f"insns {row['instructions']:>11} compile "
                          f"{row['compile_seconds']:>5.2f}s cos {row['cosine_vs_f32']:.6f} "
                          f"{row['check']}", flush=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "models.json").write_text(json.dumps(rows, indent=2) + "\n")
    cols = ["model", "quantize", "board", "flash_bytes", "constants_bytes", "ram_bytes",
            "instructions", "compile_seconds", "cosine_vs_f32", "top1_vs_f32", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (out / "models.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["check"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
