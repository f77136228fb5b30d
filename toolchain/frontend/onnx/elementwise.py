"""Float (and integer) element-wise ops, activations, softmax and reductions.

Binary ops follow numpy's broadcasting (ONNX's multidirectional rule): both operands
are broadcast to the common shape, an index map that fusion folds into the loads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx.cast_e8m0 import cast_to_e8m0
from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import DTYPES
from toolchain.graph.ir import Tensor
from toolchain.small_floats import FORMATS as SMALL_FLOATS
from toolchain.types import dtype

Converter = Callable[[OpContext], Tensor]


def _float(ctx: OpContext, x: Tensor) -> Tensor:
    if not x.type.dtype.is_float:
        raise Unsupported(f"{ctx.info.op_type} of element type {x.type.dtype} (a float "
                          "tensor is expected)")
    return x


def unary(graph_op: str, floats_only: bool = True) -> Converter:
    """One graph op applied to input 0."""

    def convert(ctx: OpContext) -> Tensor:
        x = ctx.input(0)
        if floats_only:
            _float(ctx, x)
        return ctx.node(graph_op, [x])

    convert.__doc__ = f"The graph's `{graph_op}` on input 0."
    return convert


def identity(ctx: OpContext) -> Tensor | list:
    """Identity, and Dropout in inference: the data as it is, and its mask (the second
    output) all true, nothing being dropped."""
    x = ctx.input(0)
    if len(ctx.info.outputs) > 1 and ctx.info.outputs[1]:
        return [x, np.ones(tuple(x.type.shape), bool)]
    return x


def binary(graph_op: str) -> Converter:
    """`graph_op` on two inputs broadcast numpy-style (Div of integers truncates, as C's
    division and StableHLO's divide do)."""

    def convert(ctx: OpContext) -> Tensor:
        a, b = ctx.broadcast_pair(ctx.input(0), ctx.input(1))
        return ctx.node(graph_op, [a, b])

    convert.__doc__ = f"`{graph_op}` with numpy broadcasting."
    return convert


def relu(ctx: OpContext) -> Tensor:
    """max(x, 0)."""
    x = ctx.input(0)
    return ctx.node("maximum", [x, ctx.filled(0, x)])


def clip(ctx: OpContext) -> Tensor:
    """Clip with optional min and max inputs (opset 11 and later); either may be absent."""
    x = ctx.input(0)
    for i, op in ((1, "maximum"), (2, "minimum")):
        if not ctx.has_input(i):
            continue
        bound = ctx.input(i)
        if bound.type.shape not in ((), (1,)):
            raise Unsupported(f"Clip's {'min' if i == 1 else 'max'} must be a scalar")
        bound = ctx.reshape(bound, ())
        x = ctx.node(op, [x, ctx.broadcast(bound, tuple(x.type.shape), ())])
    return x


def leaky_relu(ctx: OpContext) -> Tensor:
    """x for x >= 0, alpha * x below (alpha 0.01 by default)."""
    x = _float(ctx, ctx.input(0))
    alpha = ctx.attr("alpha", 0.01)
    negative = ctx.node("compare", [x, ctx.filled(0, x)], direction="LT")
    return ctx.node("select", [negative, ctx.node("multiply", [x, ctx.filled(alpha, x)]), x])


def _hard_sigmoid(ctx: OpContext, x: Tensor, alpha: float, beta: float) -> Tensor:
    """max(0, min(1, alpha * x + beta)), in x's type as onnxruntime computes it."""
    v = ctx.node("add", [ctx.node("multiply", [x, ctx.filled(alpha, x)]), ctx.filled(beta, x)])
    return ctx.node("clamp", [ctx.scalar(0, x), v, ctx.scalar(1, x)])


def hard_sigmoid(ctx: OpContext) -> Tensor:
    """HardSigmoid (alpha 0.2, beta 0.5 by default)."""
    x = _float(ctx, ctx.input(0))
    return _hard_sigmoid(ctx, x, ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5))


def hard_swish(ctx: OpContext) -> Tensor:
    """x * HardSigmoid(x) with alpha 1/6, beta 0.5."""
    x = _float(ctx, ctx.input(0))
    return ctx.node("multiply", [x, _hard_sigmoid(ctx, x, 1 / 6, 0.5)])


def _softmax_axes(ctx: OpContext, rank: int) -> tuple[int, ...]:
    """Opset 13's one axis (default -1); older opsets are refused by the reader."""
    return (axis_of(ctx.attr("axis", -1), rank),)


