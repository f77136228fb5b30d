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
from toolchain.quant.tflm16_lut import FORMS, SigmoidLutParams, sigmoid_table
from toolchain.quant.tflm16_softmax import INT16_MAX, INT16_MIN, Softmax16Params
from toolchain.types import QuantParams, dtype

I32, I64 = dtype("i32"), dtype("i64")


def _requantize64(b: GraphBuilder, acc: Tensor, bias: np.ndarray | None, multipliers,
                  shifts, axis: int, act_min: int, act_max: int,
                  quant: QuantParams | None, output_zp: int = 0) -> Tensor:
    """An i64 accumulator (+ i64 bias per channel) to int16 by the int64
    MultiplyByQuantizedMultiplier, per channel along `axis`, + output zero point."""
    shape = tuple(acc.type.shape)
    if bias is not None:
        acc = b.op("add", [acc, b.along(np.asarray(bias, np.int64), I64, shape, axis)])
    reduced, total = reduced_multipliers(multipliers, shifts)
    rounding = np.left_shift(np.int64(1), total - 1)
    x = b.op("multiply", [acc, b.along(reduced, I64, shape, axis)])
    x = b.op("add", [x, b.along(rounding, I64, shape, axis)])
    x = b.op("shift_right_arithmetic", [x, b.along(total, I64, shape, axis)])
    x = b.op("convert", [x], dtype="i32")  # TFLite's int32_t result = x >> total_shift
    return _narrow(b, x, output_zp, act_min, act_max, quant, "i16")


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
           int32_accumulator: bool = False, depthwise: bool = False,
           quant: QuantParams | None = None) -> Tensor:
    """CONV_2D 16x8 (OHWI filter, grouped when the input has a multiple of its input
    channels): reference_integer_ops::ConvPerChannel with an int64 accumulator, or with
    `int32_accumulator` (an INT32 bias) its int32 instance: the sum and bias wrap in
    int32 and the requantization is the int32 double-rounding one of int8 (build.rescale).
    With `depthwise`, DEPTHWISE_CONV_2D ([1, H, W, C * M] filter, output channel c * M + m
    reading input channel c): DepthwiseConvPerChannel's int16 instance, int64 only."""
    groups = x.type.shape[3] if depthwise else x.type.shape[3] // w.shape[3]
    attrs = dict(strides=tuple(strides), padding=tuple(padding), lhs_dilation=(1, 1),
                 rhs_dilation=tuple(dilations), input_batch=0, input_feature=3,
                 input_spatial=(1, 2), kernel_input=0 if depthwise else 3,
                 kernel_output=3 if depthwise else 0, kernel_spatial=(1, 2),
                 output_batch=0, output_feature=3, output_spatial=(1, 2),
                 feature_group_count=groups, batch_group_count=1)
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


def fully_connected(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
                    input_zp: int, filter_zp: int, multipliers, shifts, output_zp: int,
                    act_min: int, act_max: int, int32_accumulator: bool = False,
                    quant: QuantParams | None = None) -> Tensor:
    """FULLY_CONNECTED 16x8 ([N, K] weights on x's last dimension, per tensor or per
    output channel): reference_integer_ops::FullyConnected(PerChannel) with int64 sums
    (+ int64 bias) and the int64 requantization, or with `int32_accumulator` (an INT32
    bias) wrapping int32 sums and the int32 one. The zero points (TFLite Micro's FC keeps
    them, unlike its convolutions) are folded at build time: sum((w - fzp) * (x - zp))
    = sum((w - fzp) * x) - zp * sum(w - fzp)."""
    w = np.asarray(w, np.int8)
    if filter_zp:
        w = w.astype(np.int16) - np.int16(filter_zp)
    rank = x.type.rank
    units = w.shape[0]
    attrs = dict(lhs_batch=(), rhs_batch=(), lhs_contract=(rank - 1,), rhs_contract=(1,))
    if int32_accumulator:
        acc = build.dot_general(b, x, w, bias, attrs=attrs, input_zp=input_zp)
        return build.requantize(b, acc, multipliers, shifts, axis=rank - 1,
                                output_zp=output_zp, act_min=act_min, act_max=act_max,
                                quant=quant, out="i16")
    # |x| <= 2**15 and each product fits int32 (as in TFLite's loop); a sum bounded below
    # 2**31 for every unit accumulates in int32 and widens once (see _conv64).
    sums = w.astype(np.int64).sum(axis=1)
    bound = (1 << 15) * np.abs(w.astype(np.int64)).sum(axis=1).max(initial=0)
    wide = "i32" if bound < (1 << 31) else "i64"
    wdt = dtype("i16" if w.dtype == np.int16 else "i8")
    acc = b.op("dot_general", [x, b.const(w, wdt)], lhs_batch=(), rhs_batch=(),
               lhs_contract=(rank - 1,), rhs_contract=(1,), dtype=wide)
    if wide == "i32":
        acc = b.op("convert", [acc], dtype="i64")
    total = -np.int64(input_zp) * sums
    if bias is not None:
        total = total + np.asarray(bias, np.int64)
    elif not input_zp:
        total = None  # nothing to add
    mult = np.broadcast_to(np.asarray(multipliers, np.int64), (units,))
    shift = np.broadcast_to(np.asarray(shifts, np.int64), (units,))
    return _requantize64(b, acc, total, mult, shift, rank - 1, act_min, act_max, quant,
                         output_zp)


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


