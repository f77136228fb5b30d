"""Depthwise int8 3x3 windows computed two output rows at a time with paired rows (SMLAD).

A depthwise layer sums over its window's taps only, and both of its operands change
with the output channel, so the packed steps of the other int8 layers (4 elements of
one reduction, along the input channels) never apply to it: its tiles were scalar
LDRSB + MLA code (docs/architecture.md, "Depthwise tiles"). SMLAD adds two products to
one accumulator, so its two halves must be two taps of the same output: two rows of the
window. For output rows y and y+1 of a 3-row window, input rows y and y+1 serve both,
so a tile of two rows takes, per window column, the input of rows (y-1, y) against the
weights (w0, w1) for row y and of rows (y+1, y+2) against (w1, w2) for row y+1; each
output's third row is one product against a half of the same weight words (SMLABB-
style): 6 multiplies per output of 9 MACs. runtime_c's mrt_dw3_rowpair_s8 computes a
row pair, its requantization included; codegen/depthwise_pairs.py stages the input
rows for it and calls it (the why of assembly is there).

`row_pair_plan` recognises the kernel: kernel/lower.py's depthwise convolution with a
multiplier of 1 or 2 (input `x[0, y + ky + a, x + kx + b, c]` or `c / 2`, with or
without a pad value, weights indexed by (ky, kx, c)), a 3x3 window of stride 1 (or 2
with a multiplier of 1: codegen/depthwise_s2.py, `RowPairPlan.stride`) and dilation 1,
an i8 result
whose epilogue is kernel/requant.py's folded requantization (every s >= 2) clamped to
[-128, 127], a sum started from a per-channel value (the bias), and staged buffers
that fit STACK_BYTES. `row_pair_nest` gives its nest on targets with the DSP extension
(capabilities.dsp: SMLAD and SMLABB, Helium cores included): rows blocked by 2 and a
tile as wide as the row, the channels outside the columns, no interior (the staged
rows carry the padding). That is the order the microkernel stores in, as far as the
arena's overlap walk (schedule/overlap.py) can tell: it reads every input of a row pair
before its first store, earlier than the walk assumes, which is safe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from toolchain.kernel.form import Acc, Apply, Const, Expr, Index, Kernel, Load, postorder
from toolchain.loops.affine import Affine, affine_of
from toolchain.loops.patterns import dot_operands, int16_by_int8
from toolchain.loops.schedule import Nest
from toolchain.target.descriptors import Target

__all__ = ["ASM_CHANNELS", "ASM_ROOM_CHANNELS", "ASM_S2_CALL_BYTES", "ASM_S2_COLUMN_BYTES",
           "ASM_S2_ONE_ROW_BYTES", "ASM_S2_ROOM_BYTES", "ASM_S2_ROW_LIMIT", "ASM_S2_TILE_BYTES",
           "ASM_TILE_BYTES", "ASM_UNROLL_TILES", "QUAD_RECORD_WORDS", "ROW_PAIR_OUTPUT_COST",
           "TAILS_FLAG", "RowPairPlan", "asm_code_bytes", "asm_s2_bands", "asm_s2_folds",
           "asm_s2_code_bytes", "asm_s2_period", "asm_s2_tiles", "asm_tiles", "band_major",
           "banded_row_order", "depthwise_window", "has_row_pairs", "input_depth",
           "live_columns", "output_cost", "quad_rows", "record_words", "records_over_row",
           "row_pair_nest", "row_pair_plan"]

# Instructions per output of the row-pair microkernel, its requantization and staging
# included, measured on cortex-m4 (bench/shapes.py --grid small: 18 with multiplier 2,
# 20 over 16 or 64 channels, 23.5 over 3). Where the target's SIMD row has int8 lanes
# too (Helium), the lanes are taken only when their modelled cost is below this.
ROW_PAIR_OUTPUT_COST = 20
# At a stride of 1, by the tile's rows (`output_cost`): the 4-row kernel, re-measured on
# cortex-m4 after its tiles staged two pairs a call (bench/shapes.py --grid small,
# 16-64 channels): 19x6 14.31-14.51 (16 channels 26,474 = 14.51), 10x10 14.66-14.80
# (64: 93,839 = 14.66; 16: 23,683 = 14.80), so 14.6 (15.2 before, fitted to 14.6-15.5);
# row pairs 16.8-17.1 (12x12 over 64 channels and 6x6 over 128 when their 3 slots passed
# STACK_BYTES; 19.9 over a 3x3 map).
QUAD_OUTPUT_COST = 14.6
PAIR_OUTPUT_COST = 17.0
# The dispatch's stack buffer (the staged rows): kws's layers take 3.9 KB of
# the boards' 16 KB stacks, vww_96's 12x12 over 64 channels 8 KB.
STACK_BYTES = 10240
# The 4-row tiles' 3 slots may take 1 KB more: 12x12 maps over 61-64 channels (odd_cnn's
# 12x12x61, 10,248 B; vww_96's 12x12x64, 10,752 B) ran as row pairs at 10 KB, 16 % and
# 2 % slower as layers (bench/results/converter_models.md); vww's stack grows 10.5 ->
# 11.1 KB measured, under the boards' 16 KB.
QUAD_STACK_BYTES = 11264
# Per channel: (w0, w1), (w1, w2) of window column 0, the bias, those of columns 1 and 2,
# M, K_hi, s - 1 (runtime_c/ukernel/dsp/mrt_dw_dsp.c's order: the bias comes in the
# first column's LDM); the last channel's shift word has LAST_CHANNEL set (the kernels'
# ASR reads the low byte), which ends the 4-row kernel's channel loop.
RECORD_WORDS = 10
LAST_CHANNEL = 0x100
DOUBLED_FLAG = 2  # mrt_dw_rowpair's flags (and the records' last word): doubled records
# The 4-row kernels' records (mrt_dw3_quad_s8, mrt_dw3_quad_tails_s8) have two words more:
# s again (the index of the tails kernel's TBH) and the stack offset of the code that
# follows the channel (TAIL_NEXT: head A, head B, the column's end, the return). Where
# every channel's records are doubled and s is an SSAT shift (1-31), the records' last
# word has TAILS_FLAG and the dispatch's 4-row tiles are mrt_dw3_quad_tails_s8's.
QUAD_RECORD_WORDS = 12
TAILS_FLAG = 4
TAIL_NEXT_A, TAIL_NEXT_B, TAIL_COLUMN_END, TAIL_RETURN = 8, 12, 16, 20
# The tails kernel's records repeated for every output column of a row (schedule/
# row_pair_records.py) where they take at most this many bytes: the column's end (4
# instructions a column a call) then never runs, which few-channel layers feel (10x10
# over 8 channels: 108 of its 12,032 instructions), for at most 4 KB more flash a layer.
ROW_RECORDS_BYTES = 4096
# 4 output rows a tile (runtime_c's mrt_dw3_quad_s8) where its 3 slots of staged rows fit
# QUAD_STACK_BYTES and the map has 4 rows; else row pairs (2 slots).
QUAD_ROWS = 4
QUAD_SLOTS = 3
STRIDES = (1, 2)  # the window's stride along rows and columns (2: multiplier 1 only)
MIN_BAND = 3  # output columns of a stride-2 band where a row takes several (`band`)
# The kernel's dims (kernel/lower.py's depthwise convolution, NHWC): parallel n, y, x,
# c (the output channel); reduced ky, kx and the input channel (extent 1).
N, Y, X, C, KY, KX, CI = range(7)
_I32_MIN = -(1 << 31)


@dataclass(frozen=True)
class RowPairPlan:
    """What the row-pair code needs of a kernel: its input and weight loads, the input's
    offsets (`row`, `col`: output y reads input rows y + row .. y + row + 2), the pad
    value, the per-channel expressions of the requantization (its multiplier M, the
    high word of its offset K_hi, its shift s - 1), and the layer's depth multiplier."""

    x: Load
    w: Load
    row: int
    col: int
    pad: int
    multiplier: Expr
    k_high: Expr
    shift: Expr
    depth_multiplier: int = 1  # output channels per input channel: 1 or 2
    stride: int = 1  # 2: codegen/depthwise_s2.py (multiplier 1)
    bias: int = 0  # added to the sum before the requantization, besides the init

    def stack_bytes(self, k: Kernel, slots: int = 2) -> int:
        """The dispatch's stack buffer for kernel `k` (codegen/depthwise_pairs.py): the
        staged rows (`slots` pairs of rows: 2 for row pairs, 3 for 4-row tiles; rows
        outside the input are staged from the pad columns' pair, no row of pad values).
        The per-channel records are a constant (schedule/row_pair_records.py); a program
        without that pass makes them on the stack too, 40 or 48 bytes a channel more.
        With a stride of 2, those of a band of output columns (`band`)."""
        w_in, c = k.operands[self.x.operand].shape[2:]
        if self.stride == 2:  # no band: the whole row's
            return _band_bytes(2 * (self.band(k) or k.domain[X]) + 1, c)
        return 4 * slots * (w_in + 2) * c

    @property
    def slots(self) -> int:
        """The least slots of staged row pairs its kernel takes: 2 (row pairs), 3 with
        a stride of 2 (two output rows read three pairs, codegen/depthwise_s2.py)."""
        return 2 if self.stride == 1 else QUAD_SLOTS

    def band(self, k: Kernel) -> int:
        """Output columns per band of a stride-2 kernel (codegen/depthwise_s2.py): the
        widest of the fewest equal bands whose 2 x columns + 1 staged input columns (3
        slots) and pad row fit STACK_BYTES (wide rows: vww_96's 24x24x32 takes 10.4 KB
        whole); 0 when no band of MIN_BAND columns fits. Each of several bands stages
        3 pairs of rows a call where one band stages 2 (codegen/depthwise_s2.py): with
        bands of 2 columns that is 14 instructions an output, the kernel 15.5 more, no
        better than the generated tiles (vww_96's 6x6x128: 40,880 against 34,350)."""
        w_out, c = k.domain[X], k.operands[self.x.operand].shape[3]
        return next((b for b in (-(-w_out // n) for n in range(1, w_out + 1))
                     if _band_bytes(2 * b + 1, c) <= STACK_BYTES and
                     (b == w_out or b >= MIN_BAND)), 0)


def _band_bytes(columns: int, channels: int) -> int:
    """Staged words of `columns` input columns in 3 slots, and a pad row as long."""
    return 4 * QUAD_SLOTS * columns * channels + 4 * -(-columns * channels // 4)


def _is(e: Expr, op: str, n: int) -> bool:
    return isinstance(e, Apply) and e.op == op and len(e.args) == n


def _const(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and e.value == value


def _acc(e: Expr) -> bool:
    return isinstance(e, Acc)


def _acc_plus(e: Expr) -> int | None:
    """b when `e` is the sum plus a constant b (0: the sum itself; a layer of one channel
    adds its bias in the epilogue, the per-channel ones start the sum from it), else
    None."""
    if _acc(e):
        return 0
    if _is(e, "add", 2):
        a, b = e.args
        if _acc(a) and isinstance(b, Const):
            return int(b.value)
        if _acc(b) and isinstance(a, Const):
            return int(a.value)
    return None


def _channel_only(e: Expr) -> bool:
    """`e` depends on the output channel at most (a record field, a constant)."""
    return all(not isinstance(n, Acc) and (not isinstance(n, Index) or n.dim == C)
               for n in postorder(e))


def _requantization(epilogue: Expr | None) -> tuple[Expr, Expr, Expr] | None:
    """(M, K_hi, s - 1) of `epilogue` as `_requantization_plus` finds them, where the sum
    is requantized alone (b = 0); else None."""
    parts = _requantization_plus(epilogue)
    return parts[:3] if parts is not None and parts[3] == 0 else None


def _requantization_plus(epilogue: Expr | None) -> tuple[Expr, Expr, Expr, int] | None:
    """(M, K_hi, s - 1, b) when `epilogue` is exactly kernel/requant.py's folded form for
    channels with s >= 2 (K's low word 2**30), clamped to [-128, 127] and narrowed to
    i8, of the sum plus a constant b (0 but for a layer of one channel), with those
    three per-channel values; else None."""
    e = epilogue
    if not (_is(e, "convert", 1) and e.dtype.name == "i8"):
        return None
    e = e.args[0]
    if not (_is(e, "clamp", 3) and _const(e.args[0], -128) and _const(e.args[2], 127)):
        return None
    e = e.args[1]
    shift: Expr = Const(0, e.dtype)
    if _is(e, "shift_right_arithmetic", 2):
        e, amount = e.args
        if _is(amount, "and", 2) and _const(amount.args[1], 31):
            amount = amount.args[0]
        shift = amount
    if not (_is(e, "convert", 1) and e.dtype.name == "i32"):
        return None
    e = e.args[0]
    if not (_is(e, "shift_right_arithmetic", 2) and _const(e.args[1], 32)):
        return None
    e = e.args[0]
    if not _is(e, "add", 2):
        return None
    product, offset = e.args
    if not (_is(product, "multiply", 2) and _is(product.args[0], "convert", 1)
            and _acc_plus(product.args[0].args[0]) is not None
            and _is(product.args[1], "convert", 1)):
        return None
    bias = _acc_plus(product.args[0].args[0])
    multiplier = product.args[1].args[0]
    if not (_is(offset, "or", 2) and _is(offset.args[0], "shift_left", 2)
            and _const(offset.args[0].args[1], 32)):
        return None
    high, low = offset.args[0].args[0], offset.args[1]
    if not (_is(high, "convert", 1) and _is(high.args[0], "add", 2)):
        return None
    k_high, sign = high.args[0].args
    if not (_is(sign, "shift_right_arithmetic", 2) and _acc_plus(sign.args[0]) == bias
            and _const(sign.args[1], 31)):
        return None
    # The low word: 2**30 | (the sum's top bit), K's low word read from the record (the
    # fold writes this form only where every channel's low word is 2**30).
    if not (_is(low, "convert", 1) and _is(low.args[0], "convert", 1)
            and low.args[0].dtype.name == "ui32" and _is(low.args[0].args[0], "or", 2)):
        return None
    top = low.args[0].args[0].args[0]
    if not (_is(top, "and", 2) and _acc_plus(top.args[0]) == bias
            and _const(top.args[1], _I32_MIN)):
        return None
    parts = (multiplier, k_high, shift)
    return (*parts, bias) if all(_channel_only(p) for p in parts) else None


def _depth_multiplier(e: Expr) -> int | None:
    """1 when the input's channel index `e` is the output channel (c, or c + the
    reduced input channel of extent 1), 2 when it is c / 2 (kernel/lower.py's depthwise
    convolution with a multiplier of 2), else None."""
    form = affine_of(e)
    if form is not None:
        return 1 if not form.const and dict(form.terms) in ({C: 1}, {C: 1, CI: 1}) else None
    if _is(e, "add", 2):
        a, b = e.args
        if isinstance(b, Index) and b.dim == CI:
            return _depth_multiplier(a)
        if isinstance(a, Index) and a.dim == CI:
            return _depth_multiplier(b)
        return None
    if _is(e, "divide", 2) and isinstance(e.args[0], Index) and e.args[0].dim == C and \
            _const(e.args[1], 2):
        return 2
    return None


def input_depth(k: Kernel, x: Load, c_form: Affine | None) -> int | None:
    """The depth multiplier of `k`'s input load `x` (`c_form`: its channel index's affine
    form): `_depth_multiplier`'s, or, for one input channel, whose index is the reduced
    channel (or 0) whatever the output channel, the output channels (1, or 2 with a
    multiplier of 2); else None."""
    depth = _depth_multiplier(x.index[3])
    if depth is None and k.operands[x.operand].shape[3] == 1 and k.domain[C] in (1, 2) and \
            c_form is not None and C not in c_form.dims:
        depth = k.domain[C]
    return depth


def depthwise_window(k: Kernel, window: int, result: str = "i8"
                     ) -> tuple[Load, Load, list] | None:
    """(input load, weight load, the input index's affine forms) of `k` where it is an
    NHWC depthwise sum over a `window` x `window` window with a `result` result (int8;
    int16 for loops/depthwise16.py), its sums started from a per-channel init and both
    operands read plainly (the input's pad a constant at the most): what the row-pair
    kernels (3x3 here, 5x5 in depthwise5.py) take; else None."""
    if k.n_parallel != 4 or len(k.domain) != 7 or k.domain[N] != 1 or \
            k.domain[CI] != 1 or k.domain[KY] != window or k.domain[KX] != window or \
            k.paired or k.interleaved or k.result.dtype.name != result or \
            k.init is None or not _channel_only(k.init):
        return None
    operands = dot_operands(k) if result == "i8" else int16_by_int8(k)
    if operands is None:
        return None
    forms = {id(ld): [affine_of(i) for i in ld.index] for ld in operands}
    xs = [ld for ld in operands if len(ld.index) == 4 and
          all(f is not None for f in forms[id(ld)][:3]) and Y in forms[id(ld)][1].dims]
    if len(xs) != 1:
        return None
    x = xs[0]
    w = operands[1] if operands[0] is x else operands[0]
    if x.valid is not None or w.pad is not None or w.valid is not None or \
            (x.pad is not None and not isinstance(x.pad, Const)):
        return None
    return x, w, forms[id(x)]


def row_pair_plan(k: Kernel) -> RowPairPlan | None:
    """The plan for `k` when the row-pair microkernel computes it (module docstring),
    else None."""
    found = depthwise_window(k, 3)
    if found is None:
        return None
    x, w, x_forms = found
    n, y, col, c_form = x_forms
    depth = input_depth(k, x, c_form)
    stride = dict(y.terms).get(Y)
    if n.terms not in ((), ((N, 1),)) or n.const or dict(y.terms) != {Y: stride, KY: 1} or \
            dict(col.terms) != {X: stride, KX: 1} or depth is None or \
            stride not in STRIDES or (stride > 1 and depth != 1):
        return None
    w_in, channels = k.operands[x.operand].shape[2:]
    # The last window's columns end at the staged buffer's right pad column at the most.
    if channels * depth != k.domain[C] or col.const < -1 or \
            stride * (k.domain[X] - 1) + col.const + 2 > w_in:
        return None
    fw = [affine_of(i) for i in w.index]
    if any(f is None or len(f.terms) > 1 or f.const or (f.terms and f.terms[0][1] != 1)
           for f in fw):
        return None
    used = sorted(f.terms[0][0] for f in fw if f.terms and f.terms[0][0] != CI)
    if used != [C, KY, KX]:
        return None
    parts = _requantization_plus(k.epilogue)
    if parts is None:
        return None
    pad = int(x.pad.value) if x.pad is not None else 0
    multiplier, k_high, shift, bias = parts
    plan = RowPairPlan(x, w, y.const, col.const, pad, multiplier, k_high, shift,
                       depth_multiplier=depth, bias=bias, stride=stride)
    fits = plan.band(k) > 0 if stride == 2 else plan.stack_bytes(k) <= STACK_BYTES
    return plan if fits else None


def has_row_pairs(target: Target) -> bool:
    """Whether `target` can run the row-pair microkernel: the DSP extension (its
    SMLAD, SMLABB and SSAT), whatever SIMD row its other int8 loops take."""
    return target.capabilities.dsp


def row_pair_nest(k: Kernel, target: Target, unblocked: frozenset[int] = frozenset()
                  ) -> Nest | None:
    """The row-pair nest for `k` on `target` (module docstring), or None when it does
    not apply: no DSP extension, another kernel, or the arena plan asking for tiles one
    row tall (`unblocked`)."""
    if not has_row_pairs(target) or Y in unblocked or \
            X in unblocked or row_pair_plan(k) is None:
        return None
    plan = row_pair_plan(k)
    assert plan is not None
    rows = QUAD_ROWS if _quad_fits(k, plan) else 2
    # Stride 2: bands of output columns where a row's staged columns do not fit, each
    # band over all its rows before the next (codegen/depthwise_s2.py: a band's call
    # then stages 2 pairs, where in row order it stages 3). The arena's overlap walk
    # tries the row order too (`banded_row_order`) where a result is to start over its
    # operand.
    width = plan.band(k) if plan.stride == 2 else k.domain[X]
    order = (N, Y, C, X) if width == k.domain[X] else (N, X, Y, C)
    blocks = tuple((d, f) for d, f in ((Y, rows), (X, width)) if f > 1)
    return Nest(k.domain, k.n_parallel, order, unroll=(KY, KX, CI),
                blocks=blocks, row_pairs=True)


def banded_row_order(nest: Nest) -> Nest | None:
    """A banded stride-2 row-pair nest (`row_pair_nest`: bands of output columns, one
    band over all its rows before the next) with every band of two output rows run
    before the next two rows instead, or None for any other nest. Each band's call then
    stages 3 pairs of rows where it staged 2 (vww_96's 24x24x32: about 2.5 instructions
    an output more), but the rows run in order, so that a result can start over its
    operand (schedule/program.py offers it to the overlap walk, whose tiles one column
    wide were slower: 155,546 -> 210,216 instructions)."""
    if not nest.row_pairs or nest.order != (N, X, Y, C):
        return None
    return replace(nest, order=(N, Y, X, C))


def band_major(nest: Nest) -> bool:
    """Whether a stride-2 row-pair nest runs each band of output columns over all its
    rows before the next band (`row_pair_nest`), rather than every band of two rows
    before the next two rows (`banded_row_order`)."""
    return nest.order.index(X) < nest.order.index(Y)


def _quad_fits(k: Kernel, plan: RowPairPlan) -> bool:
    """Whether `k` is computed 4 output rows a tile: a stride of 1, 4 rows or more and
    the 3 slots of staged rows within STACK_BYTES."""
    return plan.stride == 1 and k.domain[Y] >= QUAD_ROWS and \
        plan.stack_bytes(k, QUAD_SLOTS) <= QUAD_STACK_BYTES


def output_cost(k: Kernel, plan: RowPairPlan) -> float:
    """The microkernel's instructions an output of `k` (its staging and requantization
    included), measured on cortex-m4: by the tile's rows at a stride of 1, else
    ROW_PAIR_OUTPUT_COST."""
    if plan.stride != 1:
        return ROW_PAIR_OUTPUT_COST
    return QUAD_OUTPUT_COST if _quad_fits(k, plan) else PAIR_OUTPUT_COST


def record_words(quad: bool) -> int:
    """Words of a channel's records: the 4-row kernels' (`quad`) or the row pairs'."""
    return QUAD_RECORD_WORDS if quad else RECORD_WORDS


def quad_rows(nest: Nest) -> bool:
    """Whether a row-pair nest is computed 4 output rows a tile (mrt_dw3_quad_s8, its
    staged rows in 3 slots) rather than 2."""
    return dict(nest.blocks).get(Y) == QUAD_ROWS


def records_over_row(records_words: int, channels: int, quad: bool) -> bool:
    """Whether records of `records_words` words (the flags word included) for `channels`
    output channels are repeated over the row (schedule/row_pair_records.py, only for the
    tails kernel of doubled records): the dispatch then calls that kernel alone."""
    return quad and records_words - 1 > record_words(quad) * channels


# Output channels up to which a layer of records over the row runs its own assembly
# tiles (codegen/depthwise_asm.py), its records in their layout, whatever the flash:
# each call kind is a function of about 150 bytes a tile, 3 to 12 tiles, where the
# tails kernel is shared.
ASM_CHANNELS = 3
# Up to this many, a layer runs them where their code fits the --optimize mode's flash
# room (schedule/row_pair_records.py; none under `size`): 9-13 % fewer instructions
# over 4-13 channels (10x10x8 11,851 -> 10,677, 19x6x13 21,519 -> 18,887 on cortex-m4)
# for 1.5-14 KB more code a layer.
ASM_ROOM_CHANNELS = 13
# Tiles (columns x channels) a call writes out; past it the inner columns loop.
ASM_UNROLL_TILES = 12
ASM_TILE_BYTES = 150  # a 4-row tile's code (47 instructions, Thumb-2), rounded up
_STRB_OFFSET = 4095  # the tiles' stores reach their last row by STRB's immediate offset


def asm_code_bytes(k: Kernel, plan: RowPairPlan) -> int:
    """An upper estimate of the code of kernel `k`'s own assembly tiles (`plan` its
    row-pair plan): ASM_TILE_BYTES for each tile its calls write out (the columns before
    and after the loop of inner columns, and one of them, past ASM_UNROLL_TILES: as
    codegen/depthwise_asm.py tile_body), for each call kind: a 4-row call's two slot
    rotations and the remainder's rows."""
    w_in = k.operands[plan.x.operand].shape[2]
    columns, channels = k.domain[X], k.domain[C]
    inner = sum(live_columns(x, plan.col, w_in) == (0, 1, 2) for x in range(columns))
    written = columns - inner + 1 if inner > 1 and columns * channels > ASM_UNROLL_TILES \
        else columns
    kinds = 2 + (k.domain[Y] % QUAD_ROWS != 0)
    return ASM_TILE_BYTES * written * channels * kinds


def asm_tiles(k: Kernel, plan: RowPairPlan, quad: bool, code_room: int = 0) -> bool:
    """Whether kernel `k` (`plan` its row-pair plan, `quad` its 4-row tiles) runs its own
    assembly tiles where its records are repeated over the row (doubled, shifts 1-31:
    schedule/row_pair_records.py says, and records the shifts in `Kernel.record_shifts`):
    up to ASM_CHANNELS channels always, up to ASM_ROOM_CHANNELS where their code
    (asm_code_bytes) fits `code_room` bytes of flash."""
    if not (quad and plan.stride == 1 and 3 * k.domain[X] * k.domain[C] <= _STRB_OFFSET):
        return False
    channels = k.domain[C]
    return channels <= ASM_CHANNELS or (
        channels <= ASM_ROOM_CHANNELS and asm_code_bytes(k, plan) <= code_room)


def live_columns(x: int, col: int, w_in: int) -> tuple[int, ...]:
    """The window columns (0-2) of output column `x` that read the input, not the pad
    columns (`col`: output column 0's window column 0 is input column `col`): the
    assembly tiles skip the others, their products a constant folded into the bias."""
    return tuple(kx for kx in range(3) if 0 <= x + col + kx < w_in)


# A stride-2 layer's own assembly calls (codegen/depthwise_s2_asm.py): a tile's code
# (Thumb-2, as assembled): two rows (25 instructions), row y alone (15); their
# immediates (the second row's store offset, 4 staged columns, a column's records) are
# ADDW / SUBW / STRB's 12 bits.
ASM_S2_TILE_BYTES = 96
ASM_S2_ONE_ROW_BYTES = 56
# ... and what a call has besides its tiles: its entry and exit (PUSH, the window
# columns' two pointers, POP) and its column loop's set-up and test (6 instructions),
# 50 bytes at the most as assembled, rounded up; and each column it writes out, its
# pointers' moves and its records' rewind (at most 4 instructions).
ASM_S2_CALL_BYTES = 48
ASM_S2_COLUMN_BYTES = 16
# The most code the calls of one layer past ASM_CHANNELS may take, whatever the room:
# each channel's tiles are written out (its shift an immediate), for each band and call
# kind, so a layer's code grows with its channels (10x10x64: 5 output columns, 3 call
# kinds, about 31 KB) for a gain that does not (about 2.5 instructions an output). 24
# KB takes the sweep's layers up to 32 channels (20x20x32: 12 KB) and vww_96_int8's
# 24x24x32 (18 KB), as stride 1 takes layers of up to 14 KB (ASM_ROOM_CHANNELS).
ASM_S2_ROOM_BYTES = 24576
ASM_S2_ROW_LIMIT = 4095
ASM_S2_ROTATE_CHANNELS = 4  # up to which the column loop rotates (asm_s2_period)


def asm_s2_bands(k: Kernel, plan: RowPairPlan, fold: bool = True
                 ) -> list[tuple[int, int, bool, bool]]:
    """A stride-2 kernel's bands of output columns (codegen/depthwise_s2.py): (first
    column, columns, whether the first / last column's window column 0 / 2 reads a
    pad column whose products its own assembly calls fold into its records' bias,
    codegen/depthwise_s2_asm.py: none unless `fold`)."""
    w_out, w_in = k.domain[X], k.operands[plan.x.operand].shape[2]
    width = plan.band(k) or w_out
    left = fold and plan.col == -1  # output x reads input columns 2x + col .. 2x + col + 2
    right = fold and 2 * (w_out - 1) + plan.col + 2 == w_in and (w_out > 1 or not left)
    return [(x0, min(width, w_out - x0), left and x0 == 0, right and x0 + width >= w_out)
            for x0 in range(0, w_out, width)]


def asm_s2_code_bytes(k: Kernel, plan: RowPairPlan, fold: bool = True) -> int:
    """An upper estimate of the code of stride-2 kernel `k`'s own assembly calls
    (`plan` its row-pair plan, `fold` as asm_s2_bands; tests/schedule/
    test_asm_code_room.py holds it to the assembled bytes): ASM_S2_TILE_BYTES for each
    tile a call writes out (the edge columns', and the inner columns' up to
    ASM_UNROLL_TILES, else those of the loop's pass and the 0-2 after it, as
    codegen/depthwise_s2_asm.py call_body), for each call of its own (bands of the
    same width and edges share theirs) and kind (both slot orders, and row y alone for
    an odd height), with ASM_S2_CALL_BYTES a call and ASM_S2_COLUMN_BYTES a column it
    writes out."""
    channels = k.domain[C]
    calls = {b[1:] for b in asm_s2_bands(k, plan, fold)}
    tiles = 0
    for n, left, right in calls:
        inner = n - left - right
        period = asm_s2_period(inner, channels)
        tiles += left + right + (inner if not period else period + inner % period)
    odd = k.domain[Y] % 2
    kinds = 2 + odd
    return (2 * ASM_S2_TILE_BYTES + odd * ASM_S2_ONE_ROW_BYTES) * tiles * channels + \
        kinds * (len(calls) * ASM_S2_CALL_BYTES + tiles * ASM_S2_COLUMN_BYTES)


def asm_s2_folds(k: Kernel, plan: RowPairPlan) -> bool:
    """Whether stride-2 kernel `k`'s own calls fold its edge columns' pad columns
    (asm_s2_bands). Not where the row is cut into bands: the first and last bands would
    each need a call of their own where unfolded all share one, for an edge that is one
    column of many (vww_96_int8's 24x24x32 in bands of 6: 18 -> 6 KB of code for about
    0.2 instructions an output); nor where their code would pass ASM_S2_ROOM_BYTES past
    ASM_CHANNELS channels (10x10x64: 5 output columns, 3 call kinds, 31.7 -> 15.9 KB
    unfolded, about 0.5 instructions an output). Unfolded, an edge column is an inner
    one (the staged pad column read)."""
    if len(asm_s2_bands(k, plan)) > 1:
        return False
    return k.domain[C] <= ASM_CHANNELS or \
        asm_s2_code_bytes(k, plan, True) <= ASM_S2_ROOM_BYTES


def asm_s2_period(width: int, channels: int) -> int:
    """The columns a pass of a stride-2 layer's own call's column loop (codegen/
    depthwise_s2_asm.py) over `width` output columns of `channels` channels: 0 (every
    column written out) up to ASM_UNROLL_TILES tiles, and up to ASM_S2_ROTATE_CHANNELS
    channels under 6 columns (where a loop of 3 would write them all out too); else 3
    (the window columns' pointers rotating, one ADD a column) up to
    ASM_S2_ROTATE_CHANNELS channels; else 1 (3 ADDs a column, a third of the code: 2
    instructions a column weigh 1 / channels an output)."""
    rotate = channels <= ASM_S2_ROTATE_CHANNELS
    if width * channels <= ASM_UNROLL_TILES or width == 1 or (rotate and width < 6):
        return 0
    return 3 if rotate else 1


def asm_s2_tiles(k: Kernel, plan: RowPairPlan, shifts: tuple[int, ...],
                 code_room: int = 0) -> bool:
    """Whether stride-2 kernel `k` (`plan` its row-pair plan) of doubled records whose
    SSAT shifts are `shifts` (one a channel) runs its own assembly calls (codegen/
    depthwise_s2_asm.py): shifts of 1-31 and offsets within the immediates, up to
    ASM_CHANNELS channels always, more where their code (asm_s2_code_bytes, the edges
    folded as asm_s2_folds says) fits `code_room` bytes of flash (none under --optimize
    size, where no records are bound) and ASM_S2_ROOM_BYTES."""
    channels = k.domain[C]
    if plan.stride != 2 or len(shifts) != channels or \
            not all(1 <= s <= 31 for s in shifts) or \
            k.domain[X] * channels > ASM_S2_ROW_LIMIT or \
            48 * channels > ASM_S2_ROW_LIMIT:  # 4 staged columns
        return False
    return channels <= ASM_CHANNELS or asm_s2_code_bytes(
        k, plan, asm_s2_folds(k, plan)) <= min(code_room, ASM_S2_ROOM_BYTES)
