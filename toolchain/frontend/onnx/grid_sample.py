"""GridSample (opsets 16 and 20+): X [N, C, D1..Dr] sampled at the points of a run-time
grid [N, H1..Hr, r] of normalized coordinates in [-1, 1] (the last dimension lists
them innermost axis first: x, y[, z]), modes nearest / (bi)linear / (bi)cubic, padding
zeros / border / reflection, align_corners; 2-D and 3-D (opset 20) images.

Everything is existing graph ops, as the ONNX spec describes the op: per axis, the
coordinate is denormalized, (nearest) rounded half to even, moved inside the image as the
padding mode says, and split into taps (1, 2 or 4) with their weights; then for each
combination of one tap per axis, the flat pixel index and the product of the weights,
a gather of every channel at those pixels from X laid out [N * D, C], and the weighted
sum. With zeros padding a tap outside the image reads pixel 0 with weight 0.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic",
         "bicubic": "cubic"}
PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75  # the spec's cubic convolution parameter


class _Ops:
    """Element-wise graph arithmetic on tensors of one shape and float type."""

    def __init__(self, ctx: OpContext, like: Tensor):
        self.ctx, self.like = ctx, like

    def k(self, value: float) -> Tensor:
        return self.ctx.filled(value, self.like)

    def op(self, name: str, *xs: Tensor | float) -> Tensor:
        return self.ctx.node(name, [x if isinstance(x, Tensor) else self.k(x) for x in xs])

    def add(self, a: Tensor | float, b: Tensor | float) -> Tensor:
        return self.op("add", a, b)

    def sub(self, a: Tensor | float, b: Tensor | float) -> Tensor:
        return self.op("subtract", a, b)

    def mul(self, a: Tensor | float, b: Tensor | float) -> Tensor:
        return self.op("multiply", a, b)

    def floor(self, a: Tensor) -> Tensor:
        return self.ctx.node("floor", [a])

    def less(self, a: Tensor | float, b: Tensor | float) -> Tensor:
        return self.ctx.node("compare", [a if isinstance(a, Tensor) else self.k(a),
                                         b if isinstance(b, Tensor) else self.k(b)],
                             direction="LT")

    def where(self, c: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
        return self.ctx.node("select", [c, a if isinstance(a, Tensor) else self.k(a),
                                        b if isinstance(b, Tensor) else self.k(b)])

    def clamp(self, a: Tensor, lo: float, hi: float) -> Tensor:
        return self.ctx.node("clamp", [self.k(lo), a, self.k(hi)])

    def reflect(self, x: Tensor, lo: float, hi: float) -> Tensor:
        """x reflected by the near border, again and again, until inside [lo, hi]."""
        span = hi - lo
        if span <= 0:
            return self.where(self.less(x, lo), lo, self.where(self.less(hi, x), hi, x))
        below = self.less(x, lo)
        dx = self.where(below, self.sub(lo, x), self.sub(x, hi))  # >= 0 when outside
        times = self.floor(self.mul(dx, 1.0 / span))
        rest = self.sub(dx, self.mul(times, span))
        odd = self.less(0.5, self.sub(times, self.mul(self.floor(self.mul(times, 0.5)), 2.0)))
        near = self.where(below, self.add(rest, lo), self.sub(hi, rest))
        far = self.where(below, self.sub(hi, rest), self.add(rest, lo))
        outside = self.ctx.node("or", [below, self.less(hi, x)])
        return self.where(outside, self.where(odd, far, near), x)


def _cubic_weights(o: _Ops, t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 from fraction t."""
    a = CUBIC_A

    def near(d: Tensor) -> Tensor:  # |d| <= 1
        return o.add(o.mul(o.mul(o.sub(o.mul(d, a + 2), a + 3), d), d), 1.0)

    def far(d: Tensor) -> Tensor:  # 1 < |d| < 2
        return o.sub(o.mul(o.add(o.mul(o.sub(o.mul(d, a), 5 * a), d), 8 * a), d), 4 * a)

    one_minus = o.sub(1.0, t)
    return [far(o.add(t, 1.0)), near(t), near(one_minus), far(o.add(one_minus, 1.0))]


def _axis_taps(o: _Ops, g: Tensor, size: int, mode: str, padding: str, align: bool
               ) -> list[tuple[Tensor, Tensor | None]]:
    """(pixel index as float, weight or None for 1) of each tap along one axis."""
    if align:
        x = o.mul(o.add(g, 1.0), 0.5 * (size - 1))
        lo, hi = 0.0, float(size - 1)
    else:
        x = o.mul(o.sub(o.mul(o.add(g, 1.0), float(size)), 1.0), 0.5)
        lo, hi = -0.5, size - 0.5
    if mode == "nearest":
        x = o.ctx.node("round_nearest_even", [x])
    if padding == "border":
        outside = o.ctx.node("or", [o.less(x, lo), o.less(hi, x)])
        x = o.where(outside, o.clamp(x, 0.0, float(size - 1)), x)
    elif padding == "reflection":
        x = o.reflect(x, lo, hi)
    if mode == "nearest":
        return [(x, None)]
    base = o.floor(x)
    t = o.sub(x, base)
    if mode == "linear":
        return [(base, o.sub(1.0, t)), (o.add(base, 1.0), t)]
    return [(o.add(base, float(d)), w) for d, w in zip((-1, 0, 1, 2), _cubic_weights(o, t))]


