"""TFLite elementwise math of TFLite Micro's op resolver: ABS, NEG, FLOOR, CEIL, SQRT,
RSQRT, SQUARE, EXP, LOG, SIN, COS, SQUARED_DIFFERENCE, ELU, PRELU, LOG_SOFTMAX and
L2_NORMALIZATION in float32, the int8 forms TFLite Micro computes through a 256-entry
table (ABS, ELU), built here by TFLite Micro's own per-value arithmetic, and int8
LOG_SOFTMAX's fixed point (toolchain/quant/build_log_softmax.py).

Float converters follow TFLite's reference kernels in the graph's ops; what remains is
the math library's last bits and the summation order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite.activations import FLT_MAX
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, build_log_softmax, tflm_log_softmax
from toolchain.quant.fixedpoint import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rescale,
    round_half_away,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap_int32,
)

Converter = Callable[[OpContext], Tensor]

# TFLite operator -> the graph's unary op computing its float32 form.
UNARY_FLOAT = {
    "ABS": "abs", "NEG": "negate", "FLOOR": "floor", "CEIL": "ceil", "SQRT": "sqrt",
    "RSQRT": "rsqrt", "EXP": "exponential", "LOG": "log", "SIN": "sine", "COS": "cosine",
}


def _float32(ctx: OpContext, i: int = 0) -> Tensor:
    x = ctx.input(i)
    if x.type.dtype.name != "f32":
        raise Unsupported(f"input {i} has element type {x.type.dtype}; float32 is expected")
    return x


def _unary(graph_op: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        return ctx.node(graph_op, [_float32(ctx)])

    convert.__doc__ = f"The float32 `{graph_op}` of the input."
    return convert


UNARY_CONVERTERS: dict[str, Converter] = {name: _unary(op) for name, op in UNARY_FLOAT.items()}


def square(ctx: OpContext) -> Tensor:
    """x * x in float32."""
    x = _float32(ctx)
    return ctx.node("multiply", [x, x])


def squared_difference(ctx: OpContext) -> Tensor:
    """(a - b)^2 of two broadcast float32 inputs."""
    a, b = _float32(ctx, 0), _float32(ctx, 1)
    shape = broadcast_shape(a.type.shape, b.type.shape)
    d = ctx.node("subtract", [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])
    return ctx.node("multiply", [d, d])


def elu(ctx: OpContext) -> Tensor:
    """x < 0 ? exp(x) - 1 : x in float32 (TFLite Micro's elu.cc, not expm1)."""
    x = _float32(ctx)
    negative = ctx.node("compare", [x, ctx.filled(0.0, x)], direction="LT")
    em1 = ctx.node("subtract", [ctx.node("exponential", [x]), ctx.filled(1.0, x)])
    return ctx.node("select", [negative, em1, x])


def prelu(ctx: OpContext) -> Tensor:
    """x >= 0 ? x : alpha * x, alpha broadcast against x (float32)."""
    x, alpha = _float32(ctx, 0), _float32(ctx, 1)
    shape = broadcast_shape(x.type.shape, alpha.type.shape)
    x, alpha = ctx.broadcast(x, shape), ctx.broadcast(alpha, shape)
    keep = ctx.node("compare", [x, ctx.filled(0.0, x)], direction="GE")
    return ctx.node("select", [keep, x, ctx.node("multiply", [x, alpha])])


def _last_axis(ctx: OpContext) -> tuple[Tensor, int, tuple[int, ...]]:
    x = _float32(ctx)
    if x.type.rank == 0:
        raise Unsupported(f"{ctx.op.opcode} needs an input of rank 1 or more")
    last = x.type.rank - 1
    return x, last, tuple(range(last))


def log_softmax(ctx: OpContext) -> Tensor:
    """Along the last axis: x - max - log(sum(exp(x - max))), TFLite's float order."""
    x, last, keep = _last_axis(ctx)
    top = ctx.node("reduce", [x, ctx.scalar(-FLT_MAX, x)], kind="maximum", dims=(last,))
    shifted = ctx.node("subtract", [x, ctx.broadcast(top, x.type.shape, keep)])
    e = ctx.node("exponential", [shifted])
    total = ctx.node("reduce", [e, ctx.scalar(0.0, e)], kind="add", dims=(last,))
    log_sum = ctx.node("log", [total])
    return ctx.node("subtract", [shifted, ctx.broadcast(log_sum, x.type.shape, keep)])


# TFLite's L2Normalization epsilon (reference l2normalization.h).
_L2_EPSILON = 1e-6


def l2_normalization(ctx: OpContext) -> Tensor:
    """x / max(sqrt(sum over the last axis of x^2), 1e-6), TFLite's float kernel."""
    x, last, keep = _last_axis(ctx)
    if ctx.options.get("fused_activation_function", 0) not in (0, "NONE"):
        raise Unsupported("L2_NORMALIZATION with a fused activation is not supported")
    sq = ctx.node("multiply", [x, x])
    total = ctx.node("reduce", [sq, ctx.scalar(0.0, sq)], kind="add", dims=(last,))
    norm = ctx.node("maximum", [ctx.node("sqrt", [total]),
                                ctx.filled(float(np.float32(_L2_EPSILON)), total)])
    return ctx.node("divide", [x, ctx.broadcast(norm, x.type.shape, keep)])


# ------------------------------------------------------------------ int8 by tables


def _int8_params(ctx: OpContext) -> tuple[float, int, float, int]:
    """(input scale, zero point, output scale, zero point), per tensor."""
    x, out = ctx.input(0), ctx.output_type()
    params = []
    for ty, what in ((x.type, "input"), (out, "output")):
        if ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be quantized per tensor")
        params += [ty.quant.scales[0], ty.quant.zero_points[0]]
    return params[0], params[1], params[2], params[3]


def abs_int8_table(s_in: float, z_in: int, s_out: float, z_out: int) -> np.ndarray:
    """TFLite Micro's AbsEvalQuantized for every int8 input: |x - zp_in|, rescaled by
    input / output scale (a float32 ratio) unless the scales are equal, + zp_out,
    clamped."""
    value = np.abs(np.arange(-128, 128, dtype=np.int64) - z_in)
    if np.float32(s_in) != np.float32(s_out):
        multiplier, shift = quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
        value = multiply_by_quantized_multiplier(value, multiplier, shift).astype(np.int64)
    return np.clip(value + z_out, -128, 127).astype(np.int8)


def elu_int8_table(s_in: float, z_in: int, s_out: float, z_out: int) -> np.ndarray:
    """TFLite Micro's elu.cc PopulateLookupTable: dequantize, exp(x) - 1 below zero (all
    in float32), round half away from zero by 1 / output scale, + zp_out, clamped."""
    x = np.float32(s_in) * (np.arange(-128, 128, dtype=np.float32) - np.float32(z_in))
    y = np.where(x < 0, np.exp(x) - np.float32(1.0), x).astype(np.float32)
    scaled = (y * (np.float32(1.0) / np.float32(s_out))).astype(np.float32)
    rounded = round_half_away(scaled.astype(np.float64))
    return np.clip(rounded.astype(np.int64) + z_out, -128, 127).astype(np.int8)


def _by_table(table: Callable[[float, int, float, int], np.ndarray]) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        x = ctx.input(0)
        if x.type.dtype.name != "i8":
            raise Unsupported(f"input 0 has element type {x.type.dtype}; int8 is expected")
        out = ctx.output_type()
        return build.lookup(GraphBuilder(ctx.graph), x, table(*_int8_params(ctx)),
                            quant=out.quant)

    convert.__doc__ = f"int8 through a 256-entry table: {table.__doc__}"
    return convert


abs_int8 = _by_table(abs_int8_table)
elu_int8 = _by_table(elu_int8_table)


__all__ = ["UNARY_CONVERTERS", "UNARY_FLOAT", "abs_int8", "abs_int8_table", "elu", "elu_int8",
           "elu_int8_table", "l2_normalization", "log_softmax", "prelu", "square",
           "squared_difference"]


def inv_sqrt_multiplier(value: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(value, kReverseShift = -1): 1 / sqrt(value)
    as a Q0.31 multiplier and a left shift, by gemmlowp's five Newton steps in
    FixedPoint<int32, 3>."""
    def srdhm(a: int, b: int) -> int:
        return int(saturating_rounding_doubling_high_mul(a, b))

    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    clz = 32 - int(value).bit_length()
    pairs = (clz - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = int(saturating_rounding_multiply_by_pot(value >> 1, -1))
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # F3 one
    for _ in range(5):
        x3 = int(rescale(srdhm(srdhm(x, x), x), 9, 3))
        x = int(rescale(int(wrap_int32(srdhm(half_three, x) - srdhm(half_input, x3))), 6, 3))
    x = srdhm(x, 1518500250)
    if shift < 0:
        x = int(wrap_int32(x << -shift))
        shift = 0
    return x, -shift


# TFLite Micro's RSQRT keeps this many fraction bits between its two rescales.
_RSQRT_SHIFT = 20


def rsqrt_int8_table(s_in: float, z_in: int, s_out: float, z_out: int) -> np.ndarray:
    """TFLite Micro's RsqrtEvalQuantized for every int8 input: 1 / sqrt(x - zp_in) in
    fixed point, times 1 / (sqrt(input scale) * output scale), + zp_out, clamped; 127 at
    x == zp_in. (TFLite Micro fails the inference below zp_in; the table holds 127
    there.)"""
    real = 1.0 / float(np.float32(np.sqrt(np.float32(s_in)) * np.float32(s_out)))
    multiplier, shift = quantize_multiplier(real)
    table = np.full(256, 127, dtype=np.int64)
    for k, q in enumerate(range(-128, 128)):
        value = q - z_in
        if value <= 0:
            continue
        m, s = inv_sqrt_multiplier(value)
        data = int(multiply_by_quantized_multiplier(1, m, s + _RSQRT_SHIFT))
        out = int(multiply_by_quantized_multiplier(data, multiplier, shift - _RSQRT_SHIFT))
        table[k] = out + z_out
    return np.clip(table, -128, 127).astype(np.int8)


rsqrt_int8 = _by_table(rsqrt_int8_table)
__all__ += ["inv_sqrt_multiplier", "rsqrt_int8", "rsqrt_int8_table"]


# TFLite Micro's SQUARED_DIFFERENCE shifts int8 inputs left by this much before scaling.
_SQDIFF_LEFT_SHIFT = 7


def squared_difference_int8(ctx: OpContext) -> Tensor:
    """int8 SQUARED_DIFFERENCE as TFLite Micro: both inputs (offset, << 7) scaled by
    scale / (2 * the larger scale), the difference squared, rescaled to the output."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    params = []
    for ty, what in ((a.type, "first input"), (b.type, "second input"), (out, "output")):
        if ty.dtype.name != "i8" or ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be int8, quantized per tensor")
        params.append((float(np.float32(ty.quant.scales[0])), ty.quant.zero_points[0]))
    (s1, z1), (s2, z2), (so, zo) = params
    twice = 2.0 * max(s1, s2)
    out_real = twice * twice / ((1 << (_SQDIFF_LEFT_SHIFT * 2)) * so)
    shape = broadcast_shape(a.type.shape, b.type.shape)
    g = GraphBuilder(ctx.graph)
    scaled = []
    for x, s, z in ((a, s1, z1), (b, s2, z2)):
        multiplier, shift = quantize_multiplier(s / twice)  # below one: s <= the larger
        v = build._offset(g, x, z, shape)
        v = ctx.node("shift_left", [v, ctx.broadcast(ctx.const(_SQDIFF_LEFT_SHIFT, "i32"),
                                                     shape, ())])
        scaled.append(build.rescale(g, v, multiplier, shift))
    diff = ctx.node("subtract", scaled)
    multiplier, shift = quantize_multiplier(out_real)
    return build.requantize(g, ctx.node("multiply", [diff, diff]), multiplier, shift,
                            axis=None, output_zp=zo, quant=out.quant)


__all__ += ["squared_difference_int8"]


def prelu_int8(ctx: OpContext) -> Tensor:
    """int8 PRELU as TFLite Micro: x - zp >= 0 ? (x - zp) * s_in / s_out : (x - zp) *
    (alpha - zp_a) * s_in * s_a / s_out, each by MultiplyByQuantizedMultiplier, + zp_out,
    clamped (alpha broadcast against x)."""
    x, alpha, out = ctx.input(0), ctx.input(1), ctx.output_type()
    params = []
    for ty, what in ((x.type, "input"), (alpha.type, "alpha"), (out, "output")):
        if ty.dtype.name != "i8" or ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be int8, quantized per tensor")
        params.append((float(np.float32(ty.quant.scales[0])), ty.quant.zero_points[0]))
    g = GraphBuilder(ctx.graph)
    y = prelu_sums(ctx, g, *params)
    y = ctx.node("clamp", [ctx.const(-128, "i32"), y, ctx.const(127, "i32")])
    return g.op("convert", [y], quant=out.quant, dtype="i8")


def prelu_sums(ctx: OpContext, g: GraphBuilder, x_q: tuple[float, int],
               alpha_q: tuple[float, int], out_q: tuple[float, int]) -> Tensor:
    """Quantized PRELU of inputs 0 and 1 as int32, before the output type's clamp: each
    side by MultiplyByQuantizedMultiplier of its ratio of the (scale, zero point) pairs
    given, + the output's zero point (the int8 and int16 kernels' arithmetic)."""
    x, alpha = ctx.input(0), ctx.input(1)
    (s1, z1), (sa, za), (so, zo) = x_q, alpha_q, out_q
    shape = broadcast_shape(x.type.shape, alpha.type.shape)
    v, a = build._offset(g, x, z1, shape), build._offset(g, alpha, za, shape)
    m1, sh1 = quantize_multiplier(s1 / so)
    m2, sh2 = quantize_multiplier(s1 * sa / so)
    positive = build.rescale(g, v, m1, sh1)
    negative = build.rescale(g, ctx.node("multiply", [v, a]), m2, sh2)
    keep = ctx.node("compare", [v, ctx.filled(0, v)], direction="GE")
    return ctx.node("add", [ctx.node("select", [keep, positive, negative]), ctx.filled(zo, v)])


__all__ += ["prelu_int8", "prelu_sums"]


def log_softmax_int8(ctx: OpContext) -> Tensor:
    """int8 LOG_SOFTMAX over the last axis, TFLite Micro's fixed point bit for bit
    (toolchain/quant/tflm_log_softmax.py); the output must be scale 16/256, zero point
    127, as TFLite Micro requires."""
    x, out = ctx.input(0), ctx.output_type()
    for ty, what in ((x.type, "input"), (out, "output")):
        if ty.dtype.name != "i8" or ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be int8, quantized per tensor")
    if x.type.rank < 1:
        raise Unsupported("its input is a scalar; LOG_SOFTMAX needs a last axis")
    scale, zero = float(np.float32(out.quant.scales[0])), out.quant.zero_points[0]
    if scale != tflm_log_softmax.OUTPUT_SCALE or zero != tflm_log_softmax.OUTPUT_ZERO_POINT:
        raise Unsupported(f"an int8 LOG_SOFTMAX output must have scale 16/256 and zero "
                          f"point 127 (TFLite Micro requires it), not {scale} and {zero}")
    try:
        params = tflm_log_softmax.log_softmax_params(float(x.type.quant.scales[0]))
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return build_log_softmax.log_softmax(GraphBuilder(ctx.graph), x, params, out.quant)


__all__ += ["log_softmax_int8"]
