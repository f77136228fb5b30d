"""Weights stored in the paired layout for the packed int8 steps (kernel/paired.py).

A convolution's or dense layer's int8 weights are constants of the module, so the
unpacking the packed steps do per word at run time (SXTB16 twice) can be done once at
build time: the constant is stored as the 16-bit pairs, twice its int8 bytes, and the
step reads both words with one LDRD. This pass decides, per constant, after the program
is scheduled and before the module is packed:

- the target's SIMD row says whether its packed steps take paired operands
  (loops/rules.py `SimdRow.paired_operands`, measured per instruction set);
- every step that reads the constant must be an int8 dot product whose loop schedule
  packs it (each nest `dot`), reading it without bounds checks; the constant is int8
  with a multiple of 4 elements, not the scales of another constant;
- the doubled constants must stay within the flash the build's --optimize mode gives
  them (schedule/optimize.py: none, what the board's budget leaves, or unbounded):
  constants are taken in order of MACs per weight byte (the most reused first) while
  their extra bytes fit `flash_room`.

A paired constant's readers get the operand as i16 in `Kernel.paired`, and their loop
schedules are costed with it (an LDRD per word pair instead of a load and two unpacks),
so a wider tile may win. A step whose schedule was fixed by the arena plan keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from math import prod

import numpy as np

from toolchain.kernel.flatten import flatten_elementwise
from toolchain.kernel.form import Kernel, Load, postorder
from toolchain.kernel.paired import PAIRED_ROWS, from_paired, to_paired, to_paired_rows
from toolchain.loops import choose_schedule
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import SIMD
from toolchain.loops.schedule import LoopSchedule
from toolchain.schedule.overlap import OverlapWalk
from toolchain.schedule.program import Buffer, Program, Step, reversed_tiles
from toolchain.target.descriptors import Target
from toolchain.types import TensorType, dtype

__all__ = ["pair_weights", "pairable_weights"]


def _paired_kernel(k: Kernel, j: int) -> Kernel:
    """`k` reading its operand j in the paired layout."""
    ops = list(k.operands)
    ops[j] = TensorType(ops[j].shape, dtype("i16"))
    return replace(k, operands=tuple(ops), paired=tuple(sorted((*k.paired, j))))


def _takes_paired(k: object, j: int, fixed, target: Target) -> bool:
    """Whether the step with kernel `k` (schedule `fixed` if the arena plan fixed one)
    can read its operand j in the paired layout, every nest packing it."""
    if not isinstance(k, Kernel) or j in k.paired or k.operands[j].dtype.name != "i8":
        return False
    dot = dot_operands(k)
    if dot is None or j not in (ld.operand for ld in dot):
        return False
    loads = [e for root in k.roots for e in postorder(root)
             if isinstance(e, Load) and e.operand == j]
    if any(e.pad is not None or e.valid is not None for e in loads):
        return False
    schedule = fixed or choose_schedule(_paired_kernel(k, j), target)
    return bool(schedule.nests) and all(n.dot for n in schedule.nests)


def ranked_int8_weights(program: Program, takes: Callable[[Step, int], bool],
                        size_step: int = 1) -> tuple[dict[int, list[tuple[int, int]]],
                                                     list[int]]:
    """The readers (step, operand) of each constant, and the int8 constants (a multiple
    of `size_step` elements, not the scales of another) that every reader `takes` in a
    layout of its own, the most reused (MACs per weight) first: the candidates of the
    weights stored wider for a packed step (this module, schedule/widen16.py)."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i, step in enumerate(program.steps):
        n_ops = len(step.kernel.operands) if isinstance(step.kernel, Kernel) else 0
        for j, buf in enumerate(step.buffers):
            if buf.kind == "constant":
                readers.setdefault(buf.index, []).append((i, j) if j < n_ops else (i, -1))
    scales = set(program.constant_scales_of) | set(program.constant_scales_of.values())
    ranked: list[tuple[float, int]] = []
    for c, uses in readers.items():
        a = np.asarray(program.constants[c])
        if a.dtype != np.int8 or a.size == 0 or a.size % size_step or c in scales:
            continue
        if not all(j >= 0 and takes(program.steps[i], j) for i, j in uses):
            continue
        macs = sum(prod(program.steps[i].kernel.domain) for i, _ in uses)
        ranked.append((macs / a.size, c))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return readers, [c for _, c in ranked]


def _ranked(program: Program, target: Target) -> tuple[dict[int, list[tuple[int, int]]],
                                                       list[int]]:
    """ranked_int8_weights for the target's paired layout (whole words of 4)."""
    if not SIMD[target.capabilities.simd].paired_operands:
        return {}, []
    return ranked_int8_weights(
        program, lambda step, j: _takes_paired(step.kernel, j, step.schedule, target), 4)


def pairable_weights(program: Program, target: Target) -> list[int]:
    """The constants pair_weights would store pre-extended given room for all of them,
    the most reused first (the program is left as it is)."""
    return _ranked(program, target)[1]


