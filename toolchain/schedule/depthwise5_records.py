"""The depthwise 5x5 microkernel's per-channel records and schedule, bound at build time.

runtime_c's mrt_dw5_pair_s8 (loops/depthwise5.py, codegen/depthwise5.py) reads per
output channel the bias, the weight words W01 = (w0, w1), W23, W12 and W34 of each
window column as 16-bit halves (w_j the tap of window row j), and the folded
requantization's M, K_hi and s - 1 (kernel/requant.py): 24 words (19 for a stride of
2, whose kernel reads no W12, and marks each channel group's last channel in bit 8 of
the shift word). They are constants of
the module, computed here from the kernel's constant operands with
schedule/row_pair_records.py's reader, doubled (2 x bias, 2 x weights, M, 2 x K_hi, s)
where every sum stays within +-2**30 and 2 x K_hi is an int32, so the kernel's
requantization is SMMLAR + ASR (the 3x3 kernel's bounds). After the last channel's
record: the flags word's bit for it, the pad value's 16-bit pair and its byte four times
(the words the dispatch fills its pad columns and pad run with: read from the records,
a fill of zeros does not become -Oz's byte-by-byte memset, 4,500 instructions of a
10x10x16 VALID layer's 25,000).

Like the im2col records (schedule/first_layer_records.py), they are bound with the
schedule that calls the kernel (`depthwise5_schedule`), where the arena plan left the
step's schedule free or the kernel is safe at the distance it placed the result over
its input (`_overlap_safe`), and while they fit the --optimize mode's flash room (none
under `size`, where a 5x5 layer keeps its generated tiles: the records are 96 bytes a
channel where the int8 weights are 25).
"""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import Apply, Kernel
from toolchain.loops.depthwise import CI, DOUBLED_FLAG, KX, KY, C, RowPairPlan
from toolchain.loops.depthwise5 import (
    LAST_CHANNEL,
    WINDOW,
    Depthwise5Plan,
    channel_group,
    depthwise5_plan,
    depthwise5_schedule,
    has_depthwise5,
    record_words,
    slots,
)
from toolchain.loops.schedule import LoopSchedule
from toolchain.schedule.overlap import OverlapWalk
from toolchain.schedule.program import Program, Step
from toolchain.schedule.row_pair_records import _value
from toolchain.schedule.step_records import bind_scheduled_records, constant_operands
from toolchain.target.descriptors import Target
from toolchain.tunedb.hook import TILES, choose_kernel

__all__ = ["depthwise5_records", "store_depthwise5_records"]

_BOUND = 1 << 30
DEPTHWISE5 = "depthwise5"  # the family name of this kernel in the tuning database


