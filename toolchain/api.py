"""minirt's Python API: build a model for a board, run it under QEMU and read its outputs,
instruction count, size and profile from a script or a notebook (``import minirt``).

Everything here is the command-line tools' own code called with plain values: the build
is minirt-build's (pipeline.compile_graph, the same stamp and size.json), the run is
minirt-run's (pipeline.run_firmware, the same input checks and --check comparison).
Errors are raised as ``Error`` subclasses whose message is what the tool prints and
whose ``exit_code`` is what it exits with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolchain import pipeline
from toolchain import stream as stream_mode
from toolchain.cli.build import make_quantize_options, size_record
from toolchain.cli.common import (
    EXIT_BUDGET,
    EXIT_INPUT,
    EXIT_MISMATCH,
    INPUT_ERRORS,
    input_error_text,
)
from toolchain.cli.run import EXIT_TIMEOUT, REFERENCE_TIMEOUT, check_tolerance, compare
from toolchain.emu.cycles import CycleEstimate
from toolchain.emu.device_link import PortError
from toolchain.emu.device_qemu import qemu_serving
from toolchain.emu.profile import Profile
from toolchain.emu.run import EmuError, EmuTimeout
from toolchain.graph.custom_ops import CustomOp, custom_ops_by_code
from toolchain.graph.ir import Graph
from toolchain.link.build_result import BuildResult, StackSizing
from toolchain.link.custom_ops import custom_ops_digest
from toolchain.link.device import DEFAULT_HARNESS, check_harness
from toolchain.link.out_dir import file_sha256
from toolchain.loader import (
    UsageError,
    check_host_memory,
    check_input,
    load_graph,
    random_inputs,
)
from toolchain.module.format import BOOT_CHECKS, DEFAULT_BOOT_CHECK
from toolchain.passes.calibrate import load_calibration
from toolchain.passes.quantize import DEFAULT_MIN_ELEMENTS, QuantizeOptions
from toolchain.reference import ReferenceTimeout, time_limit
from toolchain.reference.state import StateRunner
from toolchain.report.layers import attach_layers, layers_of_program
from toolchain.report.size import SizeReport, size_report
from toolchain.schedule.optimize import DEFAULT_OPTIMIZE, OPTIMIZE_MODES
from toolchain.target import Board, load_board
from toolchain.tunedb.database import tuning_stamp

__all__ = ["Build", "BudgetExceeded", "Error", "FirmwareError", "InputError", "Mismatch",
           "Profile", "Run", "SizeReport", "Timeout", "build", "reference"]

Inputs = Sequence[Any] | Mapping[str, Any] | None


class Error(Exception):
    """Any failure of a minirt call; ``exit_code`` is what the matching command exits
    with (2 bad input, 1 wrong result or firmware failure, 3 over the cycle budget, 124
    timeout)."""

    exit_code = EXIT_INPUT


class InputError(Error):
    """A bad model (its message starts with file:line:col and shows the source line),
    option, board or input; a model that does not fit the board's memories."""

    exit_code = EXIT_INPUT


class FirmwareError(Error):
    """The firmware did not finish its inference under QEMU (a fault, a non-zero exit,
    no outputs), or QEMU could not run it."""

    exit_code = EXIT_MISMATCH


class Mismatch(Error):
    """``run(check=True)``: the outputs differ from the reference. ``problems`` holds the
    report's lines (one per output, then its worst elements); ``run`` the run itself."""

    exit_code = EXIT_MISMATCH

    def __init__(self, problems: list[str], run: Run) -> None:
        super().__init__("check FAILED against the reference:\n" + "\n".join(problems))
        self.problems = problems
        self.run = run


class BudgetExceeded(Error):
    """The runtime stopped the inference over the build's ``max_cycles`` budget."""

    exit_code = EXIT_BUDGET


class Timeout(Error):
    """The firmware or the reference did not finish within its time limit."""

    exit_code = EXIT_TIMEOUT


@contextmanager
def _errors() -> Iterator[None]:
    """The toolchain's exceptions as Errors carrying the commands' messages (the
    original is the new one's __cause__)."""
    try:
        yield
    except INPUT_ERRORS as e:
        raise InputError(input_error_text(e)) from e
    except pipeline.OverBudget as e:
        raise BudgetExceeded(str(e)) from e
    except PortError as e:  # an EmuError, but the caller's argument
        raise InputError(str(e)) from e
    except (EmuTimeout, ReferenceTimeout) as e:  # EmuTimeout is an EmuError: first
        raise Timeout(f"timeout: {e}") from e
    except (EmuError, pipeline.FirmwareFailed) as e:
        raise FirmwareError(str(e)) from e


