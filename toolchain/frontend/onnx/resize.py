"""Resize (nearest, linear and cubic; PyTorch's Upsample and F.interpolate) with
constant scales or sizes (and roi, for tf_crop_and_resize).

Both modes are separable: each resized axis is one step, a gather of the source
positions (computed at import with numpy from the coordinate transformation) and, for
linear, the two neighbours' weighted sum. The weights and indices are constants, so
the firmware does no coordinate arithmetic. Cubic, antialiased and cropping Resizes
contract each axis with a constant weight matrix instead (resize_filters.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx import resize_filters as rf
from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

# Output coordinate x (array) -> input coordinate, given input and output length and the
# axis' scale (ONNX's coordinate_transformation_mode).
Transform = Callable[[np.ndarray, int, int, float], np.ndarray]
TRANSFORMS: dict[str, Transform] = {
    "half_pixel": lambda x, n, m, s: (x + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda x, n, m, s: (x + 0.5) / s - 0.5 if m > 1 else 0 * x,
    # over the output length as the scale gives it, n * s, which a scale that does not
    # divide n leaves fractional: ONNX's reference, whose outputs its tests hold
    "align_corners": lambda x, n, m, s: x * (n - 1) / (n * s - 1) if n * s != 1 else 0 * x,
    "asymmetric": lambda x, n, m, s: x / s,
    # half_pixel about the centre: the output's rounding split between both ends
    "half_pixel_symmetric": lambda x, n, m, s: (n / 2) * (1 - m / (n * s)) + (x + 0.5) / s
    - 0.5,
}
# nearest_mode: an input coordinate -> the nearest index.
NEAREST = {
    "round_prefer_floor": lambda c: np.ceil(c - 0.5),
    "round_prefer_ceil": lambda c: np.floor(c + 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


# keep_aspect_ratio_policy (given sizes): how one scale comes from the axes' ratios.
ASPECT_POLICIES: dict[str, Callable | None] = {"stretch": None, "not_larger": min,
                                                "not_smaller": max}


def _targets(ctx: OpContext, shape: tuple[int, ...]) -> tuple[list[int], list[float]]:
    """Output sizes and per-axis scales from the constant scales or sizes (input 2 or
    3), over the `axes` attribute's axes (all by default)."""
    rank = len(shape)
    axes = [axis_of(a, rank) for a in (ctx.ints("axes") or range(rank))]
    out, scales = list(shape), [1.0] * rank
    if ctx.has_input(3):
        sizes = [int(v) for v in ctx.const(3, "sizes").reshape(-1)]
        if len(sizes) != len(axes) or any(s < 1 for s in sizes):
            raise Unsupported(f"sizes {sizes} must be {len(axes)} values >= 1")
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy not in ASPECT_POLICIES:
            raise Unsupported(f"keep_aspect_ratio_policy {policy!r} is not supported")
        if policy == "stretch":
            for a, s in zip(axes, sizes):
                out[a], scales[a] = s, s / shape[a]
        else:  # one scale for every axis listed, the sizes rounded half up
            scale = ASPECT_POLICIES[policy](s / shape[a] for a, s in zip(axes, sizes))
            for a in axes:
                out[a], scales[a] = int(scale * shape[a] + 0.5), scale
    elif ctx.has_input(2):
        given = [float(v) for v in ctx.const(2, "scales").reshape(-1)]
        if len(given) != len(axes) or any(not s > 0 for s in given):
            raise Unsupported(f"scales {given} must be {len(axes)} values > 0")
        for a, s in zip(axes, given):
            out[a], scales[a] = int(np.floor(shape[a] * s)), s
            if out[a] < 1:
                raise Unsupported(f"scale {s} leaves axis {a} empty")
    else:
        raise Unsupported("neither scales nor sizes is given")
    return out, scales


