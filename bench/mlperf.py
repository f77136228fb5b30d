"""The MLPerf Tiny models from their .tflite files, int8 and float, on every board.

For each model and board: flash split into code (everything but the weights: runtime,
dispatch code, start-up, harness, compiler helpers, the module's schedule) and weights
(the module's constants); RAM split into arena, I/O buffers and stack; instructions per
inference under QEMU (exact, repeatable) and the cycles and milliseconds estimated from
them at the board's clock (docs/cycles.md); and a check of the outputs against the .npz
beside the model (int8: TFLite Micro's outputs, exactly; float: TFLite's, within
numpy.isclose(rtol=1e-4, atol=1e-5)). A model a board cannot hold is recorded as such,
with the memory it overflows.

TFLite Micro + CMSIS-NN's figures for the int8 models on the same QEMU mps2-an386
Cortex-M4 (bench/tflm_cmsis_nn.json, with their source) stand beside minirt's.

Writes bench/results/mlperf.json and mlperf.md.

Usage: python bench/mlperf.py [--boards B,B] [--models M,M]
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
from toolchain.link.build import LinkError  # noqa: E402
from toolchain.module import read_module  # noqa: E402
from toolchain.pipeline import build_model, decode_outputs, encode_inputs  # noqa: E402
from toolchain.report.size import size_report  # noqa: E402
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE  # noqa: E402
from toolchain.target import list_boards  # noqa: E402

MLPERF = ROOT.parent / "shared" / "models" / "mlperf_tiny"
INT8 = ["kws_ref_model", "ad01_int8", "pretrainedResnet_quant", "vww_96_int8"]
FLOAT = ["kws_ref_model_float32", "ad01_fp32", "pretrainedResnet", "vww_96_float"]
PEER = json.loads((ROOT / "bench" / "tflm_cmsis_nn.json").read_text())


def bench_one(name: str, board: str, work: Path, optimize: str = DEFAULT_OPTIMIZE) -> dict:
    """The row of model `name` on `board` built under --optimize `optimize`
    (bench/optimize.py compares the modes)."""
    row: dict = {"model": name, "kind": "int8" if name in INT8 else "float", "board": board}
    try:
        build = build_model(MLPERF / f"{name}.tflite", board,
                            work / f"{name}-{board}-{optimize}", log=lambda _: None,
                            optimize=optimize)
    except LinkError as e:  # the board cannot hold it: the message names the memory
        row.update(check="does not fit", note=str(e).split(": ", 1)[-1])
        return row
    size = size_report(build)
    module = read_module(build.module)
    data = np.load(MLPERF / f"{name}.npz")
    ok, instructions, estimate = True, None, None
    for key in sorted(k for k in data if k.startswith("input_")):
        run = run_image(build.board, build.elf, encode_inputs(module.inputs, [data[key]]))
        if run.exit_code != 0 or run.outputs is None:
            ok = False
            break
        got = decode_outputs(module.outputs, run.outputs)[0]
        want = data[key.replace("input", "output")]
        ok &= (np.array_equal(got, want) if row["kind"] == "int8"
               else bool(np.isclose(got, want, rtol=1e-4, atol=1e-5).all()))
        instructions, estimate = run.instructions, run.cycles
    weights = size.flash["constants"]
    # The stack an image reserves is sized from its depth measured under QEMU (plus a
    # margin) on bare-metal boards; Linux boards keep the board's stack_size.
    row.update(code_bytes=size.flash_total - weights, weights_bytes=weights,
               arena_bytes=size.ram["arena"], io_bytes=size.ram["io"],
               stack_bytes=size.ram["stack"],
               stack_measured=build.stack.measured if build.stack else None,
               ram_bytes=size.ram["arena"] + size.ram["io"] + size.ram["stack"],
               instructions=instructions,
               est_cycles=estimate.cycles if estimate else None,
               est_ms=round(estimate.ms, 3) if estimate else None,
               check="ok" if ok else "MISMATCH",
               optimize=build.program.optimize.to_json())
    return row


def _table(rows: list[dict]) -> list[str]:
    cols = ["model", "kind", "board", "code_bytes", "weights_bytes", "arena_bytes",
            "io_bytes", "stack_bytes", "stack_measured", "ram_bytes", "instructions",
            "est_cycles", "est_ms", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"{r[c]:,}" if isinstance(r.get(c), int) and c not in ("model", "board")
                 else "" if r.get(c) is None else str(r[c]) for c in cols]
        if "instructions" in r and r.get("est_cycles") is None and "est_cycles" in r:
            cells[cols.index("est_cycles")] = cells[cols.index("est_ms")] = "n/a"
        if r["check"] == "does not fit":
            cells[-1] = f"does not fit ({r['note']})"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _peer(rows: list[dict]) -> list[str]:
    lines = ["| model | instructions: minirt | TFLite Micro + CMSIS-NN | code excl. weights: "
             "minirt | TFLM | arena: minirt | TFLM | stack: minirt | TFLM | "
             "RAM (arena + I/O + stack): minirt | TFLM (arena + stack) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, peer in PEER["models"].items():
        r = next((r for r in rows if r["model"] == name and r["board"] == "cortex-m4"), None)
        if r is None or "instructions" not in r or "ram_bytes" not in r:
            continue
        lines.append(f"| {name} | {r['instructions']:,} | {peer['instructions']:,} | "
                     f"{r['code_bytes']:,} | {peer['code_bytes']:,} | {r['arena_bytes']:,} | "
                     f"{peer['arena_bytes']:,} | {r['stack_bytes']:,} | "
                     f"{peer['stack_bytes']:,} | {r['ram_bytes']:,} | "
                     f"{peer['arena_bytes'] + peer['stack_bytes']:,} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(list_boards()))
    ap.add_argument("--models", default=",".join(INT8 + FLOAT))
    ap.add_argument("--update", action="store_true",
                    help="replace only the measured (model, board) rows in the existing "
                         "bench/results/mlperf.json and keep the others")
    args = ap.parse_args()
    if not MLPERF.is_dir():
        print(f"bench/mlperf.py: {MLPERF} is absent", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-mlperf-") as tmp:
        for name in args.models.split(","):
            for board in args.boards.split(","):
                row = bench_one(name, board, Path(tmp))
                rows.append(row)
                print(f"{name:24} {board:14} {row['check']:12} insns "
                      f"{row.get('instructions') or '-':>12} arena {row.get('arena_bytes', '-')}",
                      file=sys.stderr, flush=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    if args.update and (out / "mlperf.json").is_file():
        new = {(r["model"], r["board"]): r for r in rows}
        old = json.loads((out / "mlperf.json").read_text())
        rows = [new.pop((r["model"], r["board"]), r) for r in old] + list(new.values())
    (out / "mlperf.json").write_text(json.dumps(rows, indent=2) + "\n")
    text = ["# MLPerf Tiny models from .tflite (`python bench/mlperf.py`)", "",
            "Flash: code = everything but the weights; RAM: arena, I/O buffers, stack "
            "(reserved: on bare-metal boards the depth measured under QEMU, stack_measured, "
            "plus a margin; Linux boards keep the board's stack_size) and their sum, "
            "ram_bytes. Instructions: one inference under QEMU. est_cycles / est_ms: the "
            "cycles estimated from those instructions with the core's manual timings, and "
            "milliseconds at the board's clock_hz (docs/cycles.md: an estimate; n/a on "
            "hosted boards and cores without a timing table; empty in rows measured before "
            "the column). Check: int8 "
            "exactly TFLite Micro's outputs, float within isclose(1e-4, 1e-5) of TFLite's. "
            "Rows without stack_measured / ram_bytes predate those columns (re-run with "
            "`--update` for given models and boards).",
            "", *_table(rows), "", "## Against TFLite Micro + CMSIS-NN on cortex-m4", "",
            f"Their figures: {PEER['source']}", "", *_peer(rows), ""]
    (out / "mlperf.md").write_text("\n".join(text))
    return 0 if all(r["check"] in ("ok", "does not fit") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
