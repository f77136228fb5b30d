"""int8 L2_NORMALIZATION as TFLite Micro computes it: per row, the int32 sum of squared
offsets, its inverse square root by TFLite's GetInvSqrtQuantizedMultiplierExp (gemmlowp's
five Newton steps, here in graph ops on the run-time sum), and each offset rescaled by
it to the fixed output scale 1/128.
"""

from __future__ import annotations

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant.build import _i32, _saturating_shift_left, _srdhm

# gemmlowp constants of the inverse square root: 1.5 in Q3.28, sqrt(2) / 2 in Q0.31.
_HALF_THREE, _HALF_SQRT_2 = (1 << 28) + (1 << 27), 1518500250
# TFLite's int8 L2Normalization output is in Q0.7 (scale 1/128).
_OUTPUT_SCALE_BITS = 7
# The sums GetInvSqrtQuantizedMultiplierExp takes without its divide-by-4 loop.
_SUM_LIMIT = 1 << 29


def _inv_sqrt(b: GraphBuilder, acc: Tensor) -> tuple[Tensor, Tensor]:
    """(multiplier, right shift) of 1 / sqrt(acc) for int32 acc in [0, 2**29), as
    GetInvSqrtQuantizedMultiplierExp: acc <= 1 gives (INT32_MAX, 0)."""
    small = b.op("compare", [acc, b.splat(1, acc.type.dtype, acc.type.shape)], direction="LE")
    v = b.op("maximum", [acc, b.splat(2, acc.type.dtype, acc.type.shape)])
    clz = b.op("count_leading_zeros", [v])
    pairs = _i32(b, "subtract", _i32(b, "shift_right_arithmetic", _i32(b, "subtract", clz, 1),
                                     1), 1)
    shift = b.op("subtract", [b.splat(11, acc.type.dtype, acc.type.shape), pairs])
    v = b.op("shift_left", [v, _i32(b, "shift_left", pairs, 1)])
    half_input = b.op("rounding_divide_by_pot", [_i32(b, "shift_right_arithmetic", v, 1),
                                                 b.splat(1, acc.type.dtype, acc.type.shape)])
    x = b.splat(1 << 28, acc.type.dtype, acc.type.shape)
    for _ in range(5):
        x3 = _saturating_shift_left(b, _srdhm(b, _srdhm(b, x, x), x), 6)
        x = _saturating_shift_left(
            b, b.op("subtract", [_srdhm(b, x, _HALF_THREE), _srdhm(b, half_input, x3)]), 3)
    x = _srdhm(b, x, _HALF_SQRT_2)
    # A negative shift moves into the multiplier (a wrapping left shift, as in C).
    negative = b.op("compare", [shift, b.splat(0, acc.type.dtype, acc.type.shape)],
                    direction="LT")
    zero = b.splat(0, acc.type.dtype, acc.type.shape)
    x = b.op("select", [negative, b.op("shift_left", [x, b.op("subtract", [zero, shift])]), x])
    shift = b.op("select", [negative, zero, shift])
    int_max = b.splat((1 << 31) - 1, acc.type.dtype, acc.type.shape)
    return b.op("select", [small, int_max, x]), b.op("select", [small, zero, shift])


def l2_normalization_int8(ctx: OpContext) -> Tensor:
    """int8 L2_NORMALIZATION along the last axis (output scale 1/128, zero point 0, as
    TFLite Micro requires)."""
    x, out = ctx.input(0), ctx.output_type()
    if x.type.quant is None or len(x.type.quant.scales) != 1 or x.type.rank == 0:
        raise Unsupported("its input must be int8 of rank 1 or more, quantized per tensor")
    if out.quant is None or out.quant.scales != (1 / 128,) or out.quant.zero_points != (0,):
        raise Unsupported("its int8 output must have scale 1/128 and zero point 0 (TFLite "
                          "Micro requires it)")
    if ctx.options.get("fused_activation_function", 0) not in (0, "NONE"):
        raise Unsupported("L2_NORMALIZATION with a fused activation is not supported")
    last = x.type.rank - 1
    depth = x.type.shape[last]
    if depth * 255 * 255 >= _SUM_LIMIT:
        raise Unsupported(f"rows of {depth} values are too long (at most 8256)")
    b = GraphBuilder(ctx.graph)
    shape = x.type.shape
    keep = tuple(range(last))
    wide = ctx.node("convert", [x], dtype="i32")
    v = ctx.node("subtract", [wide, ctx.filled(x.type.quant.zero_points[0], wide)])
    acc = ctx.node("reduce", [ctx.node("multiply", [v, v]), ctx.const(0, "i32")], kind="add",
                   dims=(last,))
    mult, right = _inv_sqrt(b, acc)
    # MultiplyByQuantizedMultiplier(v, mult, 7 - right): a left shift by max(7 - right, 0),
    # the doubling high multiply, a rounding right shift by max(right - 7, 0).
    total = _i32(b, "subtract", right, _OUTPUT_SCALE_BITS)
    zero = ctx.filled(0, total)
    left = ctx.node("maximum", [ctx.node("subtract", [zero, total]), zero])
    down = ctx.node("maximum", [total, zero])
    y = ctx.node("shift_left", [v, ctx.broadcast(left, shape, keep)])
    y = ctx.node("saturating_rounding_doubling_high_mul", [y, ctx.broadcast(mult, shape, keep)])
    y = ctx.node("rounding_divide_by_pot", [y, ctx.broadcast(down, shape, keep)])
    y = ctx.node("clamp", [ctx.const(-128, "i32"), y, ctx.const(127, "i32")])
    return b.op("convert", [y], quant=out.quant, dtype="i8")


__all__ = ["l2_normalization_int8"]
