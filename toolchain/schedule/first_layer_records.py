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

This pass finds those layers (`first_layer_plan`), writes the loops' records at build
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
from dataclasses import dataclass

import numpy as np

from toolchain.graph.sources import Source
from toolchain.kernel.form import Const, Expr, Kernel, Load
from toolchain.loops.affine import affine_of
from toolchain.loops.depthwise import _channel_only, _const, _is, _requantization
from toolchain.loops.patterns import dot_operands
from toolchain.loops.schedule import LoopSchedule, Nest
from toolchain.loops.tables import SIMD
from toolchain.schedule.program import Program, Step
from toolchain.schedule.row_pair_records import _value
from toolchain.schedule.step_records import bind_records, constant_operands
from toolchain.target.descriptors import Target
from toolchain.tunedb.hook import TILES, choose_kernel

__all__ = ["OFFER", "RULE", "FirstLayerPlan", "first_layer_plan", "first_layer_records",
           "im2col_hit", "lookup_offset", "records_bound", "store_first_layer_records",
           "takes_pointwise"]

IM2COL_DOT = "dsp"  # the SIMD rows whose int8_dot kind has SMLAD
# The most input channels taken: the first layers (1-3) and 4, whose packed steps (a word
# per pixel and tap) still paid a call and a generated requantization per tile of 4
# outputs. cortex-m4, shape sweep, 4 -> 32 channels: 1x1 0.20 -> 0.43 MAC per
# instruction, 3x3 0.55 -> 0.89, 1x7 0.59 -> 0.87, 5x5 0.87 -> 1.00, 3x3 dilated 0.49 ->
# 0.80. From 8 channels the packed steps are about as fast (12 -> 16 channels: 3x3 s2
# 0.87 -> 0.86, 5x5 s2 0.96 -> 0.90 in this kernel), so they keep those layers.
MAX_CHANNELS = 4
# 1x1 layers (one staged word per 2 channels) up to this many channels: their packed
# steps pay a call and a generated requantization per tile for 8 to 32 MACs an output,
# and those over channels that are not whole words a pad of their input too. Up to
# ONE_CHUNK_POINTWISE (8 words, one chunk: a call a row) for any output count; past it
# (chunks of 4-6 words, a call each a pixel) from POINTWISE_MIN_OUTPUTS outputs, by
# whether the channels are whole words (the packed steps need no pad then).
# cortex-m4, 1x1 19x6, packed -> im2col, MAC per instruction: to 32 outputs 17 0.596 ->
# 0.757, 21 0.667 -> 0.817, 25 0.725 -> 0.807, 28 0.832 -> 0.873, 30 0.800 -> 0.903, 31
# 0.827 -> 0.877, 32 0.876 -> 0.906 (64 outputs 0.892 -> 0.954); but 32 -> 16 0.847 ->
# 0.822, 24 -> 8 0.674 -> 0.614, 31 -> 8 0.681 -> 0.672, while 31 -> 16 0.782 -> 0.796.
MAX_POINTWISE_CHANNELS = 32
ONE_CHUNK_POINTWISE = 16
POINTWISE_MIN_OUTPUTS = {True: 16, False: 32}  # by whether a pad is saved (C % 4 != 0)
# The input channels of the windows the kernel is offered for to the tuning database
# (first_layer_plan `offered`): the rules keep it to MAX_CHANNELS, measured on a few
# shapes, and the kernel computes any count in chunks (12 and 16 channels measured).
OFFERED_CHANNELS = 16
CHUNK_WORDS = 5  # staged words a channel loop holds in registers (r4-r8)
# The only chunk of a window may hold one more (r4-r9, its weights in two LDMs: 13
# instructions an output for 1x1 over 12 channels, where two chunks of 3 paid 16 and
# a stack array of sums).
ONLY_WORDS = 6
# Without a table (lr free) it may hold 8 (r4-r11: a 1x1 over 13-16 channels, 15-17
# instructions an output, where two chunks of 4 paid 18, a call a pixel and a stack
# array of sums).
ONLY_WORDS_PLAIN = 8
# A last chunk without a table may hold 6 words (mrt_i2c_last6_s8), taken where the
# others are whole chunks of 5: 1x1 over 21-22 or 31 channels.
LAST_WORDS = 6
# A window of this many words (more than the loops hold in registers), without a
# table, is one chunk whose loop loads the staged words again per channel
# (mrt_i2c_only9_s8 .. only20_s8: 3x3 over 2-4 channels, 5x5 over one, 10x4 over one):
# two LDMs per 5 words an output, as the chunks pay, without their call a pixel per
# chunk and stack array of sums. Not where the chunks are 5s and a last 6 held in
# registers (11 and 16 words: 1x7 over 3 channels 0.799 chunked, 0.773 streamed).
# cortex-m4, MAC per instruction: 3x3 8x8 SAME over 3 channels to 5 (tile_upsample_int8)
# 0.504 -> 0.613; 3x3 19x6 over 3 / 4 channels to 32 0.836 / 0.886 -> 0.893 / 0.982
# (docs/architecture.md).
STREAM_WORDS = range(9, 21)
TABLE_SIZE = 256  # an int8 lookup's entries, the one of input -128 first
# The stack a row of staged windows may take (one call of the channel loop a row, about
# 8 instructions a pixel less than a call each); wider rows call it per pixel.
STAGED_ROW_BYTES = 2048
# ... and for a streamed window (9-20 words): pretrainedResnet's 3x3 over 3 channels on
# 32x32 staged 1,792 B a row: that took its stack from 3,764 to 5,500 B measured to save
# 14.7 K instructions of 10.95 M (0.13 %), so its pixels are called one by one instead.
STREAMED_ROW_BYTES = 1024
N, Y, X, C = range(4)
_BOUND = 1 << 30