def _keep(ctx: OpContext, reduced: Tensor, shape: tuple[int, ...], axes: tuple[int, ...]
          ) -> Tensor:
    """A reduction's result broadcast back over `axes` of `shape`."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return ctx.broadcast(reduced, shape, kept)


def softmax(ctx: OpContext, log: bool = False) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along the axis (opset-13 semantics)."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    axes = _softmax_axes(ctx, len(shape))
    top = ctx.node("reduce", [x, ctx.scalar(-np.inf, x)], kind="maximum", dims=axes)
    shifted = ctx.node("subtract", [x, _keep(ctx, top, shape, axes)])
    e = ctx.node("exponential", [shifted])
    total = ctx.node("reduce", [e, ctx.scalar(0, x)], kind="add", dims=axes)
    if log:
        return ctx.node("subtract", [shifted, _keep(ctx, ctx.node("log", [total]), shape,
                                                       axes)])
    return ctx.node("divide", [e, _keep(ctx, total, shape, axes)])


def log_softmax(ctx: OpContext) -> Tensor:
    """x - max - log(sum(exp(x - max))) along the axis."""
    return softmax(ctx, log=True)


def reduce_axes(ctx: OpContext, rank: int) -> tuple[int, ...] | None:
    """A Reduce* node's axes, from the attribute (ReduceMean before opset 18) or the
    optional input (opset 18); None when they are empty and noop_with_empty_axes."""
    axes = ctx.ints("axes")
    if ctx.has_input(1):
        axes = [int(a) for a in ctx.const(1, "axes").reshape(-1)]
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return None
        return tuple(range(rank))
    normalized = sorted({axis_of(a, rank) for a in axes})
    if len(normalized) != len(axes):
        raise Unsupported(f"axes {axes} repeat an axis")
    return tuple(normalized)


_REDUCE_INIT = {"add": 0, "maximum": -np.inf, "minimum": np.inf}


def reduce(kind: str, mean: bool = False) -> Converter:
    """Reduce{Sum,Max,Min,Mean} with keepdims (default 1)."""

    def convert(ctx: OpContext) -> Tensor:
        x = ctx.input(0)
        shape = tuple(x.type.shape)
        axes = reduce_axes(ctx, len(shape))
        if axes is None:
            return x
        init, how = _REDUCE_INIT[kind], kind
        if x.type.dtype.kind == "b":  # the largest of booleans is their or, the least and
            if kind == "add" or mean:
                raise Unsupported(f"{ctx.info.op_type} of booleans")
            how, init = ("or", False) if kind == "maximum" else ("and", True)
        elif not x.type.dtype.is_float:
            if mean:
                raise Unsupported(f"ReduceMean of element type {x.type.dtype}")
            info = np.iinfo(x.type.dtype.np_dtype)
            init = {"add": 0, "maximum": info.min, "minimum": info.max}[kind]
        y = ctx.node("reduce", [x, ctx.scalar(init, x)], kind=how, dims=axes)
        if mean:
            n = int(np.prod([shape[a] for a in axes]))
            y = ctx.node("divide", [y, ctx.filled(n, y)])
        if ctx.attr("keepdims", 1):
            y = ctx.reshape(y, tuple(1 if d in axes else s for d, s in enumerate(shape)))
        return y

    convert.__doc__ = f"Reduce ({kind}{', mean' if mean else ''}) over the axes."
    return convert


def cast(ctx: OpContext) -> Tensor:
    """Cast to another element type (the graph's convert)."""
    to = DTYPES.get(ctx.attr("to"))
    if to is None:
        raise Unsupported(f"Cast to element type {ctx.attr('to')} is not supported")
    return _convert(ctx, ctx.input(0), to)


def cast_like(ctx: OpContext) -> Tensor:
    """CastLike: Cast to the element type of input 1 (only its type is read)."""
    return _convert(ctx, ctx.input(0), ctx.input(1).type.dtype.name)


def bit_cast(ctx: OpContext) -> Tensor:
    """BitCast: the same bits read as another element type of the same width. ONNX's
    bool is one byte holding 0 or 1, so to and from bool the bits are the value's
    (the graph's convert; a byte above 1 read as bool is true either way)."""
    to = DTYPES.get(ctx.attr("to"))
    x = ctx.input(0)
    if to is None:
        raise Unsupported(f"BitCast to element type {ctx.attr('to')} is not supported")
    if "i1" in (to, x.type.dtype.name):
        return _convert(ctx, x, to)
    if dtype(to).bits != x.type.dtype.bits:
        raise Unsupported(f"BitCast from {x.type.dtype} to {to}: the widths differ")
    if x.type.dtype.name == to:
        return x
    return ctx.node("bitcast_convert", [x], dtype=to, shape=tuple(x.type.shape))


# The float8 types Cast's `saturate` (default 1) applies to: a value past the largest
# finite one, infinities included, becomes that largest value of its sign instead of
# NaN (or inf for E5M2). The graph's convert is StableHLO's, which does not saturate, so
# the source is clamped first (NaN passes a clamp unchanged, as Cast keeps it).
_SATURATING = ("f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ")


def _convert(ctx: OpContext, x: Tensor, to: str) -> Tensor:
    if x.type.dtype.name == to:
        return x
    target = dtype(to)
    if x.type.dtype.is_float and target.is_integer and target.bits < 8:
        # ONNX leaves a float outside the integer type's range undefined; for 4- and
        # 2-bit types that is most floats, and its tests expect ml_dtypes' 0 there, a
        # choice of that library, not of the standard. Integers wrap, as for int8.
        raise Unsupported(f"a Cast from {x.type.dtype} to {to} is not supported (ONNX "
                          "leaves out-of-range values undefined: cast to int8 first)")
    if to in _SATURATING and ctx.attr("saturate", 1):
        x = clamp_to_format(ctx, x, to)
    elif to == "f8E8M0FNU":
        return cast_to_e8m0(ctx, x)  # rounded up by default, not to nearest
    return ctx.node("convert", [x], dtype=to)


def clamp_to_format(ctx: OpContext, x: Tensor, name: str) -> Tensor:
    """x clamped to +-the largest finite value of small float `name`, in a float type
    that holds it exactly (the float8 maxima are exact in f16 and wider; integers are
    widened to f32 first, which is exact below 2**24 and above it clamped anyway)."""
    bound = SMALL_FLOATS[name].max_value
    if not x.type.dtype.is_float or x.type.dtype.name not in ("f16", "f32", "f64"):
        x = ctx.node("convert", [x], dtype="f32")
    return ctx.node("clamp", [ctx.filled(-bound, x), x, ctx.filled(bound, x)])


__all__ = ["binary", "bit_cast", "cast", "cast_like", "clamp_to_format", "clip", "hard_sigmoid",
           "hard_swish", "identity", "leaky_relu", "log_softmax", "reduce", "relu", "softmax",
           "unary"]
