"""TFLite Micro's own models (../shared/models/tflm; the seanet layers are
bench/tflm_int16.py's) against TFLite Micro's interpreter: for every model, seeded random
inputs through the `tflite-micro` interpreter, minirt's numpy reference and minirt's
firmware under QEMU on each board, compared (integers exactly, floats like
numpy.isclose(rtol=1e-5, atol=1e-6)), with the instructions of one inference.

Writes bench/results/tflm_models.{json,md}.

    python bench/tflm_models.py [--boards cortex-m4,x86-64] [--sample-board riscv32]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.testing.tflm_models import (  # noqa: E402
    TFLM_MODELS,
    ModelCheck,
    check_model,
    tflm_model_paths,
)

RESULTS = ROOT / "bench" / "results"
# The sample run on the sample board: the models up to person_detect's size (the 224x224
# MobileNet takes minutes per board under QEMU's instruction counting).
SAMPLE_MAX_BYTES = 512 * 1024


def _board_cell(check: ModelCheck, board: str) -> str:
    run = next((b for b in check.boards if b.board == board), None)
    if run is None:
        return "-"
    if run.status == "exact":
        return f"exact, {run.instructions:,}" if run.instructions is not None else "exact"
    return f"{run.status}: {run.detail}"


def write_report(checks: list[ModelCheck], boards: list[str], seconds: float,
                 seed: int) -> None:
    """bench/results/tflm_models.{json,md}."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    counts = {s: sum(c.status == s for c in checks)
              for s in ("exact", "exact where it fits", "differs", "refused", "tflm-fails")}
    runs = sum(c.tflm == "runs" for c in checks)
    summary = {"boards": boards, "models": len(checks), "tflm_runs": runs, **counts,
               "seed": seed, "seconds": round(seconds), "checks": [asdict(c) for c in checks]}
    (RESULTS / "tflm_models.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = ["# TFLite Micro's models against its interpreter (`python bench/tflm_models.py`)",
             "",
             f"{len(checks)} models in ../shared/models/tflm besides the seanet layers; TFLite "
             f"Micro's interpreter runs {runs}. minirt: {counts['exact']} exact (reference "
             f"and every board equal to TFLite Micro on seeded random inputs), "
             f"{counts['exact where it fits']} exact on the boards they fit, "
             f"{counts['differs']} differ, {counts['refused']} refused. Cells: exact and the "
             "instructions of one inference, or why not.", "",
             "Boards: cortex-m4 is QEMU's MPS2 AN386 with 4 MB of flash and 4 MB of RAM, "
             "which the 224x224 MobileNet v2 (3.5 MB of weights) fits; x86-64 runs under "
             "QEMU user mode; the sample board runs the models up to "
             f"{SAMPLE_MAX_BYTES // 1024} KB (MobileNet takes minutes per board under "
             f"instruction counting). Seed {seed}; {round(seconds)} s in all.", "",
             "| model | TFLite Micro | minirt | reference | " + " | ".join(boards) + " |",
             "|---|---|---|---|" + "---|" * len(boards)]
    for c in checks:
        minirt = c.status if c.status != "refused" else f"refused: {c.detail}"
        tflm = "runs" if c.tflm == "runs" else f"fails ({c.tflm})"
        lines.append(f"| {c.model} | {tflm} | {minirt} | {c.reference or '-'} | " +
                     " | ".join(_board_cell(c, b) for b in boards) + " |")
    (RESULTS / "tflm_models.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="cortex-m4,x86-64",
                        help="boards every imported model runs on")
    parser.add_argument("--sample-board", default="riscv32",
                        help=f"a board the models under {SAMPLE_MAX_BYTES // 1024} KB run on")
    parser.add_argument("--only", default="", help="models whose path contains this")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not TFLM_MODELS.is_dir():
        print(f"tflm_models: {TFLM_MODELS} is absent", file=sys.stderr)
        return 2
    boards = [b for b in args.boards.split(",") if b]
    every = [*boards, args.sample_board] if args.sample_board else boards
    start = time.monotonic()
    checks = []
    with tempfile.TemporaryDirectory(prefix="tflm_models_") as tmp:
        for k, path in enumerate(tflm_model_paths()):
            if args.only not in str(path):
                continue
            small = path.stat().st_size <= SAMPLE_MAX_BYTES
            t0 = time.monotonic()
            check = check_model(path, every if small else boards, Path(tmp) / str(k),
                                seed=args.seed)
            checks.append(check)
            print(f"{check.model}: {check.status} ({time.monotonic() - t0:.0f} s) "
                  + "; ".join(f"{b.board} {b.status} {b.instructions}" for b in check.boards),
                  file=sys.stderr)
    write_report(checks, every, time.monotonic() - start, args.seed)
    return 0 if not any(c.status == "differs" for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