@dataclass
class Run:
    """One inference under QEMU: ``outputs`` as numpy arrays in the model's output order,
    ``instructions`` retired by the inference (start-up and I/O excluded), the
    ``inputs`` it ran on, and with ``check=True`` the ``reference`` outputs it matched.
    ``cycles`` and ``ms`` are the estimate at the board's clock (docs/cycles.md; None on
    a core without a timing table, e.g. hosted boards), ``estimate`` its details."""

    outputs: list[np.ndarray]
    instructions: int | None
    inputs: list[np.ndarray]
    reference: list[np.ndarray] | None = None
    estimate: CycleEstimate | None = None
    device_cycles: int | None = None  # a device image's run: the cycles its core counted
    clock_hz: int = 0  # the board's clock, for a device run's milliseconds

    @property
    def cycles(self) -> int | None:
        """The inference's cycles: counted by the device on a device run, else
        estimated from the executed instructions."""
        if self.device_cycles is not None:
            return self.device_cycles
        return self.estimate.cycles if self.estimate else None

    @property
    def ms(self) -> float | None:
        """The inference's milliseconds at the board's clock (of ``cycles``)."""
        if self.device_cycles is not None:
            return self.device_cycles * 1000.0 / self.clock_hz if self.clock_hz else None
        return self.estimate.ms if self.estimate else None