def _take(b: GraphBuilder, table: Tensor, index: Tensor) -> Tensor:
    """table[index] element-wise (a gather of one element per index)."""
    return b.op("gather", [table, index], offset_dims=(), collapsed_slice_dims=(0,),
                operand_batching_dims=(), start_indices_batching_dims=(),
                start_index_map=(0,), index_vector_dim=index.type.rank, slice_sizes=(1,))


def sigmoid_lut(b: GraphBuilder, x: Tensor, p: SigmoidLutParams, op: str, *,
                quant: QuantParams | None = None) -> Tensor:
    """LOGISTIC or TANH on int16 (reference_integer_ops::Logistic / Tanh): the input
    rescaled by (x * multiplier + round) >> shift, |v| split into a table index and a
    fraction, sigmoid interpolated between two entries of the 256-entry table (saturated
    from index 255), mirrored by sign and shifted back to Q0.15 (tflm16_lut.FORMS)."""
    form = FORMS[op]
    shape = tuple(x.type.shape)

    def splat(v: int) -> Tensor:
        return b.splat(v, I32, shape)

    rnd = (1 << (p.left_shift - 1)) if p.left_shift > 0 else 0
    v = b.op("multiply", [b.op("convert", [x], dtype="i32"), splat(p.multiplier)])
    if p.left_shift:
        v = b.op("shift_right_arithmetic", [b.op("add", [v, splat(rnd)]), splat(p.left_shift)])
    a = b.op("abs", [v])
    uh = b.op("shift_right_logical", [a, splat(form.fraction_bits)])
    index = b.op("minimum", [uh, splat(254)])
    table = b.const(sigmoid_table().astype(np.int32), I32)
    ua = _take(b, table, index)
    ub = _take(b, table, b.op("add", [index, splat(1)]))
    frac = b.op("and", [a, splat((1 << form.fraction_bits) - 1)])
    interp = b.op("add", [b.op("shift_left", [ua, splat(form.fraction_bits)]),
                          b.op("multiply", [frac, b.op("subtract", [ub, ua])])])
    saturated = b.op("compare", [uh, splat(255)], direction="GE")
    result = b.op("select", [saturated, splat(form.saturated), interp])
    positive = b.op("add", [result, splat(form.positive_offset)])
    negative = b.op("subtract", [splat(form.negative_offset), result])
    signed = b.op("select", [b.op("compare", [v, splat(0)], direction="GE"), positive,
                             negative])
    y = b.op("shift_right_arithmetic", [signed, splat(form.final_shift)])
    return b.op("convert", [y], quant=quant, dtype="i16")


