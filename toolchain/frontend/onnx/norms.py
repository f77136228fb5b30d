"""Reductions beyond Reduce{Sum,Mean,Max,Min}, ArgMax/ArgMin, Hardmax and the
normalizations (LayerNormalization, RMSNormalization, LpNormalization,
InstanceNormalization, GroupNormalization), written with the graph's reduce.

Reduce* ops share elementwise.reduce_axes (the axes attribute or input, keepdims,
noop_with_empty_axes); each is a map before the reduction and one after, from a table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.elementwise import reduce_axes
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

Map = Callable[[OpContext, Tensor], Tensor]


def _abs(ctx: OpContext, x: Tensor) -> Tensor:
    return ctx.node("abs", [x])


def _square(ctx: OpContext, x: Tensor) -> Tensor:
    return ctx.node("multiply", [x, x])


def _sqrt(ctx: OpContext, x: Tensor) -> Tensor:
    return ctx.node("sqrt", [x])


def _log(ctx: OpContext, x: Tensor) -> Tensor:
    return ctx.node("log", [x])


@dataclass(frozen=True)
class Reduction:
    """map each element, reduce with `kind`, map the result."""

    kind: str
    before: Map | None = None
    after: Map | None = None
    floats_only: bool = False


REDUCTIONS = {
    "ReduceProd": Reduction("multiply"),
    "ReduceL1": Reduction("add", _abs),
    "ReduceL2": Reduction("add", _square, _sqrt, floats_only=True),
    "ReduceSumSquare": Reduction("add", _square),
    "ReduceLogSum": Reduction("add", None, _log, floats_only=True),
}


def _init(kind: str, x: Tensor) -> float | int:
    if x.type.dtype.is_float:
        return {"add": 0, "multiply": 1, "maximum": -np.inf, "minimum": np.inf}[kind]
    info = np.iinfo(x.type.dtype.np_dtype)
    return {"add": 0, "multiply": 1, "maximum": info.min, "minimum": info.max}[kind]


def _reduce(ctx: OpContext, x: Tensor, kind: str, axes: tuple[int, ...]) -> Tensor:
    return ctx.node("reduce", [x, ctx.scalar(_init(kind, x), x)], kind=kind, dims=axes)


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if d in axes else s for d, s in enumerate(shape))


def _back(ctx: OpContext, y: Tensor, shape: tuple[int, ...], axes: tuple[int, ...]
          ) -> Tensor:
    """A reduction's result broadcast back over `axes` of `shape`."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return ctx.broadcast(y, shape, kept)


def _float(ctx: OpContext, x: Tensor) -> Tensor:
    if not x.type.dtype.is_float:
        raise Unsupported(f"{ctx.info.op_type} of element type {x.type.dtype} (a float "
                          "tensor is expected)")
    return x


def reduction(ctx: OpContext) -> Tensor:
    """ReduceProd / L1 / L2 / SumSquare / LogSum (REDUCTIONS), and ReduceLogSumExp."""
    x = ctx.input(0)
    op = ctx.info.op_type
    shape = tuple(x.type.shape)
    axes = reduce_axes(ctx, len(shape))
    if op == "ReduceLogSumExp":
        y = _log_sum_exp(ctx, _float(ctx, x), axes or ())
    else:
        r = REDUCTIONS[op]
        if r.floats_only:
            _float(ctx, x)
        v = r.before(ctx, x) if r.before else x
        if axes is None:  # noop_with_empty_axes: the map alone
            return r.after(ctx, v) if r.after else v
        y = _reduce(ctx, v, r.kind, axes)
        y = r.after(ctx, y) if r.after else y
    if axes and ctx.attr("keepdims", 1):
        y = ctx.reshape(y, _kept_shape(shape, axes))
    return y


