"""Sub-byte integer constants stored bit-packed in the module (kernel/sub_byte.py).

An i4 weight (`--quantize int4-weights`) or any other i2 / i4 / ui2 / ui4 constant is
held one element a byte until here, as minirt holds sub-byte values everywhere in RAM.
A constant is only read, so the module can store it packed, 2 (4-bit) or 4 (2-bit)
elements to a byte, and the kernels that read it unpack the element they need: this
is where int4 weights take half the flash of int8 ones.

A constant is packed when every step reading it is a generic kernel (kernel/form.py):
their loads go through the one code path that knows the layout (codegen/addresses.py
`_bit_packed_load`). The other kinds (sort, scatter, argmax-like reductions, custom
ops) read their operands with code of their own; a constant one of them reads stays a
byte an element. The scales of a quantized weight are f32 and are never packed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.kernel.form import Kernel
from toolchain.kernel.sub_byte import is_sub_byte, pack_bits
from toolchain.schedule.program import Buffer, Program

__all__ = ["pack_sub_byte_constants"]


def _readers(program: Program) -> dict[int, list[tuple[int, int]]]:
    """(step, binding) of every read of each constant, binding -1 where the step is not a
    generic kernel or binds the constant past its operands."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i, step in enumerate(program.steps):
        n_ops = len(step.kernel.operands) if isinstance(step.kernel, Kernel) else 0
        for j, buf in enumerate(step.buffers):
            if buf.kind == "constant":
                readers.setdefault(buf.index, []).append((i, j if j < n_ops else -1))
    return readers


def pack_sub_byte_constants(program: Program) -> list[int]:
    """Stores every sub-byte integer constant that only generic kernels read bit-packed,
    rewriting `program` in place: the constant becomes its packed bytes (a flat uint8
    array, Program.bit_packed records it; its type stays the logical one), the readers'
    bindings shrink to those bytes and their kernels list the operand in
    `Kernel.bit_packed`. Returns the indices of the constants it packed."""
    packed: list[int] = []
    for c, uses in sorted(_readers(program).items()):
        t = program.constant_types[c]
        if c in program.bit_packed or not is_sub_byte(t.dtype) or \
                any(j < 0 for _, j in uses):
            continue
        data = pack_bits(np.asarray(program.constants[c]), t.dtype)
        program.constants[c] = data
        program.bit_packed.add(c)
        packed.append(c)
        for i, j in uses:
            step = program.steps[i]
            step.kernel = replace(step.kernel,
                                  bit_packed=tuple(sorted({*step.kernel.bit_packed, j})))
            old = step.buffers[j]
            step.buffers[j] = Buffer(old.kind, old.index, data.nbytes)
    return packed
