"""TFLite_Detection_PostProcess on firmware (issue 19): fast and regular NMS over crowded
boxes at a few sizes, each model built for one board, run once under QEMU and compared
exactly with TFLite Micro's kernel (tests/detection_models.py builds the models).

Records per model: instructions of one inference, the arena and the flash total.
Writes bench/results/detection_postprocess.{json,md}; exits 1 if any output differs
from TFLite Micro's.

    python bench/detection_postprocess.py [--board cortex-m4]
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
sys.path.insert(0, str(ROOT / "tests"))

from detection_models import Case, difference, models  # noqa: E402
from tflite_models import run_tflm  # noqa: E402

from toolchain.emu.run import run_image  # noqa: E402
from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402
from toolchain.module import read_module  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs  # noqa: E402
from toolchain.report.size import size_report  # noqa: E402
from toolchain.target import load_board  # noqa: E402

RESULTS = ROOT / "bench" / "results"

# (name, case): crowded boxes, so the suppression has work to do.
CASES = [
    ("fast, 100 boxes, 4 classes", Case(boxes=100, classes=4, crowded=True, seed=1)),
    ("fast, 300 boxes, 10 classes", Case(boxes=300, classes=10, crowded=True, seed=3)),
    ("fast, 1000 boxes, 10 classes", Case(boxes=1000, classes=10, crowded=True, seed=5)),
    ("regular, 100 boxes, 4 classes", Case(boxes=100, classes=4, crowded=True, regular=True,
                                           seed=2)),
    ("regular, 300 boxes, 10 classes", Case(boxes=300, classes=10, crowded=True, regular=True,
                                            seed=3)),
    ("int8 fast, 300 boxes, 10 classes", Case(boxes=300, classes=10, crowded=True,
                                              dtype="int8", seed=4)),
]


def run_case(name: str, case: Case, board: str, work: Path) -> dict:
    """One model on `board`: exactness against TFLite Micro and its figures."""
    ours, theirs, inputs = models(case)
    result = compile_graph(import_model(read_model(ours)), load_board(board), work,
                           log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, inputs))
    got = [np.asarray(g) for g in decode_outputs(module.outputs, run.outputs)]
    want, _ = run_tflm(theirs, inputs)
    problem = difference(case, want, got) if run.exit_code == 0 else run.diagnosis
    report = size_report(result)
    return {"model": name, "boxes": case.boxes, "classes": case.classes,
            "mode": "regular" if case.regular else "fast", "inputs": case.dtype,
            "max_detections": case.max_detections, "detections": int(want[3][0]),
            "exact": problem is None, "problem": problem,
            "instructions": run.instructions, "arena": report.ram.get("arena", 0),
            "flash_total": report.flash_total}


def markdown(board: str, rows: list[dict]) -> str:
    lines = [f"# TFLite_Detection_PostProcess on {board}", "",
             f"Written by `python bench/detection_postprocess.py --board {board}`: each model "
             "built alone, one inference under QEMU, outputs compared exactly with TFLite "
             "Micro's kernel (int8 inputs: TFLite Micro runs DEQUANTIZE, then the float "
             "operator). Crowded boxes, score threshold 0.3, IoU threshold 0.5, 10 "
             "detections.", "",
             "| model | detections | exact | instructions | arena (B) | flash (B) |",
             "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['detections']} | {r['exact']} | "
                     f"{r['instructions']:,} | {r['arena']:,} | {r['flash_total']:,} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="cortex-m4")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, case) in enumerate(CASES):
            rows.append(run_case(name, case, args.board, Path(tmp) / f"m{k}"))
            r = rows[-1]
            print(f"{name}: exact {r['exact']}, {r['instructions']:,} instructions, "
                  f"arena {r['arena']:,} B" + (f" ({r['problem']})" if r["problem"] else ""))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "detection_postprocess" + ("" if args.board == "cortex-m4" else f"-{args.board}")
    (RESULTS / f"{stem}.json").write_text(json.dumps({"board": args.board, "models": rows},
                                                     indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown(args.board, rows))
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
