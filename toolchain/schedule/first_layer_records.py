"""int8 convolutions over 1-4 input channels (first layers): the im2col kernel's records.

A first layer has few taps per output (9 for a 3x3 window over one channel) and many
output channels. The packed steps of the other int8 layers read 4 elements of one
reduced dim, which such a window does not have, and the staged window of
window_rows.py paid, per tile of 4 output channels, a microkernel call, padded rows and
a generated requantization: 0.06-0.54 MAC per instruction on the shape sweep
(bench/results/shapes.md, cortex-m4). The dispatch now stages each output pixel's window
once as 16-bit pairs of taps (codegen/first_layers.py), and runtime_c's channel loops
(ukernel/dsp/mrt_im2col_dsp.c) keep up to 5 staged words in registers while they loop
over the output channels: per channel an LDM of its bias and weight words, an SMLAD per
word and the requantization (12.25 instructions an output for 3x3 over one channel).

This pass finds those layers (schedule/first_layer_plan.py), writes the loops' records at build
time (`first_layer_records`: per chunk of at most 5 staged words the channels' bias,
doubled int16 weight pairs and requantization values; for a 1x1 window over one channel
the table of every input's outputs instead, `_table`) and binds them to the dispatch as a
constant operand (`Kernel.records`), with the schedule that calls the loops
(`Nest.im2col`). Only on the DSP targets, for a step whose schedule the arena plan did
not fix (the order of its loads and stores is then free), while the records fit the
--optimize mode's flash room (none under `size`), and where the doubled sums stay int32
(every channel's |bias| + 128 x sum |w| < 2**30 and |K_hi| < 2**29, the bounds of the
depthwise records' doubled form, schedule/row_pair_records.py).

An activation TFLite's converter writes as an operator of its own after the layer
(HARD_SWISH, LOGISTIC, TANH) is a lookup in a 256-entry int8 table, which fusion puts
after the requantization in the epilogue (`_lookup`). The loops that requantize (the
only or the last chunk) look each output up in it (one LDRB, the table after the
channels' records), and a table layer composes it into its rows. mobilenet_block_int8's
1x1 12 -> 36 with its HARD_SWISH missed this kernel for that reason: 0.35 MAC per
instruction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from toolchain.graph.sources import Source
from toolchain.kernel.form import Kernel
from toolchain.loops.schedule import LoopSchedule, Nest
from toolchain.loops.tables import SIMD
from toolchain.schedule.first_layer_plan import (
    IM2COL_DOT,
    TABLE_SIZE,
    C,
    FirstLayerPlan,
    first_layer_plan,
    takes_pointwise,
)
from toolchain.schedule.im2col_lanes import kernel_takes_im2col
from toolchain.schedule.pointwise_asm_records import upgrade
from toolchain.schedule.program import Program, Step
from toolchain.schedule.row_pair_records import _value
from toolchain.schedule.step_records import bind_records, constant_operands
from toolchain.target.descriptors import Target
from toolchain.tunedb.hook import TILES, choose_kernel

__all__ = ["OFFER", "RULE", "FirstLayerPlan", "first_layer_plan", "first_layer_records",
           "im2col_hit", "lookup_offset", "records_bound", "store_first_layer_records",
           "takes_pointwise"]

_BOUND = 1 << 30  # the doubled sums' bound (module docstring)


def _halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo in the low 16 bits, hi in the high ones, as int64 words' unsigned bits."""
    return (lo.astype(np.int64) & 0xFFFF) | ((hi.astype(np.int64) & 0xFFFF) << 16)