def _log_sum_exp(ctx: OpContext, x: Tensor, axes: tuple[int, ...]) -> Tensor:
    """log(sum(exp(x))) as m + log(sum(exp(x - m))), m the maximum (no overflow of
    exp); m is replaced by 0 where it is not finite (all -inf: log(0) = -inf, as the
    plain formula gives)."""
    if not axes:
        return x
    shape = tuple(x.type.shape)
    m = _reduce(ctx, x, "maximum", axes)
    m = ctx.node("select", [ctx.node("is_finite", [m]), m, ctx.filled(0, m)])
    e = ctx.node("exponential", [ctx.node("subtract", [x, _back(ctx, m, shape, axes)])])
    return ctx.node("add", [ctx.node("log", [_reduce(ctx, e, "add", axes)]), m])


# ArgMax / ArgMin: the extreme value's reduction, and the index reduction that picks
# the first (or, with select_last_index, the last) position holding it.
ARG = {"ArgMax": "maximum", "ArgMin": "minimum"}


def arg_extreme(ctx: OpContext) -> Tensor:
    """ArgMax / ArgMin along `axis` (int64 indices; keepdims, select_last_index). The
    extreme is reduced first, then the indices where x equals it: their minimum (first)
    or maximum (last). A NaN counts as the extreme (numpy's argmax / argmin, which
    ONNX's reference uses): the value reduction propagates it, and x != x marks it."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", 0), len(shape))
    ext = _reduce(ctx, x, ARG[ctx.info.op_type], (axis,))
    hit = ctx.node("compare", [x, _back(ctx, ext, shape, (axis,))], direction="EQ")
    if x.type.dtype.is_float:
        hit = ctx.node("or", [hit, ctx.node("compare", [x, x], direction="NE")])
    index = ctx.node("iota", [], dimension=axis, shape=shape, dtype="i64")
    last = ctx.attr("select_last_index", 0)
    kind = "maximum" if last else "minimum"
    miss = ctx.filled(-1 if last else shape[axis], index)
    y = _reduce(ctx, ctx.node("select", [hit, index, miss]), kind, (axis,))
    if ctx.attr("keepdims", 1):
        y = ctx.reshape(y, _kept_shape(shape, (axis,)))
    return y


def top_k(ctx: OpContext) -> list[Tensor]:
    """TopK with a constant K: the K largest (largest=1) or smallest values along `axis`
    and their int64 indices, extremes first, equal values by lower index (ONNX's rule).
    Found one at a time: the extreme of the values not taken yet, and the first
    position holding it, which is then taken; K steps of a reduction each (K is small in
    the models that use it: detection heads, beam search)."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", -1), len(shape))
    k = ctx.const(1, "K").reshape(-1)
    if k.size != 1 or not 1 <= int(k[0]) <= shape[axis]:
        raise Unsupported(f"K {k.tolist()} must be one value in [1, {shape[axis]}]")
    kind = "maximum" if ctx.attr("largest", 1) else "minimum"
    index = ctx.node("iota", [], dimension=axis, shape=shape, dtype="i64")
    taken = ctx.broadcast(ctx.constant(False, "i1"), shape, ())
    worst = ctx.filled(_init(kind, x), x)
    values, indices = [], []
    for _ in range(int(k[0])):
        free = ctx.node("select", [taken, worst, x])
        ext = _reduce(ctx, free, kind, (axis,))
        hit = ctx.node("compare", [free, _back(ctx, ext, shape, (axis,))], direction="EQ")
        if x.type.dtype.is_float:  # a NaN is the extreme, as in the Arg ops
            hit = ctx.node("or", [hit, ctx.node("compare", [free, free], direction="NE")])
        hit = ctx.node("and", [hit, ctx.node("not", [taken])])
        first = _reduce(ctx, ctx.node("select", [hit, index, ctx.filled(shape[axis], index)]),
                        "minimum", (axis,))
        chosen = ctx.node("compare", [index, _back(ctx, first, shape, (axis,))],
                          direction="EQ")
        # the value at the chosen position (the extreme, or the NaN that made it)
        picked = _reduce(ctx, ctx.node("select", [chosen, x, worst]), kind, (axis,))
        taken = ctx.node("or", [taken, chosen])
        kept = _kept_shape(shape, (axis,))
        values.append(ctx.reshape(picked, kept))
        indices.append(ctx.reshape(first, kept))
    if len(values) == 1:
        return [values[0], indices[0]]
    return [ctx.node("concatenate", values, dimension=axis),
            ctx.node("concatenate", indices, dimension=axis)]


