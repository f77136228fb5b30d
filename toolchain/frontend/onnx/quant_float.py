"""QuantizeLinear and DequantizeLinear to and from the 8- and 4-bit floats (FLOAT8E4M3FN,
FLOAT8E5M2, the FNUZ variants, FLOAT4E2M1): plain float arithmetic on graph tensors, so
the scale and zero point may be model inputs as well as constants.

As ONNX defines them: QuantizeLinear is x / scale (+ zero point for FLOAT4E2M1) cast to
the type, with Cast's rounding and, for the float8 types, its `saturate` (default 1:
clamped to the largest finite value); DequantizeLinear is x widened to f32, times the
scale, as the scale's type (or `output_dtype`). A float8 zero point must be 0 (the
spec), so it is not read; neither is FLOAT4E2M1's by DequantizeLinear, as onnx's
reference implementation does. Blocked quantization (`block_size`) is refused.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.elementwise import clamp_to_format
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import DTYPES
from toolchain.graph.ir import Tensor
from toolchain.small_floats import element_type_of
from toolchain.types import SMALL_FLOATS

_FLOAT8 = ("f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ")


def float_quantized_type(ctx: OpContext, output: bool) -> str | None:
    """The small float type a QuantizeLinear writes (`output`: its zero point's type or
    output_dtype) or a DequantizeLinear reads (its input's), None for the integer ones."""
    if not output or ctx.has_input(2):
        name = _element_type(ctx, 0 if not output else 2)
    else:
        name = DTYPES.get(ctx.attr("output_dtype", 0), "")
    return name if name in SMALL_FLOATS else None


def _element_type(ctx: OpContext, i: int) -> str:
    """Input i's element type name, without making a constant input a graph node (the
    integer paths keep constants as arrays)."""
    v = ctx.value(i)
    if isinstance(v, Tensor):
        return v.type.dtype.name
    if isinstance(v, np.ndarray):
        return element_type_of(v.dtype) or ""
    return ""  # a dequantized view: an integer type


def _per(ctx: OpContext, i: int, x: Tensor, dt: str) -> Tensor:
    """Input i (the scale or the zero point) as type `dt`, broadcast to x: per tensor,
    or along `axis`."""
    if ctx.attr("block_size"):
        raise Unsupported("blocked quantization (block_size) is not supported")
    s = ctx.input(i)
    if s.type.dtype.name != dt:
        s = ctx.node("convert", [s], dtype=dt)
    shape = tuple(x.type.shape)
    if s.type.num_elements == 1:
        return ctx.broadcast(ctx.reshape(s, ()), shape, ())
    if s.type.rank != 1:
        raise Unsupported(f"a scale of shape {list(s.type.shape)} (blocked quantization)")
    axis = axis_of(ctx.attr("axis", 1), len(shape))
    if s.type.shape[0] != shape[axis]:
        raise Unsupported(f"{s.type.shape[0]} scales for axis {axis} of size {shape[axis]}")
    return ctx.broadcast(s, shape, (axis,))


def quantize_float(ctx: OpContext, name: str) -> Tensor:
    """QuantizeLinear to small float type `name`."""
    x = ctx.input(0)
    wide = "f32" if "f32" in (x.type.dtype.name, ctx.input(1).type.dtype.name) else \
        x.type.dtype.name
    if not x.type.dtype.is_float:
        raise Unsupported(f"QuantizeLinear of {x.type.dtype} to {name}")
    if x.type.dtype.name != wide:
        x = ctx.node("convert", [x], dtype=wide)
    y = ctx.node("divide", [x, _per(ctx, 1, x, wide)])
    if name not in _FLOAT8 and ctx.has_input(2):
        y = ctx.node("add", [y, _per(ctx, 2, y, wide)])
    if name in _FLOAT8 and ctx.attr("saturate", 1):
        y = clamp_to_format(ctx, y, name)  # Cast's saturate
    return ctx.node("convert", [y], dtype=name)


def dequantize_float(ctx: OpContext) -> Tensor:
    """DequantizeLinear from a small float type."""
    x = ctx.node("convert", [ctx.input(0)], dtype="f32")
    out = DTYPES.get(ctx.attr("output_dtype", 0)) or ctx.input(1).type.dtype.name
    y = ctx.node("multiply", [x, _per(ctx, 1, x, "f32")])
    return y if out == "f32" else ctx.node("convert", [y], dtype=out)
