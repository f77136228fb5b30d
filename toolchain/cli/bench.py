"""`minirt-bench`: a model's inference timed natively on this host, in one process,
like iree-benchmark-module (median and minimum in microseconds)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolchain.bench.native import (
    build_native_bench,
    check_native,
    run_native_bench,
    summary,
)
from toolchain.cli.build import (
    add_input_shape_option,
    add_optimize_option,
    add_quantize_options,
    load_model_graph,
    quantize_options,
)
from toolchain.cli.common import (
    EXIT_MISMATCH,
    EXIT_OK,
    ArgumentParser,
    non_negative_int,
    run_tool,
)
from toolchain.loader import UsageError, random_inputs
from toolchain.module.reader import read_module
from toolchain.passes.quantize import check_not_quantized
from toolchain.target import DescriptorError, list_boards, load_board


def _positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="minirt-bench",
        description="Link a model into a native benchmark program for a Linux-process board "
                    "and time its inference on this host: the median and the minimum per "
                    "inference in microseconds, over --repeat samples in one process.",
        epilog="Boards whose code this host cannot run (microcontrollers, another "
               "architecture, a CPU level this CPU lacks) are refused. Exit codes: 0 ok, "
               "1 the benchmark program failed, 2 bad model/option/board.")
    p.add_argument("model", help="the model file (.mlir, .tflite or .onnx)")
    p.add_argument("--board", required=True,
                   help="a Linux-process board this host runs natively "
                        f"({', '.join(b for b in list_boards() if b.startswith('x86-64'))} "
                        "on x86-64)")
    p.add_argument("--entry", default="main", help="MLIR function to run (default: main)")
    p.add_argument("--repeat", type=_positive_int, default=100, metavar="N",
                   help="timed samples, >= 1 (default: 100)")
    p.add_argument("--batch", type=_positive_int, metavar="K",
                   help="inferences per timed sample (default: enough for 50 us, so the "
                        "clock reads stay below 1%% of a sample)")
    p.add_argument("--warmup", type=non_negative_int, default=3, metavar="W",
                   help="untimed inferences first (default: 3)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of the random inputs (default: 0)")
    p.add_argument("-o", "--build-dir", metavar="DIR",
                   help="where the program is built (default: build/<model>-<board>-bench): new, "
                        "empty or an earlier build")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    add_input_shape_option(p)
    add_quantize_options(p)
    add_optimize_option(p)
    return p


def _main(argv: list[str] | None) -> int:
    from toolchain import pipeline

    args = _parser().parse_args(argv)
    try:
        board = load_board(args.board)
    except DescriptorError as e:
        raise UsageError(str(e)) from None
    check_native(board)  # before any build: a refused board costs nothing
    graph = load_model_graph(args)
    quantize = quantize_options(args)
    check_not_quantized(graph, quantize, args.model)
    out_dir = (Path(args.build_dir) if args.build_dir else
               Path("build") / f"{Path(args.model).stem}-{board.identifier}-bench")
    pipeline.check_out_dir(out_dir, args.model)
    bench = build_native_bench(graph, board, out_dir, quantize,
                               log=lambda m: print(m, file=sys.stderr),
                               optimize=args.optimize)
    # Inputs of the graph the program computes (prepared by the build), as minirt-run
    # draws them.
    inputs = pipeline.encode_inputs(
        read_module((bench.out_dir / "model.mrt").read_bytes()).inputs,
        random_inputs(graph, args.seed))
    try:
        result = run_native_bench(bench, inputs, args.repeat, args.batch, args.warmup)
    except RuntimeError as e:
        print(f"minirt-bench: error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    if args.json:
        print(json.dumps({
            "model": str(args.model), "board": board.identifier, "repeat": args.repeat,
            "batch": result.batch, "median_us": result.median_us, "min_us": result.min_us,
            "cpu_median_us": result.cpu_median_us,
            "compile_seconds": bench.compile_seconds, "image_bytes": bench.image_bytes,
            "program": str(bench.elf)}, indent=2))
        return EXIT_OK
    print(f"minirt-bench: {args.model} on {board.identifier}: {args.repeat} samples of "
          f"{result.batch} inference{'s' if result.batch > 1 else ''}")
    print(summary(result, [f"program: {bench.elf} ({bench.image_bytes:,} B image, "
                           f"built in {bench.compile_seconds:.2f} s)"]))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_tool("minirt-bench", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