def hardmax(ctx: OpContext) -> Tensor:
    """1 at the first maximum along `axis` (opset 13: one axis, default -1), else 0."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", -1), len(shape))
    top = _reduce(ctx, x, "maximum", (axis,))
    hit = ctx.node("compare", [x, _back(ctx, top, shape, (axis,))], direction="EQ")
    index = ctx.node("iota", [], dimension=axis, shape=shape, dtype="i64")
    first = _reduce(ctx, ctx.node("select", [hit, index, ctx.filled(shape[axis], index)]),
                    "minimum", (axis,))
    one = ctx.node("compare", [index, _back(ctx, first, shape, (axis,))], direction="EQ")
    return ctx.node("select", [one, ctx.filled(1, x), ctx.filled(0, x)])


def _moments(ctx: OpContext, x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Mean and (biased) variance over `axes`, in reduced shapes; the variance as the
    mean of (x - mean)^2 (no cancellation, as E[x^2] - E[x]^2 would have)."""
    shape = tuple(x.type.shape)
    n = int(np.prod([shape[a] for a in axes]))
    total = _reduce(ctx, x, "add", axes)
    mean = ctx.node("divide", [total, ctx.filled(n, total)])
    d = ctx.node("subtract", [x, _back(ctx, mean, shape, axes)])
    sq = _reduce(ctx, _square(ctx, d), "add", axes)
    return mean, ctx.node("divide", [sq, ctx.filled(n, sq)])


def _inv_std(ctx: OpContext, var: Tensor) -> Tensor:
    """1 / sqrt(var + epsilon) (epsilon 1e-5)."""
    eps = ctx.attr("epsilon", 1e-5)
    return ctx.node("rsqrt", [ctx.node("add", [var, ctx.filled(eps, var)])])


def _stash(ctx: OpContext, x: Tensor) -> Tensor:
    """x in the computation type: stash_type 1 (the default) is float32; any other
    value is x's own type."""
    stash = ctx.attr("stash_type", 1)
    if stash == 1 and x.type.dtype.name != "f32":
        return ctx.node("convert", [x], dtype="f32")
    return x


def _to(ctx: OpContext, x: Tensor, like: Tensor) -> Tensor:
    if x.type.dtype == like.type.dtype:
        return x
    return ctx.node("convert", [x], dtype=like.type.dtype.name)


def _affine(ctx: OpContext, y: Tensor, scale_i: int, bias_i: int | None) -> Tensor:
    """y * input scale_i + input bias_i (optional), both broadcast to y numpy-style."""
    shape = tuple(y.type.shape)
    y = ctx.node("multiply", [y, ctx.broadcast(ctx.input(scale_i), shape)])
    if bias_i is not None and ctx.has_input(bias_i):
        y = ctx.node("add", [y, ctx.broadcast(ctx.input(bias_i), shape)])
    return y


def layer_normalization(ctx: OpContext) -> list[Tensor]:
    """(x - mean) / sqrt(var + epsilon) * Scale + B over the axes from `axis` (default
    -1) to the last, in the stash type; the normalized value is cast back to x's type
    before Scale and B apply (ONNX's function body). Outputs Y, Mean, InvStdDev (the
    latter two in the stash type, reduced axes kept as 1)."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", -1), len(shape))
    axes = tuple(range(axis, len(shape)))
    xs = _stash(ctx, x)
    mean, var = _moments(ctx, xs, axes)
    inv = _inv_std(ctx, var)
    d = ctx.node("subtract", [xs, _back(ctx, mean, shape, axes)])
    normalized = ctx.node("multiply", [d, _back(ctx, inv, shape, axes)])
    y = _affine(ctx, _to(ctx, normalized, x), 1, 2)
    kept = _kept_shape(shape, axes)
    return [y, ctx.reshape(mean, kept), ctx.reshape(inv, kept)]


def rms_normalization(ctx: OpContext) -> Tensor:
    """x / sqrt(mean(x^2) + epsilon) * scale over the axes from `axis` to the last."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", -1), len(shape))
    axes = tuple(range(axis, len(shape)))
    xs = _stash(ctx, x)
    n = int(np.prod([shape[a] for a in axes]))
    ms = _reduce(ctx, _square(ctx, xs), "add", axes)
    inv = _inv_std(ctx, ctx.node("divide", [ms, ctx.filled(n, ms)]))
    normalized = ctx.node("multiply", [xs, _back(ctx, inv, shape, axes)])
    return _affine(ctx, _to(ctx, normalized, x), 1, None)


