"""Depthwise int8 5x5 windows computed two output rows at a time with paired rows (SMLAD).

The 3x3 row pairs (loops/depthwise.py) pair the window's rows in SMLAD's halves; a 5x5
window does the same with three staged pairs of input rows for two output rows (runtime_c/
ukernel/dsp/mrt_dw5_dsp.c says how): 15 multiplies an output of 25 MACs where the
generated tiles, scalar LDRSB + MLA code with bounds tests at the 2-column border, ran
about 10 instructions a MAC (0.094-0.102 MAC per instruction over 1-67 channels on 10x10,
bench/results/shapes.md).

`depthwise5_plan` recognises the kernel: kernel/lower.py's depthwise convolution with a
multiplier of 1 or 2, a 5x5 window of dilation 1 and stride 1 or 2 (the same along rows
and columns; SAME or VALID: the window reaches at most 2 columns past either side of the
input), an i8 result whose epilogue is kernel/requant.py's folded requantization clamped
to int8, and a per-channel bias: the same forms loops/depthwise.py's `row_pair_plan`
takes for 3x3, read by its helpers. At a stride of 2 two output rows read 4 staged pairs
(mrt_dw5_s2_s8). The staged rows (3 slots, or 4 at stride 2, a word per column and
channel) are made per group of input channels (`channel_group`) small enough for
STACK_BYTES, so a wide layer (MobileNetV3's 14x14 over 480 channels) is taken too, its
groups one after the other.

The schedule (`depthwise5_schedule`, Nest.depthwise5) is bound by
schedule/depthwise5_records.py with the records, where the arena plan left the step's
schedule free or the overlap walk finds the kernel's order safe where it placed the
result over its input.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.kernel.form import Kernel
from toolchain.loops.access import lane_dim
from toolchain.loops.affine import affine_of
from toolchain.loops.depthwise import (
    CI,
    KX,
    KY,
    STACK_BYTES,
    C,
    N,
    RowPairPlan,
    X,
    Y,
    _requantization_plus,
    depthwise_window,
    input_depth,
)
from toolchain.loops.schedule import LoopSchedule, Nest
from toolchain.loops.tables import SIMD
from toolchain.target.descriptors import Target

__all__ = ["RECORD_WORDS", "S2_RECORD_WORDS", "SLOTS", "WINDOW", "Depthwise5Plan",
           "channel_group", "depthwise5_plan", "depthwise5_schedule", "has_depthwise5",
           "record_words", "slots", "stack_bytes", "takes_depthwise5"]

WINDOW = 5
# The window columns the staged rows hold past either side of the input (SAME's 2).
PAD_COLUMNS = 2
SLOTS = 3  # staged pairs of rows a tile of two output rows reads (stride 1)
SLOTS_S2 = 4  # stride 2: rows 2y - 2 .. 2y + 4, pairs y .. y + 3
STRIDES = (1, 2)
LAST_CHANNEL = 0x100  # stride 2: a group's last channel, in its shift word
# Per output channel (mrt_dw5_dsp.c's order): W01, W23, the bias, W12, W34 of window
# column 0, W01, W23, W12, W34 of columns 1-4, M, K_hi, s - 1 (s and 2 K_hi doubled).
RECORD_WORDS = 5 + 4 * (WINDOW - 1) + 3
# A stride of 2 (no W12): W01, W23, W34 and the bias of column 0, W01, W23, W34 of
# columns 1-4, M, K_hi, s - 1 (| LAST_CHANNEL).
S2_RECORD_WORDS = 4 + 3 * (WINDOW - 1) + 3
# Instructions an output, measured with bench/shapes.py (10x10 and 14x14 maps over 16,
# 48, 61 and 64 channels, every one within 2 % of these): the microkernel on cortex-m4
# by stride (its staging, calls and requantization included), and a SIMD row's int8
# lanes where they take every channel in whole vectors (Helium on cortex-m55: 42 at
# either stride, the 2-wide border's outputs tiles with every tap tested; over 61
# channels the 13 past the last vector run scalar, 73 an output). So on a core with
# both, the kernel takes every 5x5 layer of stride 1, and of stride 2 those whose
# channels are no whole vectors: the lanes' 42 beat its 44 there (10x10 over 64
# channels: 67,960 instructions in lanes on cortex-m55, 71,139 in the kernel).
KERNEL_OUTPUT_COST = {1: 34, 2: 44}
LANES_OUTPUT_COST = 42


def record_words(stride: int) -> int:
    """Words a channel's record takes for the kernel of `stride`."""
    return RECORD_WORDS if stride == 1 else S2_RECORD_WORDS


def slots(stride: int) -> int:
    """Staged pairs of rows the kernel of `stride` holds."""
    return SLOTS if stride == 1 else SLOTS_S2


