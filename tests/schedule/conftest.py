"""Running a scheduled Program on the host, through the kernel interpreter."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from toolchain.kernel.interpret import run_kernel
from toolchain.schedule import Program


def execute_program(program: Program, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Runs a Program step by step through the interpreter, in one byte arena."""
    arena = np.zeros(max(program.arena_size, 1), np.uint8)
    outs = [np.zeros(t.shape, t.dtype.np_dtype) for t in program.outputs]

    def view(buf, t):
        if buf.kind == "input":
            return inputs[buf.index]
        if buf.kind == "output":
            return outs[buf.index]
        if buf.kind == "constant":
            return program.constants[buf.index]
        return arena[buf.index:buf.index + buf.size].view(t.dtype.np_dtype).reshape(t.shape)

    for step in program.steps:
        args = [view(b, t).copy() for b, t in zip(step.buffers, step.kernel.operands)]
        view(step.buffers[-1], step.kernel.result)[...] = run_kernel(step.kernel, args)
    return outs


@pytest.fixture
def execute() -> Callable[[Program, list[np.ndarray]], list[np.ndarray]]:
    return execute_program
