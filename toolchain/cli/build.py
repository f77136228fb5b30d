"""`minirt-build`: compile a model into firmware for a board (or print its IR)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from toolchain.cli import IS_COMMAND
from toolchain.cli.common import (
    EXIT_MISMATCH,
    EXIT_OK,
    ArgumentParser,
    exit_now,
    non_negative_int,
    positive_int,
    run_tool,
)
from toolchain.graph.custom_ops import CustomOp, CustomOpError, custom_ops_by_code
from toolchain.graph.ir import Graph
from toolchain.graph.printer import print_graph
from toolchain.library.command import add_library_options, emit_library, library_options
from toolchain.link.custom_ops import custom_ops_digest
from toolchain.link.device import DEFAULT_HARNESS, HARNESSES, check_harness
from toolchain.loader import (
    UsageError,
    check_host_memory,
    load_graph,
    load_inputs,
    parse_input_value,
    random_inputs,
)
from toolchain.mlir import parse_file
from toolchain.mlir.printer import print_generic
from toolchain.module.format import BOOT_CHECKS, DEFAULT_BOOT_CHECK
from toolchain.passes.calibrate import calibration_sha256, load_calibration
from toolchain.passes.quantize import (
    DEFAULT_MIN_ELEMENTS,
    MODES,
    QuantizeOptions,
    check_not_quantized,
)
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE, OPTIMIZE_MODES
from toolchain.target import DescriptorError, list_boards, load_board
from toolchain.timings import Timings, cpu_seconds, process_start_seconds, recording, stage
from toolchain.tunedb.database import ENV, Session, build_session, tuning_stamp


def add_quantize_options(p: argparse.ArgumentParser) -> None:
    """--quantize, --quantize-min-elements, --calibration and --int8-io, shared by
    minirt-build and minirt-run."""
    p.add_argument("--quantize", choices=MODES, default="none",
                   help="store float weights as IEEE half (fp16), as int8 with symmetric "
                        "per-output-channel scales (int8-weights) or as int4 (int4-weights: "
                        "-7..7, two to a byte in flash, unpacked in the kernels), widened "
                        "inside the kernels so RAM does not grow; or compute the whole model "
                        "in int8 (int8: activations asymmetric per tensor with ranges from "
                        "--calibration, weights symmetric per output channel, int32 biases, "
                        "TFLite's integer arithmetic). A model already quantized (an int8 "
                        ".tflite) is refused: build it without --quantize (default: none)")
    p.add_argument("--quantize-min-elements", type=non_negative_int,
                   default=DEFAULT_MIN_ELEMENTS,
                   metavar="N",
                   help="fp16 / int8-weights / int4-weights: constants with fewer elements "
                        "stay f32, and so do per-channel vectors (biases, normalization) of "
                        "any size "
                        f"(default: {DEFAULT_MIN_ELEMENTS})")
    p.add_argument("--calibration", metavar="CALIB.npz",
                   help="--quantize int8 (required there): samples of the model's inputs to "
                        "calibrate activation ranges on, as input_0, input_1, ... each with a "
                        "leading axis of samples: shape (S, *input shape)")
    p.add_argument("--int8-io", action="store_true",
                   help="--quantize int8: the model's inputs and outputs are int8 too (their "
                        "scales and zero points are printed and recorded in size.json); "
                        "without it they stay f32, quantized at the entry and dequantized at "
                        "the exit")


def add_input_shape_option(p: argparse.ArgumentParser) -> None:
    """--input-shape NAME=1x3x32x32 and --input-value NAME=VALUE (each repeatable):
    minirt-build, minirt-run, minirt-bench."""
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=SHAPE",
                   help="an .onnx model's input NAME gets this static shape (e.g. "
                        "input=1x3x32x32), pinning dynamic dimensions such as a batch 'N'; "
                        "repeat it for several inputs")
    p.add_argument("--input-value", action="append", default=[], metavar="NAME=VALUE",
                   help="input NAME becomes a constant of this value, so what depends on "
                        "it folds at build time, and is no input of the firmware any more: "
                        "VALUE is a number (sr=16000), a comma list (axes=0,2) or an .npy "
                        "file; an MLIR function's arguments are input_0, input_1, ...; "
                        "repeat it for several inputs")


def add_custom_op_option(p: argparse.ArgumentParser) -> None:
    """--custom-op CODE=KERNEL.c[:FN],REFERENCE.py[:FN] (repeatable): minirt-build and
    minirt-run."""
    p.add_argument("--custom-op", action="append", default=[],
                   metavar="CODE=KERNEL.c[:C_FN],REFERENCE.py[:PY_FN]",
                   help="an operator of your own: a .tflite custom operator CODE runs the C "
                        "function C_FN of KERNEL.c in the firmware (compiled with the "
                        "runtime's flags; its ABI: runtime_c/include/mrt_custom_op.h) and, "
                        "for --check, the Python function PY_FN(inputs, options, quant) of "
                        "REFERENCE.py; each function defaults to CODE in snake case "
                        "(SoftsignGain: softsign_gain). Repeat it for several operators "
                        "(docs/custom-ops.md)")


def custom_ops(args: argparse.Namespace) -> dict[str, CustomOp]:
    """The --custom-op options by code; UsageError for a bad one."""
    try:
        return custom_ops_by_code(getattr(args, "custom_op", []))
    except CustomOpError as e:
        raise UsageError(str(e)) from None


def input_values(args: argparse.Namespace) -> dict[str, np.ndarray]:
    """The --input-value options as input name -> value; UsageError for a bad one."""
    values: dict[str, np.ndarray] = {}
    for text in args.input_value:
        name, value = parse_input_value(text)
        if name in values:
            raise UsageError(f"--input-value gives input '{name}' twice")
        values[name] = value
    return values


def load_model_graph(args: argparse.Namespace) -> Graph:
    """The model of the arguments loaded (load_graph) with their --entry, --input-shape
    and --input-value."""
    return load_graph(args.model, args.entry, input_shapes(args), input_values(args),
                      custom_ops(args))


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The --input-shape options as input name -> shape; UsageError for a bad one."""
    if not args.input_shape:  # the usual case: no need to import the ONNX frontend
        return {}
    from toolchain.frontend.onnx.reader import parse_shape

    shapes: dict[str, tuple[int, ...]] = {}
    for text in args.input_shape:
        name, sep, shape = text.rpartition("=")
        if not sep or not name:
            raise UsageError(f"--input-shape {text}: expected NAME=SHAPE, e.g. "
                             "input=1x3x32x32")
        if name in shapes:
            raise UsageError(f"--input-shape gives input '{name}' twice")
        try:
            shapes[name] = parse_shape(shape)
        except ValueError as e:
            raise UsageError(f"--input-shape {text}: {e}") from None
    return shapes


