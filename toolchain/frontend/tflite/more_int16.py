"""int16 forms of TFLite Micro's kernels that their rows lacked: ABS (quantized, zero
points 0, or plain), PRELU (int8 alpha), SQUARED_DIFFERENCE, BATCH_MATMUL (int64 sums)
and RSQRT, bit for bit (docs/int16.md).
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.more_batch import _matmul
from toolchain.frontend.tflite.more_math import prelu_sums
from toolchain.frontend.tflite.more_types import (
    INT16_MAX,
    INT16_MIN,
    narrow16,
    plain,
    quantized,
    zero_point_zero,
)
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, build16
from toolchain.quant.fixedpoint import (
    count_leading_zeros_u32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap_int32,
)
from toolchain.quant.fixedpoint import rescale as fp_rescale
from toolchain.types import dtype


def abs_int16(ctx: OpContext) -> Tensor:
    """ABS on int16. Unquantized: C's abs of each value (|-32768| wraps back to itself
    when stored). Quantized (zero points 0, as TFLite Micro requires): |x|, rescaled by
    MultiplyByQuantizedMultiplier(input / output scale, a float32 ratio) when the scales
    differ, clamped to int16."""
    x, out = ctx.input(0), ctx.output_type()
    if x.type.quant is None:
        plain(x.type, "input", "i16")
        plain(out, "output", "i16")
        return ctx.node("abs", [x])
    s_in, z_in = quantized(x.type, "input", "i16")
    s_out, z_out = quantized(out, "output", "i16")
    zero_point_zero(z_in, "input")
    zero_point_zero(z_out, "output")
    g = GraphBuilder(ctx.graph)
    v = ctx.node("abs", [g.op("convert", [x], dtype="i32")])
    if np.float32(s_in) != np.float32(s_out):
        multiplier, shift = quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
        v = build.rescale(g, v, multiplier, shift)
    return narrow16(g, ctx, v, out)


def prelu_int16(ctx: OpContext) -> Tensor:
    """PRELU with int16 input and output and int8 alpha (TFLite Micro requires it):
    reference_ops::BroadcastPrelu4DSlow, x - zp >= 0 ? (x - zp) * s_in / s_out :
    (x - zp) * (alpha - zp_a) * s_in * s_a / s_out, each by MultiplyByQuantizedMultiplier
    (double-precision ratios), + zp_out, clamped to int16."""
    x, alpha, out = ctx.input(0), ctx.input(1), ctx.output_type()
    g = GraphBuilder(ctx.graph)
    y = prelu_sums(ctx, g, quantized(x.type, "input", "i16"),
                   quantized(alpha.type, "alpha", "i8"), quantized(out, "output", "i16"))
    return narrow16(g, ctx, y, out)


def squared_difference_int16(ctx: OpContext) -> Tensor:
    """SQUARED_DIFFERENCE on int16 (zero points 0): the int8 kernel's arithmetic with a
    left shift of 0. Each input scaled by its scale / (2 * the larger scale), the
    difference squared in int32 (|d| <= 32767, so it cannot wrap), rescaled by
    (2 * larger)^2 / output scale, clamped to int16."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    (s1, z1), (s2, z2), (so, zo) = (quantized(a.type, "first input", "i16"),
                                    quantized(b.type, "second input", "i16"),
                                    quantized(out, "output", "i16"))
    for zp, what in ((z1, "first input"), (z2, "second input"), (zo, "output")):
        zero_point_zero(zp, what)
    twice = 2.0 * max(s1, s2)
    shape = broadcast_shape(a.type.shape, b.type.shape)
    g = GraphBuilder(ctx.graph)
    scaled = []
    for x, s in ((a, s1), (b, s2)):
        multiplier, shift = quantize_multiplier(s / twice)
        scaled.append(build.rescale(g, build._offset(g, x, 0, shape), multiplier, shift))
    diff = ctx.node("subtract", scaled)
    multiplier, shift = quantize_multiplier(twice * twice / so)
    return build.requantize(g, ctx.node("multiply", [diff, diff]), multiplier, shift,
                            axis=None, output_zp=0, act_min=INT16_MIN, act_max=INT16_MAX,
                            quant=out.quant, out="i16")