def pair_weights(program: Program, target: Target, flash_room: int) -> list[int]:
    """Stores the int8 weights the target's packed steps can read pre-extended in the
    paired layout, rewriting `program` in place (constants, their types, the buffers'
    sizes, the readers' kernels): while their extra bytes fit `flash_room`, the most
    reused first. Returns the indices of the constants it paired."""
    readers, ranked = _ranked(program, target)
    chosen: list[int] = []
    for c in ranked:
        extra = program.constants[c].size  # i16 for i8: one more byte per element
        if extra > flash_room:
            continue
        flash_room -= extra
        chosen.append(c)
        program.constants[c] = to_paired(program.constants[c])
        program.constant_types[c] = TensorType(program.constant_types[c].shape, dtype("i16"))
        for i, j in readers[c]:
            step = program.steps[i]
            step.kernel = _paired_kernel(step.kernel, j)
            old = step.buffers[j]
            step.buffers[j] = Buffer(old.kind, old.index, program.constants[c].nbytes)
            if step.schedule is not None:
                step.schedule = _rechosen(step, target)
        flash_room -= _interleave_rows(program, c, readers[c], target, flash_room)[1]
    return sorted(chosen)


def _interleave_rows(program: Program, c: int, readers: list[tuple[int, int]],
                     target: Target, flash_room: int) -> tuple[bool, int]:
    """Stores paired constant c with its rows interleaved (kernel/paired.py
    `to_paired_rows`) where every reader's schedule then takes two pixels at a time
    (the 2x4 microkernel, loops/rules.py `two_pixel_dim`), a schedule fixed by the arena
    plan included (re-chosen and checked as _rechosen does); returns whether it did.
    Only that microkernel reads the interleaved rows, so it must take every reader.
    Rows past the last whole group (31 output channels: 7 groups and 3 rows) are padded
    with zero rows to a whole group, so the layer runs two pixels at a time all the same
    (loops/rules.py two_pixel_dim): its last tile of channels is one 2x4 call whose
    extra sums are dropped, or for 1 or 2 channels a call of their rows alone
    (codegen/dot_ukernel.py _two_pixel_call). On cortex-m4 a 3x3 window over 32
    channels to 31 ran 1,063,087 instructions one pixel at a time (1x4 tiles) with
    those 3 channels in generated code, 826,325 so (docs/architecture.md, "Output
    channels past the last group"). The padded rows' bytes come out of `flash_room`;
    returns whether it interleaved and the bytes it padded."""
    value = from_paired(program.constants[c])
    rows = value.shape[0] if value.ndim > 1 else 0
    rest = rows % PAIRED_ROWS
    if rest:
        padded_rows = rows - rest + PAIRED_ROWS
        pad_bytes = (padded_rows - rows) * 2 * value.size // rows
        if pad_bytes > flash_room:
            return False, 0
        value = np.concatenate([value, np.zeros((padded_rows - rows, *value.shape[1:]),
                                                value.dtype)])
    else:
        pad_bytes = 0
    trial = []
    for i, j in readers:
        step = program.steps[i]
        k = step.kernel
        if rest:
            if k.operands[j].shape != (rows, *value.shape[1:]):
                return False, 0
            ops = list(k.operands)
            ops[j] = TensorType(value.shape, ops[j].dtype)
            k = replace(k, operands=tuple(ops))
        k = replace(k, interleaved=tuple(sorted((*k.interleaved, j))))
        try:
            if step.schedule is None:
                schedule = None
                choose_schedule(k, target)  # raises where the 2x4 tile cannot be had
            else:
                schedule = _rechosen(Step(k, step.buffers, step.schedule), target)
                if schedule is step.schedule:
                    return False, 0
        except ValueError:
            return False, 0
        trial.append((step, k, j, schedule))
    program.constants[c] = to_paired_rows(value)
    if rest:
        program.constant_types[c] = TensorType(value.shape, program.constant_types[c].dtype)
    for step, k, j, schedule in trial:
        step.kernel = k
        old = step.buffers[j]
        step.buffers[j] = Buffer(old.kind, old.index, program.constants[c].nbytes)
        if schedule is not None:
            step.schedule = schedule
    return True, pad_bytes


def _rechosen(step: Step, target: Target) -> LoopSchedule:
    """The schedule of a step whose result the arena plan overlapped with an operand
    (schedule/overlap.py), now that it reads paired weights: the rules' new choice when
    the result's place is safe for it too, else the plan's. The plan's tile was costed
    with unpacked weights and can spill with paired ones (kws's pointwise layers)."""
    k = step.kernel
    fixed = step.schedule
    assert fixed is not None
    new = replace(choose_schedule(k, target), kernel=fixed.kernel)
    out = step.buffers[len(k.operands)]
    slots = {j for j, b in enumerate(step.buffers[:len(k.operands)])
             if b.kind == "arena" and out.kind == "arena"
             and b.index < out.index + out.size and out.index < b.index + b.size}
    if not slots:
        return new
    sources = {step.buffers[j].index for j in slots}
    if len(sources) != 1:
        return fixed
    # The plan put the result below its operand, or above it for a nest run in reverse
    # (schedule/overlap.py): the new tiles must run in the same direction.
    source = sources.pop()
    above = any(n.reverse for n in fixed.nests)
    if above:
        new = reversed_tiles(new)
    gap = out.index - source if above else source - out.index
    if gap < 0 or not OverlapWalk(flatten_elementwise(k), slots).safe_at(new, gap):
        return fixed
    return new
