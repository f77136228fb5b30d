"""Stream mode (`minirt-run --stream N`): N inferences in a row on one image, in one
emulator run, on the same state (docs/commands.md "Stream mode").

A model's own state (graph/ir.py `Graph.states`: TFLite resource variables, ...) lives
on from one step to the next in the image's state region, and in the reference's
StateRunner. A model whose state is explicit inputs and outputs (ONNX style) streams
with `--feedback OUTPUT=INPUT` pairs: output K of a step becomes input J of the next,
the first step taking input J from the inputs given. `--reset-at K` resets the state
before step K, as TFLite Micro's MicroInterpreter::Reset does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.emu.diagnose import BUDGET_EXIT, BUDGET_STATUS
from toolchain.emu.stream import MAX_FEEDBACK, MAX_STEPS, run_stream
from toolchain.graph.ir import Graph
from toolchain.link.custom_ops import custom_op_failure
from toolchain.loader import (
    UsageError,
    check_input,
    input_members,
    random_inputs,
)
from toolchain.module.reader import read_module
from toolchain.passes import complex_io
from toolchain.pipeline import FirmwareFailed, OverBudget, decode_outputs, encode_inputs
from toolchain.reference.state import run_stream as reference_stream
from toolchain.target import Board

__all__ = ["StreamRun", "check_stream", "load_stream_inputs", "parse_feedback",
           "random_stream_inputs", "reference_stream", "run_firmware_stream"]


@dataclass
class StreamRun:
    """A stream under QEMU: every step's outputs, and the last step's instructions."""

    outputs: list[list[np.ndarray]]
    instructions: int | None


def check_stream(steps: int, resets: Sequence[int], feedback: Sequence[tuple[int, int]]
                 ) -> None:
    """UsageError, naming the option, for a stream the image cannot run."""
    if not 1 <= steps <= MAX_STEPS:
        raise UsageError(f"--stream takes 1 to {MAX_STEPS} steps (one emulator run), "
                         f"got {steps}")
    for k in resets:
        if not 0 < k < steps:
            raise UsageError(f"--reset-at {k}: a reset goes before step 1 to {steps - 1} "
                             "(step 0 starts from the boot state)")
    if len(feedback) > MAX_FEEDBACK:
        raise UsageError(f"--feedback: at most {MAX_FEEDBACK} pairs, got {len(feedback)}")


def _index(spec: str, kind: str, names: list[str]) -> int:
    """`spec` as the index of one of the model's inputs or outputs: a number, the
    default name (`input_2`), or the model's own name for it."""
    if spec.isdigit() and int(spec) < len(names):
        return int(spec)
    for i, name in enumerate(names):
        if spec in (f"{kind}_{i}", name):
            return i
    listed = ", ".join(f"{i} ({n})" if n else str(i) for i, n in enumerate(names))
    raise UsageError(f"--feedback: the model has no {kind} '{spec}' (its {kind}s: {listed})")


def parse_feedback(specs: Sequence[str], graph: Graph) -> list[tuple[int, int]]:
    """Each `OUTPUT=INPUT` of `--feedback` as (output index, input index), checked: the
    two must have the same shape and element type."""
    in_names = [graph.input_names[i] if i < len(graph.input_names) else t.name
                for i, t in enumerate(graph.user_inputs)]
    out_names = [t.name for t in graph.user_outputs]
    pairs = []
    for spec in specs:
        out, sep, into = spec.partition("=")
        if not sep or not out or not into:
            raise UsageError(f"--feedback {spec}: give OUTPUT=INPUT (an index or a name each)")
        k, j = _index(out, "output", out_names), _index(into, "input", in_names)
        a, b = graph.user_outputs[k].type, graph.user_inputs[j].type
        if (a.shape, a.dtype) != (b.shape, b.dtype):
            raise UsageError(f"--feedback {spec}: output {k} is {a.dtype}{list(a.shape)} but "
                             f"input {j} is {b.dtype}{list(b.shape)}")
        if j in {p[1] for p in pairs}:
            raise UsageError(f"--feedback {spec}: input {j} is fed back twice")
        pairs.append((k, j))
    return pairs


def load_stream_inputs(path: str | Path, graph: Graph, steps: int) -> list[list[np.ndarray]]:
    """`input_0`, ... from an .npz, each with a leading axis of `steps` steps (checked
    like single inputs: loader.load_inputs); returns each step's inputs."""
    arrays = []
    for ty, what, x in input_members(path, graph, "stream inputs",
                                     "input_0, input_1, ... of shape (steps, ...)",
                                     samples=True):
        if x.shape[0] != steps:
            raise UsageError(f"{what} holds {x.shape[0]} steps (its leading axis), "
                             f"--stream asks for {steps}")
        arrays.append([check_input(x[k], ty, f"{what} step {k}") for k in range(steps)])
    return [[a[k] for a in arrays] for k in range(steps)]


def random_stream_inputs(graph: Graph, seed: int, steps: int) -> list[list[np.ndarray]]:
    """Seeded inputs for every step: step k draws with seed `seed + k`."""
    return [random_inputs(graph, seed + k) for k in range(steps)]


def run_firmware_stream(board: Board, out_dir: Path, steps: Sequence[Sequence[np.ndarray]],
                        graph: Graph, *, resets: Sequence[int] = (),
                        feedback: Sequence[tuple[int, int]] = (),
                        timeout: float | None = None, max_cycles: int | None = None,
                        log=print) -> StreamRun:
    """Runs the stream build in `out_dir` (built with `stream`: pipeline.compile_graph)
    once under QEMU over `steps`. Raises OverBudget when the runtime stopped a step over
    `max_cycles` (the build's budget), FirmwareFailed when a step does not finish."""
    out_dir = Path(out_dir)
    module = read_module((out_dir / "model.mrt").read_bytes())
    n = len(graph.states)
    ins = module.inputs[:len(module.inputs) - n]
    outs = module.outputs[:len(module.outputs) - n]
    log(f"minirt-run: running {len(steps)} steps on {board.identifier} "
        f"({board.simulation.qemu} {board.simulation.machine or ''}".rstrip() + ")")
    result, raw = run_stream(board, out_dir / "firmware.elf",
                             [encode_inputs(ins, x) for x in steps],
                             resets=resets, feedback=feedback, timeout=timeout)
    if result.exit_code == BUDGET_EXIT:
        raise OverBudget(f"inference stopped: over the cycle budget of {max_cycles} cycles "
                         f"(status {BUDGET_STATUS})")
    if result.exit_code != 0:
        custom = custom_op_failure(graph, result.exit_code)
        if custom is not None:  # a kernel of the user's own failed (docs/custom-ops.md)
            raise FirmwareFailed(custom)
        extra = (result.console.strip() or result.stderr.strip())[-300:]
        raise FirmwareFailed(f"firmware exited with status {result.exit_code}: "
                             f"{result.diagnosis}" + (f" ({extra})" if extra else ""))
    missing = [k for k, r in enumerate(raw) if r is None]
    if missing:
        raise FirmwareFailed(f"firmware finished without writing the outputs of step "
                             f"{missing[0]} (of {len(steps)})")
    return StreamRun([complex_io(decode_outputs(outs, r), graph.user_outputs)
                      for r in raw if r is not None], result.instructions)
