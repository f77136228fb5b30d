"""16x8 weights stored widened to int16 for the int16 packed DSP steps (codegen/dot.py
`dsp16`).

A 16x8 convolution or dense layer (int16 activations, int8 weights, int32 sums where
quant/build16.py's bound allows them) reads its activations as 16-bit pairs already: one
word holds two consecutive channels. SMLAD multiplies such a word with a word of two
int16 weights and adds both products, so the int8 weights, constants of the module,
are stored as int16 (the same values, twice the bytes, in their own order): a step of 4
elements is then one LDRD per operand and two SMLADs, where the scalar loop loads,
extends and multiplies each product on its own. The kernel reads the constant as i16;
its values and sums are unchanged, so the result is the reference's.

This pass decides, per constant, after the program is scheduled and before the module
is packed (schedule/optimize.py, after the paired int8 weights):

- the target's SIMD row has an int16 dot kind (loops/tables.py `SimdRow.int16_dot`);
- every step that reads the constant is an int16 x int8 sum of products
  (loops/patterns.py `int16_by_int8`) whose loop schedule, with the constant widened,
  packs every nest, reading the constant without bounds checks; the constant is not
  the scales of another;
- the extra bytes fit the flash room the --optimize mode leaves (most reused first).
"""

from __future__ import annotations

import numpy as np

from toolchain.loops.rules import SIMD
from toolchain.schedule.paired import _rechosen, ranked_int8_weights
from toolchain.schedule.program import Buffer, Program
from toolchain.schedule.widen16_kernels import takes_widened, widened_kernel
from toolchain.target.descriptors import Target
from toolchain.types import TensorType, dtype

__all__ = ["widen_int16_weights", "widenable_weights"]


def _ranked(program: Program, target: Target) -> tuple[dict[int, list[tuple[int, int]]],
                                                       list[int]]:
    """The readers of each constant, and the constants the target's int16 packed steps
    could read widened, the most reused first (paired.ranked_int8_weights)."""
    if not SIMD[target.capabilities.simd].int16_dot:
        return {}, []
    return ranked_int8_weights(program, lambda step, j: takes_widened(step.kernel, j, target))


def widenable_weights(program: Program, target: Target) -> list[int]:
    """The constants widen_int16_weights would store as int16 given room for all of
    them, the most reused first (the program is left as it is)."""
    return _ranked(program, target)[1]


def widen_int16_weights(program: Program, target: Target, flash_room: int) -> list[int]:
    """Stores the int8 weights of 16x8 layers the target's int16 packed steps can read
    as int16, rewriting `program` in place (constants, their types, the buffers' sizes,
    the readers' kernels): while their extra bytes fit `flash_room`, the most reused
    first. Returns the indices of the constants it widened."""
    readers, ranked = _ranked(program, target)
    chosen: list[int] = []
    for c in ranked:
        extra = program.constants[c].size  # one more byte per element
        if extra > flash_room:
            continue
        flash_room -= extra
        chosen.append(c)
        program.constants[c] = np.asarray(program.constants[c]).astype(np.int16)
        old_type = program.constant_types[c]
        program.constant_types[c] = TensorType(old_type.shape, dtype("i16"), old_type.quant)
        for i, j in readers[c]:
            step = program.steps[i]
            step.kernel = widened_kernel(step.kernel, j)
            old = step.buffers[j]
            step.buffers[j] = Buffer(old.kind, old.index, program.constants[c].nbytes)
            if step.schedule is not None:
                step.schedule = _rechosen(step, target)
    return sorted(chosen)