@dataclass
class Build:
    """A firmware build: its board, directory and files, size report and stack."""

    model: Path
    board: Board
    out_dir: Path
    size: SizeReport
    stack: StackSizing | None  # None: the board's default stack, not measured
    entry: str = "main"
    quantize: QuantizeOptions = field(default_factory=QuantizeOptions)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    input_values: dict[str, np.ndarray] = field(default_factory=dict)
    max_cycles: int | None = None
    harness: str = DEFAULT_HARNESS  # "device": the image that serves over the board's UART
    # The operators of the user's own (--custom-op) by code (docs/custom-ops.md).
    custom_ops: dict[str, CustomOp] = field(default_factory=dict)
    _stamp: dict = field(default_factory=dict, repr=False)
    _graph: Graph | None = field(default=None, repr=False)

    @property
    def elf(self) -> Path:
        """The linked image (what QEMU runs and a debugger loads)."""
        return self.out_dir / "firmware.elf"

    @property
    def bin(self) -> Path:
        """The raw flash image (its base address in firmware.bin.base)."""
        return self.out_dir / "firmware.bin"

    @property
    def hex(self) -> Path:
        """The flash image as Intel HEX."""
        return self.out_dir / "firmware.hex"

    @property
    def module(self) -> Path:
        """The packed model (model.mrt) embedded in the image."""
        return self.out_dir / "model.mrt"

    def run(self, inputs: Inputs = None, *, seed: int = 0, check: bool = False,
            timeout: float | None = None, device: str | None = None) -> Run:
        """Runs one inference under QEMU on `inputs` (a list of arrays in the model's
        input order, or a dict {"input_0": ...}; default: seeded random data, as
        minirt-run draws). With `check`, compares the outputs with the numpy reference as
        minirt-run --check does and raises Mismatch when they differ. `timeout` bounds
        the firmware (default: the board's; a device's answer: 30 s) and the reference
        (default: 600 s). A device build (``harness="device"``) runs on the board at
        serial port `device` (minirt-run --device), or without it under QEMU over a
        pty; its Run has ``cycles`` instead of ``instructions``."""
        with _errors():
            graph, arrays = self._inputs(inputs, seed, reference=check)
            if self.harness == DEFAULT_HARNESS and device is not None:
                raise UsageError(f"--device: {self.out_dir} holds the semihosting image; "
                                 "build with harness='device' to run on a device")
            if self.harness == DEFAULT_HARNESS:
                fw = pipeline.run_firmware(self.board, self.out_dir, arrays, graph,
                                           timeout=timeout, max_cycles=self.max_cycles,
                                           log=_quiet)
            else:
                fw = _run_device(self, arrays, graph, device, timeout)
            run = Run(fw.outputs, fw.instructions, arrays, estimate=fw.cycles,
                      device_cycles=fw.device_cycles, clock_hz=self.board.clock_hz)
            if check:
                run.reference = _reference(graph, arrays, timeout)
                rtol, atol = check_tolerance(self.model)
                problems = compare(run.outputs, run.reference, rtol=rtol, atol=atol)
                if problems:
                    raise Mismatch(problems, run)
        return run

    def stream(self, steps: Sequence[Inputs], *, resets: Sequence[int] = (),
               feedback: Sequence[str] = (), check: bool = False,
               timeout: float | None = None) -> list[Run]:
        """Runs one inference per entry of `steps` (each inputs as for run) on one state,
        in one QEMU run (minirt-run --stream): a model's state lives on from step to
        step, is reset before each step in `resets`, and each "OUTPUT=INPUT" of
        `feedback` feeds an output of a step into an input of the next. Returns a Run
        per step (``instructions``: the last step's inference, on the last Run). With
        `check`, every step is compared with the reference's stream (Mismatch names the
        step). The build must be a stream image: a model with state, or built with
        ``stream=True``."""
        with _errors():
            if self.harness != DEFAULT_HARNESS:
                raise UsageError("--stream runs the semihosting image; this is a device build")
            graph, _ = self._inputs(None, 0, reference=check)
            arrays = [model_inputs(graph, x) for x in steps]
            pairs = stream_mode.parse_feedback(feedback, graph)
            stream_mode.check_stream(len(arrays), list(resets), pairs)
            fw = stream_mode.run_firmware_stream(self.board, self.out_dir, arrays, graph,
                                                 resets=resets, feedback=pairs,
                                                 timeout=timeout,
                                                 max_cycles=self.max_cycles, log=_quiet)
            runs = [Run(outs, None, x) for outs, x in zip(fw.outputs, arrays)]
            runs[-1].instructions = fw.instructions
            if check:
                with time_limit(REFERENCE_TIMEOUT if timeout is None else timeout):
                    want = stream_mode.reference_stream(graph, arrays, frozenset(resets),
                                                        pairs)
                rtol, atol = check_tolerance(self.model)
                for k, (run, ref) in enumerate(zip(runs, want)):
                    run.reference = ref
                    problems = compare(run.outputs, ref, rtol=rtol, atol=atol)
                    if problems:
                        raise Mismatch([f"step {k}:", *problems], run)
        return runs

    def profile(self, inputs: Inputs = None, *, seed: int = 0,
                timeout: float | None = None) -> Profile:
        """The instructions of one inference per dispatch, with MACs and the runtime's
        own rows (what minirt-run --profile prints; ``.to_json()`` is its --json form,
        ``.format()`` its table). Inputs and timeout as for run."""
        with _errors():
            if self.harness != DEFAULT_HARNESS:
                raise UsageError("--profile counts instructions per dispatch with the "
                                 "semihosting image; this is a device build")
            graph, arrays = self._inputs(inputs, seed, reference=False)
            fw = pipeline.run_firmware(self.board, self.out_dir, arrays, graph,
                                       timeout=timeout, max_cycles=self.max_cycles,
                                       profile=True, model=str(self.model), log=_quiet)
        assert fw.profile is not None  # run_firmware(profile=True) always makes one
        return fw.profile

    def _inputs(self, inputs: Inputs, seed: int,
                reference: bool) -> tuple[Graph, list[np.ndarray]]:
        """The graph the firmware computes (as minirt-run prepares it) and the inputs
        checked against it. Refuses a build whose model or files changed since."""
        if not pipeline.up_to_date(self.out_dir, self._stamp) or (
                file_sha256(self.model) != self._stamp["model_sha256"]):
            raise UsageError(f"{self.out_dir}: the build of {self.model} is stale (the "
                             "model or the build's files changed since): build it again")
        if self._graph is None:
            graph = load_graph(self.model, self.entry, self.input_shapes, self.input_values,
                               self.custom_ops)
            self._graph = pipeline.prepare_graph(graph, self.quantize)
        check_host_memory(self._graph, reference=reference, what=str(self.model))
        return self._graph, model_inputs(self._graph, inputs, seed)


def _run_device(build: Build, arrays: list[np.ndarray], graph: Graph, device: str | None,
                timeout: float | None) -> pipeline.FirmwareRun:
    """One inference of a device build: on the board at `device`, else under QEMU."""
    def run(port: str) -> pipeline.FirmwareRun:
        return pipeline.run_device(build.board, build.out_dir, arrays, graph, port,
                                   timeout=timeout, max_cycles=build.max_cycles, log=_quiet)

    if device is not None:
        return run(device)
    with qemu_serving(build.board, build.elf) as pty:
        return run(pty)


def _quiet(_: str) -> None:
    """A log that says nothing: the API returns what the tools print."""