def has_depthwise5(target: Target) -> bool:
    """Whether `target` runs the microkernel: the DSP extension (SMLAD, SMLABT, SSAT)."""
    return target.capabilities.dsp


def takes_depthwise5(k: Kernel, target: Target) -> bool:
    """Whether folded kernel `k` is computed by the microkernel on `target` (the
    scheduler asks it before it keeps a Helium kernel's requantization unfolded for its
    lanes, schedule/program.py): a DSP core, a 5x5 plan, and no int8 lanes that take
    every channel in whole vectors for less (KERNEL_OUTPUT_COST)."""
    plan = depthwise5_plan(k) if has_depthwise5(target) else None
    if plan is None:
        return False
    lanes = SIMD[target.capabilities.simd].int8_lanes
    c = lane_dim(k)
    whole = bool(lanes) and plan.depth_multiplier == 1 and c is not None and \
        k.domain[c] % lanes == 0
    return not (whole and KERNEL_OUTPUT_COST[plan.stride] > LANES_OUTPUT_COST)


@dataclass(frozen=True)
class Depthwise5Plan(RowPairPlan):
    """loops/depthwise.py's RowPairPlan (the loads, offsets, pad value, requantization
    and depth multiplier) and the window's stride, the same along rows and columns."""

    stride: int = 1


def depthwise5_plan(k: Kernel) -> Depthwise5Plan | None:
    """The plan of `k` when the 5x5 microkernels compute it (module docstring), else
    None."""
    found = depthwise_window(k, WINDOW)
    if found is None:
        return None
    x, w, (n, y, col, c_form) = found
    depth = input_depth(k, x, c_form)
    stride = dict(y.terms).get(Y)
    if n.terms not in ((), ((N, 1),)) or n.const or stride not in STRIDES or \
            dict(y.terms) != {Y: stride, KY: 1} or \
            dict(col.terms) != {X: stride, KX: 1} or depth is None:
        return None
    w_in, channels = k.operands[x.operand].shape[2:]
    # The staged columns run from PAD_COLUMNS before the input to PAD_COLUMNS after it.
    last = stride * (k.domain[X] - 1) + col.const + WINDOW - 1
    if channels * depth != k.domain[C] or col.const < -PAD_COLUMNS or \
            last > w_in - 1 + PAD_COLUMNS:
        return None
    fw = [affine_of(i) for i in w.index]
    if any(f is None or len(f.terms) > 1 or f.const or (f.terms and f.terms[0][1] != 1)
           for f in fw):
        return None
    if sorted(f.terms[0][0] for f in fw if f.terms and f.terms[0][0] != CI) != [C, KY, KX]:
        return None
    # A layer of one channel adds its bias in the epilogue (b, into the records' bias).
    parts = _requantization_plus(k.epilogue)
    if parts is None:
        return None
    pad = int(x.pad.value) if x.pad is not None else 0
    multiplier, k_high, shift, bias = parts
    plan = Depthwise5Plan(x, w, y.const, col.const, pad, multiplier, k_high, shift,
                          depth_multiplier=depth, bias=bias, stride=stride)
    return plan if channel_group(w_in, channels, slots(stride)) is not None else None


def stack_bytes(w_in: int, channels: int, group: int, slots: int = SLOTS) -> int:
    """The dispatch's stack buffers with input channels in groups of `group`: the staged
    rows (`slots` pairs, a word per column and channel, PAD_COLUMNS pad columns each
    side) and a run of pad values (a whole row where one group takes every channel and a
    row is staged in one call; else one group's values)."""
    pad_values = w_in * channels if group >= channels else group
    return 4 * slots * (w_in + 2 * PAD_COLUMNS) * group + 4 * -(-pad_values // 4)


def channel_group(w_in: int, channels: int, slots: int = SLOTS) -> int | None:
    """Input channels a group of staged rows holds for an input `w_in` columns wide:
    all of them where that fits STACK_BYTES, else the fewest equal groups (the last one
    smaller) that fit; None when not even one channel does."""
    for groups in range(1, channels + 1):
        group = -(-channels // groups)
        if stack_bytes(w_in, channels, group, slots) <= STACK_BYTES:
            return group
    return None


def depthwise5_schedule(k: Kernel) -> LoopSchedule:
    """The schedule that calls the microkernel for `k`: rows blocked by 2, a tile as
    wide as the row, the channels (of a group) inside the columns, every tap unrolled."""
    rows = min(2, k.domain[Y])
    blocks = tuple((d, f) for d, f in ((Y, rows), (X, k.domain[X])) if f > 1)
    nest = Nest(k.domain, k.n_parallel, (N, Y, X, C), unroll=(KY, KX, CI), blocks=blocks,
                depthwise5=True)
    return LoopSchedule(k.name, (nest,))
