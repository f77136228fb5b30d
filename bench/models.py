"""Builds and runs seed.mlir and every JAX model on every board; records flash bytes,
RAM bytes, retired instructions per inference and compile seconds.

Writes bench/results/models.json and bench/results/models.md (a table), so a change
can be compared with the last run (`git diff bench/results`). Instruction counts come
from QEMU (exact and repeatable); sizes from the ELF.

Usage: python bench/models.py [--boards B,B] [--models M,M]
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
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
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


def bench_one(path: Path, board_name: str, work: Path) -> dict:
    board = load_board(board_name)
    start = time.perf_counter()
    graph = load_graph(path)
    inputs = inputs_for(path, graph)
    want = run_graph(graph, inputs)
    build = compile_graph(graph, board, work / f"{path.stem}-{board_name}", log=lambda _: None)
    compile_s = time.perf_counter() - start
    run = run_image(board, build.elf, inputs)
    ok = run.exit_code == 0 and run.outputs is not None
    if ok:
        got = decode_outputs(module_outputs(build.module), run.outputs)
        ok = all(np.isclose(g, w, rtol=1e-5, atol=1e-6).all() for g, w in zip(got, want))
    return {"model": path.stem, "board": board_name, "flash_bytes": build.link.flash_used,
            "ram_bytes": build.link.ram_used + board.stack_size,
            "module_bytes": len(build.module), "arena_bytes": build.program.arena_size,
            "dispatches": len(build.program.steps), "instructions": run.instructions,
            "compile_seconds": round(compile_s, 2), "check": "ok" if ok else "MISMATCH"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default="")
    args = ap.parse_args()
    chosen = models()
    if args.models:
        chosen = {k: v for k, v in chosen.items() if k in args.models.split(",")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-bench-") as tmp:
        for name, path in chosen.items():
            for board in args.boards.split(","):
                row = bench_one(path, board, Path(tmp))
                rows.append(row)
                print(f"{name:12} {board:10} flash {row['flash_bytes']:>8} ram "
                      f"{row['ram_bytes']:>8} insns {row['instructions']:>11} "
                      f"compile {row['compile_seconds']:>5.2f}s {row['check']}", flush=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "models.json").write_text(json.dumps(rows, indent=2) + "\n")
    cols = ["model", "board", "flash_bytes", "ram_bytes", "module_bytes", "instructions",
            "compile_seconds", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (out / "models.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["check"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
