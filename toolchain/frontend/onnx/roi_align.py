"""RoiAlign (opset 16) with a fixed sampling_ratio: each output bin of each run-time
region averages (or takes the largest of) sampling_ratio x sampling_ratio bilinear
samples of X, as the spec computes them: the region scaled by spatial_scale (and moved
half a pixel with half_pixel), samples outside [-1, size] reading 0, samples below 0
moved to 0 and samples past the last pixel reading it. (sampling_ratio 0 makes the
number of samples depend on each region's size: refused.)

All in graph ops: per axis the sample coordinates, neighbours and weights, then the
four neighbours of every sample gathered from X laid out [N * H * W, C].
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def _axis(ctx: OpContext, start: Tensor, size: Tensor, bins: int, grid: int, length: int
          ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(low, high, weight of high, valid) of the samples [R, bins * grid] along one axis,
    from the regions' start and size [R]."""
    r = start.type.shape[0]
    shape = (r, bins * grid)
    step = np.repeat(np.arange(bins, dtype=np.float64), grid) + np.tile(
        (np.arange(grid) + 0.5) / grid, bins)  # in bins, per sample
    unit = ctx.node("divide", [size, ctx.filled(float(bins), size)])
    at = ctx.node("add", [ctx.broadcast(start, shape, (0,)), ctx.node("multiply", [
        ctx.broadcast(unit, shape, (0,)),
        ctx.broadcast(ctx.constant(step, start.type.dtype), shape, (1,))])])

    def k(v: float) -> Tensor:
        return ctx.filled(v, at)

    valid = ctx.node("and", [ctx.node("compare", [at, k(-1.0)], direction="GE"),
                             ctx.node("compare", [at, k(float(length))], direction="LE")])
    at = ctx.node("maximum", [at, k(0.0)])
    low = ctx.node("floor", [at])
    last = ctx.node("compare", [low, k(length - 1.0)], direction="GE")
    low = ctx.node("select", [last, k(length - 1.0), low])
    at = ctx.node("select", [last, low, at])
    high = ctx.node("select", [last, low, ctx.node("add", [low, k(1.0)])])
    return low, high, ctx.node("subtract", [at, low]), valid


