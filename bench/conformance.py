"""`make conformance`: ONNX's backend node tests and the StableHLO interpreter's tests
through minirt (toolchain/testing/conformance/), on the numpy reference and, for a
deterministic sample of the passes, built and run on cortex-m4 and x86-64 under QEMU
(the StableHLO tests with their top-level constants lifted to inputs, so that the
firmware computes rather than copies a folded result).

Writes bench/results/conformance.{json,md}: per suite and per op, pass / refused (the
one-line reason) / wrong / crash, the exclusions with their reasons, and the sample's
results per board. Exits 1 when any case is wrong or crashed, on the reference or a
board. Without ../shared the StableHLO suite is skipped (said on stderr).

    python bench/conformance.py                   # everything (make conformance)
    python bench/conformance.py --onnx-every 10 --stablehlo-every 1 --boards cortex-m4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.testing.conformance import onnx_suite, stablehlo_suite  # noqa: E402
from toolchain.testing.conformance.boards import BOARDS, run_on_board  # noqa: E402
from toolchain.testing.conformance.report import totals, write  # noqa: E402
from toolchain.testing.conformance.run import run_onnx, run_stablehlo, sample  # noqa: E402

SHARED = ROOT.parent / "shared"
RESULTS = ROOT / "bench" / "results"


def _every(n: int) -> str:
    return "every reference pass" if n == 1 else f"every {n}th reference pass by name"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx-every", type=int, default=8,
                    help="build every Nth ONNX reference pass (by name) on the boards")
    ap.add_argument("--stablehlo-every", type=int, default=1,
                    help="build every Nth StableHLO reference pass on the boards")
    ap.add_argument("--boards", nargs="*", default=list(BOARDS))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    t0 = time.time()
    reference, lifted_sample = {}, []
    onnx = run_onnx(onnx_suite.collect())
    reference["onnx"] = onnx
    print(f"onnx: {totals([r for r, _ in onnx])} ({time.time() - t0:.0f} s)", flush=True)
    root = stablehlo_suite.suite_dir(SHARED)
    lifted_totals = None
    if root.is_dir():
        tests = stablehlo_suite.collect(root)
        reference["stablehlo"] = run_stablehlo(tests, lift=False)
        lifted = run_stablehlo(tests, lift=True)
        lifted_totals = totals([r for r, _ in lifted])
        lifted_sample = sample(lifted, args.stablehlo_every)
        print(f"stablehlo: {totals([r for r, _ in reference['stablehlo']])}; "
              f"constants lifted: {lifted_totals}", flush=True)
    else:
        print(f"conformance: {root} is absent: the StableHLO suite is skipped",
              file=sys.stderr)
    board_results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        for board in args.boards:
            per = {"onnx": run_on_board(sample(onnx, args.onnx_every), board, Path(tmp))}
            if lifted_sample:
                per["stablehlo"] = run_on_board(lifted_sample, board, Path(tmp))
            board_results[board] = per
            print(f"{board}: " + "; ".join(f"{s}: {totals(rs)}" for s, rs in per.items()),
                  flush=True)
    settings = {"onnx sample": _every(args.onnx_every),
                "stablehlo sample": f"{_every(args.stablehlo_every)}, top-level constants "
                                    "lifted to inputs",
                "stablehlo reference with constants lifted":
                    f"{lifted_totals['pass']} pass" if lifted_totals else "skipped"}
    write(args.out, {s: [r for r, _ in rs] for s, rs in reference.items()},
          board_results, settings)
    failed = [r for rs in reference.values() for r, _ in rs if r.status in ("wrong", "crash")]
    failed += [r for per in board_results.values() for rs in per.values() for r in rs
               if r.status in ("wrong", "crash")]
    print(f"conformance: {len(failed)} wrong or crashed; {args.out / 'conformance.md'} "
          f"({time.time() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