@dataclass(frozen=True)
class FirstLayerPlan:
    """What the im2col microkernel needs of a kernel: its input and weight loads, the
    reduced dims of the window's rows, columns and channels (None: extent 1), the
    window's geometry (strides, dilations, the input row and column of output (0, 0)'s
    first tap), the pad value and the requantization's per-channel expressions."""

    x: Load
    w: Load
    dims: tuple[int | None, int | None, int | None]  # ky, kx, ci
    kh: int
    kw: int
    cin: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    origin: tuple[int, int]
    pad: int
    multiplier: Expr
    k_high: Expr
    shift: Expr
    table: Load | None = None  # the activation's lookup after the requantization

    @property
    def streamed(self) -> bool:
        """Whether the window is one chunk of more words than registers, loaded again
        per channel (STREAM_WORDS; not 1x1 windows, whose chunked loops were tuned on
        their own, nor a table's loops)."""
        return self.table is None and self.kh * self.kw > 1 and \
            self.words in STREAM_WORDS and \
            (self.words - LAST_WORDS) % CHUNK_WORDS != 0

    @property
    def taps(self) -> int:
        """K: the window's taps over its channels."""
        return self.kh * self.kw * self.cin

    @property
    def words(self) -> int:
        """The staged words of a pixel: two taps a word."""
        return -(-self.taps // 2)

    def chunks(self) -> list[int]:
        """The staged words of each channel loop: one loop up to ONLY_WORDS (without a
        table ONLY_WORDS_PLAIN), else as even as they go, at most 5."""
        if self.words <= (ONLY_WORDS if self.table is not None else ONLY_WORDS_PLAIN) \
                or self.streamed:
            return [self.words]
        if self.table is None and (self.words - LAST_WORDS) % CHUNK_WORDS == 0:
            return [CHUNK_WORDS] * ((self.words - LAST_WORDS) // CHUNK_WORDS) + [LAST_WORDS]
        n = -(-self.words // CHUNK_WORDS)
        base, extra = divmod(self.words, n)
        return [base + (1 if i < extra else 0) for i in range(n)]

    def row_staged(self, k: Kernel) -> bool:
        """Whether one call of the channel loop takes a whole output row, its windows
        staged side by side: with one chunk, where they fit STAGED_ROW_BYTES."""
        limit = STREAMED_ROW_BYTES if self.streamed else STAGED_ROW_BYTES
        return len(self.chunks()) == 1 and 4 * self.words * k.domain[X] <= limit

    def scratch_words(self, k: Kernel) -> int:
        """The dispatch's stack words: the staged windows of a row (row_staged) or of
        one pixel; with several chunks the window to an even count and a sum per
        output channel."""
        if len(self.chunks()) == 1:
            return self.words * (k.domain[X] if self.row_staged(k) else 1)
        return (self.words + 1) // 2 * 2 + k.domain[C]


def _single(form, dims: set[int]) -> int | None | bool:
    """The dim of a weight index that is one reduced dim with coefficient 1 (or None
    for a constant 0); False for anything else."""
    if form is None or form.const:
        return False
    if not form.terms:
        return None
    if len(form.terms) != 1 or form.terms[0][1] != 1 or form.terms[0][0] not in dims:
        return False
    return form.terms[0][0]


def first_layer_plan(k: Kernel, max_channels: int | None = None,
                     offered: bool = False) -> FirstLayerPlan | None:
    """The plan for `k` when the im2col microkernel computes it (module docstring),
    else None: an NHWC int8 convolution over 1-4 input channels with OHWI weights,
    its window of any size, stride and dilation, a sum started from a per-channel
    value and kernel/requant.py's folded requantization to int8. `max_channels`
    replaces the input channel limit (schedule/fewout_records.py reads the same
    geometry for any channel count). `offered`: the layers the kernel computes though
    the rules send them elsewhere (OFFERED_CHANNELS; 1x1 windows to any output count),
    which the tuning database may send here (bind_pixel_kernels)."""
    if k.n_parallel != 4 or k.domain[N] != 1 or k.paired or k.interleaved or \
            k.records >= 0 or k.result.dtype.name != "i8" or k.init is None or \
            not _channel_only(k.init):
        return None
    ops = dot_operands(k)
    if ops is None:
        return None
    xs = [ld for ld in ops if len(ld.index) == 4
          and (f := affine_of(ld.index[1])) is not None and Y in f.dims]
    if len(xs) != 1:
        return None
    x = xs[0]
    w = ops[1] if ops[0] is x else ops[0]
    if x.valid is not None or w.pad is not None or w.valid is not None or \
            (x.pad is not None and not isinstance(x.pad, Const)) or len(w.index) != 4:
        return None
    reduced = set(range(k.n_parallel, len(k.domain)))
    wf = [affine_of(i) for i in w.index]
    if wf[0] is None or wf[0].const or dict(wf[0].terms) != {C: 1}:
        return None
    roles = [_single(f, reduced) for f in wf[1:]]
    if any(r is False for r in roles) or \
            len({r for r in roles if r is not None}) != sum(r is not None for r in roles):
        return None
    ky, kx, ci = roles
    if any(k.domain[d] != 1 for d in reduced - {r for r in roles if r is not None}):
        return None
    xf = [affine_of(i) for i in x.index]
    if any(f is None for f in xf) or xf[0].const or \
            any(d != N for d in xf[0].dims):
        return None
    _, h_in, w_in, cin = k.operands[x.operand].shape
    kh, kw = (k.domain[d] if d is not None else 1 for d in (ky, kx))
    ci_extent = k.domain[ci] if ci is not None else 1
    most = max_channels if max_channels is not None else \
        MAX_POINTWISE_CHANNELS if kh * kw == 1 else \
        OFFERED_CHANNELS if offered else MAX_CHANNELS
    if cin > most or ci_extent != cin or \
            (kh * kw == 1 and not offered and not takes_pointwise(cin, k.domain[C])) or \
            k.operands[w.operand].shape != (k.domain[C], kh, kw, cin):
        return None
    geometry = []
    for f, out_dim, tap in ((xf[1], Y, ky), (xf[2], X, kx)):
        terms = dict(f.terms)
        stride = terms.pop(out_dim, 0)
        step = terms.pop(tap, 0) if tap is not None else 1
        if terms or stride < 1 or step < 1:
            return None
        geometry.append((stride, step, f.const))
    want_c = {ci: 1} if ci is not None else {}
    if xf[3].const or dict(xf[3].terms) != want_c:
        return None
    looked_up = _lookup(k.epilogue)
    requantization, table = looked_up if looked_up is not None else (k.epilogue, None)
    parts = _requantization(requantization)
    if parts is None or (table is not None and (
            k.operands[table.operand].shape != (TABLE_SIZE,) or
            k.operands[table.operand].dtype.name != "i8")):
        return None
    (sy, dy, oy), (sx, dx, ox) = geometry
    if x.pad is None and (oy < 0 or ox < 0):
        return None
    plan = FirstLayerPlan(x, w, (ky, kx, ci), kh, kw, cin, (sy, sx), (dy, dx), (oy, ox),
                          int(x.pad.value) if x.pad is not None else 0, *parts, table)
    return plan


def takes_pointwise(cin: int, cout: int) -> bool:
    """Whether the kernel is worth it for a 1x1 layer over `cin` channels to `cout`
    (MAX_POINTWISE_CHANNELS, ONE_CHUNK_POINTWISE, POINTWISE_MIN_OUTPUTS)."""
    return cin <= ONE_CHUNK_POINTWISE or (
        cin <= MAX_POINTWISE_CHANNELS and cout >= POINTWISE_MIN_OUTPUTS[cin % 4 != 0])


def _lookup(epilogue: Expr | None) -> tuple[Expr, Load] | None:
    """(the requantization, the table's load) when `epilogue` is an int8 requantization
    looked up in a 256-entry int8 table, `table[q + 128]` (the index maybe clamped to
    [0, 255], which it already is), as frontend/tflite/int8.py's activations are after
    fusion; else None."""
    if not (isinstance(epilogue, Load) and len(epilogue.index) == 1 and
            epilogue.pad is None and epilogue.valid is None):
        return None
    e = epilogue.index[0]
    if _is(e, "clamp", 3) and _const(e.args[0], 0) and _const(e.args[2], TABLE_SIZE - 1):
        e = e.args[1]
    if not (_is(e, "add", 2) and _const(e.args[1], TABLE_SIZE // 2)):
        return None
    e = e.args[0]
    while _is(e, "convert", 1) and e.dtype.kind == "i" and e.dtype.bits >= 32:
        e = e.args[0]
    if not (_is(e, "convert", 1) and e.dtype.name == "i8"):
        return None
    return e, epilogue


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
    if SIMD[target.capabilities.simd].int8_dot != IM2COL_DOT:
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
    if SIMD[target.capabilities.simd].int8_dot != IM2COL_DOT:
        return 0
    return bind_pixel_kernels(program, target, flash_room,
                              lambda step: im2col_hit(program, target, step), "im2col",
                              lambda step: im2col_hit(program, target, step, True),
                              (), declined)


Hit = tuple[Kernel, np.ndarray]
# A family another pass binds: its name and whether it takes a step, RULE (the rules
# send the step there), OFFER (only the database may) or None.
RULE, OFFER = "rule", "offer"
Other = tuple[str, Callable[[Step], str | None]]


def bind_pixel_kernels(program: Program, target: Target, flash_room: int,
                       found: Callable[[Step], Hit | None], kernel: str,
                       offered: Callable[[Step], Hit | None] | None = None,
                       others: Sequence[Other] = (),
                       declined: set[Source] | None = None) -> int:
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
    padded, is another kernel with another key."""
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
        if hit[1].nbytes > flash_room:
            continue
        flash_room -= hit[1].nbytes
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
