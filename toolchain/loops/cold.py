"""Which kernels are cold: small enough to keep their loops as written.

A kernel of at most the budget's `cold_points` points (outputs x reduction steps,
loops/tables.py Budget.cold_points) takes loops/rules.py's plain schedule: one output at
a time, no register tile, no packed steps. That saves code on the few-thousand
instruction kernels where a tile gains little (an int8 softmax's scalar steps).

An int8 dot product whose reduction holds a whole packed step is never cold: there the
plain loop is a scalar MAC of ~6 instructions (two byte loads, the multiply-add, the
loop) against about one instruction per MAC in packed steps. Small dense layers fell
into it: on cortex-m4 a 64 -> 10 layer (640 points) took 4,074 instructions (0.157 MAC
per instruction) while a 128 -> 10 one took 1,696 (bench/results/shapes.md, issue 21).
"""

from __future__ import annotations

from math import prod

from toolchain.kernel.form import Kernel
from toolchain.loops.access import interior_ranges
from toolchain.loops.patterns import dot_operands
from toolchain.loops.phases import phases_of
from toolchain.loops.tables import SIMD, _budget, dot_width
from toolchain.target.descriptors import Target

__all__ = ["cold_kernel", "packed_dot"]


def packed_dot(k: Kernel, target: Target) -> bool:
    """Whether `k` is an int8 (or int16) dot product the target has packed steps for
    whose innermost reduced dim spans at least one whole step."""
    row = SIMD[target.capabilities.simd]
    if dot_operands(k) is None or not (row.int8_dot or row.int16_dot):
        return False
    reduced = [n for n in k.domain[k.n_parallel:] if n > 1]
    return bool(reduced) and reduced[-1] >= dot_width(row.int8_dot)


def cold_kernel(k: Kernel, target: Target) -> bool:
    """Whether `k` keeps its plain loops on `target` (module docstring): at most
    cold_points points, no phases (a transposed convolution), no interleaved weights,
    no padded window (whose plain loops test every tap's bounds) and no packed dot."""
    return prod(k.domain) <= _budget(target).cold_points and not phases_of(k) and \
        not k.interleaved and not interior_ranges(k) and not packed_dot(k, target)