def add_optimize_option(p: argparse.ArgumentParser) -> None:
    """--optimize auto|speed|size (schedule/optimize.py's OPTIMIZE_MODES), shared by
    minirt-build, minirt-run and minirt-bench."""
    p.add_argument("--optimize", choices=tuple(OPTIMIZE_MODES), default=DEFAULT_OPTIMIZE,
                   help="what the build trades flash for: " + "; ".join(
                       f"'{name}': {mode.means}" for name, mode in OPTIMIZE_MODES.items())
                   + f". The size report states the choice. Default: {DEFAULT_OPTIMIZE}")


def add_tuning_option(p: argparse.ArgumentParser) -> None:
    """--tuning-db PATH, shared by minirt-build and minirt-run (tunedb/database.py)."""
    p.add_argument("--tuning-db", metavar="PATH",
                   help="a tuning database written by minirt-tune: its layers' measured "
                        "schedules are taken over the rules' (and over the shipped "
                        "defaults' entries of the same layers); 'none': the rules alone. "
                        f"Default: ${ENV}, else the shipped defaults only")


def add_runtime_options(p: argparse.ArgumentParser) -> None:
    """--max-cycles N and --boot-check, shared by minirt-build and minirt-run: what the
    runtime is compiled with."""
    p.add_argument("--max-cycles", type=positive_int, metavar="N",
                   help="the runtime stops an inference that runs past N cycles (counted "
                        "at every command: SysTick on Cortex-M, mcycle on RISC-V, rdtsc on "
                        "x86-64) with status 9, which minirt-run reports (exit 3); a "
                        "command longer than 2^24 cycles undercounts on Cortex-M. Default: "
                        "no budget, and no code for one")
    p.add_argument("--boot-check", choices=sorted(BOOT_CHECKS),
                   help="what the runtime checks in the module at boot. 'layout': its "
                        "structure against the image and the CRC-32 of everything but the "
                        "weights (about 64 K instructions for kws_ref_model on cortex-m4, "
                        "1.9 %% of an inference); 'small': also the whole module's CRC-32, "
                        "bit by bit in 40 B of code (about 44 instructions a byte: 2.5 M "
                        "for kws_ref_model); 'fast': the whole CRC-32 by slicing-by-4 with "
                        "4 KB of tables in flash (about 3.3 a byte: 190 K). Default: layout "
                        "(the weights are flashed with the code, which no boot check reads)")
    p.add_argument("--harness", choices=HARNESSES, default=DEFAULT_HARNESS,
                   help="what the image does around the inference: 'semihost' reads its "
                        "inputs from and writes its outputs to host files by semihosting "
                        "(QEMU, or a debugger attached to the board); 'device' serves "
                        "inference after inference over the board's UART (its 'uart:' "
                        "block), for minirt-run --device (docs/device.md). Default: semihost")


