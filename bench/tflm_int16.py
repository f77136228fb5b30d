"""TFLite Micro's 16x8 integration tests (../shared/models/tflm/integration_tests/seanet)
on cortex-m4 firmware: every model built on its own and run under QEMU, its output
compared exactly with TFLite Micro's golden CSV, and its instructions per inference.

Writes bench/results/tflm_int16.{json,md}.

    python bench/tflm_int16.py [--board cortex-m4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.emu.run import run_image  # noqa: E402
from toolchain.frontend.tflite.errors import TFLiteError  # noqa: E402
from toolchain.frontend.tflite.importer import load_tflite  # noqa: E402
from toolchain.module import read_module  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.target import load_board  # noqa: E402
from toolchain.testing.tflm_seanet import SEANET, seanet_cases  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def run_case(case, board, work: Path) -> dict:
    graph = load_tflite(case.model)
    inputs = case.inputs(graph)
    want = case.golden()
    row = {"op": case.op, "model": case.name,
           "reference_exact": bool(np.array_equal(run_graph(graph, inputs)[0].reshape(-1), want))}
    result = compile_graph(load_tflite(case.model), board, work, log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs))
    got = decode_outputs(module.outputs, run.outputs)[0] if run.exit_code == 0 else None
    row["firmware_exact"] = got is not None and bool(np.array_equal(got.reshape(-1), want))
    row["instructions"] = run.instructions
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="cortex-m4")
    args = parser.parse_args(argv)
    if not SEANET.is_dir():
        print(f"tflm_int16: {SEANET} is absent", file=sys.stderr)
        return 2
    models = sorted(SEANET.glob("*/*.tflite"))
    imported = 0
    for path in models:
        try:
            load_tflite(path)
            imported += 1
        except TFLiteError as e:
            print(e, file=sys.stderr)
    board = load_board(args.board)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tflm_int16_") as tmp:
        for case in seanet_cases():
            rows.append(run_case(case, board, Path(tmp) / case.name))
            print(f"{case.name}: reference {rows[-1]['reference_exact']}, firmware "
                  f"{rows[-1]['firmware_exact']}, {rows[-1]['instructions']} instructions",
                  file=sys.stderr)
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = {"board": args.board, "models": len(models), "imported": imported,
               "checkable": len(rows),
               "reference_exact": sum(r["reference_exact"] for r in rows),
               "firmware_exact": sum(r["firmware_exact"] for r in rows), "cases": rows}
    (RESULTS / "tflm_int16.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [f"# TFLite Micro's 16x8 integration tests on {args.board} "
             "(`python bench/tflm_int16.py`)", "",
             f"{imported} of {len(models)} seanet models import; {len(rows)} have their input "
             "and golden as int16 CSVs in ../shared (the two QUANTIZE models' int32 side was "
             "not copied). Exact: equal to TFLite Micro's golden output in every element.", "",
             "| operator | models | reference exact | firmware exact | instructions min | "
             "median | max |", "|---|---:|---:|---:|---:|---:|---:|"]
    for op in sorted({r["op"] for r in rows}):
        mine = [r for r in rows if r["op"] == op]
        counts = [r["instructions"] for r in mine if r["instructions"] is not None]
        stats = ([f"{min(counts):,}", f"{int(statistics.median(counts)):,}",
                  f"{max(counts):,}"] if counts else ["-"] * 3)
        lines.append(f"| {op.upper()} | {len(mine)} | {sum(r['reference_exact'] for r in mine)}"
                     f" | {sum(r['firmware_exact'] for r in mine)} | " + " | ".join(stats) + " |")
    lines.append(f"| all | {len(rows)} | {summary['reference_exact']} | "
                 f"{summary['firmware_exact']} | | | |")
    (RESULTS / "tflm_int16.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if summary["firmware_exact"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
