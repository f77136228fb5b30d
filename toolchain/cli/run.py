"""`minirt-run`: run a model and print its outputs (on the host reference for now)."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from toolchain.cli.common import EXIT_OK, run_tool
from toolchain.loader import UsageError, load_graph, load_inputs, random_inputs, save_outputs
from toolchain.reference import run_graph


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minirt-run",
        description="Run a model and print its outputs.",
        epilog="npz keys: input_0, input_1, ... in argument order; output_0, ... in result "
               "order (the same as ../shared/models/jax/*.npz).")
    p.add_argument("model", help="the model file (.mlir)")
    p.add_argument("--reference", action="store_true",
                   help="run the numpy reference executor on the host")
    p.add_argument("--entry", default="main", help="function to run (default: main)")
    p.add_argument("--inputs", metavar="IN.npz",
                   help="inputs as input_0, input_1, ... (default: seeded random data)")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs (default: 0)")
    p.add_argument("--save-outputs", metavar="OUT.npz", help="write output_0, ... to this file")
    return p


def format_outputs(outputs: list[np.ndarray]) -> str:
    lines = []
    with np.printoptions(precision=6, suppress=False, threshold=64, linewidth=100):
        for i, o in enumerate(outputs):
            lines.append(f"output_{i}: {o.dtype} {list(o.shape)}")
            lines.append(str(o))
    return "\n".join(lines)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if not args.reference:
        raise UsageError("pass --reference to run on the host reference executor")
    graph = load_graph(args.model, args.entry)
    inputs = load_inputs(args.inputs, graph) if args.inputs else random_inputs(graph, args.seed)
    outputs = run_graph(graph, inputs)
    print(format_outputs(outputs))
    if args.save_outputs:
        save_outputs(args.save_outputs, outputs)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_tool("minirt-run", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