def lp_normalization(ctx: OpContext) -> Tensor:
    """x / its L1 or L2 norm along `axis` (p 2, axis -1); 0 where the norm is 0 (the
    node tests' expected values)."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", -1), len(shape))
    p = ctx.attr("p", 2)
    if p not in (1, 2):
        raise Unsupported(f"p={p} must be 1 or 2")
    norm = _reduce(ctx, _abs(ctx, x) if p == 1 else _square(ctx, x), "add", (axis,))
    if p == 2:
        norm = _sqrt(ctx, norm)
    norm = _back(ctx, norm, shape, (axis,))
    zero = ctx.node("compare", [norm, ctx.filled(0, norm)], direction="EQ")
    return ctx.node("select", [zero, ctx.filled(0, x), ctx.node("divide", [x, norm])])


def _per_channel(ctx: OpContext, i: int, shape: tuple[int, ...]) -> Tensor:
    """Input i, one value per channel (axis 1), broadcast to `shape`."""
    v = ctx.input(i)
    if tuple(v.type.shape) != (shape[1],):
        raise Unsupported(f"input {i} of shape {list(v.type.shape)}: {shape[1]} values, one "
                          "per channel, are expected")
    return ctx.broadcast(v, shape, (1,))


def instance_normalization(ctx: OpContext) -> Tensor:
    """Per sample and channel, over the spatial axes: (x - mean) / sqrt(var + epsilon)
    * scale[c] + B[c]."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    if len(shape) < 3:
        raise Unsupported(f"an input of rank {len(shape)} (N, C and spatial axes expected)")
    axes = tuple(range(2, len(shape)))
    mean, var = _moments(ctx, x, axes)
    d = ctx.node("subtract", [x, _back(ctx, mean, shape, axes)])
    y = ctx.node("multiply", [d, _back(ctx, _inv_std(ctx, var), shape, axes)])
    y = ctx.node("multiply", [y, _per_channel(ctx, 1, shape)])
    return ctx.node("add", [y, _per_channel(ctx, 2, shape)])


def group_normalization(ctx: OpContext) -> Tensor:
    """The channels in num_groups groups, each normalized over its channels and the
    spatial axes (in the stash type, opset 21), then scale and bias per channel (opset
    21; opset 18's per-group scale and bias are refused)."""
    x = _float(ctx, ctx.input(0))
    shape = tuple(x.type.shape)
    groups = ctx.attr("num_groups")
    if len(shape) < 2 or not isinstance(groups, int) or groups < 1 or shape[1] % groups:
        raise Unsupported(f"num_groups={groups} must divide the {shape[1:2]} channels")
    if ctx.opset < 21:
        raise Unsupported("opset 18's per-group scale and bias are not supported (opset 21 "
                          "and later: per channel)")
    grouped = (shape[0], groups, int(np.prod(shape[1:])) // groups)
    xs = ctx.reshape(_stash(ctx, x), grouped)
    mean, var = _moments(ctx, xs, (2,))
    d = ctx.node("subtract", [xs, _back(ctx, mean, grouped, (2,))])
    y = ctx.node("multiply", [d, _back(ctx, _inv_std(ctx, var), grouped, (2,))])
    y = _to(ctx, ctx.reshape(y, shape), x)
    y = ctx.node("multiply", [y, _per_channel(ctx, 1, shape)])
    return ctx.node("add", [y, _per_channel(ctx, 2, shape)])


__all__ = ["ARG", "REDUCTIONS", "arg_extreme", "top_k", "group_normalization", "hardmax",
           "instance_normalization", "layer_normalization", "lp_normalization",
           "reduction", "rms_normalization"]