def take_along(ctx: OpContext, x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    """x's slices at the constant positions `index` along `axis`."""
    shape = tuple(x.type.shape)
    return ctx.node("gather", [x, ctx.constant(index.astype(np.int32), "i32")],
                    offset_dims=tuple(d for d in range(len(shape)) if d != axis),
                    collapsed_slice_dims=(axis,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(axis,),
                    index_vector_dim=1,
                    slice_sizes=tuple(1 if d == axis else s for d, s in enumerate(shape)))


def resize(ctx: OpContext) -> Tensor:
    """Resize, mode nearest (nearest_mode) or linear, coordinate_transformation_mode
    half_pixel, pytorch_half_pixel, align_corners or asymmetric."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    out, scales = _targets(ctx, shape)
    mode = ctx.attr("mode", "nearest")
    ct = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"mode {mode!r} is not supported (nearest, linear and cubic are)")
    if ct not in TRANSFORMS and ct != "tf_crop_and_resize":
        raise Unsupported(f"coordinate_transformation_mode {ct!r} is not supported")
    antialias = bool(ctx.attr("antialias", 0))
    if mode == "nearest" and (antialias or ct == "tf_crop_and_resize"):
        raise Unsupported("nearest Resize with antialias or tf_crop_and_resize is not "
                          "supported")
    if mode == "cubic" or antialias or ct == "tf_crop_and_resize":
        if not x.type.dtype.is_float:
            raise Unsupported(f"{mode} Resize of element type {x.type.dtype}")
        return _by_matrices(ctx, x, out, scales, mode, ct, antialias)
    nearest = NEAREST.get(ctx.attr("nearest_mode", "round_prefer_floor"))
    if nearest is None:
        raise Unsupported(f"nearest_mode {ctx.attr('nearest_mode')!r} is not supported")
    if mode == "linear" and not x.type.dtype.is_float:
        raise Unsupported(f"linear Resize of element type {x.type.dtype}")
    y = x
    for a, (n, m) in enumerate(zip(shape, out)):
        if n == m and scales[a] == 1.0:
            continue
        coord = TRANSFORMS[ct](np.arange(m, dtype=np.float64), n, m, scales[a])
        if mode == "nearest":
            y = take_along(ctx, y, a, np.clip(nearest(coord), 0, n - 1).astype(np.int64))
            continue
        coord = np.clip(coord, 0, n - 1)
        lo = np.floor(coord).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        w = coord - lo
        cur = tuple(y.type.shape[:a]) + (m,) + tuple(y.type.shape[a + 1:])

        def weight(values: np.ndarray, like: Tensor = x, cur: tuple = cur, a: int = a
                   ) -> Tensor:
            return ctx.broadcast(ctx.constant(values, like.type.dtype), cur, (a,))

        y = ctx.node("add", [ctx.node("multiply", [take_along(ctx, y, a, lo), weight(1 - w)]),
                             ctx.node("multiply", [take_along(ctx, y, a, hi), weight(w)])])
    return y


def _by_matrices(ctx: OpContext, x: Tensor, out: list[int], scales: list[float], mode: str,
                 ct: str, antialias: bool) -> Tensor:
    """Cubic, antialiased or cropping Resize: each resized axis, the last first, one
    constant weight matrix (resize_filters.py)."""
    shape = tuple(x.type.shape)
    rank = len(shape)
    taps = rf.cubic(float(ctx.attr("cubic_coeff_a", -0.75)), antialias) \
        if mode == "cubic" else rf.linear(antialias)
    exclude = bool(ctx.attr("exclude_outside", 0))
    axes = [axis_of(a, rank) for a in (ctx.ints("axes") or range(rank))]
    roi = rf.full_roi(ctx, axes, rank) if ct == "tf_crop_and_resize" else None
    y = x
    for a in reversed(range(rank)):
        n, m = shape[a], out[a]
        whole = roi is None or (roi[a] == 0.0 and roi[a + rank] == 1.0)
        if n == m and scales[a] == 1.0 and whole:
            continue
        inside = None
        if roi is not None:
            coords, inside = rf.crop_coords(roi, a, rank, n, m)
        else:
            coords = TRANSFORMS[ct](np.arange(m, dtype=np.float64), n, m, scales[a])
        w = rf.weight_matrix(coords, n, scales[a], taps, exclude, inside)
        y = rf.apply_matrix(ctx, y, a, w)
        if inside is not None:
            y = rf.extrapolated(ctx, y, a, inside, float(ctx.attr("extrapolation_value", 0.0)))
    return y


__all__ = ["NEAREST", "TRANSFORMS", "resize", "take_along"]
