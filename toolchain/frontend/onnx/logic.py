"""Comparisons, logical ops and Where: ONNX's bool tensors are the graph's i1.

Every operand list is broadcast numpy-style (ONNX's multidirectional rule) to one shape
first; the ops themselves are one graph node each, taken from the tables below.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

Converter = Callable[[OpContext], Tensor]

# ONNX comparison -> the graph's compare direction.
COMPARISONS = {"Equal": "EQ", "Less": "LT", "LessOrEqual": "LE", "Greater": "GT",
               "GreaterOrEqual": "GE"}
# ONNX logical op on bools -> the graph's bitwise op (on i1 the same thing).
LOGICAL = {"And": "and", "Or": "or", "Xor": "xor"}


def broadcast_all(ctx: OpContext, xs: list[Tensor]) -> list[Tensor]:
    """Every tensor broadcast numpy-style to the common shape of all of them."""
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(x.type.shape) for x in xs)))
    except ValueError:
        shapes = ", ".join(str(list(x.type.shape)) for x in xs)
        raise Unsupported(f"shapes {shapes} do not broadcast") from None
    return [ctx.broadcast(x, shape) for x in xs]


def _bool(ctx: OpContext, x: Tensor) -> Tensor:
    if x.type.dtype.name != "i1":
        raise Unsupported(f"{ctx.info.op_type} of element type {x.type.dtype} (bool is "
                          "expected)")
    return x


def compare(ctx: OpContext) -> Tensor:
    """Equal / Less / LessOrEqual / Greater / GreaterOrEqual: a bool tensor. Equal of
    bools is not(a xor b) (the graph orders no i1 values)."""
    a, b = ctx.broadcast_pair(ctx.input(0), ctx.input(1))
    direction = COMPARISONS[ctx.info.op_type]
    if a.type.dtype.name == "i1":
        if direction != "EQ":
            raise Unsupported(f"{ctx.info.op_type} of bool tensors")
        return ctx.node("not", [ctx.node("xor", [a, b])])
    return ctx.node("compare", [a, b], direction=direction)


def logical(ctx: OpContext) -> Tensor:
    """And / Or / Xor of two bool tensors."""
    a, b = ctx.broadcast_pair(_bool(ctx, ctx.input(0)), _bool(ctx, ctx.input(1)))
    return ctx.node(LOGICAL[ctx.info.op_type], [a, b])


def not_(ctx: OpContext) -> Tensor:
    """Not of a bool tensor."""
    return ctx.node("not", [_bool(ctx, ctx.input(0))])


def where(ctx: OpContext) -> Tensor:
    """Where(condition, X, Y): X where the condition holds, else Y, all three broadcast."""
    cond = _bool(ctx, ctx.input(0))
    x, y = ctx.input(1), ctx.input(2)
    if x.type.dtype != y.type.dtype:
        raise Unsupported(f"operands of element types {x.type.dtype} and {y.type.dtype}")
    cond, x, y = broadcast_all(ctx, [cond, x, y])
    return ctx.node("select", [cond, x, y])


__all__ = ["COMPARISONS", "LOGICAL", "broadcast_all", "compare", "logical", "not_", "where"]
