"""TFLite elementwise math of TFLite Micro's op resolver: ABS, NEG, FLOOR, CEIL, SQRT,
RSQRT, SQUARE, EXP, LOG, SIN, COS, SQUARED_DIFFERENCE, ELU, PRELU, LOG_SOFTMAX and
L2_NORMALIZATION in float32, and the int8 forms TFLite Micro computes through a 256-entry
table (ABS, ELU), built here by TFLite Micro's own per-value arithmetic.

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
from toolchain.quant import build
from toolchain.quant.fixedpoint import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
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
