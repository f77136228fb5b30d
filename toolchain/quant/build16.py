"""16x8 kernels (int16 activations, int8 weights) as chains of graph primitives.

The parameters come from toolchain/quant/tflm16.py (TFLite Micro's Prepare); each
function emits plain graph ops with the arithmetic of TFLite Micro's reference kernel,
so the numpy reference executes it op by op and fusion makes each chain one dispatch:

- CONV_2D and TRANSPOSE_CONV accumulate int16 x int8 products in int64 (the kernels'
  AccumScalar with an int64 bias) and requantize with MultiplyByQuantizedMultiplier's
  int64 overload: (acc * reduced_multiplier + 2**(total_shift - 1)) >> total_shift in
  int64, truncated to int32, clamped, narrowed to int16. The 16x8 zero points are 0
  (TFLite Micro requires it), so padding is zeros and no zero point is folded anywhere;
- QUANTIZE between integer types and LEAKY_RELU use the int32 (double-rounding)
  MultiplyByQuantizedMultiplier of build.rescale, as int8 does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build
from toolchain.quant.build import CONV_ATTRS, _narrow, rescale
from toolchain.quant.tflm16 import LeakyReluParams, reduced_multipliers
from toolchain.types import QuantParams, dtype

I32, I64 = dtype("i32"), dtype("i64")


def _requantize64(b: GraphBuilder, acc: Tensor, bias: np.ndarray | None, multipliers,
                  shifts, axis: int, act_min: int, act_max: int,
                  quant: QuantParams | None) -> Tensor:
    """An i64 accumulator (+ i64 bias per channel) to int16 by the int64
    MultiplyByQuantizedMultiplier, per channel along `axis`."""
    shape = tuple(acc.type.shape)
    if bias is not None:
        acc = b.op("add", [acc, b.along(np.asarray(bias, np.int64), I64, shape, axis)])
    reduced, total = reduced_multipliers(multipliers, shifts)
    rounding = np.left_shift(np.int64(1), total - 1)
    x = b.op("multiply", [acc, b.along(reduced, I64, shape, axis)])
    x = b.op("add", [x, b.along(rounding, I64, shape, axis)])
    x = b.op("shift_right_arithmetic", [x, b.along(total, I64, shape, axis)])
    x = b.op("convert", [x], dtype="i32")  # TFLite's int32_t result = x >> total_shift
    return _narrow(b, x, 0, act_min, act_max, quant, "i16")


def _conv64(b: GraphBuilder, x: Tensor, w: np.ndarray, attrs: dict) -> Tensor:
    """The int64 accumulator of TFLite Micro's 16x8 kernels. When no sum can leave int32
    (|x| <= 2**15, so |acc| <= 2**15 * sum(|w|) over an output channel's taps; below 2**31
    for every channel), the convolution accumulates in int32 and widens once: the same
    integers, with a 32-bit multiply-accumulate in the inner loop instead of a 64-bit one."""
    conv = {k: attrs[k] for k in CONV_ATTRS}
    w = np.asarray(w, np.int8)
    out_axis = attrs["kernel_output"]
    taps = tuple(a for a in range(w.ndim) if a != out_axis)
    bound = (1 << 15) * np.abs(w.astype(np.int64)).sum(axis=taps).max(initial=0)
    narrow = bool(bound < (1 << 31))
    acc = b.op("convolution", [x, b.const(w, dtype("i8"))], dtype="i32" if narrow else "i64",
               **conv)
    return b.op("convert", [acc], dtype="i64") if narrow else acc


def conv2d(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
           strides: Sequence[int], padding: Sequence[tuple[int, int]],
           dilations: Sequence[int], multipliers, shifts, act_min: int, act_max: int,
           int32_accumulator: bool = False, quant: QuantParams | None = None) -> Tensor:
    """CONV_2D 16x8 (OHWI filter, grouped when the input has a multiple of its input
    channels): reference_integer_ops::ConvPerChannel with an int64 accumulator, or with
    `int32_accumulator` (an INT32 bias) its int32 instance: the sum and bias wrap in
    int32 and the requantization is the int32 double-rounding one of int8 (build.rescale)."""
    attrs = dict(strides=tuple(strides), padding=tuple(padding), lhs_dilation=(1, 1),
                 rhs_dilation=tuple(dilations), input_batch=0, input_feature=3,
                 input_spatial=(1, 2), kernel_input=3, kernel_output=0, kernel_spatial=(1, 2),
                 output_batch=0, output_feature=3, output_spatial=(1, 2),
                 feature_group_count=x.type.shape[3] // w.shape[3], batch_group_count=1)
    if int32_accumulator:
        conv = {k: attrs[k] for k in CONV_ATTRS}
        acc = b.op("convolution", [x, b.const(np.asarray(w, np.int8), dtype("i8"))],
                   dtype="i32", **conv)
        if bias is not None:
            acc = b.op("add", [acc, b.along(np.asarray(bias, np.int32), I32, acc.type.shape,
                                            3)])
        return build.requantize(b, acc, multipliers, shifts, axis=3, output_zp=0, act_min=act_min,
                          act_max=act_max, quant=quant, out="i16")
    acc = _conv64(b, x, w, attrs)
    return _requantize64(b, acc, bias, multipliers, shifts, 3, act_min, act_max, quant)


def transpose_conv(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
                   output_hw: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   multipliers, shifts, act_min: int, act_max: int,
                   quant: QuantParams | None = None) -> Tensor:
    """TRANSPOSE_CONV 16x8 (OHWI filter): reference_integer_ops::TransposeConv, which
    scatters x[iy, ix] * w[oc, fy, fx] to out[iy * stride - pad + fy, ...]. The same sum
    gathered: a convolution of the input dilated by the stride, padded by
    filter - 1 - pad before (and what makes the declared output size after), with the
    filter flipped in space. Taps that fall outside the output are dropped by both."""
    attrs = dict(strides=(1, 1), lhs_dilation=tuple(strides), rhs_dilation=(1, 1),
                 input_batch=0, input_feature=3, input_spatial=(1, 2), kernel_input=3,
                 kernel_output=0, kernel_spatial=(1, 2), output_batch=0, output_feature=3,
                 output_spatial=(1, 2), feature_group_count=1, batch_group_count=1)
    padding = []
    for d in range(2):
        k, s, size = w.shape[1 + d], strides[d], x.type.shape[1 + d]
        low = k - 1 - pads[d]
        dilated = (size - 1) * s + 1
        padding.append((low, output_hw[d] + k - 1 - low - dilated))
    attrs["padding"] = tuple(padding)
    acc = _conv64(b, x, np.ascontiguousarray(w[:, ::-1, ::-1, :]), attrs)
    return _requantize64(b, acc, bias, multipliers, shifts, 3, act_min, act_max, quant)


def requantize(b: GraphBuilder, x: Tensor, *, multiplier: int, shift: int, input_zp: int,
               output_zp: int, out: str, act_min: int, act_max: int,
               quant: QuantParams | None = None) -> Tensor:
    """QUANTIZE between integer types (reference_ops::Requantize): (x - in_zp) in int32,
    MultiplyByQuantizedMultiplier, + out_zp, clamped to the output type."""
    shape = tuple(x.type.shape)
    v = x if x.type.dtype.name == "i32" else b.op("convert", [x], dtype="i32")
    v = b.op("subtract", [v, b.splat(input_zp, I32, shape)])
    return _narrow(b, rescale(b, v, multiplier, shift), output_zp, act_min, act_max, quant,
                   out)


def leaky_relu(b: GraphBuilder, x: Tensor, p: LeakyReluParams, *, act_min: int,
               act_max: int, quant: QuantParams | None = None) -> Tensor:
    """LEAKY_RELU (reference_ops::QuantizeLeakyRelu): v = x - in_zp; the identity
    multiplier where v >= 0, the alpha one (its magnitude, the sign applied after)
    elsewhere; + out_zp, clamped to the storage type."""
    shape = tuple(x.type.shape)
    v = b.op("subtract", [b.op("convert", [x], dtype="i32"), b.splat(p.input_zp, I32, shape)])
    ident = rescale(b, v, p.identity_multiplier, p.identity_shift)
    alpha = rescale(b, v, abs(p.alpha_multiplier), p.alpha_shift)
    if p.alpha_multiplier < 0:
        alpha = b.op("negate", [alpha])
    positive = b.op("compare", [v, b.splat(0, I32, shape)], direction="GE")
    y = b.op("select", [positive, ident, alpha])
    return _narrow(b, y, p.output_zp, act_min, act_max, quant, x.type.dtype.name)


__all__ = ["conv2d", "leaky_relu", "requantize", "transpose_conv"]