def stamp_with_options(stamp: dict, args: argparse.Namespace) -> dict:
    """The build stamp with the --input-shape pins, the --max-cycles budget and the
    --optimize mode (pipeline.stamp_with)."""
    from toolchain.pipeline import stamp_with

    stamp = stamp_with(stamp, input_shapes(args), args.max_cycles,
                       args.boot_check or DEFAULT_BOOT_CHECK, args.harness, input_values(args),
                       args.optimize)
    ops = custom_ops(args)
    if ops:  # absent without them, so a build made before the option stays current
        stamp["custom_ops"] = custom_ops_digest(ops)
    tuning = tuning_stamp(args.tuning_db)
    if tuning:  # absent without a user database, as above
        stamp["tuning_db"] = tuning
    return stamp


def quantize_options(args: argparse.Namespace) -> QuantizeOptions:
    """The QuantizeOptions the arguments ask for (make_quantize_options)."""
    return make_quantize_options(args.quantize, args.quantize_min_elements,
                                 args.calibration, args.int8_io)


def make_quantize_options(mode: str, min_elements: int = DEFAULT_MIN_ELEMENTS,
                          calibration: str | Path | None = None,
                          int8_io: bool = False) -> QuantizeOptions:
    """The QuantizeOptions of --quantize `mode`, --quantize-min-elements, --calibration
    and --int8-io; UsageError for a bad combination or an unreadable calibration file."""
    if mode not in MODES:
        raise UsageError(f"--quantize must be one of {', '.join(MODES)}, got {mode!r}")
    if min_elements < 0:
        raise UsageError("--quantize-min-elements must be >= 0")
    if mode != "int8":
        for flag, given in (("--calibration", calibration is not None),
                            ("--int8-io", int8_io)):
            if given:
                raise UsageError(f"{flag} applies to --quantize int8 only (got --quantize "
                                 f"{mode})")
        return QuantizeOptions(mode, min_elements)
    if calibration is None:
        raise UsageError("--quantize int8 needs --calibration CALIB.npz: samples of the "
                         "model's inputs (input_0, ... each with a leading axis of samples)")
    return QuantizeOptions(mode, min_elements, calibration=str(calibration),
                           calibration_sha256=calibration_sha256(calibration),
                           int8_io=int8_io)


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="minirt-build",
        description="Compile a model (MLIR: StableHLO / generic op form, or a TFLite flatbuffer: "
                    ".tflite) into firmware for a board: firmware.elf/.bin/.hex, model.mrt, the "
                    "map file and size.json.",
        epilog="Exit codes: 0 ok, 1 over the board's flash/RAM budget, 2 bad model or option.")
    p.add_argument("model", help="the model file (.mlir, .tflite: subgraph 0, or .onnx)")
    p.add_argument("--board", help=f"board to build for ({', '.join(list_boards())})")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output directory (default: build/<model>-<board>): new, empty or an "
                        "earlier build holding only the files its build.json lists")
    p.add_argument("--entry", default="main",
                   help="MLIR function to compile (default: main; a .tflite model is its "
                        "subgraph 0)")
    add_quantize_options(p)
    add_input_shape_option(p)
    add_custom_op_option(p)
    add_runtime_options(p)
    add_optimize_option(p)
    add_tuning_option(p)
    p.add_argument("--inputs", metavar="IN.npz",
                   help="inputs for the quantization accuracy report (default: seeded random)")
    add_library_options(p)
    p.add_argument("--timings", action="store_true",
                   help="print the seconds each build stage took, wall and CPU (this "
                        "process's and its clang / ld.lld / QEMU children's); size.json "
                        "records them either way")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dump-ir", action="store_true",
                      help="print the verified graph IR and stop")
    mode.add_argument("--dump-generic", action="store_true",
                      help="print the parsed MLIR in generic op form and stop (MLIR models "
                           "only)")
    mode.add_argument("--dump-schedule", action="store_true",
                      help="print each dispatch's loop schedule for --board and stop "
                           "(loop order, register blocking, unrolled taps, unchecked "
                           "interiors, phases, partial sums, FMA, packed int8 steps)")
    return p


