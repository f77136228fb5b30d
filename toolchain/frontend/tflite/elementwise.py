"""Float elementwise ops and reductions: ADD, SUB, MUL (with broadcasting), LOGISTIC,
TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH, SOFTMAX, MEAN, and DEQUANTIZE of float16.

Each follows TFLite's float reference kernel step by step in the graph's ops, so the
only differences left are the summation order and the exp / tanh approximations.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite.activations import (
    ACTIVATIONS,
    FLT_MAX,
    apply_activation,
    apply_named,
)
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor

Converter = Callable[[OpContext], Tensor]


def _float_input(ctx: OpContext, i: int = 0) -> Tensor:
    x = ctx.input(i)
    if not x.type.dtype.is_float:
        raise Unsupported(f"input {i} has element type {x.type.dtype}, a float is expected")
    return x


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes (TFLite's binary ops broadcast the same way)."""
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and 1 not in (x, y):
            raise Unsupported(f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def _binary(graph_op: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        a, b = _float_input(ctx, 0), _float_input(ctx, 1)
        if a.type.dtype != b.type.dtype:
            raise Unsupported(f"its inputs have element types {a.type.dtype} and {b.type.dtype}")
        shape = broadcast_shape(a.type.shape, b.type.shape)
        y = ctx.node(graph_op, [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])
        return apply_activation(ctx, y, ctx.option("fused_activation_function"))

    convert.__doc__ = f"The float `{graph_op}` of two broadcast inputs, then the activation."
    return convert


add = _binary("add")
sub = _binary("subtract")
mul = _binary("multiply")
div = _binary("divide")  # TFLite Micro: float32 a / b, then the activation


def _unary(graph_op: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        return ctx.node(graph_op, [_float_input(ctx)])

    convert.__doc__ = f"The float `{graph_op}` of the input."
    return convert


logistic = _unary("logistic")
tanh = _unary("tanh")


def _clamping(activation: str) -> Converter:
    """A standalone RELU-like op: the fused activation of the same name, applied alone."""
    assert activation in ACTIVATIONS

    def convert(ctx: OpContext) -> Tensor:
        return apply_named(ctx, _float_input(ctx), activation)

    convert.__doc__ = f"Float {activation}: a clamp to its bounds."
    return convert


relu = _clamping("RELU")
relu6 = _clamping("RELU6")
relu_n1_to_1 = _clamping("RELU_N1_TO_1")


def hard_swish(ctx: OpContext) -> Tensor:
    """x * min(6, max(0, x + 3)) / 6, in TFLite's order of operations."""
    x = _float_input(ctx)
    gate = ctx.node("clamp", [ctx.scalar(0.0, x), ctx.node("add", [x, ctx.filled(3.0, x)]),
                              ctx.scalar(6.0, x)])
    return ctx.node("divide", [ctx.node("multiply", [x, gate]), ctx.filled(6.0, x)])


def leaky_relu(ctx: OpContext) -> Tensor:
    """x > 0 ? x : x * alpha, as TFLite's float kernel (alpha may be negative or > 1)."""
    x = _float_input(ctx)
    alpha = ctx.filled(float(np.float32(ctx.option("alpha"))), x)
    positive = ctx.node("compare", [x, ctx.filled(0.0, x)], direction="GT")
    return ctx.node("select", [positive, x, ctx.node("multiply", [x, alpha])])


def softmax(ctx: OpContext) -> Tensor:
    """Along the last axis: exp((x - max) * beta) / sum, as TFLite's float kernel."""
    x = _float_input(ctx)
    if x.type.rank == 0:
        raise Unsupported("SOFTMAX needs an input of rank 1 or more")
    last = x.type.rank - 1
    keep = tuple(range(last))
    top = ctx.node("reduce", [x, ctx.scalar(-FLT_MAX, x)], kind="maximum", dims=(last,))
    shifted = ctx.node("subtract", [x, ctx.broadcast(top, x.type.shape, keep)])
    beta = float(np.float32(ctx.option("beta")))
    if beta != 1.0:
        shifted = ctx.node("multiply", [shifted, ctx.filled(beta, shifted)])
    e = ctx.node("exponential", [shifted])
    total = ctx.node("reduce", [e, ctx.scalar(0.0, e)], kind="add", dims=(last,))
    return ctx.node("divide", [e, ctx.broadcast(total, e.type.shape, keep)])


def _reduce_sum(ctx: OpContext, average: bool) -> Tensor:
    x = _float_input(ctx)
    rank = x.type.rank
    axes = set()
    for a in ctx.value(1, "axes").reshape(-1):
        a = int(a)
        if not -rank <= a < rank:
            raise Unsupported(f"axis {a} is out of range for a rank-{rank} input")
        axes.add(a % rank)
    dims = tuple(sorted(axes))
    count = int(np.prod([x.type.shape[d] for d in dims], dtype=np.int64))
    y = ctx.node("reduce", [x, ctx.scalar(0.0, x)], kind="add", dims=dims)
    if average:
        y = ctx.node("divide", [y, ctx.filled(float(count), y)])
    if ctx.option("keep_dims"):
        y = ctx.reshape(y, tuple(1 if i in axes else d for i, d in enumerate(x.type.shape)))
    return y


def mean(ctx: OpContext) -> Tensor:
    """MEAN over constant axes (negative ones count from the end; repeats count once):
    the sum divided by the number of elements, keeping the reduced dimensions as 1 with
    keep_dims."""
    return _reduce_sum(ctx, average=True)


def sum_(ctx: OpContext) -> Tensor:
    """SUM over constant axes, as MEAN without the division."""
    return _reduce_sum(ctx, average=False)


def dequantize_float16(ctx: OpContext) -> Tensor:
    """DEQUANTIZE of float16 values (weights stored as half) to float32."""
    x = ctx.input(0)
    if x.type.dtype.name != "f16":
        raise Unsupported(f"DEQUANTIZE from {x.type.dtype} to float32 is not supported")
    return ctx.node("convert", [x], dtype="f32")


__all__ = ["add", "broadcast_shape", "dequantize_float16", "div", "hard_swish", "logistic", "mean",
           "leaky_relu", "mul", "relu", "relu6", "relu_n1_to_1", "softmax", "sub", "sum_",
           "tanh"]
