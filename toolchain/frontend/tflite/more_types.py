"""Element types TFLite Micro's kernels take beyond a row's first converters, outside
int8 and int16 arithmetic (more_int8.py, more_int16.py): unquantized int32
SQUARED_DIFFERENCE, int64 MAXIMUM / MINIMUM, uint8 QUANTIZE (to and from int8) and
DEQUANTIZE, the hybrid EMBEDDING_LOOKUP (an int8 table, float32 rows), CAST to bool;
and the checks of tensor types those files share. Each follows the kernel's own
arithmetic (tensorflow/lite/micro/kernels/*.cc and the reference ops they call).
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import int32, more_reduce
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, build16, tflm
from toolchain.types import TensorType

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def quantized(ty: TensorType, what: str, name: str) -> tuple[float, int]:
    """(float32 scale as a double, zero point) of a per-tensor quantized `dtype` tensor."""
    if ty.dtype.name != name or ty.quant is None or len(ty.quant.scales) != 1:
        raise Unsupported(f"its {what} is {ty}; {name} quantized per tensor is expected")
    return float(np.float32(ty.quant.scales[0])), int(ty.quant.zero_points[0])


def zero_point_zero(zp: int, what: str) -> None:
    """Refuses an int16 tensor's non-zero zero point, as TFLite Micro's kernels do."""
    if zp != 0:
        raise Unsupported(f"the int16 {what} has zero point {zp}; TFLite Micro's int16 kernel "
                          "requires 0")


def plain(ty: TensorType, what: str, name: str) -> None:
    """Refuses a tensor that is not unquantized `name`."""
    if ty.dtype.name != name or ty.quant is not None:
        raise Unsupported(f"its {what} is {ty}; unquantized {name} is expected")


def narrow16(g: GraphBuilder, ctx: OpContext, y: Tensor, out: TensorType) -> Tensor:
    """An int32 result clamped to int16 and stored with the output's quantization."""
    y = ctx.node("clamp", [ctx.const(INT16_MIN, "i32"), y, ctx.const(INT16_MAX, "i32")])
    return g.op("convert", [y], quant=out.quant, dtype="i16")


def squared_difference_int32(ctx: OpContext) -> Tensor:
    """SQUARED_DIFFERENCE on unquantized int32: (a - b) * (a - b), wrapping as C's int32
    arithmetic does in TFLite Micro's kernel."""
    a, b = ctx.input(0), ctx.input(1)
    plain(a.type, "first input", "i32")
    plain(b.type, "second input", "i32")
    shape = broadcast_shape(a.type.shape, b.type.shape)
    d = ctx.node("subtract", [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])
    return ctx.node("multiply", [d, d])


def _int64_binary(graph_op: str):
    def convert(ctx: OpContext) -> Tensor:
        a, b = ctx.input(0), ctx.input(1)
        plain(a.type, "first input", "i64")
        plain(b.type, "second input", "i64")
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
    si, zi = quantized(x.type, "input", pair[0])
    so, zo = quantized(out, "output", pair[1])
    p = tflm.requantize_params(si, zi, so, zo)
    lo, hi = (0, 255) if pair[1] == "ui8" else (-128, 127)
    return build16.requantize(GraphBuilder(ctx.graph), x, multiplier=p.multiplier,
                              shift=p.shift, input_zp=p.input_zp, output_zp=p.output_zp,
                              out=pair[1], act_min=lo, act_max=hi, quant=out.quant)


def dequantize_uint8(ctx: OpContext) -> Tensor:
    """DEQUANTIZE uint8 -> float32: scale * (x - zero point), as for int8."""
    x, out = ctx.input(0), ctx.output_type()
    plain(out, "output", "f32")
    scale, zp = quantized(x.type, "input", "ui8")
    return build.dequantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp)


def embedding_lookup(ctx: OpContext) -> Tensor:
    """EMBEDDING_LOOKUP: more_reduce's row gather, and TFLite Micro's hybrid form: an
    int8 table (zero point 0, one scale) whose rows come out as float32, each value
    times the scale (EvalHybrid's Dequantize)."""
    table, out = ctx.input(1), ctx.output_type()
    if not (table.type.dtype.name == "i8" and out.dtype.name == "f32"):
        return more_reduce.embedding_lookup(ctx)
    scale, zp = quantized(table.type, "table", "i8")
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


__all__ = ["INT16_MAX", "INT16_MIN", "cast", "dequantize_uint8", "embedding_lookup",
           "maximum_int64", "minimum_int64", "narrow16", "plain", "quantized",
           "requantize_uint8", "squared_difference_int32", "zero_point_zero"]