def _f32_size(args: argparse.Namespace, board):
    """The size report of the same model built without quantization (in a temporary
    directory), or the reason it cannot be built for this board."""
    from toolchain import pipeline
    from toolchain.link.build import LinkError
    from toolchain.report.size import size_report

    with tempfile.TemporaryDirectory(prefix="minirt-f32-") as tmp:
        try:
            f32 = pipeline.compile_graph(load_model_graph(args),
                                         board,
                                         Path(tmp) / "f32", log=lambda _: None,
                                         max_cycles=args.max_cycles,
                                         optimize=args.optimize, tuning_db=args.tuning_db)
        except LinkError as e:  # quantizing may be what makes the model fit
            return str(e)
        return size_report(f32)


def _quantization_summary(args: argparse.Namespace, result, report, f32_report,
                          inputs: list | None) -> dict:
    """Flash saved against the f32 build and accuracy against the f32 reference."""
    from toolchain.passes.ptq import dequantize_outputs, io_quantization, quantize_inputs
    from toolchain.reference.state import StateRunner
    from toolchain.report.accuracy import compare_outputs

    float_graph = load_model_graph(args)
    if inputs is None:
        inputs = random_inputs(float_graph, seed=0)
    # With --int8-io the firmware takes and gives int8: the float inputs are quantized
    # for it and its outputs dequantized, as a user of that firmware would.
    # One inference from the boot state (a model's state is its own: graph/ir.py).
    got = StateRunner(result.graph).step(quantize_inputs(result.graph, inputs))
    accuracy = compare_outputs(dequantize_outputs(result.graph, got),
                               StateRunner(float_graph).step(inputs))
    q_flash, q_const = report.flash_total, report.flash["constants"]
    summary = {"mode": args.quantize, "min_elements": args.quantize_min_elements,
               "f32_flash_bytes": None, "flash_saved_bytes": None,
               "f32_constants_bytes": None, "constants_bytes": q_const,
               "f32_ram_bytes": None, "ram_bytes": report.ram_total,
               "ram_static_bytes": report.ram_static, "f32_ram_static_bytes": None}
    if isinstance(f32_report, str):
        print(f"quantize {args.quantize}: flash {q_flash} B, constants {q_const} B, RAM "
              f"{report.ram_total} B; no f32 build to compare with: {f32_report}")
        summary["f32_build_error"] = f32_report
    else:
        f32_flash, f32_const = f32_report.flash_total, f32_report.flash["constants"]
        print(f"quantize {args.quantize}: flash {q_flash} B vs {f32_flash} B for f32 (saved "
              f"{f32_flash - q_flash} B); constants {q_const} B vs {f32_const} B "
              f"({f32_const / max(q_const, 1):.2f}x smaller); RAM {report.ram_total} B vs "
              f"{f32_report.ram_total} B")
        summary.update({"f32_flash_bytes": f32_flash, "flash_saved_bytes": f32_flash - q_flash,
                        "f32_constants_bytes": f32_const,
                        "f32_ram_bytes": f32_report.ram_total,
                        # Without the stack, which each build measures for its own code.
                        "f32_ram_static_bytes": f32_report.ram_static})
    if args.quantize == "int8":
        summary.update({"calibration": args.calibration, "int8_io": args.int8_io})
        if args.int8_io:
            io = io_quantization(result.graph)
            summary["io"] = io
            for row in io["inputs"] + io["outputs"]:
                print(f"int8 I/O: {row['name']}: scale {row['scale']!r}, zero point "
                      f"{row['zero_point']} (real = scale * (q - zero point))")
    source = f"inputs {args.inputs}" if args.inputs else "seeded random inputs"
    print(f"accuracy against the f32 model ({source}): {accuracy.format()}")
    summary.update({"accuracy_inputs": args.inputs or "seeded random (seed 0)",
                    "accuracy": accuracy.to_json()})
    return summary


