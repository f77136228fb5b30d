"""Which int8 convolutions the im2col kernel computes, and the geometry it reads of them
(`first_layer_plan`): 1-4 input channels (first layers) and pointwise layers up to
MAX_POINTWISE_CHANNELS. The records themselves are schedule/first_layer_records.py's;
the plan is apart from them so that the scheduler (schedule/program.py, through
schedule/im2col_lanes.py) can ask it before any record exists."""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.kernel.form import Const, Expr, Kernel, Load
from toolchain.loops.affine import affine_of
from toolchain.loops.depthwise import _channel_only, _const, _is, _requantization_plus
from toolchain.loops.patterns import dot_operands

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
# The input channels of 1x1 windows whose bias may come in the epilogue (`bias`).
BIAS_AFTER_CHANNELS = (2, 3)


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
    bias: int = 0  # added to the sum in the epilogue (one output channel), besides the init

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
    found = _requantization_plus(requantization)
    # A layer of one output channel adds its bias in the epilogue (loops/depthwise.py
    # _acc_plus), folded into the records' bias: taken for 1x1 windows over 2-3
    # channels (schedule/pointwise_asm_records.py), which ran at 0.06-0.09 MAC per
    # instruction on the packed steps (19x6 2 -> 1: 3,584 instructions).
    parts, bias = (found[:3], found[3]) if found is not None else (None, 0)
    if bias and not (kh * kw == 1 and cin in BIAS_AFTER_CHANNELS):
        parts = None
    if parts is None or (table is not None and (
            k.operands[table.operand].shape != (TABLE_SIZE,) or
            k.operands[table.operand].dtype.name != "i8")):
        return None
    (sy, dy, oy), (sx, dx, ox) = geometry
    if x.pad is None and (oy < 0 or ox < 0):
        return None
    plan = FirstLayerPlan(x, w, (ky, kx, ci), kh, kw, cin, (sy, sx), (dy, dx), (oy, ox),
                          int(x.pad.value) if x.pad is not None else 0, *parts, table,
                          bias)
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