def batch_matmul_int16(ctx: OpContext) -> Tensor:
    """BATCH_MATMUL on int16 (zero points 0, as TFLite Micro requires):
    reference_ops::BatchMatMul<int16_t, int64_t>, the products summed in int64, then the
    int64 MultiplyByQuantizedMultiplier by float32(sa * sb) / so, clamped to int16."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    (sa, za), (sb, zb), (so, zo) = (quantized(a.type, "first input", "i16"),
                                    quantized(b.type, "second input", "i16"),
                                    quantized(out, "output", "i16"))
    for zp, what in ((za, "first input"), (zb, "second input"), (zo, "output")):
        zero_point_zero(zp, what)
    acc = _matmul(ctx, a, b, "i64")
    multiplier, shift = quantize_multiplier(float(np.float32(sa) * np.float32(sb)) /
                                            float(np.float32(so)))
    columns = acc.type.shape[-1]
    return build16._requantize64(GraphBuilder(ctx.graph), acc, None,
                                 np.full(columns, multiplier), np.full(columns, shift),
                                 acc.type.rank - 1, INT16_MIN, INT16_MAX, out.quant)


def inv_sqrt_multipliers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """more_math.inv_sqrt_multiplier (GetInvSqrtQuantizedMultiplierExp with kReverseShift
    -1: gemmlowp's five Newton steps in FixedPoint<int32, 3>) for an array of values in
    [2, 2**29): (Q0.31 multipliers, left shifts)."""
    value = np.asarray(values, np.int64)
    if np.any((value < 2) | (value >= 1 << 29)):
        raise ValueError("inv_sqrt_multipliers takes values in [2, 2**29)")
    clz = count_leading_zeros_u32(value).astype(np.int64)
    pairs = (clz - 1) // 2 - 1
    shift = 11 - pairs
    value = value << (2 * pairs)
    half_input = saturating_rounding_multiply_by_pot(value >> 1, -1).astype(np.int64)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(value.shape, 1 << 28, np.int64)  # F3 one

    def srdhm(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        return saturating_rounding_doubling_high_mul(a, b).astype(np.int64)

    for _ in range(5):
        x3 = fp_rescale(srdhm(srdhm(x, x), x), 9, 3).astype(np.int64)
        x = fp_rescale(wrap_int32(srdhm(half_three, x) - srdhm(half_input, x3)), 6, 3)
        x = x.astype(np.int64)
    x = srdhm(x, 1518500250)
    x = np.where(shift < 0, wrap_int32(x << np.maximum(-shift, 0)), x)
    return x, -np.maximum(shift, 0)


def rsqrt_int16_table(s_in: float, s_out: float) -> np.ndarray:
    """TFLite Micro's RsqrtEvalQuantized<int16_t> (zero points 0) for x = 0..32767:
    32767 at 0, else 1 / sqrt(x) in fixed point with 20 fraction bits, times
    1 / (sqrt(input scale) * output scale) (a float32 product), clamped to int16."""
    real = 1.0 / float(np.float32(np.sqrt(np.float32(s_in)) * np.float32(s_out)))
    multiplier, shift = quantize_multiplier(real)
    values = np.arange(2, 1 << 15, dtype=np.int64)
    inv, inv_shift = inv_sqrt_multipliers(values)
    data = multiply_by_quantized_multiplier(np.ones_like(values), inv, inv_shift + _RSQRT_SHIFT)
    out = multiply_by_quantized_multiplier(data, multiplier, shift - _RSQRT_SHIFT)
    # value 1: GetInvSqrtQuantizedMultiplierExp's (INT32_MAX, 0), as for any value <= 1.
    one = multiply_by_quantized_multiplier(
        multiply_by_quantized_multiplier(1, (1 << 31) - 1, _RSQRT_SHIFT),
        multiplier, shift - _RSQRT_SHIFT)
    table = np.concatenate([[INT16_MAX], np.atleast_1d(one), out]).astype(np.int64)
    return np.clip(table, INT16_MIN, INT16_MAX).astype(np.int16)


_RSQRT_SHIFT = 20  # elementwise.cc's kShift: fraction bits between RSQRT's two rescales


def rsqrt_int16(ctx: OpContext) -> Tensor:
    """RSQRT on int16 (zero points 0): a 32768-entry table of TFLite Micro's kernel
    (rsqrt_int16_table) read at max(x, 0). TFLite Micro fails the inference on a
    negative input; the table's entry for 0 (32767) stands there, as int8's does."""
    x, out = ctx.input(0), ctx.output_type()
    s_in, z_in = quantized(x.type, "input", "i16")
    s_out, z_out = quantized(out, "output", "i16")
    zero_point_zero(z_in, "input")
    zero_point_zero(z_out, "output")
    g = GraphBuilder(ctx.graph)
    shape = tuple(x.type.shape)
    wide = g.op("convert", [x], dtype="i32")
    index = g.op("maximum", [wide, g.splat(0, dtype("i32"), shape)])
    table = rsqrt_int16_table(s_in, s_out)
    return g.op("gather", [g.const(table, dtype("i16"), out.quant), index], offset_dims=(),
                collapsed_slice_dims=(0,), operand_batching_dims=(),
                start_indices_batching_dims=(), start_index_map=(0,),
                index_vector_dim=len(shape), slice_sizes=(1,), quant=out.quant)


__all__ = ["abs_int16", "batch_matmul_int16", "inv_sqrt_multipliers", "prelu_int16",
           "rsqrt_int16", "rsqrt_int16_table", "squared_difference_int16"]