def _dump_schedule(args: argparse.Namespace) -> int:
    """--dump-schedule: the graph as the build prepares it, scheduled into dispatches, and
    each dispatch's loop schedule for the board's target (toolchain/loops)."""
    from toolchain.pipeline import prepare_graph, schedule_for_board

    if not args.board:
        raise UsageError(f"--dump-schedule needs --board: schedules depend on the target "
                         f"(boards: {', '.join(list_boards())})")
    quantize = quantize_options(args)
    try:
        board = load_board(args.board)
    except DescriptorError as e:
        raise UsageError(str(e)) from None
    graph = load_model_graph(args)
    check_not_quantized(graph, quantize, args.model)
    if quantize.mode == "int8":
        load_calibration(quantize.calibration, graph)
    target = board.target_info
    with build_session(Session.for_build(args.tuning_db)) as session:
        program = schedule_for_board(prepare_graph(graph, quantize), board, args.optimize)
        print(f"# {args.model} on {board.identifier} ({target.name}): {len(program.steps)} "
              "dispatches")
        for step in program.steps:
            _print_schedule(step, target, session)
    return EXIT_OK


def _print_schedule(step, target, session: Session) -> None:
    """--dump-schedule's lines of one dispatch, with where a tuned schedule came from."""
    from toolchain.kernel.form import Kernel
    from toolchain.loops import choose_schedule

    k = step.kernel
    if isinstance(k, Kernel):
        before = set(session.used)
        # The schedule the arena plan was checked with, if any (Step.schedule).
        print((step.schedule or choose_schedule(k, target)).format())
        for key in set(session.used) - before:
            print(f"  tuned ({key}, from {session.used[key]['source']})")
        if k.paired:  # weights stored pre-extended (schedule/paired.py)
            print("  paired " + " ".join(
                f"x{j}" + (" (rows interleaved)" if j in k.interleaved else "")
                for j in k.paired))
    else:
        print(f"{getattr(k, 'name', type(k).__name__)}: {type(k).__name__} (no loop nest)")


def size_record(result, report, seconds: float, timings: Timings | None = None) -> dict:
    """The size.json of a build (a pipeline BuildResult and its SizeReport) that took
    `seconds`, with its stage `timings` so far when given; minirt-build adds its
    quantization summary."""
    from toolchain.link.images import images_record  # .bin base, .uf2 family, QEMU check

    data = report.to_json()
    data["compile_seconds"] = round(seconds, 3)
    if timings is not None:
        data["timings"] = timings.to_json()
    data["images"] = images_record(result.link, result.board)
    # RAM = arena + I/O + stack: the arena beside the least any plan could give it
    # (the most bytes live at one step), the stack as measured under QEMU
    # (pipeline._size_stack).
    data["arena_lower_bound"] = result.program.arena_lower_bound
    data["stack_measured"] = result.stack.measured if result.stack else None
    return data


def _main(argv: list[str] | None) -> int:
    # Python's start-up and the imports of this module, before any stage is timed.
    startup_cpu, startup_wall = cpu_seconds(), process_start_seconds()
    args = _parser().parse_args(argv)
    if args.dump_generic:
        suffix = Path(args.model).suffix
        if suffix in (".tflite", ".onnx"):
            raise UsageError(f"{args.model}: --dump-generic prints MLIR in generic op form; a "
                             f"{suffix} model is no MLIR (--dump-ir prints its graph)")
        sys.stdout.write(print_generic(parse_file(args.model)))
        return EXIT_OK
    if args.dump_ir:
        sys.stdout.write(print_graph(load_model_graph(args)))
        return EXIT_OK
    if args.dump_schedule:
        return _dump_schedule(args)
    if not args.board:
        raise UsageError(f"--board is required to build firmware (boards: "
                         f"{', '.join(list_boards())}); --dump-ir prints the IR instead")
    with recording() as timings:
        if startup_wall is not None:
            timings.add("start-up", startup_wall, startup_cpu)
        with stage("other"):  # what no finer stage claims: options, checks, imports
            status = _build(args, timings)
    if args.timings:
        print(timings.format())
    return status


