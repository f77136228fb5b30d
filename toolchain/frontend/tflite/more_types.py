"""Element types TFLite Micro's kernels take beyond the first converters of their rows:
int16 (16x8-style, symmetric where the kernel demands it) ABS, PRELU and
SQUARED_DIFFERENCE; unquantized int32 SQUARED_DIFFERENCE; unquantized int16 ABS; int64
MAXIMUM / MINIMUM; int8 DIV; uint8 QUANTIZE (to and from int8) and DEQUANTIZE; the hybrid
EMBEDDING_LOOKUP (an int8 table, float32 rows). Each follows the kernel's own integer arithmetic
(tensorflow/lite/micro/kernels/*.cc and the reference ops they call), bit for bit.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import int32, more_reduce
from toolchain.frontend.tflite.activations import activation_name, quantized_range
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.more_batch import _matmul
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, build16, tflm
from toolchain.quant.fixedpoint import (
    count_leading_zeros_u32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap_int32,
)
from toolchain.quant.fixedpoint import rescale as fp_rescale
from toolchain.quant.tflm_div import div_int8_table
from toolchain.types import TensorType, dtype

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def _quantized(ty: TensorType, what: str, dtype: str) -> tuple[float, int]:
    """(float32 scale as a double, zero point) of a per-tensor quantized `dtype` tensor."""
    if ty.dtype.name != dtype or ty.quant is None or len(ty.quant.scales) != 1:
        raise Unsupported(f"its {what} is {ty}; {dtype} quantized per tensor is expected")
    return float(np.float32(ty.quant.scales[0])), int(ty.quant.zero_points[0])


def _zero_point_zero(zp: int, what: str) -> None:
    if zp != 0:
        raise Unsupported(f"the int16 {what} has zero point {zp}; TFLite Micro's int16 kernel "
                          "requires 0")


def _plain(ty: TensorType, what: str, dtype: str) -> None:
    if ty.dtype.name != dtype or ty.quant is not None:
        raise Unsupported(f"its {what} is {ty}; unquantized {dtype} is expected")


def _narrow16(g: GraphBuilder, ctx: OpContext, y: Tensor, out: TensorType) -> Tensor:
    y = ctx.node("clamp", [ctx.const(INT16_MIN, "i32"), y, ctx.const(INT16_MAX, "i32")])
    return g.op("convert", [y], quant=out.quant, dtype="i16")


def abs_int16(ctx: OpContext) -> Tensor:
    """ABS on int16. Unquantized: C's abs of each value (|-32768| wraps back to itself
    when stored). Quantized (zero points 0, as TFLite Micro requires): |x|, rescaled by
    MultiplyByQuantizedMultiplier(input / output scale, a float32 ratio) when the scales
    differ, clamped to int16."""
    x, out = ctx.input(0), ctx.output_type()
    if x.type.quant is None:
        _plain(x.type, "input", "i16")
        _plain(out, "output", "i16")
        return ctx.node("abs", [x])
    s_in, z_in = _quantized(x.type, "input", "i16")
    s_out, z_out = _quantized(out, "output", "i16")
    _zero_point_zero(z_in, "input")
    _zero_point_zero(z_out, "output")
    g = GraphBuilder(ctx.graph)
    v = ctx.node("abs", [g.op("convert", [x], dtype="i32")])
    if np.float32(s_in) != np.float32(s_out):
        multiplier, shift = quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
        v = build.rescale(g, v, multiplier, shift)
    return _narrow16(g, ctx, v, out)


def prelu_int16(ctx: OpContext) -> Tensor:
    """PRELU with int16 input and output and int8 alpha (TFLite Micro requires it):
    reference_ops::BroadcastPrelu4DSlow, x - zp >= 0 ? (x - zp) * s_in / s_out :
    (x - zp) * (alpha - zp_a) * s_in * s_a / s_out, each by MultiplyByQuantizedMultiplier
    (double-precision ratios), + zp_out, clamped to int16."""
    x, alpha, out = ctx.input(0), ctx.input(1), ctx.output_type()
    s1, z1 = _quantized(x.type, "input", "i16")
    sa, za = _quantized(alpha.type, "alpha", "i8")
    so, zo = _quantized(out, "output", "i16")
    shape = broadcast_shape(x.type.shape, alpha.type.shape)
    g = GraphBuilder(ctx.graph)
    v, a = build._offset(g, x, z1, shape), build._offset(g, alpha, za, shape)
    m1, sh1 = quantize_multiplier(s1 / so)
    m2, sh2 = quantize_multiplier(s1 * sa / so)
    positive = build.rescale(g, v, m1, sh1)
    negative = build.rescale(g, ctx.node("multiply", [v, a]), m2, sh2)
    keep = ctx.node("compare", [v, ctx.filled(0, v)], direction="GE")
    y = ctx.node("add", [ctx.node("select", [keep, positive, negative]), ctx.filled(zo, v)])
    return _narrow16(g, ctx, y, out)


def squared_difference_int16(ctx: OpContext) -> Tensor:
    """SQUARED_DIFFERENCE on int16 (zero points 0): the int8 kernel's arithmetic with a
    left shift of 0. Each input scaled by its scale / (2 * the larger scale), the
    difference squared in int32 (|d| <= 32767, so it cannot wrap), rescaled by
    (2 * larger)^2 / output scale, clamped to int16."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    (s1, z1), (s2, z2), (so, zo) = (_quantized(a.type, "first input", "i16"),
                                    _quantized(b.type, "second input", "i16"),
                                    _quantized(out, "output", "i16"))
    for zp, what in ((z1, "first input"), (z2, "second input"), (zo, "output")):
        _zero_point_zero(zp, what)
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