def first_layer_records(k: Kernel, plan: FirstLayerPlan,
                        operands: list[np.ndarray | None]) -> np.ndarray | None:
    """The records of kernel `k` from its constant operands: a word of the pad byte (the
    padded copy's fill), then mrt_im2col_dsp.c's layout, per chunk per channel the
    first chunk's bias, the weight words and the last chunk's M, 2 K_hi and s (all
    doubled but M), then a lookup's 256-entry table as bytes; or None when a value is
    not a constant or the doubled sums could leave int32."""
    cout = k.domain[C]
    c = np.arange(cout)
    at: dict[int, object] = {C: c}
    values = [_value(e, operands, at) for e in (k.init, plan.multiplier, plan.k_high,
                                                 plan.shift)]
    lookup = None
    if plan.table is not None:
        lookup = operands[plan.table.operand]
        if lookup is None:
            return None
        lookup = np.asarray(lookup, dtype=np.int64).reshape(TABLE_SIZE)
    if any(v is None for v in values):
        return None
    bias, multiplier, k_high, shift = (np.broadcast_to(v, (cout,)).astype(np.int64)
                                       for v in values)
    bias = bias + plan.bias  # a bias the epilogue adds (one output channel)
    ky, kx, ci = plan.dims
    grid = np.meshgrid(c, np.arange(plan.kh), np.arange(plan.kw), np.arange(plan.cin),
                       indexing="ij")
    point = {C: grid[0]}
    for d, g in zip((ky, kx, ci), grid[1:]):
        if d is not None:
            point[d] = g
    weights = _value(plan.w, operands, point)
    if weights is None:
        return None
    w = np.broadcast_to(weights, grid[0].shape).reshape(cout, plan.taps).astype(np.int64)
    reach = np.abs(bias) + 128 * np.abs(w).sum(axis=1)
    if not (np.all(reach < _BOUND) and np.all(np.abs(k_high) < (1 << 29))
            and np.all((multiplier >= 0) & (multiplier < (1 << 31)))
            and np.all((shift >= 0) & (shift <= 31))):
        return None
    if plan.taps == 1:
        return _table(plan, bias, w[:, 0], multiplier, k_high, shift, lookup)
    lanes = np.zeros((cout, 2 * plan.words), dtype=np.int64)
    lanes[:, :plan.taps] = 2 * w
    words = _halves(lanes[:, 0::2], lanes[:, 1::2])
    chunks = plan.chunks()
    # First the pad value in each byte of a word: the padded copy's fill
    # (codegen/first_layers.py), read at run time so that LLVM keeps it a loop of word
    # stores instead of a call of the runtime's byte-by-byte memset.
    parts = [np.asarray([(plan.pad & 0xFF) * 0x01010101], dtype=np.int64)]
    start = 0
    for j, n in enumerate(chunks):
        fields = []
        if j == 0:
            fields.append(2 * bias[:, None])
        fields.append(words[:, start:start + n])
        if j == len(chunks) - 1:
            fields += [multiplier[:, None], 2 * k_high[:, None], shift[:, None] + 1]
        parts.append(np.concatenate(fields, axis=1).reshape(-1))
        start += n
    if lookup is not None:  # the table's bytes, entry -128 first (lookup_offset)
        parts.append(lookup.astype(np.int8).view("<i4").astype(np.int64))
    table = np.concatenate(parts)
    return (table & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def requantized(acc: np.ndarray, multiplier: np.ndarray, k_high: np.ndarray,
                shift: np.ndarray) -> np.ndarray:
    """kernel/requant.py's folded requantization of int32 sums `acc` (channels last),
    in the doubled form mrt_im2col_dsp.c computes (the same integers where the sums
    and K_hi are within first_layer_records' bounds): hi32(2 acc M + (2 K_hi + sign)
    2**32 + 2**31) >> (s + 1), clamped to int8."""
    a = 2 * acc.astype(np.int64)
    sign = np.where(a < 0, -1, 0)
    high = (a * multiplier + ((2 * k_high + sign) << 32) + (1 << 31)) >> 32
    return np.clip(high >> (shift + 1), -128, 127)


def lookup_offset(k: Kernel, plan: FirstLayerPlan) -> int:
    """The byte offset in the records of the lookup table (its entry for input -128):
    after the pad word and every chunk's records (words + 4 a channel in all)."""
    return 4 + 4 * k.domain[C] * (plan.words + 4)


def _table(plan: FirstLayerPlan, bias: np.ndarray, w: np.ndarray, multiplier: np.ndarray,
           k_high: np.ndarray, shift: np.ndarray,
           lookup: np.ndarray | None = None) -> np.ndarray:
    """A 1x1 convolution over one channel: every output is a function of one int8
    input, so the records are its 256 x channels results (row x + 128: the output
    pixel of input x), after the pad word: a row copied per pixel, no arithmetic. An
    activation's `lookup` is composed into them."""
    x = np.arange(-128, 128, dtype=np.int64)[:, None]
    table = requantized(bias[None, :] + x * w[None, :], multiplier, k_high, shift)
    if lookup is not None:
        table = lookup[table + TABLE_SIZE // 2]
    body = table.astype(np.int8).reshape(-1)
    body = np.concatenate([body, np.zeros(-len(body) % 4, np.int8)]).view("<i4")
    head = np.asarray([(plan.pad & 0xFF) * 0x01010101], dtype=np.int64)
    words = np.concatenate([head, body.astype(np.int64)])
    return (words & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def im2col_schedule(k: Kernel, kernel: str = "im2col") -> LoopSchedule:
    """The schedule that calls the microkernel for `k` (the Nest flag `kernel`: this
    module's, or "fewout", schedule/fewout_records.py): pixels in order, all output
    channels of a pixel after its window is read (what schedule/overlap.py walks; the
    kernels read each input row before any output that needs it)."""
    reduced = tuple(d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1)
    nest = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), unroll=reduced,
                blocks=((C, k.domain[C]),) if k.domain[C] > 1 else (), **{kernel: True})
    return LoopSchedule(k.name, (nest,))


def im2col_hit(program: Program, target: Target, step: Step,
               offered: bool = False) -> tuple[Kernel, np.ndarray] | None:
    """The kernel and records with which the im2col kernel takes `step` of `program` on
    `target` (module docstring), or None where it does not (`offered`: where it can,
    first_layer_plan's)."""
    if not target.capabilities.dsp:
        return None
    # Another SIMD row's core (Helium) only where the kernel beats its lanes.
    if SIMD[target.capabilities.simd].int8_dot != IM2COL_DOT and \
            not kernel_takes_im2col(step.kernel, target):
        return None
    plan = first_layer_plan(step.kernel, offered=offered)
    records = None if plan is None else first_layer_records(
        step.kernel, plan, constant_operands(program, step))
    return None if records is None else (step.kernel, records)


def store_first_layer_records(program: Program, target: Target, flash_room: int,
                              declined: set[Source] | None = None) -> int:
    """Binds the records, and the microkernel's schedule, to every first layer of
    `program` on `target` (module docstring) while their bytes fit `flash_room`,
    rewriting `program` in place. Returns how many it bound. `declined`:
    bind_pixel_kernels'."""
    if not target.capabilities.dsp:
        return 0
    return bind_pixel_kernels(program, target, flash_room,
                              lambda step: im2col_hit(program, target, step), "im2col",
                              lambda step: im2col_hit(program, target, step, True),
                              (), declined, _pointwise_asm)


def _pointwise_asm(hit: Hit, room: int) -> tuple[Hit, int]:
    """`hit` as a per-layer assembly kernel's, with its code's bytes, where
    schedule/pointwise_asm_records.py takes it within `room` (1x1 over 2-3 channels)."""
    return upgrade(hit, first_layer_plan(hit[0], offered=True), room)


Hit = tuple[Kernel, np.ndarray]
# A family another pass binds: its name and whether it takes a step, RULE (the rules
# send the step there), OFFER (only the database may) or None.
RULE, OFFER = "rule", "offer"
Other = tuple[str, Callable[[Step], str | None]]


def bind_pixel_kernels(program: Program, target: Target, flash_room: int,
                       found: Callable[[Step], Hit | None], kernel: str,
                       offered: Callable[[Step], Hit | None] | None = None,
                       others: Sequence[Other] = (),
                       declined: set[Source] | None = None,
                       own_code: Callable[[Hit, int], tuple[Hit, int]] | None = None
                       ) -> int:
    """Binds, to each step of `program` not yet scheduled for which `found` gives a
    kernel (the step's, or the same computation rewritten) and its records, those
    records while their bytes fit `flash_room`, and the pixel-order schedule calling
    the Nest flag `kernel`'s microkernel (im2col_schedule). Returns how many.

    The tuning database may choose otherwise for a layer (tunedb/hook.py
    choose_kernel), among `kernel` (where `found`, or else `offered`, gives it a
    kernel: the layers it can compute though the rules send them elsewhere), the
    `others` that take the step and the tile search. A layer it wants in tiles has its
    model op (Step.sources) added to `declined`, and a step of a declined op is not
    bound: the pipeline schedules the graph again when a pointwise layer left unpadded
    for this kernel goes elsewhere (pipeline.schedule_for_board), and that layer,
    padded, is another kernel with another key. `own_code`: the hit (and its code's
    bytes, charged to the room) of a layer's own assembly kernel in place of a hit,
    given the room left."""
    done = 0
    for step in program.steps:
        if not isinstance(step.kernel, Kernel) or step.schedule is not None:
            continue
        op = step.sources.main if step.sources is not None else None
        if declined is not None and op is not None and op in declined:
            continue
        hit = found(step)
        alternative = offered(step) if hit is None and offered is not None else None
        if hit is None and alternative is None:
            continue
        takes = [(name, takes(step)) for name, takes in others]
        options = [kernel, *(name for name, how in takes if how), TILES]
        rule = kernel if hit is not None else \
            next((name for name, how in takes if how == RULE), TILES)
        want = choose_kernel(step.kernel, target.tuning_targets, options, rule)
        if want == TILES and declined is not None and op is not None:
            declined.add(op)
        if want is None and hit is None or want is not None and want != kernel:
            continue
        hit = hit or alternative
        hit, code = own_code(hit, flash_room) if own_code is not None else (hit, 0)
        if hit[1].nbytes + code > flash_room:
            continue
        flash_room -= hit[1].nbytes + code
        step.kernel = hit[0]
        bind_records(program, step, hit[1])
        step.schedule = im2col_schedule(step.kernel, kernel)
        done += 1
    return done


def records_bound(program: Program) -> tuple[int, int]:
    """(layers, bytes) of the records store_first_layer_records bound in `program`: weights
    stored pre-extended for a packed step, as schedule/optimize.py counts them."""
    layers = nbytes = 0
    for step in program.steps:
        k = step.kernel
        if isinstance(k, Kernel) and k.records >= 0 and step.schedule is not None and \
                any(n.im2col or n.fewout for n in step.schedule.nests):
            layers += 1
            nbytes += np.asarray(program.constants[step.buffers[k.records].index]).nbytes
    return layers, nbytes
