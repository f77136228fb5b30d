"""int8 convolutions to few output channels (1-7): the pixel-tile kernel's records.

The staged kernels (runtime_c/ukernel/dsp/mrt_dot_dsp.c, codegen/dot_ukernel.py) stage
each output pixel's window, KH x KW x C values, and share it across groups of output
channels. With 1-7 outputs nothing amortizes that staging: a 5x5 window over 32 channels
to one output ran at 0.36 MAC per instruction on cortex-m4 (bench/results/shapes.md),
1x7 at 0.35, 3x3 at 0.58, where 64 outputs reach 1.3. This pass gives such layers
runtime_c/ukernel/dsp/mrt_fewout_dsp.c instead: every input row is paired once into a
ring of KH staged rows (a window row of a pixel is then a contiguous run of KW x C/2
words, the next pixel's run C/2 x stride words on), and a tile of two pixels x two output
channels reads per two steps one LDRD of each pixel's words and one LDRD of the channel
pair's interleaved weights per step: 16 MACs in 12 instructions, with no staging per
pixel.

It finds the layers (`fewout_plan`: an NHWC int8 convolution as first_layer_plan reads
it, to at most MAX_OUTPUTS channels, over a multiple of 4 input channels from 8 on (1-4
take the im2col kernel; schedule/pad_channels.py pads the others), stride and dilation
1, at least 2 taps, at most 8 window rows), writes the records (`fewout_records`: the geometry,
then per pair of output channels the doubled biases, the interleaved doubled weight
pairs and the requantization values; an odd last channel alone, its bias twice) and
binds them with the schedule that calls the kernel (`Nest.fewout`). The requantization
is the doubled SMMLAR form of the im2col and depthwise kernels, so the same bounds
apply: every channel's |bias| + 128 x sum |w| < 2**30 and |K_hi| < 2**29, else the
layer keeps its tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.sources import Source
from toolchain.kernel.form import Const, Kernel
from toolchain.loops.tables import SIMD
from toolchain.schedule.fewout_form import FewoutForm, fewout_form, pinned
from toolchain.schedule.first_layer_plan import IM2COL_DOT, FirstLayerPlan, X, Y, first_layer_plan
from toolchain.schedule.first_layer_records import (
    OFFER,
    RULE,
    _halves,
    bind_pixel_kernels,
    im2col_hit,
)
from toolchain.schedule.program import Program, Step
from toolchain.schedule.row_pair_records import _value
from toolchain.schedule.step_records import constant_operands
from toolchain.target.descriptors import Target
from toolchain.types import dtype

__all__ = ["FewoutPlan", "GEOMETRY_WORDS", "fewout_plan", "fewout_records",
           "store_fewout_records"]

# The most output channels taken: from 8 the staged 2x4 tiles share a pixel's window
# over two groups of 4 channels and run 1.1-1.3 MAC per instruction.
MAX_OUTPUTS = 7
# The most offered to the tuning database (fewout_plan `offered`): the tiles are pairs
# of channels and an odd last one, for any count.
OFFERED_OUTPUTS = 16
# 4 and 5-7 input channels (padded to 8) take the im2col kernel and the staged tiles.
# 3 (RGB first layers) are staged here as 4 where the outputs are at most the window's
# columns: a window row's run is then 2 x KW words, against which each channel pair pays
# about 50 instructions a window row. cortex-m4, 19x6 and 8x8 over 3 channels, this
# kernel against the im2col one (MAC per instruction): 3x3 to 1-3 outputs 0.26-0.41
# against 0.20-0.38, to 5 0.44-0.47 against 0.50 (tile_upsample's layer: left to
# im2col); 5x5 to 1-5 0.42-0.64 against 0.09-0.57, to 7 0.64 against 0.65; 1x7 to 1-7
# 0.27-0.51 against 0.11-0.48.
MIN_CHANNELS = 8
MAX_ROWS = 8  # mrt_fewout_dsp.c's MRT_FO_MAX_KH
MIN_PIXELS_ONE_OUTPUT = 10  # fewout_plan says why
# The ring of staged rows and the pad row on the stack, at most (the depthwise kernels'
# staged rows keep to 10 KB, loops/depthwise.py).
SCRATCH_BYTES = 8192
GEOMETRY_WORDS = 16  # mrt_fewout_dsp.c's mrt_fo_geometry
C = 3
_BOUND = 1 << 30
_LOW = 1 << 30  # K's low word in the folded form (kernel/requant.py, every s >= 2)
_I32 = dtype("i32")


@dataclass(frozen=True)
class FewoutPlan:
    """A first_layer_plan's geometry plus the staged rows' columns: `left` border
    columns of the pad value before the input's, `cols` in all."""

    base: FirstLayerPlan
    form: FewoutForm
    h_in: int
    w_in: int
    left: int
    cols: int

    @property
    def channels(self) -> int:
        """The staged channels of an input pixel: a multiple of 4 (3 staged as 4)."""
        return -(-self.base.cin // 4) * 4

    @property
    def words(self) -> int:
        """The staged words of an input pixel: two channels a word."""
        return self.channels // 2

    def scratch_words(self) -> int:
        """The stack the kernel takes: KH staged rows and a row of pad values."""
        return (self.base.kh + 1) * self.cols * self.words


def fewout_plan(k: Kernel, offered: bool = False) -> FewoutPlan | None:
    """The plan for `k` when mrt_fewout_dsp.c computes it (module docstring), else None.
    `offered`: also where the kernel computes the layer though the rules, measured on
    other shapes, send it elsewhere (up to OFFERED_OUTPUTS outputs, 3 channels to any
    count, narrow windows and small maps), which the tuning database may send here."""
    if k.n_parallel != 4 or not 1 <= k.domain[C] <= (OFFERED_OUTPUTS if offered
                                                       else MAX_OUTPUTS):
        return None
    form = fewout_form(k)
    if form is None:
        return None
    plan = first_layer_plan(form.kernel, max_channels=1 << 30)
    # Stride 2 and 1x1 windows keep the other kernels, measured faster there (cortex-m4:
    # 10x10 stride 2 to 1-7 outputs 0.58-0.97 here against 0.69-1.03, the staging spread
    # over a quarter of the outputs and odd widths' duplicated pixel; 1x1 to one output
    # 0.34 against 0.46). The runtime takes any stride.
    if plan is None or (plan.cin % 4 or plan.cin < MIN_CHANNELS) and \
            not (plan.cin == 3 and (offered or k.domain[C] <= plan.kw)) and \
            not (offered and plan.cin % 4 == 0) or \
            plan.dilation != (1, 1) or plan.stride != (1, 1) or plan.kh > MAX_ROWS or \
            plan.kh * plan.kw < 2:
        return None
    _, h_in, w_in, _ = k.operands[plan.x.operand].shape
    (sy, sx), (oy0, ox0) = plan.stride, plan.origin
    h_out, w_out = k.domain[Y], k.domain[X]
    left = max(0, -ox0)
    right = max(0, (w_out - 1) * sx + ox0 + plan.kw - 1 - (w_in - 1))
    top = max(0, -oy0)
    bottom = max(0, (h_out - 1) * sy + oy0 + plan.kh - 1 - (h_in - 1))
    border = bool(left or right or top or bottom)
    if border and plan.x.pad is None:
        return None
    # Where the other kernels were measured as fast (cortex-m4, this kernel against
    # them): a 3-column window inside the input to 1-2 outputs, whose tiles test no
    # border (21x8 VALID over 16 or 32 channels to 1 or 2: 22.7 K against 21.0 K, 39.1 K
    # against 38.2 K, 35.6 K against 35.4 K; 1x7 and 5x5 there, and SAME windows, gain
    # 12-45 %), and maps of under 10 pixels to one output (3x3 over 32 channels: 5.0 K
    # against 3.1 K; 2x5 and 4x4 gain).
    if not offered and (not border and plan.kw <= 3 and k.domain[C] <= 2 or
                        k.domain[C] == 1 and h_out * w_out < MIN_PIXELS_ONE_OUTPUT):
        return None
    out = FewoutPlan(plan, form, h_in, w_in, left, left + w_in + right)
    if 4 * out.scratch_words() > SCRATCH_BYTES:
        return None
    return out


def fewout_records(k: Kernel, plan: FewoutPlan,
                   operands: list[np.ndarray | None]) -> np.ndarray | None:
    """The records of kernel `k` in mrt_fewout_dsp.c's layout (its module comment), or
    None when a value is not a constant or the doubled sums could leave int32."""
    base = plan.base
    cout = k.domain[C]
    c = np.arange(cout)
    form = plan.form
    zero = form.zero_point if form.zero_point is not None else Const(0, _I32)
    low = form.low if form.low is not None else Const(_LOW, _I32)
    values = [_value(e, operands, {C: c}) for e in (form.kernel.init, base.multiplier,
                                                     base.k_high, base.shift, zero, low)]
    if any(v is None for v in values):
        return None
    bias, multiplier, k_high, shift, zp, lows = (
        np.broadcast_to(v, (cout,)).astype(np.int64) for v in values)
    if np.any(lows != _LOW) or np.any((shift < 0) | (shift > 31)):
        return None
    k_high = k_high + (zp << shift)  # (hi >> s) + zp == (hi + zp * 2**s) >> s
    ky, kx, ci = base.dims
    grid = np.meshgrid(c, np.arange(base.kh), np.arange(base.kw), np.arange(base.cin),
                       indexing="ij")
    point = {C: grid[0]}
    for d, g in zip((ky, kx, ci), grid[1:]):
        if d is not None:
            point[d] = g
    weights = _value(base.w, operands, point)
    if weights is None:
        return None
    w = np.broadcast_to(weights, grid[0].shape).astype(np.int64)
    reach = np.abs(bias) + 128 * np.abs(w).reshape(cout, -1).sum(axis=1)
    if not (np.all(reach < _BOUND) and np.all(np.abs(k_high) < (1 << 29))
            and np.all((multiplier >= 0) & (multiplier < (1 << 31)))
            and np.all((shift >= 0) & (shift <= 31))):
        return None
    # Each 4 channels as the staged row pairs them (kernel/paired.py): (0, 2), (1, 3); 3
    # channels staged as 4 against a fourth weight of 0.
    w = np.pad(w, [(0, 0)] * 3 + [(0, plan.channels - base.cin)])
    lanes = (2 * w).reshape(cout, base.kh, base.kw, plan.channels // 4, 4)[..., [0, 2, 1, 3]]
    lanes = lanes.reshape(cout, base.kh, base.kw * plan.channels)
    words = _halves(lanes[..., 0::2], lanes[..., 1::2])  # (cout, kh, run)
    (sy, sx), (oy0, ox0) = base.stride, base.origin
    pad = base.pad & 0xFFFF
    geometry = [plan.h_in, plan.w_in, plan.words, base.kh, base.kw, sy, sx, oy0, ox0,
                k.domain[Y], k.domain[X], cout, pad | (pad << 16), plan.left, plan.cols,
                base.cin]
    parts = [np.asarray(geometry, dtype=np.int64)]
    for c0 in range(0, cout - 1, 2):
        pair = slice(c0, c0 + 2)
        parts.append(2 * bias[pair])
        parts.append(words[pair].transpose(1, 2, 0).reshape(-1))  # per row, step: c0, c1
        parts.append(np.stack([multiplier[pair], 2 * k_high[pair], shift[pair] + 1],
                              axis=1).reshape(-1))
    if cout % 2:
        # the bias twice: one LDRD starts both pixels' sums (mrt_fo_ones_s8)
        parts += [np.repeat(2 * bias[-1:], 2), words[-1].reshape(-1),
                  np.asarray([multiplier[-1], 2 * k_high[-1], shift[-1] + 1])]
    table = np.concatenate(parts)
    return (table & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def store_fewout_records(program: Program, target: Target, flash_room: int,
                         declined: set[Source] | None = None) -> int:
    """Binds the records, and the kernel's schedule, to every few-output convolution of
    `program` on `target` (module docstring) while their bytes fit `flash_room`,
    rewriting `program` in place. Returns how many it bound. A layer the im2col kernel
    can take too (a first layer) is one the tuning database may send there instead, or
    to the tile search (bind_pixel_kernels; `declined` is its)."""
    if SIMD[target.capabilities.simd].int8_dot != IM2COL_DOT:
        return 0

    def found(step: Step, offered: bool = False) -> tuple[Kernel, np.ndarray] | None:
        operands = constant_operands(program, step)
        k = pinned(step.kernel, operands)  # the same kernel, its broadcasts read once
        plan = fewout_plan(k, offered) if k is not None else None
        records = None if plan is None else fewout_records(k, plan, operands)
        return None if records is None else (k, records)

    def im2col(step: Step) -> str | None:
        return RULE if im2col_hit(program, target, step) is not None else \
            OFFER if im2col_hit(program, target, step, True) is not None else None
    return bind_pixel_kernels(program, target, flash_room, found, "fewout",
                              lambda step: found(step, True), (("im2col", im2col),),
                              declined)
