"""The 16x8 depthwise microkernel's per-channel records and schedule, bound at build time.

runtime_c's mrt_dw16_s16 (loops/depthwise16.py, codegen/depthwise16.py) reads per
output channel the weight words W01 = (w0, w1) and W12 = (w1, w2) of each window column
(w_j the tap of window row j, 16-bit halves), the bias and M: 8 words, made here from
the kernel's constant operands with schedule/row_pair_records.py's reader.

The arithmetic, TFLite's 16x8 requantization as the kernel's epilogue writes it: the
int64 sum plus bias x, times the reduced multiplier m (0 <= m < 2**15), plus 2**(t-1),
shifted right by t. The kernel keeps x in int32, which is exact where every channel's
|bias| + 32768 x sum |w| stays below 2**31 (the 9 products of int16 and int8 values
besides the bias; SMLAD's wrap-around partial sums are then exact too), and computes
the rest as SMMULR(x, m << (32 - t)) = (x m 2**(32-t) + 2**31) >> 32, the same value
(numerator and denominator times 2**(32 - t)) where 16 <= t <= 32 (m << (32 - t) an
int32; TFLite's shifts for a layer's usual scales, t about 20-28) and the rounding is
2**(t-1). A layer where one channel falls outside keeps its generated tiles.

Like the 5x5 records (schedule/depthwise5_records.py), they are bound with the schedule
that calls the kernel where the arena plan left the step's schedule free or the overlap
walk finds the kernel's order safe at the distance it placed the result over its input,
and while they fit the --optimize mode's flash room (none under `size`: 32 bytes a
channel where the int8 weights are 9).
"""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import Apply, Kernel
from toolchain.loops.depthwise import CI, KX, KY, C
from toolchain.loops.depthwise16 import (
    RECORD_WORDS,
    WINDOW,
    Depthwise16Plan,
    depthwise16_plan,
    depthwise16_schedule,
    has_depthwise16,
)
from toolchain.loops.schedule import LoopSchedule
from toolchain.schedule.overlap import OverlapWalk
from toolchain.schedule.program import Program, Step
from toolchain.schedule.row_pair_records import _value
from toolchain.schedule.step_records import bind_scheduled_records, constant_operands
from toolchain.target.descriptors import Target

__all__ = ["depthwise16_records", "store_depthwise16_records"]

_INT32 = 1 << 31
# The largest |x| of an int16 value, the bound of one product's |x w| over |w|.
_X_MAX = 32768
SHIFTS = range(16, 33)  # total shifts t SMMULR takes exactly (module docstring)


def _halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo in the low 16 bits, hi in the high ones (int64 words, masked later)."""
    return (lo.astype(np.int64) & 0xFFFF) | ((hi.astype(np.int64) & 0xFFFF) << 16)


def depthwise16_records(k: Kernel, plan: Depthwise16Plan,
                        operands: list[np.ndarray | None]) -> np.ndarray | None:
    """The records of kernel `k` (module docstring) from its constant operands
    (`operands[j]`: operand j's array, None for a non-constant), as int32 words; None
    when a value is not a constant or a channel's values are outside what the kernel
    computes exactly."""
    channels = k.domain[C]
    at = {C: np.arange(channels)}
    conv = next((a for a in k.body.args if isinstance(a, Apply) and a.args[0] is plan.w),
                None)
    if conv is None:
        return None
    values = [_value(e, operands, at) for e in (plan.bias, plan.multiplier, plan.rounding,
                                                 plan.shift)]
    taps = [[_value(conv, operands, {**at, KY: ky, KX: kx, CI: 0}) for kx in range(WINDOW)]
            for ky in range(WINDOW)]
    if any(v is None for v in values) or any(t is None for row in taps for t in row):
        return None
    bias, m, rounding, shift = (np.broadcast_to(v, (channels,)).astype(np.int64)
                                for v in values)
    w = np.stack([np.stack([np.broadcast_to(t, (channels,)) for t in row]) for row in taps])
    if np.any(np.abs(w) > 128):
        return None
    reach = np.abs(bias) + _X_MAX * np.abs(w).sum(axis=(0, 1))
    if np.any(reach >= _INT32) or np.any((shift < SHIFTS.start) | (shift >= SHIFTS.stop)):
        return None
    if np.any(rounding != np.left_shift(1, shift - 1)) or np.any(m < 0):
        return None
    big_m = m << (32 - shift)
    if np.any(big_m >= _INT32):
        return None
    fields = []
    for kx in range(WINDOW):
        col = w[:, kx]
        fields += [_halves(col[0], col[1]), _halves(col[1], col[2])]
    fields += [bias, big_m]
    table = np.stack([np.asarray(f, dtype=np.int64) for f in fields], axis=-1)
    if table.shape != (channels, RECORD_WORDS):
        return None
    return (table.reshape(-1) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _overlap_safe(step: Step, schedule: LoopSchedule, plan: Depthwise16Plan) -> bool:
    """Whether the kernel may run a step whose schedule the arena plan fixed (its result
    placed over its dying input, schedule/overlap.py) at the arena's distance, in the
    direction of `schedule` (bottom-up where the result is above its input). The walk
    times the kernel as its nest says (a tile of two rows reads its window's input rows,
    then stores); the kernel stages a pair of rows, every channel, just before the first
    tile that reads it and stores a tile's outputs after that, so it reads every input
    no later and a distance the walk finds safe is safe for it."""
    k = step.kernel
    x, out = step.buffers[plan.x.operand], step.buffers[len(k.operands)]
    if x.kind != "arena" or out.kind != "arena":
        return False
    reverse = schedule.nests[0].reverse
    if (x.index < out.index) != reverse:
        return False
    reads = {i for i, b in enumerate(step.buffers[:len(k.operands)]) if b == x}
    return OverlapWalk(k, reads).safe_at(schedule, abs(x.index - out.index))


def store_depthwise16_records(program: Program, target: Target, flash_room: int) -> int:
    """Binds the records, and the microkernel's schedule, to every 16x8 depthwise 3x3
    layer of `program` on `target` (module docstring) while their bytes fit
    `flash_room`, rewriting `program` in place. Returns how many it bound."""
    if not has_depthwise16(target):
        return 0

    def found(step: Step) -> tuple[LoopSchedule, np.ndarray] | None:
        k = step.kernel
        plan = depthwise16_plan(k)
        if plan is None:
            return None
        reverse = step.schedule is not None and \
            any(n.reverse for n in step.schedule.nests)
        schedule = depthwise16_schedule(k, reverse)
        if step.schedule is not None and not _overlap_safe(step, schedule, plan):
            return None
        records = depthwise16_records(k, plan, constant_operands(program, step))
        return None if records is None else (schedule, records)
    return bind_scheduled_records(program, flash_room, found)