def squared_difference_int32(ctx: OpContext) -> Tensor:
    """SQUARED_DIFFERENCE on unquantized int32: (a - b) * (a - b), wrapping as C's int32
    arithmetic does in TFLite Micro's kernel."""
    a, b = ctx.input(0), ctx.input(1)
    _plain(a.type, "first input", "i32")
    _plain(b.type, "second input", "i32")
    shape = broadcast_shape(a.type.shape, b.type.shape)
    d = ctx.node("subtract", [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])
    return ctx.node("multiply", [d, d])


def _int64_binary(graph_op: str):
    def convert(ctx: OpContext) -> Tensor:
        a, b = ctx.input(0), ctx.input(1)
        _plain(a.type, "first input", "i64")
        _plain(b.type, "second input", "i64")
        shape = broadcast_shape(a.type.shape, b.type.shape)
        return ctx.node(graph_op, [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])

    convert.__doc__ = f"int64 `{graph_op}` of two broadcast inputs (TFLite Micro's " \
        "maximum_minimum.cc takes int64, with no activation)."
    return convert


maximum_int64 = _int64_binary("maximum")
minimum_int64 = _int64_binary("minimum")


def requantize_uint8(ctx: OpContext) -> Tensor:
    """QUANTIZE between int8 and uint8 (either way): reference_ops::Requantize,
    MultiplyByQuantizedMultiplier(x - in_zp) by in_scale / out_scale (in double) + out_zp,
    clamped to the output type. (Its fast path for equal scales and zero points 128
    apart flips the top bit: the same integers.)"""
    x, out = ctx.input(0), ctx.output_type()
    pair = (x.type.dtype.name, out.dtype.name)
    if pair not in (("i8", "ui8"), ("ui8", "i8")):
        raise Unsupported(f"QUANTIZE from {x.type.dtype} to {out.dtype} is not supported by "
                          "TFLite Micro")
    si, zi = _quantized(x.type, "input", pair[0])
    so, zo = _quantized(out, "output", pair[1])
    p = tflm.requantize_params(si, zi, so, zo)
    lo, hi = (0, 255) if pair[1] == "ui8" else (-128, 127)
    return build16.requantize(GraphBuilder(ctx.graph), x, multiplier=p.multiplier,
                              shift=p.shift, input_zp=p.input_zp, output_zp=p.output_zp,
                              out=pair[1], act_min=lo, act_max=hi, quant=out.quant)


