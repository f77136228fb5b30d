"""TFLite Micro's 16x8 integration tests (../shared/models/tflm/integration_tests/seanet)
as firmware for each board: every model built on its own and run under QEMU, its output
compared exactly with TFLite Micro's golden CSV, and its instructions per inference.

Writes bench/results/tflm_int16.{json,md}.

    python bench/tflm_int16.py [--boards cortex-m4,x86-64]
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


def run_case(case, boards: list, work: Path) -> dict:
    """The case on the reference and as firmware for each board: exact or not, and the
    instructions of one inference per board."""
    graph = load_tflite(case.model)
    inputs = case.inputs(graph)
    want = case.golden()
    row = {"op": case.op, "model": case.name,
           "reference_exact": bool(np.array_equal(run_graph(graph, inputs)[0].reshape(-1), want)),
           "boards": {}}
    for board in boards:
        result = compile_graph(load_tflite(case.model), board, work / board.identifier,
                               log=lambda _: None)
        module = read_module(result.module)
        run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs))
        got = decode_outputs(module.outputs, run.outputs)[0] if run.exit_code == 0 else None
        row["boards"][board.identifier] = {
            "firmware_exact": got is not None and bool(np.array_equal(got.reshape(-1), want)),
            "instructions": run.instructions}
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="cortex-m4,x86-64",
                        help="comma-separated boards (the first one's instructions are "
                        "tabulated; the JSON has every board's)")
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
    boards = [load_board(name) for name in args.boards.split(",") if name]
    names = [b.identifier for b in boards]
    rows = []
    with tempfile.TemporaryDirectory(prefix="tflm_int16_") as tmp:
        for case in seanet_cases():
            rows.append(run_case(case, boards, Path(tmp) / case.name))
            print(f"{case.name}: reference {rows[-1]['reference_exact']}, " + ", ".join(
                f"{n} {r['firmware_exact']} ({r['instructions']} instructions)"
                for n, r in rows[-1]["boards"].items()), file=sys.stderr)
    RESULTS.mkdir(parents=True, exist_ok=True)

    def exact(mine: list[dict], board: str) -> int:
        return sum(r["boards"][board]["firmware_exact"] for r in mine)

    summary = {"boards": names, "models": len(models), "imported": imported,
               "checkable": len(rows),
               "reference_exact": sum(r["reference_exact"] for r in rows),
               "firmware_exact": {n: exact(rows, n) for n in names}, "cases": rows}
    (RESULTS / "tflm_int16.json").write_text(json.dumps(summary, indent=2) + "\n")
    first = names[0]
    lines = [f"# TFLite Micro's 16x8 integration tests on {', '.join(names)} "
             f"(`python bench/tflm_int16.py --boards {','.join(names)}`)", "",
             f"{imported} of {len(models)} seanet models import; {len(rows)} have their input "
             "and golden as int16 CSVs in ../shared (the two QUANTIZE models' int32 side was "
             "not copied). Exact: equal to TFLite Micro's golden output in every element. "
             f"Instructions of one inference on {first} (every board's in the JSON).", "",
             "| operator | models | reference exact | "
             + " | ".join(f"{n} exact" for n in names)
             + f" | {first} instructions min | median | max |",
             "|---|---:|---:|" + "---:|" * len(names) + "---:|---:|---:|"]
    for op in sorted({r["op"] for r in rows}):
        mine = [r for r in rows if r["op"] == op]
        counts = [r["boards"][first]["instructions"] for r in mine
                  if r["boards"][first]["instructions"] is not None]
        stats = ([f"{min(counts):,}", f"{int(statistics.median(counts)):,}",
                  f"{max(counts):,}"] if counts else ["-"] * 3)
        lines.append(f"| {op.upper()} | {len(mine)} | {sum(r['reference_exact'] for r in mine)}"
                     " | " + " | ".join(str(exact(mine, n)) for n in names) + " | "
                     + " | ".join(stats) + " |")
    lines.append(f"| all | {len(rows)} | {summary['reference_exact']} | "
                 + " | ".join(str(exact(rows, n)) for n in names) + " | | | |")
    (RESULTS / "tflm_int16.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(v == len(rows) for v in summary["firmware_exact"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