def model_inputs(graph: Graph, inputs: Inputs, seed: int = 0) -> list[np.ndarray]:
    """`inputs` as the arrays `graph` takes, each checked and converted as minirt-run
    checks an .npz (loader.check_input); seeded random data when None."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise UsageError(f"seed must be an integer >= 0, got {seed!r}")
    n = len(graph.user_inputs)  # a model's state is its own (graph/ir.py)
    if inputs is None:
        return random_inputs(graph, seed)
    if isinstance(inputs, Mapping):
        names = [f"input_{i}" for i in range(n)]
        extra = sorted(set(inputs) - set(names), key=str)
        if extra:
            raise UsageError(f"inputs: unknown key {extra[0]!r} (the model takes "
                             f"{n} inputs: {', '.join(names) or 'none'})")
        missing = [k for k in names if k not in inputs]
        if missing:
            raise UsageError(f"inputs: missing '{missing[0]}' (the model takes {n} inputs)")
        values = [inputs[k] for k in names]
    elif isinstance(inputs, list | tuple):
        if len(inputs) != n:
            raise UsageError(f"inputs: {len(inputs)} arrays given, the model takes {n}")
        values = list(inputs)
    else:
        raise UsageError("inputs: expected a list of arrays in the model's input order or "
                         f"a dict {{'input_0': ...}}, got {type(inputs).__name__}")
    return [check_input(np.asarray(x), t.type, f"inputs: 'input_{i}'")
            for i, (x, t) in enumerate(zip(values, graph.user_inputs))]


def _reference(graph: Graph, inputs: list[np.ndarray], timeout: float | None) -> list:
    with time_limit(REFERENCE_TIMEOUT if timeout is None else timeout):
        return StateRunner(graph).step(inputs)  # one inference from the boot state


def _shapes(input_shapes: Mapping[str, Sequence[int]] | None) -> dict[str, tuple[int, ...]]:
    """input_shapes as --input-shape pins: name -> tuple of integers >= 0."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in (input_shapes or {}).items():
        try:
            dims = tuple(shape)
        except TypeError:
            dims = (shape,)
        if not all(isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0
                   for d in dims):
            raise UsageError(f"input_shapes[{name!r}]: expected a sequence of integers "
                             f">= 0, got {shape!r}")
        shapes[str(name)] = tuple(int(d) for d in dims)
    return shapes


def _values(input_values: Mapping[str, object] | None) -> dict[str, np.ndarray]:
    """input_values as --input-value pins: name -> numpy array (a number, a list, an
    array)."""
    values: dict[str, np.ndarray] = {}
    for name, value in (input_values or {}).items():
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            raise UsageError(f"input_values[{name!r}]: expected numbers, got {value!r}")
        values[str(name)] = array
    return values


def _quantize(quantize: str | None, min_elements: int, calibration: str | Path | None,
              int8_io: bool) -> QuantizeOptions:
    return make_quantize_options(quantize or "none", min_elements, calibration, int8_io)