def roi_align(ctx: OpContext) -> Tensor:
    """RoiAlign: X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] ->
    [R, C, output_height, output_width]."""
    x, rois, batch = ctx.input(0), ctx.input(1), ctx.input(2)
    n, c, h, w = (tuple(x.type.shape) + (0, 0, 0, 0))[:4]
    r = rois.type.shape[0] if rois.type.rank == 2 else 0
    if x.type.rank != 4 or tuple(rois.type.shape) != (r, 4) or \
            tuple(batch.type.shape) != (r,) or not x.type.dtype.is_float:
        raise Unsupported(f"X {list(x.type.shape)}, rois {list(rois.type.shape)}, "
                          f"batch_indices {list(batch.type.shape)} do not fit")
    oh, ow = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    grid = int(ctx.attr("sampling_ratio", 0))
    mode = ctx.attr("mode", "avg")
    half = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if grid < 1:
        raise Unsupported("sampling_ratio 0 (as many samples as each region's size "
                          "needs) is not supported: give sampling_ratio >= 1")
    if mode not in ("avg", "max") or half not in ("half_pixel", "output_half_pixel") or \
            oh < 1 or ow < 1:
        raise Unsupported(f"mode {mode!r}, coordinate_transformation_mode {half!r}, "
                          f"output {oh}x{ow}")
    dt = x.type.dtype
    if rois.type.dtype != dt:
        rois = ctx.node("convert", [rois], dtype=dt.name)
    scale = float(ctx.attr("spatial_scale", 1.0))
    shift = 0.5 if half == "half_pixel" else 0.0

    def corner(i: int) -> Tensor:
        v = ctx.reshape(ctx.node("slice", [rois], start=(0, i), limit=(r, i + 1),
                                 strides=(1, 1)), (r,))
        return ctx.node("subtract", [ctx.node("multiply", [v, ctx.filled(scale, v)]),
                                     ctx.filled(shift, v)])

    x1, y1, x2, y2 = (corner(i) for i in range(4))
    sizes = []
    for lo, hi in ((y1, y2), (x1, x2)):
        size = ctx.node("subtract", [hi, lo])
        if not shift:  # output_half_pixel: a region at least one pixel wide
            size = ctx.node("maximum", [size, ctx.filled(1.0, size)])
        sizes.append(size)
    ylo, yhi, ly, yok = _axis(ctx, y1, sizes[0], oh, grid, h)
    xlo, xhi, lx, xok = _axis(ctx, x1, sizes[1], ow, grid, w)
    py, px = oh * grid, ow * grid
    pts = (r, py, px)

    def ys(t: Tensor) -> Tensor:
        return ctx.broadcast(t, pts, (0, 1))

    def xs(t: Tensor) -> Tensor:
        return ctx.broadcast(t, pts, (0, 2))

    ok = ctx.node("select", [ctx.node("and", [ys(yok), xs(xok)]), ctx.filled(1.0, ys(ly)),
                             ctx.filled(0.0, ys(ly))])
    one = ctx.filled(1.0, ys(ly))
    wy = {"lo": ctx.node("subtract", [one, ys(ly)]), "hi": ys(ly)}
    wx = {"lo": ctx.node("subtract", [one, xs(lx)]), "hi": xs(lx)}
    rows = ctx.reshape(ctx.node("transpose", [ctx.reshape(x, (n, c, h * w))],
                                permutation=(0, 2, 1)), (n * h * w, c))
    b = ctx.node("convert", [batch], dtype=dt.name)
    base = ctx.broadcast(ctx.node("multiply", [b, ctx.filled(float(h * w), b)]), pts, (0,))
    taps = []
    for ky, yi in (("lo", ylo), ("hi", yhi)):
        for kx, xi in (("lo", xlo), ("hi", xhi)):
            pos = ctx.node("add", [ctx.node("multiply", [ys(yi), ctx.filled(float(w),
                                                                           ys(yi))]), xs(xi)])
            pos = ctx.node("multiply", [pos, ok])  # an invalid sample reads pixel 0
            ids = ctx.reshape(ctx.node("convert", [ctx.node("add", [base, pos])],
                                       dtype="i32"), (r * py * px, 1))
            got = ctx.node("gather", [rows, ids], offset_dims=(1,),
                           collapsed_slice_dims=(0,), operand_batching_dims=(),
                           start_indices_batching_dims=(), start_index_map=(0,),
                           index_vector_dim=1, slice_sizes=(1, c))
            weight = ctx.node("multiply", [ctx.node("multiply", [wy[ky], wx[kx]]), ok])
            taps.append(ctx.node("multiply", [
                ctx.reshape(got, (r, py, px, c)),
                ctx.broadcast(weight, (r, py, px, c), (0, 1, 2))]))
    if mode == "avg":
        v = ctx.node("add", [ctx.node("add", [taps[0], taps[1]]),
                             ctx.node("add", [taps[2], taps[3]])])
        kind, init = "add", 0.0
    else:
        v = ctx.node("maximum", [ctx.node("maximum", [taps[0], taps[1]]),
                                 ctx.node("maximum", [taps[2], taps[3]])])
        kind, init = "maximum", -np.inf
    v = ctx.reshape(v, (r, oh, grid, ow, grid, c))
    y = ctx.node("reduce", [v, ctx.scalar(init, v)], kind=kind, dims=(2, 4))
    if mode == "avg":
        y = ctx.node("divide", [y, ctx.filled(float(grid * grid), y)])
    return ctx.node("transpose", [y], permutation=(0, 3, 1, 2))


__all__ = ["roi_align"]
