"""Depthwise 16x8 3x3 windows (int16 activations, int8 weights) with paired rows (SMLAD).

TFLite's 16x8 depthwise layers ran the generated scalar tiles, their requantization
the int64 form (a 64-bit product, rounding and shift per output): 67 instructions an
output, 0.135 MAC per instruction (odd_cnn_16x8's 12x12x61 layer, bench/results/
converter_models.md). runtime_c/ukernel/dsp/mrt_dw16_dsp.c computes such a layer in one
call: the input rows staged as 16-bit pairs of rows (one PKHBT of two loaded words: an
int16 word already holds two channels), the int8 row-pair kernel's 6 multiplies an
output (4 at a stride of 2, one output row a tile), and the requantization as one
SMMULR (schedule/depthwise16_records.py says why it is exact).

`depthwise16_plan` recognises the kernel: kernel/lower.py's depthwise convolution with
a multiplier of 1 or 2, a 3x3 window of stride 1 or 2 (the same along rows and columns)
and dilation 1, an i16 input and result
whose epilogue is the 16x8 requantization (`_requantization16`): the int32 sum widened
to int64, plus the bias, times the reduced multiplier, plus the rounding, shifted right,
narrowed to int32, plus 0 (TFLite's 16x8 output zero point), clamped to the int16 range
or to [0, 32767] (a fused ReLU), narrowed to i16; and staged rows that fit STACK_BYTES.
Whether the records' values allow the kernel (its int32 sums exact, a shift SMMULR can
take) is decided when they are made.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.kernel.form import Acc, Const, Expr, Kernel, Load
from toolchain.loops.affine import affine_of
from toolchain.loops.depthwise import (
    CI,
    KX,
    KY,
    STACK_BYTES,
    C,
    N,
    X,
    Y,
    _channel_only,
    _depth_multiplier,
    _is,
    depthwise_window,
)
from toolchain.loops.schedule import LoopSchedule, Nest
from toolchain.target.descriptors import Target

__all__ = ["RECORD_WORDS", "Depthwise16Plan", "depthwise16_plan", "depthwise16_schedule",
           "has_depthwise16", "stack_bytes"]

WINDOW = 3
# Per output channel (mrt_dw16_dsp.c's order): W01 and W12 of window columns 0, 1, 2,
# the bias, M.
RECORD_WORDS = 8
SLOTS = 2  # staged pairs of rows: A (rows y-1, y) and B (y+1, y+2) of output rows y, y+1
STRIDES = (1, 2)  # stride 2: output row y reads pair y and pair y + 1's low half
# The clamps the kernel's saturation does: SSAT 16, or USAT 15 (a fused ReLU).
CLAMPS = {(-32768, 32767): False, (0, 32767): True}


def has_depthwise16(target: Target) -> bool:
    """Whether `target` runs the microkernel: the DSP extension (SMLAD, SMMULR, SSAT)."""
    return target.capabilities.dsp


@dataclass(frozen=True)
class Depthwise16Plan:
    """What the 16x8 kernel needs of a kernel: its input and weight loads, the input's
    offsets (output y reads input rows y + row .. y + row + 2, columns likewise), the
    per-channel expressions of the requantization (bias, reduced multiplier, rounding,
    total shift), whether the clamp is a ReLU's, and the depth multiplier."""

    x: Load
    w: Load
    row: int
    col: int
    bias: Expr
    multiplier: Expr
    rounding: Expr
    shift: Expr
    relu: bool
    depth_multiplier: int = 1
    stride: int = 1  # along rows and columns: 1 or 2


def _int_const(e: Expr) -> int | None:
    return int(e.value) if isinstance(e, Const) else None


