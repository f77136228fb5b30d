"""Graphs of windowed ops at awkward sizes, for the loop schedules (toolchain/loops).

Every convolution and pooling here has something a schedule must get right: padding on
some sides only, strides and dilations that leave a partial last window, channel counts
and widths that are no multiple of any register-blocking factor, transposed
convolutions (lhs_dilation) whose phases have different numbers of taps, one phase none
at all, and a dot product long enough to be split into partial sums with a remainder.
`float_windows` is f32; `int8_windows` has the int8 kernels of the quantized frontends
(zero-point padding, i8 x i8 -> i32, fixed-point requantization), among them some
whose input channels are a multiple of 4 (packed int8 steps) and a dot whose packed
dim leaves a remainder.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_graph
from toolchain.types import TensorType, dtype

F32, I8, I32 = dtype("f32"), dtype("i8"), dtype("i32")
NHWC = {"input_batch": 0, "input_feature": 3, "input_spatial": (1, 2), "kernel_input": 2,
        "kernel_output": 3, "kernel_spatial": (0, 1), "output_batch": 0,
        "output_feature": 3, "output_spatial": (1, 2), "batch_group_count": 1}
OHWI = {"kernel_output": 0, "kernel_spatial": (1, 2), "kernel_input": 3}

# (name, kernel HxW, output channels, strides, padding, lhs_dilation, rhs_dilation,
#  depthwise): the convolutions of both models.
CONVS = [
    ("same3x3", (3, 3), 5, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), False),
    ("strided_dilated", (3, 2), 3, (2, 2), ((1, 2), (0, 1)), (1, 1), (2, 1), False),
    ("depthwise", (3, 3), None, (1, 2), ((1, 1), (2, 0)), (1, 1), (1, 1), True),
    ("transposed", (3, 4), 3, (1, 1), ((1, 1), (0, 1)), (2, 3), (1, 1), False),
    ("transposed_strided", (2, 3), 2, (2, 1), ((1, 0), (1, 1)), (3, 2), (1, 1), False),
]


class _Builder:
    def __init__(self, name: str, seed: int) -> None:
        self.g = Graph(name)
        self.rng = np.random.default_rng(seed)

    def const(self, value: np.ndarray, dt) -> Tensor:
        value = np.asarray(value, dt.np_dtype)
        return self.g.add("constant", [], [TensorType(value.shape, dt)], {"value": value}).output

    def op(self, name: str, args: list[Tensor], t: TensorType, **attrs) -> Tensor:
        return self.g.add(name, args, [t], attrs).output

    def conv(self, x: Tensor, w: Tensor, out_dt, strides, padding, lhs, rhs,
             groups: int, ohwi: bool = False) -> Tensor:
        """A convolution of NHWC x with HWIO weights (OHWI, TFLite's, with `ohwi`)."""
        n, h, wd, _ = x.type.shape
        if ohwi:
            co, kh, kw, _ = w.type.shape
        else:
            kh, kw, _, co = w.type.shape
        sizes = []
        for size, k, s, (lo, hi), ld, rd in zip((h, wd), (kh, kw), strides, padding, lhs, rhs):
            span = (size - 1) * ld + 1 + lo + hi
            sizes.append((span - (k - 1) * rd - 1) // s + 1)
        layout = dict(NHWC, **OHWI) if ohwi else NHWC
        return self.op("convolution", [x, w], TensorType((n, *sizes, co), out_dt),
                       strides=strides, padding=padding, lhs_dilation=lhs, rhs_dilation=rhs,
                       feature_group_count=groups, dtype=out_dt.name, **layout)


def float_windows() -> Graph:
    """x: 1x7x9x3 f32 -> every conv of CONVS (bias + ReLU on the first), max and average
    pooling with padding and base dilation, and a 189-term dot product."""
    b = _Builder("float_windows", 11)
    b.g.outputs = _float_part(b, b.g.add_input(TensorType((1, 7, 9, 3), F32)))
    verify_graph(b.g)
    return b.g


def int8_windows(zp_in: int = -3, zp_out: int = 5) -> Graph:
    """x: 1x7x9x3 i8 -> the first four convolutions of CONVS as the quantized frontends
    build them (input padded with its zero point, i8 x i8 -> i32, bias, per-channel
    fixed-point requantization, output zero point, clamp to i8); a 3x3 convolution over
    16 channels made from x; an i32 dot over 14 of those 16 channels."""
    b = _Builder("int8_windows", 12)
    b.g.outputs = _int8_part(b, b.g.add_input(TensorType((1, 7, 9, 3), I8)), zp_in, zp_out)
    verify_graph(b.g)
    return b.g


def all_windows() -> Graph:
    """Both: inputs x (f32) and q (i8), the outputs of float_windows then int8_windows'."""
    b = _Builder("all_windows", 13)
    x = b.g.add_input(TensorType((1, 7, 9, 3), F32))
    q = b.g.add_input(TensorType((1, 7, 9, 3), I8))
    b.g.outputs = _float_part(b, x) + _int8_part(b, q, -3, 5)
    verify_graph(b.g)
    return b.g


def _float_part(b: _Builder, x: Tensor) -> list[Tensor]:
    outs = []
    for i, (_, (kh, kw), co, strides, padding, lhs, rhs, dw) in enumerate(CONVS):
        co = 3 if dw else co
        w = b.const(b.rng.standard_normal((kh, kw, 1 if dw else 3, co)), F32)
        y = b.conv(x, w, F32, strides, padding, lhs, rhs, 3 if dw else 1)
        if i == 0:
            t = y.type
            bias = b.op("broadcast_in_dim", [b.const(b.rng.standard_normal(co), F32)], t,
                        dims=(3,), shape=t.shape)
            y = b.op("maximum", [b.op("add", [y, bias], t),
                                 b.op("broadcast_in_dim", [b.const(0.0, F32)], t, dims=(),
                                      shape=t.shape)], t)
        outs.append(y)
    minus_inf, zero = b.const(-np.inf, F32), b.const(0.0, F32)
    outs.append(b.op("reduce_window", [x, minus_inf], TensorType((1, 4, 5, 3), F32),
                     kind="maximum", window=(1, 3, 3, 1), strides=(1, 2, 2, 1),
                     base_dilations=(1, 1, 1, 1), window_dilations=(1, 1, 1, 1),
                     padding=((0, 0), (1, 1), (1, 1), (0, 0))))
    outs.append(b.op("reduce_window", [x, zero], TensorType((1, 12, 7, 3), F32),
                     kind="add", window=(1, 2, 3, 1), strides=(1, 1, 1, 1),
                     base_dilations=(1, 2, 1, 1), window_dilations=(1, 1, 1, 1),
                     padding=((0, 0), (0, 0), (0, 0), (0, 0))))
    flat = b.op("reshape", [x], TensorType((1, 189), F32), shape=(1, 189))
    # Weights of a trained layer's size (|w| ~ 1/sqrt(fan-in)): f32 sums of 189 products
    # of unit normals differ from the float64 reference by more than --check's atol.
    wd = b.const(b.rng.standard_normal((189, 7)) / np.sqrt(189), F32)
    outs.append(b.op("dot_general", [flat, wd], TensorType((1, 7), F32), lhs_batch=(),
                     rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,), dtype="f32"))
    return outs


def _int8_part(b: _Builder, x: Tensor, zp_in: int, zp_out: int) -> list[Tensor]:
    outs = [_int8_conv(b, x, conv, zp_in, zp_out) for conv in CONVS[:4]]
    # 16 channels (a 1x1 convolution of x), then a padded 3x3 convolution over them: its
    # input channels are read 4 at a time where the target packs int8 (DSP: SXTB16 +
    # SMLAD), with zero-point padding at the border.
    wide = _int8_conv(b, x, ("pointwise", (1, 1), 16, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1),
                             False), zp_in, zp_in)
    outs.append(_int8_conv(b, wide, CONVS[0], zp_in, zp_out))
    # A dot over 14 of the 16 channels (slices fused into it): 3 packed words, 2 left.
    # Both operands are slices of `wide`: a constant would be folded to 14 columns.
    lhs = b.op("slice", [wide], TensorType((1, 1, 9, 14), I8), start=(0, 0, 0, 0),
               limit=(1, 1, 9, 14), strides=(1, 1, 1, 1))
    w = b.op("slice", [wide], TensorType((1, 5, 1, 14), I8), start=(0, 0, 0, 0),
             limit=(1, 5, 1, 14), strides=(1, 1, 1, 1))
    w = b.op("reshape", [w], TensorType((5, 14), I8), shape=(5, 14))
    outs.append(b.op("dot_general", [lhs, w], TensorType((1, 1, 9, 5), I32), lhs_batch=(),
                     rhs_batch=(), lhs_contract=(3,), rhs_contract=(1,), dtype="i32"))
    return outs


