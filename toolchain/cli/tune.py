"""minirt-tune: measure candidate schedules of a model's layers under QEMU and keep the
best per (layer shape, target) in a tuning database that minirt-build reads.

    minirt-tune MODEL --board BOARD [--db PATH] [--candidates N] [-j N | --ray ADDRESS]

Where the rules' cost model ranks tiles close, or a rule of thumb sends a layer to one
of several kernels (im2col, few-output, depthwise row pairs or 5x5 pairs, the tile
search), the tuner measures: the model is built once with the rules' schedules, then
once per candidate (a tile, or another kernel family with the tiles under it) of each
distinct layer with that candidate forced, each firmware run once under QEMU (the
count is exact) and its outputs checked bit-exact against the reference. A layer whose
best candidate retires fewer instructions than the rules' pick gets an entry in --db
(default $MINIRT_TUNING_DB, else minirt-tuning.json); a wrong candidate is reported and never
stored. Builds read the database with --tuning-db PATH or $MINIRT_TUNING_DB
(toolchain/tunedb/database.py). The candidates run on -j local processes, or as Ray
tasks on the cluster at --ray ADDRESS (`--ray local` starts one here; needs
`pip install minirt[tune]`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from toolchain.cli.common import EXIT_MISMATCH, EXIT_OK, ArgumentParser, positive_int, run_tool
from toolchain.loader import UsageError
from toolchain.tune.candidates import DEFAULT_COUNT
from toolchain.tunedb.database import ENV, NONE

DEFAULT_DB = "minirt-tuning.json"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="minirt-tune", description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the model (.tflite, .onnx, .mlir)")
    p.add_argument("--board", required=True, help="the board whose target is tuned (its "
                   "QEMU machine runs the candidates)")
    p.add_argument("--db", metavar="PATH",
                   help=f"the tuning database to add the results to (created if missing). "
                        f"Default: ${ENV}, else {DEFAULT_DB}")
    p.add_argument("--candidates", type=positive_int, default=DEFAULT_COUNT, metavar="N",
                   help="candidates measured per layer besides the rules' pick, the "
                        f"cheapest by the rules' cost model. Default: {DEFAULT_COUNT}")
    p.add_argument("-j", "--jobs", type=positive_int, metavar="N",
                   help="local processes measuring at once. Default: the cores available")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the measurements as tasks of the Ray cluster at ADDRESS "
                        "('auto', 'HOST:PORT', 'ray://HOST:PORT'; 'local': start one here "
                        "with -j CPUs); needs pip install 'minirt[tune]'")
    p.add_argument("--quantize", choices=("none", "fp16", "int8-weights", "int8"),
                   help="as minirt-build --quantize")
    p.add_argument("--seed", type=int, default=0,
                   help="the seeded random inputs the candidates are checked on (default 0)")
    p.add_argument("--dry-run", action="store_true",
                   help="measure and report, but write no database")
    return p


def _pool(args: argparse.Namespace):
    if args.ray:
        from toolchain.tune.ray_pool import RayPool, RayUnavailable

        try:
            return RayPool(args.ray, args.jobs)
        except RayUnavailable as e:
            raise UsageError(str(e)) from None
    from toolchain.tune.pool import LocalPool

    return LocalPool(args.jobs)


def _main(argv: list[str] | None) -> int:
    from toolchain.tune.tuner import TuneError, merge_into, tune

    args = _parser().parse_args(argv)
    model = Path(args.model)
    if not model.is_file():
        raise UsageError(f"{model}: no such model file")
    db = Path(args.db or os.environ.get(ENV) or DEFAULT_DB)
    if str(db) == NONE:
        raise UsageError(f"--db {NONE}: the tuner writes a database; give it a file "
                         "(--dry-run writes none)")
    pool = _pool(args)
    try:
        options = {"quantize": args.quantize} if args.quantize else {}
        try:
            result = tune(model, args.board, pool, count=args.candidates, seed=args.seed,
                          options=options)
        except TuneError as e:
            raise UsageError(str(e)) from None
    finally:
        close = getattr(pool, "close", None)
        if close is not None:
            close()
    rejected = sum(len(layer.rejected) for layer in result.layers)
    improved = [layer for layer in result.layers if layer.best]
    saved = sum(layer.rule_instructions - layer.best[1] for layer in improved)
    print(f"minirt-tune: {len(improved)} of {len(result.layers)} layer(s) improved "
          f"({saved:,} instructions fewer in all, of {result.baseline:,}); {rejected} "
          f"candidate(s) rejected")
    if not args.dry_run:
        written, total = merge_into(db, result)  # a bad file: DatabaseError, exit 2
        print(f"minirt-tune: wrote {written} entr{'y' if written == 1 else 'ies'} to {db} "
              f"({total} in all); minirt-build --tuning-db {db} uses them")
    # A candidate that computes other outputs than the reference is a code generation
    # bug: it is never stored, and the command says so by its exit status.
    wrong = [m for layer in result.layers for _, m in layer.rejected if m.status == "mismatch"]
    for m in wrong:
        print(f"minirt-tune: WRONG OUTPUTS with {m.label}: {m.message}", file=sys.stderr)
    return EXIT_MISMATCH if wrong else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """The minirt-tune console script."""
    return run_tool("minirt-tune", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
