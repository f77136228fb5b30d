"""Operands in the paired layout (kernel/paired.py) outside the packed steps, on the host.

The packed steps that read two words per paired value are Arm DSP code (QEMU covers
them: tests/schedule/test_paired_weights.py). Every other load of a paired operand, in
a region that is not packed or a reduction's last elements, finds the element at its
row-major offset with bits 0 and 1 swapped: at build time when the position within
the group of 4 is known, at run time otherwise. Here each int8 dot kernel of the window
models reads its weights paired under schedules without packed steps (the plain nest,
and the register tiles two targets choose) and must give the interpreter's result on
the unpaired weights, bit for bit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from host_program import kernel_steps
from window_models import int8_windows

from toolchain.kernel.paired import to_paired
from toolchain.loops import choose_schedule
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import plain_schedule
from toolchain.passes import fold_constants
from toolchain.schedule import schedule
from toolchain.schedule.paired import _paired_kernel
from toolchain.target import load_target


@pytest.fixture(scope="module")
def dots():
    """(kernel, operand arrays, weight operand index, the interpreter's result) for each
    int8 dot dispatch of the window models whose weights could be paired."""
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)
    program = schedule(fold_constants(int8_windows()))
    out = []
    for step, args, result in kernel_steps(program, [x]):
        k = step.kernel
        for ld in dot_operands(k) or ():
            b = step.buffers[ld.operand]
            if b.kind == "constant" and ld.pad is None and args[ld.operand].size % 4 == 0:
                out.append((k, args, ld.operand, result))
    assert len(out) >= 3  # 3x3 convolutions over 3 and 16 channels, the 1x1 to 16
    return out


@pytest.mark.parametrize("how", ["plain", "cortex-m4", "cortex-m0plus"])
def test_paired_loads_outside_packed_steps(how: str, dots, jit) -> None:
    kernels, schedules, runs = [], {}, []
    for i, (k, args, j, want) in enumerate(dots):
        pk = replace(_paired_kernel(k, j), name=f"k{i}")
        s = plain_schedule(pk) if how == "plain" else choose_schedule(pk, load_target(how))
        # Without packed steps: every load of the weights is an element load.
        schedules[pk.name] = replace(s, nests=tuple(replace(n, dot="") for n in s.nests))
        kernels.append(pk)
        paired_args = [to_paired(a) if n == j else a for n, a in enumerate(args)]
        runs.append((pk, paired_args, want))
    module = jit(kernels, schedules=schedules)
    for pk, paired_args, want in runs:
        np.testing.assert_array_equal(module.run(pk.name, *paired_args), want,
                                      err_msg=f"{how} {schedules[pk.name].format()}")
