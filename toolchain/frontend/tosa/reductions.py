"""TOSA's reductions: REDUCE_ALL / ANY / MAX / MIN / PRODUCT / SUM over one axis (kept
as a dimension of size 1) and ARGMAX (the axis removed).

ARGMAX is decomposed into graph ops, exactly: the maximum along the axis, then the least
index where the input equals it (iota where equal, the axis size elsewhere, minimum).
That is the specification's first index of the maximum. Its NaN rules follow: with
nan_mode PROPAGATE the first NaN wins (a NaN maximum matches only NaNs); with IGNORE NaNs
are skipped and an all-NaN row gives index 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tosa.context import TosaError, TosaOp, int_range
from toolchain.frontend.tosa.elementwise import is_nan
from toolchain.graph.ir import Tensor
from toolchain.types import DType

__all__ = ["CONVERTERS"]


def _axis(t: TosaOp, x: Tensor) -> int:
    rank = x.type.rank
    axis = t.int("axis")
    if not -rank <= axis < rank:
        raise TosaError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _extreme(dt: DType, kind: str) -> float | int:
    """The identity of a max / min reduction: -inf / +inf, or the integer range's end."""
    if dt.is_float:
        return -np.inf if kind == "maximum" else np.inf
    lo, hi = int_range(dt)
    return lo if kind == "maximum" else hi


def _reduce_along(t: TosaOp, x: Tensor, axis: int, kind: str, init: float | int | bool
                  ) -> Tensor:
    return t.node("reduce", [x, t.b.const(init, x.type.dtype)], kind=kind, dims=(axis,))


def _max_min(t: TosaOp, x: Tensor, axis: int, kind: str) -> Tensor:
    """The maximum / minimum along axis (removed); nan_mode IGNORE skips NaNs and gives
    NaN only for an all-NaN row; PROPAGATE gives NaN for any NaN."""
    dt = x.type.dtype
    init = _extreme(dt, kind)
    if not dt.is_float or t.nan_mode() == "PROPAGATE":
        return _reduce_along(t, x, axis, kind, init)
    nan = is_nan(t, x)
    clean = t.node("select", [nan, t.splat(init, dt, x.type.shape), x])
    result = _reduce_along(t, clean, axis, kind, init)
    all_nan = _reduce_along(t, nan, axis, "and", True)
    return t.node("select", [all_nan, t.splat(np.nan, dt, result.type.shape), result])


def _reduce(kind: str) -> Callable[[TosaOp], Tensor]:
    """REDUCE_*: the reduction along `axis`, reshaped to keep that axis as size 1."""
    inits = {"add": 0, "multiply": 1, "and": True, "or": False}

    def convert(t: TosaOp) -> Tensor:
        x = t.input(0, "input")
        axis = _axis(t, x)
        if kind in ("maximum", "minimum"):
            reduced = _max_min(t, x, axis, kind)
        else:
            reduced = _reduce_along(t, x, axis, kind, inits[kind])
        kept = list(x.type.shape)
        kept[axis] = 1
        return t.node("reshape", [reduced], shape=tuple(kept))

    return convert


def _argmax(t: TosaOp) -> Tensor:
    x = t.input(0, "input")
    axis = _axis(t, x)
    out = t.result()
    dt, shape = x.type.dtype, tuple(x.type.shape)
    if not out.dtype.is_integer:
        raise TosaError(f"ARGMAX returns integers, not {out.dtype}")
    size = shape[axis]
    ignore = dt.is_float and t.nan_mode() == "IGNORE"
    if ignore:
        nan = is_nan(t, x)
        top = _reduce_along(t, t.node("select", [nan, t.splat(-np.inf, dt, shape), x]),
                            axis, "maximum", -np.inf)
    else:
        top = _reduce_along(t, x, axis, "maximum", _extreme(dt, "maximum"))
    others = tuple(d for d in range(len(shape)) if d != axis)
    spread = t.node("broadcast_in_dim", [top], dims=others, shape=shape)
    hit = t.node("compare", [x, spread], direction="EQ")
    if dt.is_float and not ignore:  # a NaN maximum: the first NaN is the answer
        hit = t.node("or", [hit, is_nan(t, x)])
    index = t.node("iota", [], dimension=axis, shape=shape, dtype=out.dtype.name)
    candidates = t.node("select", [hit, index, t.splat(size, out.dtype, shape)])
    first = _reduce_along(t, candidates, axis, "minimum", size)
    if ignore:  # an all-NaN row matched nowhere: index 0
        none = t.node("compare", [first, t.splat(size, out.dtype, first.type.shape)],
                      direction="EQ")
        first = t.node("select", [none, t.splat(0, out.dtype, first.type.shape), first])
    return first


CONVERTERS: dict[str, Callable[[TosaOp], Tensor]] = {
    "tosa.reduce_sum": _reduce("add"),
    "tosa.reduce_product": _reduce("multiply"),
    "tosa.reduce_max": _reduce("maximum"),
    "tosa.reduce_min": _reduce("minimum"),
    "tosa.reduce_all": _reduce("and"),
    "tosa.reduce_any": _reduce("or"),
    "tosa.argmax": _argmax,
}
