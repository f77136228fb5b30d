"""ConvInteger and MatMulInteger: 8-bit operands less their zero points, multiplied and
summed exactly in int32 (the graph's convolution and dot_general of i32 operands), as
the spec defines them; the zero points may be per tensor or (weights) per output
channel / column.
"""

from __future__ import annotations

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.layers import conv_geometry, matmul_tensors
from toolchain.graph.ir import Tensor


def _centered(ctx: OpContext, i: int, zp: int, what: str, axis: int | None) -> Tensor:
    """Input i as int32 less its zero point (input zp, if given): one value, or one per
    position along `axis` of the operand."""
    x = ctx.input(i)
    if x.type.dtype.name not in ("i8", "ui8"):
        raise Unsupported(f"{what} of element type {x.type.dtype} (8-bit integers "
                          "expected)")
    x = ctx.node("convert", [x], dtype="i32")
    if not ctx.has_input(zp):
        return x
    z = ctx.input(zp)
    count = z.type.num_elements
    z = ctx.node("convert", [ctx.reshape(z, (count,) if count > 1 else ())], dtype="i32")
    shape = tuple(x.type.shape)
    if count == 1:
        z = ctx.broadcast(z, shape, ())
    elif axis is not None and count == shape[axis]:
        z = ctx.broadcast(z, shape, (axis,))
    else:
        raise Unsupported(f"{what}'s zero point has {count} values")
    return ctx.node("subtract", [x, z])


def conv_integer(ctx: OpContext) -> Tensor:
    """ConvInteger: conv(x - x_zero_point, w - w_zero_point) in int32."""
    x = _centered(ctx, 0, 2, "x", None)
    w = _centered(ctx, 1, 3, "w", 0)
    attrs = conv_geometry(ctx, tuple(x.type.shape), tuple(w.type.shape))
    return ctx.node("convolution", [x, w], dtype="i32", **attrs)


def matmul_integer(ctx: OpContext) -> Tensor:
    """MatMulInteger: matmul(a - a_zero_point, b - b_zero_point) in int32 (a's zero
    point per row of a 2-D a, b's per column)."""
    a = _centered(ctx, 0, 2, "A", ctx.input(0).type.rank - 2 if ctx.input(0).type.rank >= 2
                  else None)
    b = _centered(ctx, 1, 3, "B", ctx.input(1).type.rank - 1)
    return matmul_tensors(ctx, a, b)


__all__ = ["conv_integer", "matmul_integer"]