def _halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo in the low 16 bits, hi in the high ones (int64 words, masked later)."""
    return (lo.astype(np.int64) & 0xFFFF) | ((hi.astype(np.int64) & 0xFFFF) << 16)


def depthwise5_records(k: Kernel, plan: RowPairPlan, operands: list[np.ndarray | None]
                       ) -> np.ndarray | None:
    """The records of kernel `k` (module docstring) from its constant operands
    (`operands[j]`: operand j's array, None for a non-constant), as int32 words with the
    flags word last, or None when one of the values is not a constant."""
    channels = k.domain[C]
    at = {C: np.arange(channels)}
    conv = next(a for a in k.body.args if isinstance(a, Apply) and a.args[0] is plan.w)
    values = [_value(e, operands, at) for e in (k.init, plan.multiplier, plan.k_high,
                                                 plan.shift)]
    taps = [[_value(conv, operands, {**at, KY: ky, KX: kx, CI: 0}) for kx in range(WINDOW)]
            for ky in range(WINDOW)]
    if any(v is None for v in values) or any(t is None for row in taps for t in row):
        return None
    bias, multiplier, k_high, shift = (np.broadcast_to(v, (channels,)) for v in values)
    # a layer of one channel adds its bias in the epilogue (loops/depthwise5.py)
    bias = bias.astype(np.int64) + plan.bias
    w = np.stack([np.stack([np.broadcast_to(t, (channels,)) for t in row]) for row in taps])
    reach = np.abs(bias) + 128 * np.abs(w).sum(axis=(0, 1))
    doubled = bool(np.all(reach < _BOUND) and np.all(np.abs(2 * k_high) < (1 << 31)))
    f = 2 if doubled else 1
    fields = []
    for kx in range(WINDOW):
        col = f * w[:, kx]
        w01, w23 = _halves(col[0], col[1]), _halves(col[2], col[3])
        w12, w34 = _halves(col[1], col[2]), _halves(col[3], col[4])
        if plan.stride == 1:
            fields += [w01, w23, f * bias, w12, w34] if kx == 0 else [w01, w23, w12, w34]
        else:  # a stride of 2: no W12
            fields += [w01, w23, w34, f * bias] if kx == 0 else [w01, w23, w34]
    last = 0
    if plan.stride == 2:  # each group's last channel ends the kernel's channel loop
        w_in, inputs = k.operands[plan.x.operand].shape[2:]
        group = (channel_group(w_in, inputs, slots(2)) or inputs) * plan.depth_multiplier
        c = np.arange(channels)
        last = np.where(((c + 1) % group == 0) | (c == channels - 1), LAST_CHANNEL, 0)
    fields += [multiplier, f * k_high, shift + (1 if doubled else 0) + last]
    table = np.stack([np.asarray(x, dtype=np.int64) for x in fields], axis=-1)
    if table.shape != (channels, record_words(plan.stride)):
        return None
    pad = plan.pad
    tail = [DOUBLED_FLAG if doubled else 0, (pad & 0xFFFF) | ((pad & 0xFFFF) << 16),
            (pad & 0xFF) * 0x01010101]
    words = np.concatenate([table.reshape(-1), np.asarray(tail, np.int64)])
    return (words & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _overlap_safe(step: Step, plan: Depthwise5Plan, schedule: LoopSchedule) -> bool:
    """Whether the kernel may run a step whose schedule the arena plan fixed (its result
    placed over its dying input, schedule/overlap.py) at the arena's distance. The walk
    times the kernel as its nest says (a tile of two rows reads its window's input rows,
    then stores); the kernel reads every input row no later (it stages a pair of rows,
    every channel, just before the first tile that reads it) and stores a tile's
    outputs after the staging, so a distance the walk finds safe is safe for it.
    Not with channel groups (a group's rows are all stored before the next group's are
    read) nor bottom-up (the kernel runs top-down)."""
    k = step.kernel
    w_in, channels = k.operands[plan.x.operand].shape[2:]
    x, out = step.buffers[plan.x.operand], step.buffers[len(k.operands)]
    if any(n.reverse for n in step.schedule.nests) or \
            channel_group(w_in, channels, slots(plan.stride)) != channels or \
            x.kind != "arena" or out.kind != "arena" or x.index < out.index:
        return False
    reads = {i for i, b in enumerate(step.buffers[:len(k.operands)]) if b == x}
    return OverlapWalk(k, reads).safe_at(schedule, x.index - out.index)


def store_depthwise5_records(program: Program, target: Target, flash_room: int) -> int:
    """Binds the records, and the microkernel's schedule, to every 5x5 depthwise layer of
    `program` on `target` (module docstring) while their bytes fit `flash_room`,
    rewriting `program` in place. Returns how many it bound."""
    if not has_depthwise5(target):
        return 0

    def found(step: Step) -> tuple[LoopSchedule, np.ndarray] | None:
        k = step.kernel
        plan = depthwise5_plan(k)
        if plan is None or choose_kernel(k, target.tuning_targets, (DEPTHWISE5, TILES),
                                         DEPTHWISE5) == TILES:
            return None
        schedule = depthwise5_schedule(k)
        if step.schedule is not None and not _overlap_safe(step, plan, schedule):
            return None
        records = depthwise5_records(k, plan, constant_operands(program, step))
        return None if records is None else (schedule, records)
    return bind_scheduled_records(program, flash_room, found)