def _pixel(o: _Ops, i: Tensor, size: int, padding: str, align: bool
           ) -> tuple[Tensor, Tensor | None]:
    """(a valid pixel index, 1 / 0 for a tap inside / outside the image with zeros
    padding, else None) of the tap at integer-valued position i, fetched as the spec
    fetches a pixel: zeros reads 0 outside, border the nearest edge pixel, reflection
    the pixel at the reflected position (truncated toward zero: it is >= -0.5)."""
    if padding == "reflection":
        lo, hi = (0.0, float(size - 1)) if align else (-0.5, size - 0.5)
        return o.floor(o.clamp(o.reflect(i, lo, hi), 0.0, float(size - 1))), None
    inside = None
    if padding == "zeros":
        inside = o.where(o.ctx.node("and", [o.less(-0.5, i), o.less(i, size - 0.5)]),
                         1.0, 0.0)
    return o.clamp(i, 0.0, float(size - 1)), inside


def grid_sample(ctx: OpContext) -> Tensor:
    """GridSample: X [N, C, *D] at grid [N, *H, r] -> [N, C, *H]."""
    x, grid = ctx.input(0), ctx.input(1)
    xs, gs = tuple(x.type.shape), tuple(grid.type.shape)
    r = len(xs) - 2
    mode = MODES.get(ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear"))
    padding = ctx.attr("padding_mode", "zeros")
    if mode is None or padding not in PADDINGS:
        raise Unsupported(f"mode {ctx.attr('mode')!r} / padding_mode {padding!r} is not "
                          "supported")
    if r < 1 or len(gs) != r + 2 or gs[0] != xs[0] or gs[-1] != r:
        raise Unsupported(f"X {list(xs)} and grid {list(gs)} do not fit (grid [N, *H, "
                          f"{r}] expected)")
    if not x.type.dtype.is_float or grid.type.dtype != x.type.dtype:
        raise Unsupported(f"X of {x.type.dtype} and grid of {grid.type.dtype} (one float "
                          "type expected)")
    return sample(ctx, x, grid, mode, padding, bool(ctx.attr("align_corners", 0)))


def sample(ctx: OpContext, x: Tensor, grid: Tensor, mode: str, padding: str, align: bool
           ) -> Tensor:
    """X [N, C, D1..Dr] sampled at grid [N, *H, r] (any number of H dimensions) as
    GridSample samples: [N, C, *H]."""
    xs, gs = tuple(x.type.shape), tuple(grid.type.shape)
    r = len(xs) - 2
    n, c, dims, out = xs[0], xs[1], xs[2:], gs[1:-1]
    points = math.prod(out)
    pixels = math.prod(dims)
    flat_grid = ctx.reshape(grid, (n, points, r))
    like = ctx.reshape(ctx.node("slice", [flat_grid], start=(0, 0, 0), limit=(n, points, 1),
                                strides=(1, 1, 1)), (n, points))
    o = _Ops(ctx, like)
    per_axis = []
    for d in range(r):  # grid's component r-1-d is the coordinate of image axis d
        comp = r - 1 - d
        g = ctx.reshape(ctx.node("slice", [flat_grid], start=(0, 0, comp),
                                 limit=(n, points, comp + 1), strides=(1, 1, 1)),
                        (n, points))
        taps = _axis_taps(o, g, dims[d], mode, padding, align)
        per_axis.append([(*_pixel(o, i, dims[d], padding, align), w) for i, w in taps])
    # X as rows of channels: [N * pixels, C]; a point's row is n * pixels + its index.
    rows = ctx.reshape(ctx.node("transpose", [ctx.reshape(x, (n, c, pixels))],
                                permutation=(0, 2, 1)), (n * pixels, c))
    batch_base = ctx.broadcast(ctx.constant(np.arange(n) * pixels, x.type.dtype),
                               (n, points), (0,))
    strides = [math.prod(dims[d + 1:]) for d in range(r)]
    total = None
    for combo in itertools.product(*per_axis):
        index, weight = batch_base, None
        for (idx, inside, w), stride in zip(combo, strides):
            index = o.add(index, o.mul(idx, float(stride)))
            for factor in (w, inside):
                if factor is not None:
                    weight = factor if weight is None else o.mul(weight, factor)
        ids = ctx.reshape(ctx.node("convert", [index], dtype="i32"), (n * points, 1))
        got = ctx.node("gather", [rows, ids], offset_dims=(1,), collapsed_slice_dims=(0,),
                       operand_batching_dims=(), start_indices_batching_dims=(),
                       start_index_map=(0,), index_vector_dim=1, slice_sizes=(1, c))
        got = ctx.reshape(got, (n, points, c))
        if weight is not None:
            got = ctx.node("multiply", [got, ctx.broadcast(weight, (n, points, c), (0, 1))])
        total = got if total is None else ctx.node("add", [total, got])
    assert total is not None
    y = ctx.node("transpose", [total], permutation=(0, 2, 1))
    return ctx.reshape(y, (n, c, *out))


__all__ = ["MODES", "PADDINGS", "grid_sample", "sample"]
