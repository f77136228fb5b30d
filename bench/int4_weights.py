"""`--quantize int4-weights` against f32 and int8-weights on the shared JAX models.

For each model and board (cortex-m4, riscv32) and each of none / int8-weights /
int4-weights: builds the firmware, runs it under QEMU on the model's .npz input and
compares with the reference of the same (quantized) graph, as `minirt-run --check`
does (floats within isclose(rtol=1e-5, atol=1e-6)); records the module's bytes, the
flash the constants take, the whole flash, and the retired instructions of one
inference. Accuracy against the float model (cosine similarity, max relative error,
top-1 agreement) is the host reference's on the .npz input and 16 seeded random inputs
(loader.random_inputs seeds 0..15), all outputs of all inputs together; the firmware
computes the same values within the check's tolerance.

Writes bench/results/int4_weights.json and bench/results/int4_weights.md.

Usage: python bench/int4_weights.py [--boards B,B] [--models M,M]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.emu.run import run_image  # noqa: E402
from toolchain.loader import load_graph, random_inputs  # noqa: E402
from toolchain.passes import QuantizeOptions, fold_constants, quantize_weights  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.report.accuracy import compare_outputs  # noqa: E402
from toolchain.report.size import size_report  # noqa: E402
from toolchain.target import load_board  # noqa: E402

JAX = ROOT.parent / "shared" / "models" / "jax"
MODELS = ["mlp", "cnn", "dscnn_kws", "resnet8", "autoencoder"]
BOARDS = ["cortex-m4", "riscv32"]
MODES = ["none", "int8-weights", "int4-weights"]
SEEDS = range(16)


def accuracy(path: Path) -> dict[str, dict]:
    """Per quantization mode, its accuracy against the float model on the .npz input and
    the seeded random inputs (host reference)."""
    graph = load_graph(path)
    npz = np.load(path.with_suffix(".npz"))
    samples = [[npz[f"input_{i}"] for i in range(len(graph.inputs))]]
    samples += [random_inputs(graph, seed=s) for s in SEEDS]
    want = [o for x in samples for o in run_graph(graph, x)]
    out = {}
    for mode in MODES[1:]:
        q = quantize_weights(fold_constants(load_graph(path)), QuantizeOptions(mode))
        got = [o for x in samples for o in run_graph(q, x)]
        out[mode] = compare_outputs(got, want).to_json()
    return out


def build_and_run(path: Path, board_name: str, mode: str, work: Path) -> dict:
    """One build under QEMU: sizes, instructions and the check against its reference."""
    board = load_board(board_name)
    graph = load_graph(path)
    npz = np.load(path.with_suffix(".npz"))
    inputs = [npz[f"input_{i}"] for i in range(len(graph.inputs))]
    build = compile_graph(graph, board, work / f"{path.stem}-{board_name}-{mode}",
                          log=lambda _: None, quantize=QuantizeOptions(mode))
    want = run_graph(build.graph, inputs)  # the graph the firmware computes
    size = size_report(build)
    run = run_image(board, build.elf, inputs)
    ok = run.exit_code == 0 and run.outputs is not None
    if ok:
        got = decode_outputs(module_outputs(build.module), run.outputs)
        ok = all(np.isclose(g, w, rtol=1e-5, atol=1e-6).all() for g, w in zip(got, want))
    return {"model": path.stem, "board": board_name, "quantize": mode,
            "module_bytes": len(build.module), "constants_bytes": size.flash["constants"],
            "flash_bytes": size.flash_total, "instructions": run.instructions,
            "check": "ok" if ok else "MISMATCH"}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else ""


def table(rows: list[dict]) -> list[str]:
    """The markdown rows: each build with its sizes against f32 and int8-weights."""
    base = {(r["model"], r["board"], r["quantize"]): r for r in rows}
    cols = ["model", "board", "quantize", "module B", "constants B", "module / f32",
            "module / int8-w", "flash B", "instructions", "vs int8-w", "cosine vs f32",
            "max rel err", "top-1", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        f32 = base[(r["model"], r["board"], "none")]
        i8 = base.get((r["model"], r["board"], "int8-weights"), f32)
        acc = r.get("accuracy", {})
        extra = (f"{100 * (r['instructions'] / i8['instructions'] - 1):+.1f} %"
                 if r["quantize"] == "int4-weights" else "")
        lines.append("| " + " | ".join(str(v) for v in [
            r["model"], r["board"], r["quantize"], f"{r['module_bytes']:,}",
            f"{r['constants_bytes']:,}", _ratio(r["module_bytes"], f32["module_bytes"]),
            _ratio(r["module_bytes"], i8["module_bytes"]), f"{r['flash_bytes']:,}",
            f"{r['instructions']:,}", extra,
            f"{acc['cosine_similarity']:.6f}" if acc else "1",
            f"{acc['max_rel_error']:.4f}" if acc else "0",
            f"{acc['top1_agreement']:.0%}" if acc else "100%", r["check"]]) + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    if not JAX.is_dir():
        print(f"int4_weights: the shared JAX models are not at {JAX}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-int4-") as tmp:
        for name in args.models.split(","):
            path = JAX / f"{name}.mlir"
            acc = accuracy(path)
            for board in args.boards.split(","):
                for mode in MODES:
                    row = build_and_run(path, board, mode, Path(tmp))
                    if mode in acc:
                        row["accuracy"] = acc[mode]
                    rows.append(row)
                    print(f"{name:12} {board:10} {mode:13} module {row['module_bytes']:>9} "
                          f"insns {row['instructions']:>10} "
                          f"cos {acc.get(mode, {}).get('cosine_similarity', 1.0):.6f} "
                          f"{row['check']}", flush=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "int4_weights.json").write_text(json.dumps(rows, indent=2) + "\n")
    head = [
        "# `--quantize int4-weights` on the shared JAX models (`python bench/int4_weights.py`)",
        "",
        "int4-weights: symmetric per-output-channel int4 (-7..7, f32 scales), two weights "
        "to a byte in the module, unpacked where the kernels load them "
        "(docs/quantization.md). Module: the .mrt's bytes (weights, scales, biases, "
        "schedule); constants: the flash the constant pool takes; instructions: one "
        "inference under QEMU, and the change against int8-weights on the same board. "
        "Accuracy against the float model: the host reference on the .npz input and 16 "
        "seeded random inputs, all outputs together (the same for every board). Check: "
        "the firmware's outputs on the .npz input against the reference of the same "
        "quantized graph, isclose(rtol=1e-5, atol=1e-6) as `minirt-run --check`.",
        "",
    ]
    (out / "int4_weights.md").write_text("\n".join(head + table(rows)) + "\n")
    return 0 if all(r["check"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