def _int8_conv(b: _Builder, x: Tensor, conv, zp_in: int, zp_out: int) -> Tensor:
    _, (kh, kw), co, strides, padding, lhs, rhs, dw = conv
    n, h, wd, ci = x.type.shape
    co = ci if dw else co
    if lhs == (1, 1):  # the zero-point padding as its own op, as TFLite's importer
        (t0, b0), (l0, r0) = padding
        shape = (n, h + t0 + b0, wd + l0 + r0, ci)
        src = b.op("pad", [x, b.const(zp_in, I8)], TensorType(shape, I8),
                   low=(0, t0, l0, 0), high=(0, b0, r0, 0), interior=(0, 0, 0, 0))
        pads = ((0, 0), (0, 0))
    else:
        src, pads = x, padding
    # TFLite's OHWI weights (input channels contiguous); depthwise ones as TFLite's
    # 1HWO, which is HWIO with one input channel.
    if dw:
        w = b.const(b.rng.integers(-127, 128, (kh, kw, 1, co)), I8)
    else:
        w = b.const(b.rng.integers(-127, 128, (co, kh, kw, ci)), I8)
    acc = b.conv(src, w, I32, strides, pads, lhs, rhs, ci if dw else 1, ohwi=not dw)
    t = acc.type

    def per_channel(values) -> Tensor:
        return b.op("broadcast_in_dim", [b.const(values, I32)], t, dims=(3,), shape=t.shape)

    v = b.op("add", [acc, per_channel(b.rng.integers(-5000, 5000, co))], t)
    mult = b.rng.integers(1 << 29, (1 << 31) - 1, co)
    v = b.op("saturating_rounding_doubling_high_mul", [v, per_channel(mult)], t)
    v = b.op("rounding_divide_by_pot", [v, per_channel(b.rng.integers(6, 11, co))], t)
    zp = b.op("broadcast_in_dim", [b.const(zp_out, I32)], t, dims=(), shape=t.shape)
    v = b.op("clamp", [b.const(-128, I32), b.op("add", [v, zp], t), b.const(127, I32)], t)
    return b.op("convert", [v], TensorType(t.shape, I8), dtype="i8")
