"""`minirt-build`: compile a model. For now it prints the model's IR (`--dump-ir`)."""

from __future__ import annotations

import argparse
import sys

from toolchain.cli.common import EXIT_OK, run_tool
from toolchain.graph.printer import print_graph
from toolchain.loader import UsageError, load_graph
from toolchain.mlir import parse_file
from toolchain.mlir.printer import print_generic


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minirt-build",
        description="Compile a model (MLIR: StableHLO / generic op form) for a board.")
    p.add_argument("model", help="the model file (.mlir)")
    p.add_argument("--entry", default="main", help="function to compile (default: main)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dump-ir", action="store_true",
                      help="print the verified graph IR and stop")
    mode.add_argument("--dump-generic", action="store_true",
                      help="print the parsed MLIR in generic op form and stop")
    return p


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.dump_generic:
        sys.stdout.write(print_generic(parse_file(args.model)))
        return EXIT_OK
    if not args.dump_ir:
        raise UsageError("nothing to do: pass --dump-ir or --dump-generic")
    sys.stdout.write(print_graph(load_graph(args.model, args.entry)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_tool("minirt-build", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