def _lut16(b: GraphBuilder, v: Tensor, lut: np.ndarray) -> Tensor:
    """LUTLookup(int16) on an i32 tensor of int16 values: entry 256 + (v >> 7) of the
    513-entry table, plus the slope to the next entry times the low 7 bits, rounded."""
    shape = tuple(v.type.shape)
    table = b.const(np.asarray(lut, np.int32), I32)
    index = b.op("add", [b.op("shift_right_arithmetic", [v, b.splat(7, I32, shape)]),
                         b.splat(256, I32, shape)])
    base = _take(b, table, index)
    slope = b.op("subtract", [_take(b, table, b.op("add", [index, b.splat(1, I32, shape)])),
                              base])
    delta = b.op("multiply", [slope, b.op("and", [v, b.splat(0x7F, I32, shape)])])
    delta = b.op("shift_right_arithmetic", [b.op("add", [delta, b.splat(64, I32, shape)]),
                                            b.splat(7, I32, shape)])
    return b.op("add", [base, delta])


def _clamp16(b: GraphBuilder, v: Tensor) -> Tensor:
    return b.op("clamp", [b.const(INT16_MIN, I32), v, b.const(INT16_MAX, I32)])


def softmax(b: GraphBuilder, x: Tensor, p: Softmax16Params, *,
            quant: QuantParams | None = None) -> Tensor:
    """SOFTMAX int16 over the last axis (reference_ops::SoftmaxInt16): exp of the
    rescaled x - max(row) from p.exp_lut, the row sum's reciprocal from
    p.reciprocal_lut after normalizing the sum by its leading zeros h, and each exp
    times it in int64, rounded and shifted right by 31 - h, clamped to [0, 32767]."""
    shape = tuple(x.type.shape)
    last = len(shape) - 1
    rows = shape[:-1]

    def per_row(t: Tensor) -> Tensor:
        return b.op("broadcast_in_dim", [t], dims=tuple(range(last)), shape=shape)

    top = b.op("reduce", [x, b.const(INT16_MIN, dtype("i16"))], kind="maximum", dims=(last,))
    diff = b.op("subtract", [b.op("convert", [x], dtype="i32"),
                             b.op("convert", [per_row(top)], dtype="i32")])
    scaled = rescale(b, diff, p.multiplier, p.shift)
    e = _lut16(b, _clamp16(b, b.op("add", [scaled, b.splat(INT16_MAX, I32, shape)])),
               p.exp_lut)
    total = b.op("reduce", [e, b.const(0, I32)], kind="add", dims=(last,))
    headroom = b.op("count_leading_zeros", [total])
    wide = b.op("shift_left", [b.op("convert", [total], dtype="i64"),
                               b.op("convert", [b.op("subtract", [headroom,
                                                                  b.splat(1, I32, rows)])],
                                    dtype="i64")])
    shifted = b.op("shift_right_arithmetic", [b.op("add", [wide, b.splat(1 << 13, I64, rows)]),
                                              b.splat(14, I64, rows)])
    sym = b.op("subtract", [b.op("convert", [shifted], dtype="i32"),
                            b.splat((1 << 15) + (1 << 16), I32, rows)])
    recip = _lut16(b, _clamp16(b, sym), p.reciprocal_lut)
    right = b.op("convert", [b.op("subtract", [b.splat(31, I32, rows), headroom])],
                 dtype="i64")
    rounding = b.op("shift_left", [b.splat(1, I64, rows),
                                   b.op("subtract", [right, b.splat(1, I64, rows)])])
    prod = b.op("multiply", [b.op("convert", [e], dtype="i64"),
                             b.op("convert", [per_row(recip)], dtype="i64")])
    y = b.op("shift_right_arithmetic", [b.op("add", [prod, per_row(rounding)]), per_row(right)])
    y = b.op("clamp", [b.const(0, I64), y, b.const(INT16_MAX, I64)])
    return b.op("convert", [y], quant=quant, dtype="i16")


def clamp(b: GraphBuilder, x: Tensor, lo: int, hi: int) -> Tensor:
    """x clamped to [lo, hi] in its own type (RELU6's Relu6Quantized: no requantization)."""
    dt = x.type.dtype
    return b.op("clamp", [b.const(lo, dt), x, b.const(hi, dt)], quant=x.type.quant)


__all__ = ["clamp", "conv2d", "fully_connected", "leaky_relu", "requantize", "sigmoid_lut",
           "softmax", "transpose_conv"]