def _build(args: argparse.Namespace, timings: Timings) -> int:
    """The firmware build of `_main`, its stages recorded in `timings`."""
    from toolchain import pipeline
    from toolchain.report.layers import attach_layers, layers_of_program
    from toolchain.report.size import size_report

    quantize = quantize_options(args)
    try:
        board = load_board(args.board)
    except DescriptorError as e:
        raise UsageError(str(e)) from None
    pipeline.budget_cflags(board, args.max_cycles)  # refused before anything is built
    check_harness(board, args.harness)
    start = time.perf_counter()
    with stage("load"):
        graph = load_model_graph(args)
    out_dir = Path(args.output) if args.output else pipeline.default_build_dir(
        args.model, board, args.harness)
    # Everything that can be refused is refused before the build replaces out_dir: a
    # failed command must not leave a new build behind for minirt-run to reuse.
    pipeline.check_out_dir(out_dir, args.model)
    check_not_quantized(graph, quantize, args.model)
    quantized = quantize.mode != "none"
    if quantized:  # the accuracy report runs the reference, twice
        check_host_memory(graph, reference=True, what=args.model)
    if quantize.mode == "int8":  # a calibration file that does not fit the model: now
        load_calibration(quantize.calibration, graph)
    inputs = load_inputs(args.inputs, graph) if args.inputs else None
    library = library_options(args)
    if library is not None and args.max_cycles is not None:
        raise UsageError("--max-cycles is a budget of the firmware's harness run; a library "
                         "caller bounds its own inference (--emit library takes no budget)")
    if library is not None and args.boot_check is not None:
        raise UsageError("--boot-check picks the firmware image's boot check; a library's "
                         "runtime is compiled by the caller's build, which checks the whole "
                         "CRC by default (define MRT_CRC32_SLICE4 there for the fast one, "
                         "MRT_BOOT_CHECK_LAYOUT for the layout only)")
    if library is not None and args.harness != DEFAULT_HARNESS:
        raise UsageError("--harness picks the firmware image's harness; a library has none "
                         "(its caller's code runs the inference)")
    if library is not None:  # --emit library: no image, no size table of one
        return emit_library(args, board, graph, out_dir, quantize, library,
                            pipeline.stamp_with(pipeline.build_stamp(
                                args.model, board, args.entry, quantize), {}, None,
                                optimize=args.optimize))
    print(f"minirt-build: {args.model} -> {board.identifier} ({board.target_info.triple})")
    f32_report = _f32_size(args, board) if quantized else None
    reports = []

    def finish(result) -> None:
        # Inside the build, before it replaces out_dir: size.json is part of it and is
        # listed in its manifest, and a failure here leaves the previous build alone.
        with stage("size report"):
            report = attach_layers(size_report(result), layers_of_program(result.program))
        data = size_record(result, report, time.perf_counter() - start, timings)
        print(report.format_table())
        print(f"RAM: arena {report.ram['arena']} B (lower bound "
              f"{result.program.arena_lower_bound} B), I/O {report.ram['io']} B, stack "
              f"{report.stack} B " + (f"({result.stack.measured} B measured under QEMU + "
                                      "margin)" if result.stack
                                      else "(the board's default, not measured)"))
        if quantized:
            data["quantization"] = _quantization_summary(args, result, report, f32_report,
                                                         inputs)
        (result.out_dir / "size.json").write_text(json.dumps(data, indent=2) + "\n")
        reports.append(report)

    with stage("stamp"):
        stamp = stamp_with_options(pipeline.build_stamp(args.model, board, args.entry,
                                                        quantize), args)
    pipeline.compile_graph(
        graph, board, out_dir, stamp=stamp,
        quantize=quantize, finish=finish, max_cycles=args.max_cycles,
        boot_check=args.boot_check or DEFAULT_BOOT_CHECK, harness=args.harness,
        optimize=args.optimize, tuning_db=args.tuning_db)
    report = reports[0]
    seconds = time.perf_counter() - start
    # The board-specific images too (.uf2, the ESP image), so the flashable file is named.
    extra = "".join(f" {s}" for s in (".uf2", ".esp.bin")
                    if (Path(out_dir) / f"firmware{s}").is_file())
    print(f"minirt-build: wrote {out_dir}/ (firmware.elf .bin .hex .map{extra}, model.mrt, "
          f"size.json) in {seconds:.1f} s")
    if report.over_budget:
        for line in report.over_budget:
            print(f"minirt-build: error: {line}", file=sys.stderr)
        return EXIT_MISMATCH
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    # When this process is the command it ends with the build (exit_now): Python's cyclic
    # garbage collector would walk the IR, the kernels and the graph again and again, 5-6 %
    # of a small model's build (cnn: 0.06 s of CPU), for cycles that die with the process
    # anyway (vww_96_int8's peak RSS: 176 MB without it, 174 MB with). It stays off after
    # start-up (cli/__init__.py); a program calling main keeps its own.
    code = run_tool("minirt-build", _main, argv, collect_garbage=False)
    if IS_COMMAND:  # this process is minirt-build: end it without tearing everything down
        exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
