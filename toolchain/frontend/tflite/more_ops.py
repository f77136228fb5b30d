"""TFLite builtins of TFLite Micro's op resolver beyond the layer set: comparisons,
logical ops, SELECT_V2 and float elementwise math (issue 19, point 1).

Each converter takes every element type TFLite Micro's kernel takes and checks the
types itself (a comparison's output is bool, so the importer's element-type family is
not the inputs'); an element type the kernel does not take is refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm
from toolchain.types import I1

Converter = Callable[[OpContext], Tensor]

# TFLite Micro's comparisons scale int8 inputs after shifting them left by this much
# (comparisons.cc, kLeftShift).
_COMPARE_LEFT_SHIFT = 8
# The element types (graph names) each comparison's kernel takes: EQUAL and NOT_EQUAL
# also compare bools.
_ORDERED_TYPES = ("f32", "i8", "i32", "i64")
_EQUALITY_TYPES = _ORDERED_TYPES + ("i1",)


def _two_inputs(ctx: OpContext, types: tuple[str, ...]) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """Inputs 0 and 1 of the same element type, one of `types`, and their broadcast shape."""
    a, b = ctx.input(0), ctx.input(1)
    if a.type.dtype != b.type.dtype:
        raise Unsupported(f"its inputs have element types {a.type.dtype} and {b.type.dtype}")
    if a.type.dtype.name not in types:
        raise Unsupported(f"{ctx.op.opcode} of {a.type.dtype} is not supported by TFLite "
                          "Micro's kernel")
    shape = broadcast_shape(a.type.shape, b.type.shape)
    if len(shape) > 4:
        raise Unsupported(f"TFLite Micro broadcasts up to rank 4, not {len(shape)}")
    return a, b, shape


def _scaled_int8(ctx: OpContext, x: Tensor, shape: tuple[int, ...], which: str) -> Tensor:
    """An int8 comparison operand as TFLite Micro's ComparisonWithScaling sees it:
    ((x - zero point) << 8) * the input's own scale as a multiplier below one."""
    q = x.type.quant
    if q is None or len(q.scales) != 1:
        raise Unsupported(f"its {which} input must be quantized per tensor")
    multiplier, shift = tflm._smaller_than_one(q.scales[0])  # ValueError: refused
    b = GraphBuilder(ctx.graph)
    v = build._offset(b, x, q.zero_points[0], shape)
    v = ctx.node("shift_left", [v, ctx.broadcast(ctx.const(_COMPARE_LEFT_SHIFT, "i32"),
                                                 shape, ())])
    return build.rescale(b, v, multiplier, shift)


def _comparison(direction: str) -> Converter:
    types = _EQUALITY_TYPES if direction in ("EQ", "NE") else _ORDERED_TYPES

    def convert(ctx: OpContext) -> Tensor:
        a, b, shape = _two_inputs(ctx, types)
        if a.type.dtype.name == "i8":
            a, b = _scaled_int8(ctx, a, shape, "first"), _scaled_int8(ctx, b, shape, "second")
        else:
            a, b = ctx.broadcast(a, shape), ctx.broadcast(b, shape)
        return ctx.node("compare", [a, b], direction=direction)

    convert.__doc__ = (f"The comparison {direction} of two broadcast inputs (bool result); "
                       "int8 inputs compare after TFLite Micro's rescaling.")
    return convert


equal = _comparison("EQ")
not_equal = _comparison("NE")
less = _comparison("LT")
less_equal = _comparison("LE")
greater = _comparison("GT")
greater_equal = _comparison("GE")


def _logical(graph_op: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        a, b, shape = _two_inputs(ctx, ("i1",))
        return ctx.node(graph_op, [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])

    convert.__doc__ = f"The bool `{graph_op}` of two broadcast inputs."
    return convert


logical_and = _logical("and")
logical_or = _logical("or")


def logical_not(ctx: OpContext) -> Tensor:
    """The bool `not` of the input."""
    x = ctx.input(0)
    if x.type.dtype != I1:
        raise Unsupported(f"LOGICAL_NOT of {x.type.dtype} is not supported; it takes bool")
    return ctx.node("not", [x])


# SELECT_V2's value types in TFLite Micro's kernel (select.cc).
_SELECT_TYPES = ("f32", "i8", "i16")


def select_v2(ctx: OpContext) -> Tensor:
    """condition ? x : y with the three broadcast together (values copied as stored)."""
    cond, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    if cond.type.dtype != I1:
        raise Unsupported(f"its condition has element type {cond.type.dtype}, not bool")
    if x.type.dtype != y.type.dtype or x.type.dtype.name not in _SELECT_TYPES:
        raise Unsupported(f"SELECT_V2 of {x.type.dtype} and {y.type.dtype} is not supported")
    if x.type.quant != y.type.quant:
        raise Unsupported("its value inputs are quantized differently")
    shape = broadcast_shape(broadcast_shape(cond.type.shape, x.type.shape), y.type.shape)
    if len(shape) > 5:
        raise Unsupported(f"TFLite Micro broadcasts SELECT_V2 up to rank 5, not {len(shape)}")
    return ctx.node("select", [ctx.broadcast(cond, shape), ctx.broadcast(x, shape),
                               ctx.broadcast(y, shape)])


__all__ = ["equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
           "logical_not", "logical_or", "not_equal", "select_v2"]


def _extremum(graph_op: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        a, b, shape = _two_inputs(ctx, ("f32", "i8", "i16", "i32", "i64"))
        return ctx.node(graph_op, [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])

    convert.__doc__ = (f"The elementwise `{graph_op}` of two broadcast inputs; quantized "
                       "values compare as stored, as TFLite Micro's kernel does.")
    return convert


maximum = _extremum("maximum")
minimum = _extremum("minimum")


def _float_pair(ctx: OpContext) -> tuple[Tensor, Tensor]:
    a, b, shape = _two_inputs(ctx, ("f32",))
    return ctx.broadcast(a, shape), ctx.broadcast(b, shape)


def floor_div(ctx: OpContext) -> Tensor:
    """float32 FLOOR_DIV: floor(double(a) / double(b)) back in float32, TFLite's order."""
    a, b = (ctx.node("convert", [t], dtype="f64") for t in _float_pair(ctx))
    return ctx.node("convert", [ctx.node("floor", [ctx.node("divide", [a, b])])], dtype="f32")


def floor_mod(ctx: OpContext) -> Tensor:
    """float32 FLOOR_MOD: fmod(a, b), plus b when nonzero and of the other sign than b."""
    a, b = _float_pair(ctx)
    r = ctx.node("remainder", [a, b])
    zero = ctx.filled(0.0, r)
    nonzero = ctx.node("compare", [r, zero], direction="NE")
    flips = ctx.node("compare", [ctx.node("compare", [b, zero], direction="LT"),
                                 ctx.node("compare", [r, zero], direction="LT")],
                     direction="NE")
    fix = ctx.node("and", [nonzero, flips])
    return ctx.node("select", [fix, ctx.node("add", [r, b]), r])


def add_n(ctx: OpContext) -> Tensor:
    """float32 ADD_N: the same-shaped inputs summed in order."""
    xs = [ctx.input(i) for i in range(len(ctx.op.inputs))]
    if any(x.type.dtype.name != "f32" or x.type.shape != xs[0].type.shape for x in xs):
        raise Unsupported("ADD_N takes float32 inputs of one shape")
    total = xs[0]
    for x in xs[1:]:
        total = ctx.node("add", [total, x])
    return total


__all__ += ["add_n", "floor_div", "floor_mod", "maximum", "minimum"]