def build(model: str | Path, board: str, *, out_dir: str | Path | None = None,
          quantize: str | None = None, quantize_min_elements: int = DEFAULT_MIN_ELEMENTS,
          calibration: str | Path | None = None, int8_io: bool = False, entry: str = "main",
          input_shapes: Mapping[str, Sequence[int]] | None = None,
          input_values: Mapping[str, object] | None = None,
          max_cycles: int | None = None, boot_check: str = DEFAULT_BOOT_CHECK,
          harness: str = DEFAULT_HARNESS, stream: bool = False,
          optimize: str = DEFAULT_OPTIMIZE,
          custom_ops: Sequence[str] = (),
          tuning_db: str | Path | None = None,
          log: Callable[[str], None] | None = None) -> Build:
    """Builds `model` (.mlir, .tflite or .onnx) for `board` as minirt-build does, into
    `out_dir` (default: build/<model>-<board>; replaced only on success, and only when it
    is new, empty or an earlier build), size.json included. The options are
    minirt-build's: `quantize` (none, fp16, int8-weights, int4-weights, int8),
    `quantize_min_elements`, `calibration` (an .npz, for int8), `int8_io`, `entry`,
    `input_shapes` ({"input": (1, 3, 32, 32)}, .onnx only), `input_values` ({"sr":
    16000}: those inputs become constants, as --input-value makes them), `max_cycles`,
    `boot_check` ("layout", "small" or "fast") and `harness` ("semihost" or "device":
    the image that serves over the board's UART, built by default in
    build/<model>-<board>-device). `stream` builds the image
    that Build.stream runs (a model with state always gets it). `optimize` ("auto",
    "speed" or "size": schedule/optimize.py) picks pre-extended or int8-sized weights;
    ``size.optimize`` states the choice. `custom_ops` are --custom-op's strings
    ("CODE=kernel.c[:fn],reference.py[:fn]", docs/custom-ops.md). `tuning_db` is
    --tuning-db: a minirt-tune database (or "none"), over $MINIRT_TUNING_DB and the
    shipped defaults (toolchain/tunedb/database.py); ``size.tuned`` lists what it gave.
    `log` receives the build's progress
    lines (default: none). An image over the board's budgets is built and flagged in
    ``size.over_budget``; one that does not fit its memories raises InputError."""
    with _errors():
        quantize_opts = _quantize(quantize, quantize_min_elements, calibration, int8_io)
        if max_cycles is not None and (not isinstance(max_cycles, int)
                                       or isinstance(max_cycles, bool)):
            raise UsageError(f"--max-cycles must be an integer, got {max_cycles!r}")
        target = load_board(board)
        pipeline.budget_cflags(target, max_cycles)  # refused before anything is built
        check_harness(target, harness)
        if boot_check not in BOOT_CHECKS:
            raise UsageError(f"--boot-check must be one of {', '.join(sorted(BOOT_CHECKS))}, "
                             f"got {boot_check!r}")
        if optimize not in OPTIMIZE_MODES:
            raise UsageError(f"--optimize must be one of {', '.join(OPTIMIZE_MODES)}, "
                             f"got {optimize!r}")
        shapes, values = _shapes(input_shapes), _values(input_values)
        ops = custom_ops_by_code(list(custom_ops))
        start = time.perf_counter()
        graph = load_graph(model, entry, shapes, values, ops)
        out = Path(out_dir) if out_dir is not None else pipeline.default_build_dir(
            model, target, harness)
        pipeline.check_out_dir(out, model)
        if quantize_opts.mode == "int8":  # a calibration file that does not fit: now
            load_calibration(quantize_opts.calibration, graph)
        stamp = pipeline.stamp_with(pipeline.build_stamp(model, target, entry, quantize_opts),
                                    shapes, max_cycles, boot_check, harness, values,
                                    optimize)
        if stream:
            stamp["stream"] = True  # as minirt-run --stream stamps its build
        if ops:  # as minirt-build stamps them (cli/build.py stamp_with_options)
            stamp["custom_ops"] = custom_ops_digest(ops)
        tuning = tuning_stamp(tuning_db)
        if tuning:  # as minirt-build stamps it
            stamp["tuning_db"] = tuning
        reports: list[SizeReport] = []

        def finish(result: BuildResult) -> None:
            # The report names the dispatches by the model's layers (report/layers.py).
            reports.append(attach_layers(size_report(result), layers_of_program(result.program)))
            (result.out_dir / "size.json").write_text(json.dumps(
                size_record(result, reports[0], time.perf_counter() - start), indent=2) + "\n")

        result = pipeline.compile_graph(graph, target, out, log or _quiet, stamp=stamp,
                                        quantize=quantize_opts, finish=finish,
                                        max_cycles=max_cycles, boot_check=boot_check,
                                        harness=harness, stream=stream,
                                        optimize=optimize, tuning_db=tuning_db)
    return Build(Path(model), target, out, reports[0], result.stack, entry, quantize_opts,
                 shapes, values, max_cycles, harness, ops, stamp)


def reference(model: str | Path, inputs: Inputs = None, *, seed: int = 0,
              entry: str = "main", input_shapes: Mapping[str, Sequence[int]] | None = None,
              input_values: Mapping[str, object] | None = None,
              quantize: str | None = None, quantize_min_elements: int = DEFAULT_MIN_ELEMENTS,
              calibration: str | Path | None = None, int8_io: bool = False,
              timeout: float | None = None, custom_ops: Sequence[str] = ()
              ) -> list[np.ndarray]:
    """The numpy reference's outputs of `model` on `inputs` (as for Build.run), as
    minirt-run --reference computes them: on the graph the firmware would compute with
    these quantize options."""
    with _errors():
        quantize_opts = _quantize(quantize, quantize_min_elements, calibration, int8_io)
        graph = load_graph(model, entry, _shapes(input_shapes), _values(input_values),
                           custom_ops_by_code(list(custom_ops)))
        check_host_memory(graph, reference=True, what=str(model))
        graph = pipeline.prepare_graph(graph, quantize_opts)
        return _reference(graph, model_inputs(graph, inputs, seed), timeout)