def _requantization16(epilogue: Expr | None) -> tuple[Expr, Expr, Expr, Expr, bool] | None:
    """(bias, multiplier, rounding, shift, relu) when `epilogue` is the 16x8
    requantization of the module docstring, each value depending on the output channel
    at most; else None."""
    e = epilogue
    if not (_is(e, "convert", 1) and e.dtype.name == "i16"):
        return None
    e = e.args[0]
    if not _is(e, "clamp", 3):
        return None
    bounds = (_int_const(e.args[0]), _int_const(e.args[2]))
    if bounds not in CLAMPS:
        return None
    e = e.args[1]
    if not (_is(e, "add", 2) and _int_const(e.args[1]) == 0):
        return None
    e = e.args[0]
    if not (_is(e, "convert", 1) and e.dtype.name == "i32"):
        return None
    e = e.args[0]
    if not _is(e, "shift_right_arithmetic", 2):
        return None
    e, shift = e.args
    if not _is(e, "add", 2):
        return None
    e, rounding = e.args
    if not _is(e, "multiply", 2):
        return None
    e, multiplier = e.args
    if not _is(e, "add", 2):
        return None
    widened, bias = e.args
    if not (_is(widened, "convert", 1) and widened.dtype.name == "i64"
            and isinstance(widened.args[0], Acc)):
        return None
    parts = (bias, multiplier, rounding, shift)
    return (*parts, CLAMPS[bounds]) if all(_channel_only(p) for p in parts) else None


def staged_columns(k: Kernel, stride: int) -> int:
    """The staged columns: the input columns of the output's windows."""
    return stride * (k.domain[X] - 1) + WINDOW


def stack_bytes(k: Kernel, plan: Depthwise16Plan) -> int:
    """The dispatch's stack buffer: 2 slots of staged pairs of rows, a word per channel
    and staged column."""
    channels = k.operands[plan.x.operand].shape[3]
    return 4 * SLOTS * channels * staged_columns(k, plan.stride)


def depthwise16_plan(k: Kernel) -> Depthwise16Plan | None:
    """The plan of `k` when the 16x8 microkernel computes it (module docstring), else
    None."""
    found = depthwise_window(k, WINDOW, result="i16")
    if found is None:
        return None
    x, w, (n, y, col, _) = found
    if k.operands[x.operand].dtype.name != "i16" or \
            (x.pad is not None and _int_const(x.pad) != 0):
        return None
    depth = _depth_multiplier(x.index[3])
    stride = dict(y.terms).get(Y)
    if n.terms not in ((), ((N, 1),)) or n.const or depth is None or \
            stride not in STRIDES or dict(y.terms) != {Y: stride, KY: 1} or \
            dict(col.terms) != {X: stride, KX: 1}:
        return None
    h_in, w_in, channels = k.operands[x.operand].shape[1:]
    # The staged columns are input columns col .. col + staged_columns - 1, those
    # outside the input zeros: a SAME or VALID window reaches one past either side.
    if channels * depth != k.domain[C] or col.const not in (-1, 0) or \
            y.const not in (-1, 0) or \
            col.const + staged_columns(k, stride) - 1 > w_in:
        return None
    fw = [affine_of(i) for i in w.index]
    if any(f is None or len(f.terms) > 1 or f.const or (f.terms and f.terms[0][1] != 1)
           for f in fw):
        return None
    if sorted(f.terms[0][0] for f in fw if f.terms and f.terms[0][0] != CI) != [C, KY, KX]:
        return None
    if not (isinstance(k.init, Const) and k.init.value == 0):
        return None
    parts = _requantization16(k.epilogue)
    if parts is None:
        return None
    plan = Depthwise16Plan(x, w, y.const, col.const, *parts, depth_multiplier=depth,
                           stride=stride)
    return plan if stack_bytes(k, plan) <= STACK_BYTES else None


def depthwise16_schedule(k: Kernel, reverse: bool = False) -> LoopSchedule:
    """The schedule that calls the microkernel for `k`: rows blocked by 2, a tile as
    wide as the row, the channels inside the columns, every tap unrolled (the order
    the arena's overlap walk models; the kernel reads each row pair's input before
    its first store), bottom-up with `reverse` (a result placed above its input). At a
    stride of 2 a tile is one row."""
    plan = depthwise16_plan(k)
    rows = min(1 if plan is not None and plan.stride == 2 else 2, k.domain[Y])
    blocks = tuple((d, f) for d, f in ((Y, rows), (X, k.domain[X])) if f > 1)
    nest = Nest(k.domain, k.n_parallel, (N, Y, X, C), unroll=(KY, KX, CI), blocks=blocks,
                reverse=reverse, depthwise16=True)
    return LoopSchedule(k.name, (nest,))
