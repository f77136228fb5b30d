"""Program -> .mrt bytes: the schedule decided at build time, written down for the runtime.

Also where a Program's branches learn the byte offsets of the commands they continue
at: the command layout is the module format's (format.command_size), and the image's
code returns those offsets (image_kernels).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from toolchain.kernel.branch import Branch
from toolchain.module import format as fmt
from toolchain.module.format import QUANT_HEAD
from toolchain.module.pack import (
    Binding,
    Command,
    ConstantEntry,
    PackError,
    QuantParams,
    TensorSig,
    layout_constant_pool,
    pack_module,
)
from toolchain.schedule.program import Program
from toolchain.types import TensorType, held_in_f32, storage_bits

# Our element type names where the module format spells them differently. Every type
# the importer accepts has a module type (tests/e2e/test_dtypes.py checks it).
# Sub-byte integers are held a byte each, sign- (i2, i4) or zero-extended (ui2, ui4):
# in the module's tables their buffers are i8 / u8 ones, which is what the bytes are.
_MODULE_DTYPE = {"ui8": "u8", "ui16": "u16", "ui32": "u32", "ui64": "u64", "index": "i64",
                 "i2": "i8", "i4": "i8", "ui2": "u8", "ui4": "u8"}


def _sig(name: str, t: TensorType) -> TensorSig:
    return TensorSig(name, _MODULE_DTYPE.get(t.dtype.name, t.dtype.name), tuple(t.shape))


# The pool's storage type of a bit-packed sub-byte constant (schedule/sub_byte.py).
_PACKED_DTYPE = {"i4": "i4", "ui4": "u4", "i2": "i2", "ui2": "u2"}


def _constant(value, t: TensorType, bit_packed: bool = False) -> ConstantEntry:
    """A pool entry recording how the constant is stored and, if quantized, its scales.
    A bit-packed constant's `value` is already its packed bytes."""
    if bit_packed:
        params: QuantParams | bytes = b""
        logical = _MODULE_DTYPE[t.dtype.name]
        if t.quant is not None:
            q = t.quant
            params = QuantParams(q.scales, q.zero_points, -1 if q.axis is None else q.axis)
            logical = q.expressed.name
        return ConstantEntry(np.asarray(value, np.uint8).tobytes(), logical,
                             _PACKED_DTYPE[t.dtype.name], params)
    if t.quant is not None:
        q = t.quant
        params = QuantParams(q.scales, q.zero_points, -1 if q.axis is None else q.axis)
        return ConstantEntry.from_array(value, q.expressed.name, params)
    if t.dtype.name == "f16":
        # fp16-stored weights: the model computes in f32, the pool holds halves.
        return ConstantEntry.from_array(value, "f32")
    # Stored in the type's own buffer layout, as the kernels read it: bf16 as its bit
    # patterns (the host holds it as float32), everything else little-endian.
    name = _MODULE_DTYPE.get(t.dtype.name, t.dtype.name)
    if held_in_f32(t.dtype):  # bf16 and the small floats: their bit patterns
        stored = storage_bits(value, t.dtype)
    else:
        stored = np.asarray(value, dtype=t.dtype.np_dtype)
    data = np.ascontiguousarray(stored, dtype=stored.dtype.newbyteorder("<")).tobytes()
    return ConstantEntry(data, name)


def _io_name(kind: str, i: int, count: int, states: int) -> str:
    """`input_<i>` / `output_<i>`, or `state_<k>` for the state's slots, the last
    `states` of each (docs/module-format.md, "State")."""
    first = count - states
    return f"state_{i - first}" if i >= first else f"{kind}_{i}"


def command_offsets(program: Program) -> list[int]:
    """The byte offset of each step's command within the command section, then the
    section's size (where a branch to the end lands): each command as long as the module
    format makes it."""
    offsets = [0]
    for step in program.steps:
        offsets.append(offsets[-1] + fmt.command_size(b.kind for b in step.buffers))
    return offsets


def image_kernels(program: Program) -> list[Any]:
    """The steps' kernels as the image's code runs them: each branch's targets, the
    indices of the steps it continues at, become those commands' byte offsets (what its
    function returns to the executor, kernel/branch.py). `program` is not changed."""
    offsets = command_offsets(program)
    return [replace(s.kernel, targets=tuple(offsets[t] for t in s.kernel.targets))
            if isinstance(s.kernel, Branch) else s.kernel for s in program.steps]


def module_from_program(program: Program, target: str) -> bytes:
    """Packs signature, commands (dispatch ordinal = step number) and constants.

    The scales of an int8 weight are stored once, in the weight's quantization record:
    the dequantizing kernel's scale operand is bound to that record's scale array.
    """
    entries: list[ConstantEntry] = []
    entry_of: dict[int, int] = {}
    for i, (c, t) in enumerate(zip(program.constants, program.constant_types)):
        if i not in program.constant_scales_of:
            entry_of[i] = len(entries)
            entries.append(_constant(c, t, i in program.bit_packed))
    layout = layout_constant_pool(entries)

    def constant(index: int, size: int) -> Binding:
        weight = program.constant_scales_of.get(index)
        if weight is not None:
            return Binding.constant(layout.params_offsets[entry_of[weight]] + QUANT_HEAD.size,
                                    size)
        e = entry_of[index]
        return Binding.constant(layout.data_offsets[e], len(entries[e].data))

    if len(program.steps) > fmt.BRANCH_FLAG:
        raise PackError(f"{len(program.steps)} dispatches: a module runs at most "
                        f"{fmt.BRANCH_FLAG} (the top bit of an ordinal marks a branch)")
    commands = []
    for ordinal, step in enumerate(program.steps):
        bindings = []
        for b in step.buffers:
            if b.kind == "arena":
                bindings.append(Binding.arena(b.index, b.size))
            elif b.kind == "constant":
                bindings.append(constant(b.index, b.size))
            elif b.kind == "input":
                bindings.append(Binding.input(b.index, b.size))
            else:
                bindings.append(Binding.output(b.index, b.size))
        flag = fmt.BRANCH_FLAG if step.is_branch else 0
        commands.append(Command(ordinal | flag, tuple(bindings)))
    return pack_module(
        target,
        [_sig(_io_name("input", i, len(program.inputs), program.state_count), t)
         for i, t in enumerate(program.inputs)],
        [_sig(_io_name("output", i, len(program.outputs), program.state_count), t)
         for i, t in enumerate(program.outputs)],
        entries,
        commands,
        program.arena_size,
    )
