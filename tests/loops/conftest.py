"""The dispatches of the window models (tests/window_models.py), with their operands."""

from __future__ import annotations

import numpy as np
import pytest
from window_models import float_windows, int8_windows

from toolchain.kernel.form import Kernel
from toolchain.passes import fold_constants
from toolchain.schedule import schedule


def dispatches(graph, x: np.ndarray) -> list[tuple[Kernel, list[np.ndarray]]]:
    """Each dispatch of the scheduled graph (all read only the input and constants)
    with its operand arrays."""
    program = schedule(fold_constants(graph))
    out = []
    for step in program.steps:
        args = [x if b.kind == "input" else program.constants[b.index]
                for b in step.buffers[:-1]]
        out.append((step.kernel, args))
    return out


@pytest.fixture(scope="session")
def float_dispatches() -> list[tuple[Kernel, list[np.ndarray]]]:
    x = np.random.default_rng(3).standard_normal((1, 7, 9, 3)).astype(np.float32)
    return dispatches(float_windows(), x)


@pytest.fixture(scope="session")
def int8_dispatches() -> list[tuple[Kernel, list[np.ndarray]]]:
    x = np.random.default_rng(3).integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)
    return dispatches(int8_windows(), x)