def dequantize_uint8(ctx: OpContext) -> Tensor:
    """DEQUANTIZE uint8 -> float32: scale * (x - zero point), as for int8."""
    x, out = ctx.input(0), ctx.output_type()
    _plain(out, "output", "f32")
    scale, zp = _quantized(x.type, "input", "ui8")
    return build.dequantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp)


def embedding_lookup(ctx: OpContext) -> Tensor:
    """EMBEDDING_LOOKUP: more_reduce's row gather, and TFLite Micro's hybrid form: an
    int8 table (zero point 0, one scale) whose rows come out as float32, each value
    times the scale (EvalHybrid's Dequantize)."""
    table, out = ctx.input(1), ctx.output_type()
    if not (table.type.dtype.name == "i8" and out.dtype.name == "f32"):
        return more_reduce.embedding_lookup(ctx)
    scale, zp = _quantized(table.type, "table", "i8")
    if zp != 0:
        raise Unsupported(f"the int8 table has zero point {zp}; TFLite Micro's hybrid "
                          "EMBEDDING_LOOKUP requires 0")
    ids = ctx.input(0)
    if ids.type.dtype.name != "i32" or ids.type.rank != 1:
        raise Unsupported("EMBEDDING_LOOKUP's ids must be an int32 vector")
    rest = table.type.shape[1:]
    rows = ctx.node("gather", [table, ids], offset_dims=tuple(range(1, 1 + len(rest))),
                    collapsed_slice_dims=(0,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(0,),
                    index_vector_dim=1, slice_sizes=(1, *rest))
    return build.dequantize(GraphBuilder(ctx.graph), rows, scale=scale, zero_point=0)


def batch_matmul_int16(ctx: OpContext) -> Tensor:
    """BATCH_MATMUL on int16 (zero points 0, as TFLite Micro requires):
    reference_ops::BatchMatMul<int16_t, int64_t>, the products summed in int64, then the
    int64 MultiplyByQuantizedMultiplier by float32(sa * sb) / so, clamped to int16."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    (sa, za), (sb, zb), (so, zo) = (_quantized(a.type, "first input", "i16"),
                                    _quantized(b.type, "second input", "i16"),
                                    _quantized(out, "output", "i16"))
    for zp, what in ((za, "first input"), (zb, "second input"), (zo, "output")):
        _zero_point_zero(zp, what)
    acc = _matmul(ctx, a, b, "i64")
    multiplier, shift = quantize_multiplier(float(np.float32(sa) * np.float32(sb)) /
                                            float(np.float32(so)))
    columns = acc.type.shape[-1]
    return build16._requantize64(GraphBuilder(ctx.graph), acc, None,
                                 np.full(columns, multiplier), np.full(columns, shift),
                                 acc.type.rank - 1, INT16_MIN, INT16_MAX, out.quant)


def add_n_int8(ctx: OpContext) -> Tensor:
    """ADD_N on int8 (inputs of one shape, scale and zero point, as TFLite Micro
    requires): reference_ops::AddN's arithmetic. Each value, offset and shifted left by
    20, is halved by MultiplyByQuantizedMultiplierSmallerThanOneExp (a 256-entry int32
    table here); the kernel's sum starts from the same of the bare offset (-zp, a
    constant); the int32 sum is rescaled by 2 * scale / (2**20 * output scale), + the
    output zero point, clamped to int8."""
    xs = [ctx.input(i) for i in range(len(ctx.op.inputs))]
    out = ctx.output_type()
    s, z = _quantized(xs[0].type, "first input", "i8")
    for k, x in enumerate(xs[1:], 1):
        if x.type.shape != xs[0].type.shape or _quantized(x.type, f"input {k}", "i8") != (s, z):
            raise Unsupported(f"input {k} differs from input 0 in shape, scale or zero point "
                              "(TFLite Micro's ADD_N requires them equal)")
    so, zo = _quantized(out, "output", "i8")
    twice = 2 * s
    m_in, s_in = quantize_multiplier(s / twice)
    m_out, s_out = quantize_multiplier(twice / ((1 << _ADD_N_SHIFT) * so))
    if s_in > 0 or s_out > 0:
        raise Unsupported("its scales give a rescale above one, which TFLite Micro's ADD_N "
                          "does not define")
    values = np.arange(-128, 128, dtype=np.int64)
    table = multiply_by_quantized_multiplier((values - z) << _ADD_N_SHIFT, m_in, s_in)
    start = int(multiply_by_quantized_multiplier(np.int64(-z) << _ADD_N_SHIFT, m_in, s_in))
    g = GraphBuilder(ctx.graph)
    total = g.splat(start, dtype("i32"), tuple(out.shape))
    for x in xs:
        total = g.op("add", [total, build.lookup(g, x, table.astype(np.int32))])
    return build.requantize(g, total, m_out, s_out, axis=None, output_zp=zo, quant=out.quant)


_ADD_N_SHIFT = 20  # add_n.cc's kAddNIntegerShift


def div_int8(ctx: OpContext) -> Tensor:
    """DIV on int8 (per tensor): TFLite Micro's DivElementwise for every pair of int8
    values, a 256 x 256 table (quant/tflm_div.py, the fused activation's clamp in it),
    read at (a + 128) * 256 + (b + 128) after broadcasting."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    s1, z1 = _quantized(a.type, "first input", "i8")
    s2, z2 = _quantized(b.type, "second input", "i8")
    so, zo = _quantized(out, "output", "i8")
    lo, hi = quantized_range(activation_name(ctx.option("fused_activation_function")), out)
    table = div_int8_table(s1, z1, s2, z2, so, zo, lo, hi)
    shape = broadcast_shape(a.type.shape, b.type.shape)
    g = GraphBuilder(ctx.graph)
    row = g.op("multiply", [build._offset(g, a, -128, shape),
                            g.splat(256, dtype("i32"), shape)])
    index = g.op("add", [row, build._offset(g, b, -128, shape)])
    return g.op("gather", [g.const(table, dtype("i8"), out.quant), index], offset_dims=(),
                collapsed_slice_dims=(0,), operand_batching_dims=(),
                start_indices_batching_dims=(), start_index_map=(0,),
                index_vector_dim=len(shape), slice_sizes=(1,), quant=out.quant)


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
    s_in, z_in = _quantized(x.type, "input", "i16")
    s_out, z_out = _quantized(out, "output", "i16")
    _zero_point_zero(z_in, "input")
    _zero_point_zero(z_out, "output")
    g = GraphBuilder(ctx.graph)
    shape = tuple(x.type.shape)
    wide = g.op("convert", [x], dtype="i32")
    index = g.op("maximum", [wide, g.splat(0, dtype("i32"), shape)])
    table = rsqrt_int16_table(s_in, s_out)
    return g.op("gather", [g.const(table, dtype("i16"), out.quant), index], offset_dims=(),
                collapsed_slice_dims=(0,), operand_batching_dims=(),
                start_indices_batching_dims=(), start_index_map=(0,),
                index_vector_dim=len(shape), slice_sizes=(1,), quant=out.quant)


def cast(ctx: OpContext) -> Tensor:
    """CAST as C converts (int32.py), and to bool as C++'s static_cast<bool>: x != 0 (a
    NaN too), which the interpreter's TFLite Micro does for float32, int8, int16, int32
    and uint32 inputs."""
    x, out = ctx.input(0), ctx.output_type()
    if out.dtype.name != "i1":
        return int32.cast(ctx)
    if x.type.quant is not None or x.type.dtype.name not in ("f32", "i8", "i16", "i32",
                                                              "ui32"):
        raise Unsupported(f"CAST of {x.type} to bool is not supported by TFLite Micro")
    zero = ctx.filled(0.0 if x.type.dtype.is_float else 0, x)
    return ctx.node("compare", [x, zero], direction="NE")


__all__ = ["abs_int16", "cast", "add_n_int8", "div_int8", "inv_sqrt_multipliers", "rsqrt_int16",
           "rsqrt_int16_table", "batch_matmul_int16", "dequantize_uint8",
           "embedding_lookup", "maximum_int64", "minimum_int64", "prelu_int16",
           "requantize_uint8", "squared_difference_int16", "squared_difference_int32"]
