"""The random generator's builders for reductions by a kind (reduce, reduce_window)
and the window attributes that region ops share (reduce_window_region and
select_and_scatter in region_gens.py).

An init value is mostly the kind's identity but sometimes any value: the spec folds
it in once, whatever it is.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Tensor
from toolchain.graph.ops import REDUCE_KINDS
from toolchain.testing.gen_context import DTYPE_WEIGHTS, Gen, source
from toolchain.types import DType, TensorType

__all__ = ["reduce", "reduce_window", "reduction_init", "window_attrs"]


_IDENTITY = {"add": 0, "multiply": 1, "and": -1, "or": 0}


def _kinds(dt: DType) -> tuple[str, ...]:
    if dt.kind == "b":
        return REDUCE_KINDS
    if dt.is_float:
        return ("add", "multiply", "maximum", "minimum")
    return REDUCE_KINDS


def reduction_init(g: Gen, kind: str, dt: DType) -> Tensor:
    """The init value of a reduction: its identity mostly, any value sometimes (the
    spec folds it in once, whatever it is), or a graph input."""
    scalar = TensorType((), dt)
    if g.chance(0.3):
        return g.operand(scalar)
    if kind in ("maximum", "minimum"):
        if dt.is_float:
            value = -np.inf if kind == "maximum" else np.inf
        elif dt.kind == "b":
            value = kind == "minimum"
        else:
            info = np.iinfo(dt.np_dtype)
            value = info.min if kind == "maximum" else info.max
    else:
        value = _IDENTITY[kind]
        if dt.kind == "b":
            value = bool(value)
        elif dt.kind == "u" and value == -1:
            value = np.iinfo(dt.np_dtype).max
    return g.const(scalar, value)


def reduce(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    kind = g.rng.choice(_kinds(x.type.dtype))
    rank = x.type.rank
    dims = () if g.chance(0.05) else tuple(sorted(g.rng.sample(range(rank),
                                                              g.rng.randint(1, rank))))
    if g.chance(0.2):
        dims = tuple(g.rng.sample(dims, len(dims)))  # any order (reduces the same)
    g.op("reduce", [x, reduction_init(g, kind, x.type.dtype)], kind=kind, dims=dims)
    return True


def window_attrs(g: Gen, shape: tuple[int, ...], dilate: bool = True,
                 negative_pad: bool = False) -> dict | None:
    """Random reduce_window-style attributes for an operand of `shape` (None when the
    windows do not fit)."""
    r = g.rng
    at: dict[str, list] = {k: [] for k in ("window", "strides", "base_dilations",
                                           "window_dilations", "padding")}
    out = 1
    for d in shape:
        w = r.randint(1, min(3, d + 1))
        st = r.choice([1, 1, 2])
        bd = r.choice([1, 1, 1, 2]) if dilate else 1
        wd = r.choice([1, 1, 1, 2]) if dilate else 1
        lo = r.choice([0, 0, 0, 1, 2] + ([-1] if negative_pad else []))
        hi = r.choice([0, 0, 0, 1, 2] + ([-1] if negative_pad else []))
        base = (d - 1) * bd + 1 + lo + hi
        win = (w - 1) * wd + 1
        if base < win:
            return None
        out *= (base - win) // st + 1
        for k, v in zip(at, (w, st, bd, wd, (lo, hi))):
            at[k].append(v)
    if out > g.max_elements:
        return None
    return {k: tuple(v) for k, v in at.items()}


def reduce_window(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    attrs = window_attrs(g, x.type.shape)
    if attrs is None:
        return False
    kind = g.rng.choice(_kinds(x.type.dtype))
    g.op("reduce_window", [x, reduction_init(g, kind, x.type.dtype)], kind=kind, **attrs)
    return True
