"""Inference after inference in one emulator run: the host side of a stream image
(runtime_c/harness/stream.c, built with MRT_STREAM: a model with state, or
minirt-run --stream).

Step k's inputs go to mrt.in (k = 0) or mrt.<k>.in, its outputs come back from mrt.out
or mrt.<k>.out (k in four digits); an empty mrt.<k>.rst resets the state before step
k, and mrt.fb lists the (output, input) pairs the image feeds back from one step to
the next.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from toolchain.emu.run import IN_FILE, OUT_FILE, RunResult, run_image
from toolchain.target import Board

# runtime_c/harness/stream.c: MRT_STREAM_MAX_STEPS, MRT_STREAM_MAX_FEEDBACK.
MAX_STEPS = 256
MAX_FEEDBACK = 16


def step_name(step: int, suffix: str) -> str:
    """The host file of step `step` ("in", "out" or "rst")."""
    return f"mrt.{suffix}" if step == 0 else f"mrt.{step:04d}.{suffix}"


def stream_files(steps: Sequence[bytes], resets: Sequence[int] = (),
                 feedback: Sequence[tuple[int, int]] = ()) -> dict[str, bytes]:
    """The host files of a stream: each step's encoded inputs, a reset marker before
    each step in `resets` (step 0 starts from the boot values: a reset there is
    refused), the feedback table. Raises ValueError past the image's limits."""
    if not 1 <= len(steps) <= MAX_STEPS:
        raise ValueError(f"a stream runs 1 to {MAX_STEPS} steps in one run, got {len(steps)}")
    if len(feedback) > MAX_FEEDBACK:
        raise ValueError(f"at most {MAX_FEEDBACK} feedback pairs, got {len(feedback)}")
    files = {step_name(k, "in"): bytes(data) for k, data in enumerate(steps)}
    for k in resets:
        if not 0 < k < len(steps):
            raise ValueError(f"a reset before step {k}: steps 1 to {len(steps) - 1} can be "
                             "reset (step 0 starts from the boot state)")
        files[step_name(k, "rst")] = b""
    if feedback:
        words = [len(feedback)] + [v for pair in feedback for v in pair]
        words += [0] * (1 + 2 * MAX_FEEDBACK - len(words))
        files["mrt.fb"] = struct.pack(f"<{len(words)}I", *words)
    return files


def run_stream(board: Board, elf: Path, steps: Sequence[bytes], *,
               resets: Sequence[int] = (), feedback: Sequence[tuple[int, int]] = (),
               timeout: float | None = None) -> tuple[RunResult, list[bytes | None]]:
    """Runs a stream image once over `steps` (stream_files); returns the run and each
    step's raw outputs (None for a step that wrote none). The run's instruction count
    is the last step's."""
    files = stream_files(steps, resets, feedback)
    first = files.pop(IN_FILE)
    result = run_image(board, elf, first, timeout=timeout, files=files)
    outs = [result.outputs if k == 0 else result.files.get(step_name(k, "out"))
            for k in range(len(steps))]
    return result, outs


assert step_name(0, "in") == IN_FILE and step_name(0, "out") == OUT_FILE

__all__ = ["MAX_FEEDBACK", "MAX_STEPS", "run_stream", "step_name", "stream_files"]
