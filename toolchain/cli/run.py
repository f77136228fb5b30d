"""`minirt-run`: run a model on a board under QEMU (or on the host reference) and print
its outputs; `--check` compares them with the numpy reference."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from toolchain import stream
from toolchain.cli.build import (
    add_custom_op_option,
    add_input_shape_option,
    add_optimize_option,
    add_quantize_options,
    add_runtime_options,
    add_tuning_option,
    load_model_graph,
    quantize_options,
    stamp_with_options,
)
from toolchain.cli.common import (
    EXIT_BUDGET,
    EXIT_MISMATCH,
    EXIT_OK,
    ArgumentParser,
    non_negative_int,
    positive_int,
    positive_seconds,
    run_tool,
)
from toolchain.emu.cycles import describe_estimate
from toolchain.emu.device_link import PortError
from toolchain.emu.run import EmuError, EmuTimeout
from toolchain.emu.stream import MAX_STEPS
from toolchain.graph.ir import Graph
from toolchain.link.device import DEFAULT_HARNESS, check_harness
from toolchain.loader import (
    UsageError,
    check_host_memory,
    check_output_file,
    load_inputs,
    random_inputs,
    save_outputs,
)
from toolchain.module.format import DEFAULT_BOOT_CHECK
from toolchain.passes.quantize import check_not_quantized
from toolchain.reference import ReferenceTimeout, time_limit
from toolchain.reference.state import StateRunner
from toolchain.report.layers import NAME_MODES
from toolchain.target import Board, DescriptorError, list_boards, load_board

EXIT_TIMEOUT = 124  # like timeout(1)
# The reference's time limit when --timeout is not given: generous (the shared models
# run in seconds), so only a loop that never ends reaches it, not a slow model.
REFERENCE_TIMEOUT = 600.0

# Float outputs must match the reference like numpy.isclose with these bounds: the
# compiled code sums in another order and uses our polynomial math, which moves the
# last bits; the reference itself matches JAX within the same bounds.
RTOL = 1e-5
ATOL = 1e-6
# A float .tflite model is specified against TFLite itself within isclose(rtol=1e-4,
# atol=1e-5) (issue 7): TFLite sums f32 in its own order, and so does the firmware. Deep
# dense stacks move small outputs by more than the bounds above between two f32
# summation orders (ad01_fp32: ten 128/640-wide layers, outputs up to 42, 1.7e-5 apart
# from the float64-accumulated reference), so --check holds the firmware to TFLite's bound.
TFLITE_RTOL = 1e-4
TFLITE_ATOL = 1e-5


def check_tolerance(model: str | Path) -> tuple[float, float]:
    """(rtol, atol) that --check applies to float outputs of `model`."""
    return (TFLITE_RTOL, TFLITE_ATOL) if Path(model).suffix == ".tflite" else (RTOL, ATOL)


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="minirt-run",
        description="Run a model (.mlir, .tflite or .onnx) and print its outputs: on a board under "
                    "QEMU (--board, building the firmware if needed) or on the host reference "
                    "(--reference).",
        epilog="npz keys: input_0, input_1, ... in argument order (a .tflite model's subgraph "
               "inputs); output_0, ... in result order (the same as "
               "../shared/models/jax/*.npz). Exit codes: 0 ok, 1 wrong "
               "result or firmware failure, 2 bad model/option/input, 3 inference stopped "
               "over --max-cycles, 124 timeout.")
    p.add_argument("model", help="the model file (.mlir, .tflite: subgraph 0, or .onnx)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--board", help=f"run on this board ({', '.join(list_boards())})")
    where.add_argument("--reference", action="store_true",
                       help="run the numpy reference executor on the host")
    p.add_argument("--entry", default="main",
                   help="MLIR function to run (default: main; a .tflite model is its "
                        "subgraph 0)")
    p.add_argument("--inputs", metavar="IN.npz",
                   help="inputs as input_0, input_1, ... (default: seeded random data)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed for random inputs, >= 0 (default: 0)")
    p.add_argument("--save-outputs", metavar="OUT.npz", help="write output_0, ... to this file")
    p.add_argument("--check", action="store_true",
                   help=f"compare with the reference (floats: isclose rtol={RTOL}, "
                        f"atol={ATOL}, for .tflite models rtol={TFLITE_RTOL}, "
                        f"atol={TFLITE_ATOL} as against TFLite; integers exactly); exit 1 on "
                        "a mismatch")
    p.add_argument("-o", "--build-dir", metavar="DIR",
                   help="firmware build directory (default: build/<model>-<board>); rebuilt only "
                        "over a build of the same model file")
    p.add_argument("--timeout", type=positive_seconds, metavar="S",
                   help="seconds before a run counts as hung, > 0: the firmware under QEMU "
                        "(default: the board's) and each reference run, --reference or "
                        f"--check (default: {REFERENCE_TIMEOUT:g})")
    p.add_argument("--profile", action="store_true",
                   help="print the instructions of the inference per dispatch (MACs, "
                        "instructions, instructions per MAC, share), the runtime's own, "
                        "what ran outside the inference and the stack used (--board only)")
    p.add_argument("--device", metavar="PORT",
                   help="run on the board itself over its serial port (/dev/ttyACM0, COM3, "
                        "a QEMU pty, socket://host:port), flashed with the device image "
                        "(--harness device, which this implies; docs/device.md): prints "
                        "the cycles the core counted instead of instructions")
    p.add_argument("--json", action="store_true",
                   help="with --profile: print the profile as one JSON document instead of "
                        "the outputs and the table (per layer: its source names, MACs, "
                        "instructions, weights and activation bytes; the arena timeline)")
    p.add_argument("--names", choices=NAME_MODES, default="short",
                   help="with --profile: name each dispatch by its layer in the model "
                        "(short, the default), by every model op fused into it (full) or "
                        "by its function in the image (function)")
    add_stream_options(p)
    add_quantize_options(p)
    add_input_shape_option(p)
    add_custom_op_option(p)
    add_runtime_options(p)
    add_optimize_option(p)
    add_tuning_option(p)
    return p


def add_stream_options(p: argparse.ArgumentParser) -> None:
    """--stream, --reset-at, --feedback (docs/commands.md "Stream mode")."""
    p.add_argument("--stream", type=positive_int, metavar="N",
                   help=f"run N inferences in a row on one state, in one emulator run (1 to "
                        f"{MAX_STEPS}): --inputs then holds input_0, ... with a leading "
                        "axis of N steps, and every step's outputs are printed, saved "
                        "(output_0, ... with the same leading axis) and with --check "
                        "compared with the reference, which keeps its state across steps "
                        "too")
    p.add_argument("--reset-at", type=positive_int, action="append", default=[],
                   metavar="K", help="with --stream: reset the model's state before step K "
                                     "(as TFLite Micro's interpreter Reset; repeatable)")
    p.add_argument("--feedback", action="append", default=[], metavar="OUTPUT=INPUT",
                   help="with --stream: feed output OUTPUT of each step into input INPUT of "
                        "the next (an index or a name each; the first step takes INPUT from "
                        "the inputs): a model's explicit state in and out, ONNX style "
                        "(repeatable)")


def is_stream(args: argparse.Namespace) -> bool:
    """Whether the run is a stream (--stream N)."""
    return args.stream is not None


def _stream_steps(args: argparse.Namespace, graph: Graph) -> list[list[np.ndarray]]:
    if args.inputs:
        return stream.load_stream_inputs(args.inputs, graph, args.stream)
    return stream.random_stream_inputs(graph, args.seed, args.stream)


def _run_stream(args: argparse.Namespace, graph: Graph, board: Board | None,
                out_dir: Path | None) -> int:
    """--stream: every step on one state, on the board (one QEMU run) or the reference;
    --check compares every step with the reference's stream."""
    from toolchain.pipeline import FirmwareFailed, OverBudget

    feedback = stream.parse_feedback(args.feedback, graph)
    resets = sorted(set(args.reset_at))
    stream.check_stream(args.stream, resets, feedback)
    steps = _stream_steps(args, graph)
    limit = REFERENCE_TIMEOUT if args.timeout is None else args.timeout

    def reference() -> list[list[np.ndarray]]:
        with time_limit(limit):
            return stream.reference_stream(graph, steps, frozenset(resets), feedback)

    try:
        if board is None or out_dir is None:
            outputs = reference()
        else:
            run = stream.run_firmware_stream(board, out_dir, steps, graph, resets=resets,
                                             feedback=feedback, timeout=args.timeout,
                                             max_cycles=args.max_cycles,
                                             log=lambda m: print(m, file=sys.stderr))
            outputs = run.outputs
            print(f"instructions: {run.instructions} (the last step's inference; start-up "
                  "and I/O excluded)")
    except (EmuTimeout, ReferenceTimeout) as e:
        return _timed_out(e)
    except OverBudget as e:
        print(f"minirt-run: error: {e}", file=sys.stderr)
        return EXIT_BUDGET
    except (EmuError, FirmwareFailed) as e:
        print(f"minirt-run: error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    for k, outs in enumerate(outputs):
        print(f"step {k}:" + (" (state reset before it)" if k in resets else ""))
        print(format_outputs(outs))
    if args.save_outputs:
        save_outputs(args.save_outputs, [np.stack(o) for o in zip(*outputs)])
    if args.check:
        rtol, atol = check_tolerance(args.model)
        try:
            expected = reference()
        except ReferenceTimeout as e:
            return _timed_out(e)
        failed = False
        for k, (got, want) in enumerate(zip(outputs, expected)):
            problems = compare(got, want, rtol=rtol, atol=atol)
            if problems:
                if not failed:
                    print("minirt-run: check FAILED against the reference:", file=sys.stderr)
                failed = True
                print(f"step {k}:\n" + "\n".join(problems), file=sys.stderr)
        if failed:
            return EXIT_MISMATCH
        print(f"check: the outputs of all {len(outputs)} steps match the reference")
    return EXIT_OK


def _check_stream_args(args: argparse.Namespace) -> None:
    """UsageError for stream options given without --stream, or with what a stream
    cannot do."""
    if args.stream is None:
        if args.reset_at or args.feedback:
            raise UsageError("--reset-at and --feedback go with --stream N")
        return
    if args.profile or args.device is not None or args.harness != DEFAULT_HARNESS:
        raise UsageError("--stream runs the semihosting image under QEMU: leave out "
                         "--profile, --device and --harness")


def format_outputs(outputs: list[np.ndarray]) -> str:
    lines = []
    with np.printoptions(precision=6, suppress=False, threshold=64, linewidth=100):
        for i, o in enumerate(outputs):
            lines.append(f"output_{i}: {o.dtype} {list(o.shape)}")
            lines.append(str(o))
    return "\n".join(lines)


def compare(got: list[np.ndarray], want: list[np.ndarray], worst: int = 5,
            rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """One report line per mismatching output, followed by its worst elements. A NaN on
    one side only counts as an infinite error, so it is never hidden behind a max abs
    error of 0 and is listed first."""
    problems: list[str] = []
    for i, (g, w) in enumerate(zip(got, want)):
        if np.iscomplexobj(w) and np.iscomplexobj(g):  # each part like a float
            g, w = (np.stack([x.real, x.imag], axis=-1) for x in (g, w))
        if g.shape != w.shape:
            problems.append(f"output_{i}: shape {g.shape}, reference {w.shape}")
            continue
        with np.errstate(all="ignore"):
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            if w.dtype.kind == "f":
                ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            else:
                ok = g == w
            nan_got = np.isnan(g64) & ~np.isnan(w64)
            nan_want = np.isnan(w64) & ~np.isnan(g64)
            err = np.abs(g64 - w64)
            if w.dtype.kind != "f":  # differing integers differ by 1 or more, even
                err = np.maximum(err, 1)  # where float64 rounds large 64-bit values
            err = np.where(ok, 0.0, err)
            err[nan_got | nan_want] = np.inf
        if ok.all():
            continue
        bad = ~ok
        notes = []
        if (n := int((nan_got & bad).sum())):
            notes.append(f"{n} NaN where the reference is a number")
        if (n := int((nan_want & bad).sum())):
            notes.append(f"{n} number{'s' if n > 1 else ''} where the reference is NaN")
        notes.append(f"max abs error {err[bad].max():.3g}")
        problems.append(f"output_{i}: {int(bad.sum())} of {ok.size} elements differ "
                        f"({'; '.join(notes)})")
        order = np.argsort(np.where(ok, -1.0, err), axis=None, kind="stable")[::-1][:worst]
        for flat in order:
            if ok.reshape(-1)[flat]:
                break
            idx = np.unravel_index(flat, g.shape)
            problems.append(f"  [{', '.join(map(str, idx))}] got {g[idx]!r}, "
                            f"reference {w[idx]!r}, error {err[idx]:.3g}")
    return problems


def _build_if_needed(args: argparse.Namespace) -> tuple[Board, Path]:
    """The board and the directory of a build of the model made exactly as asked: the
    one already there when its stamp and artifacts are current, else a new one."""
    from toolchain import pipeline

    try:
        board = load_board(args.board)
    except DescriptorError as e:
        raise UsageError(str(e)) from None
    out_dir = Path(args.build_dir) if args.build_dir else pipeline.default_build_dir(
        args.model, board, args.harness)
    quantize = quantize_options(args)
    pipeline.check_out_dir(out_dir, args.model)
    pipeline.budget_cflags(board, args.max_cycles)  # refused before anything is built
    check_harness(board, args.harness)
    stamp = stamp_with_options(pipeline.build_stamp(args.model, board, args.entry, quantize),
                               args)
    stream = is_stream(args)
    if stream:  # a stream image has another harness (runtime_c/harness/stream.c)
        stamp["stream"] = True
    if not pipeline.up_to_date(out_dir, stamp):
        _check_own_build(out_dir, stamp)
        print(f"minirt-run: building {args.model} for {board.identifier} in {out_dir}",
              file=sys.stderr)
        pipeline.compile_graph(load_model_graph(args), board,
                               out_dir,
                               log=lambda m: print(m, file=sys.stderr), stamp=stamp,
                               quantize=quantize, max_cycles=args.max_cycles,
                               boot_check=args.boot_check or DEFAULT_BOOT_CHECK,
                               harness=args.harness, stream=stream,
                               optimize=args.optimize, tuning_db=args.tuning_db)
    return board, out_dir


def _check_own_build(out_dir: Path, stamp: dict) -> None:
    """Refuses to rebuild over another model's build: minirt-run replaces a build only
    when it is of the same model file (stale after a change of option, source or tool);
    replacing another one is minirt-build's to do, when asked."""
    from toolchain.link.out_dir import read_manifest

    previous = read_manifest(out_dir)
    if previous is None:
        return
    theirs = (previous.get("stamp") or {}).get("model_path")
    if theirs != stamp["model_path"]:
        raise UsageError(f"{out_dir}: holds a build of {theirs or 'something else'}, not of "
                         f"{stamp['model']}; name another -o DIR (minirt-run replaces "
                         "only its own model's build)")


def _run_on_board(args: argparse.Namespace, board: Board, out_dir: Path,
                  inputs: list[np.ndarray], graph: Graph) -> list[np.ndarray]:
    from toolchain import pipeline

    if args.harness == "device":
        return _run_on_device(args, board, out_dir, inputs, graph)
    run = pipeline.run_firmware(board, out_dir, inputs, graph, timeout=args.timeout,
                                max_cycles=args.max_cycles, profile=args.profile,
                                model=str(args.model),
                                log=lambda m: print(m, file=sys.stderr))
    if run.profile is None and board.simulation.native:
        print("instructions: not counted (the board runs natively: QEMU cannot execute "
              "its code)")
    elif run.profile is None:
        print(f"instructions: {run.instructions} (one inference; start-up and I/O "
              "excluded)")
        print(describe_estimate(board, run.cycles))
    elif args.json:
        print(json.dumps({**run.profile.to_json(), "stack": {
            "measured": run.stack_used, "reserved": run.stack_reserved}}, indent=2))
    else:
        print(f"instructions: {run.profile.total} (one inference; start-up and I/O "
              "excluded)")
        print(describe_estimate(board, run.cycles))
        print(run.profile.format(args.names))
        if run.stack_used is not None:
            print(f"stack: {run.stack_used:,} B used (measured), {run.stack_reserved:,} B "
                  "reserved")
    return run.outputs


def _run_on_device(args: argparse.Namespace, board: Board, out_dir: Path,
                   inputs: list[np.ndarray], graph: Graph) -> list[np.ndarray]:
    """One inference of the device image: on the board at --device PORT, or without
    --device under QEMU with the image's UART on a pseudo-terminal."""
    from toolchain import pipeline
    from toolchain.emu.device_qemu import qemu_serving

    def run(port: str) -> pipeline.FirmwareRun:
        return pipeline.run_device(board, out_dir, inputs, graph, port, timeout=args.timeout,
                                   max_cycles=args.max_cycles,
                                   log=lambda m: print(m, file=sys.stderr))

    if args.device:
        result = run(args.device)
    else:
        with qemu_serving(board, out_dir / "firmware.elf") as pty:
            result = run(pty)
    if args.device:
        ms = (f", {result.device_cycles * 1000.0 / board.clock_hz:.3f} ms at "
              f"{board.clock_hz / 1e6:g} MHz" if board.clock_hz else "")
        print(f"cycles: {result.device_cycles:,} (one inference, counted on the device{ms})")
        print(_estimate_beside(args, inputs, graph))
    else:
        print(f"cycles: {result.device_cycles} (one inference, counted under QEMU, 1 ns per "
              "instruction: not the board's cycles, docs/device.md)")
    return result.outputs


def _estimate_beside(args: argparse.Namespace, inputs: list[np.ndarray],
                     graph: Graph) -> str:
    """The estimate beside the cycles a device counted: the semihosting image of the
    same model and options, built in a temporary directory and run once under QEMU on
    the same inputs (the device image cannot be counted per instruction: it never
    exits)."""
    from toolchain import pipeline

    with tempfile.TemporaryDirectory(prefix="minirt-estimate-") as tmp:
        twin = argparse.Namespace(**{**vars(args), "harness": DEFAULT_HARNESS,
                                     "build_dir": str(Path(tmp) / "semihost")})
        board, out_dir = _build_if_needed(twin)
        run = pipeline.run_firmware(board, out_dir, inputs, graph, timeout=args.timeout,
                                    max_cycles=args.max_cycles,
                                    log=lambda m: print(m, file=sys.stderr))
    return describe_estimate(board, run.cycles) + ", for the semihosting image under QEMU"


def _timed_out(e: Exception) -> int:
    """Reports a run (firmware or reference) stopped by its time limit."""
    print(f"minirt-run: error: timeout: {e}", file=sys.stderr)
    return EXIT_TIMEOUT


def _main(argv: list[str] | None) -> int:
    from toolchain.pipeline import FirmwareFailed, OverBudget, prepare_graph

    args = _parser().parse_args(argv)
    _check_stream_args(args)
    if args.json and not args.profile:
        raise UsageError("--json goes with --profile (see minirt-run --help)")
    if args.names != "short" and not args.profile:
        raise UsageError("--names goes with --profile (see minirt-run --help)")
    if args.profile and args.reference:
        raise UsageError("--profile counts instructions on a board: use --board, not "
                         "--reference")
    if args.device is not None:
        if args.reference:
            raise UsageError("--device runs the firmware on a board: use --board, not "
                             "--reference")
        given = argv if argv is not None else sys.argv[1:]
        if any(a.startswith("--harness") for a in given) and args.harness != "device":
            raise UsageError(f"--device talks to the device image; --harness {args.harness} "
                             "builds another (leave --harness out or give 'device')")
        args.harness = "device"
    if args.profile and args.harness == "device":
        raise UsageError("--profile counts instructions per dispatch under QEMU with the "
                         "semihosting image; the device image counts only the whole "
                         "inference's cycles (leave out --device / --harness device)")
    if args.max_cycles is not None and args.reference:
        raise UsageError("--max-cycles is a budget of the firmware on a board: use --board "
                         "(--timeout bounds the reference)")
    if args.save_outputs:
        check_output_file(args.save_outputs)
    graph = load_model_graph(args)
    check_host_memory(graph, reference=args.reference or args.check, what=args.model)
    # The graph the firmware computes (weights stored as --quantize says): --reference
    # runs it and --check compares with it, so like is compared with like. Inputs are
    # that graph's (int8 with --quantize int8 --int8-io).
    quantize = quantize_options(args)
    check_not_quantized(graph, quantize, args.model)
    graph = prepare_graph(graph, quantize)
    if is_stream(args):
        if args.reference:
            return _run_stream(args, graph, None, None)
        board, out_dir = _build_if_needed(args)
        return _run_stream(args, graph, board, out_dir)
    inputs = load_inputs(args.inputs, graph) if args.inputs else None
    if not args.reference:
        # Built (or found) before random inputs are drawn: a model that does not fit
        # the board is refused before any memory goes to its inputs.
        board, out_dir = _build_if_needed(args)
    if inputs is None:
        inputs = random_inputs(graph, args.seed)
    reference_limit = REFERENCE_TIMEOUT if args.timeout is None else args.timeout
    try:
        if args.reference:
            with time_limit(reference_limit):
                outputs = StateRunner(graph).step(inputs)
        else:
            outputs = _run_on_board(args, board, out_dir, inputs, graph)
    except (EmuTimeout, ReferenceTimeout) as e:
        return _timed_out(e)
    except OverBudget as e:
        print(f"minirt-run: error: {e}", file=sys.stderr)
        return EXIT_BUDGET
    except PortError as e:
        raise UsageError(str(e)) from None
    except (EmuError, FirmwareFailed) as e:
        print(f"minirt-run: error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    if not args.json:  # --json: stdout is the profile document alone
        print(format_outputs(outputs))
    if args.save_outputs:
        save_outputs(args.save_outputs, outputs)
    if args.check:
        rtol, atol = check_tolerance(args.model)
        try:
            with time_limit(reference_limit):
                expected = StateRunner(graph).step(inputs)
        except ReferenceTimeout as e:
            return _timed_out(e)
        problems = compare(outputs, expected, rtol=rtol, atol=atol)
        if problems:
            print("minirt-run: check FAILED against the reference:", file=sys.stderr)
            print("\n".join(problems), file=sys.stderr)
            return EXIT_MISMATCH
        print("check: outputs match the reference", file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_tool("minirt-run", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
