"""Resize by a weight matrix per axis: mode cubic (cubic_coeff_a, exclude_outside),
antialiased linear and cubic (the filter widened by 1 / scale when shrinking), and
coordinate_transformation_mode tf_crop_and_resize (roi, extrapolation_value).

Each resized axis is one contraction of the data with a constant [output, input]
matrix whose row holds the taps of one output position (the taps past the edge read the
edge value, as ONNX's reference pads), so the firmware runs a dot_general per axis and
does no coordinate arithmetic. The taps follow the ONNX spec: the source coordinate,
its fractional part (1, not 0, on an integer coordinate: the taps then sit one to the
left), the filter's coefficients, and the taps nearest the coordinate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

# (fractional part, scale) -> tap coefficients, left to right.
Filter = Callable[[float, float], np.ndarray]


def _cubic_weight(x: float, a: float) -> float:
    """Keys' cubic convolution kernel with parameter a at distance x."""
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def cubic(a: float, antialias: bool) -> Filter:
    """Cubic taps: four around the coordinate, or, antialiased and shrinking, the
    kernel stretched by 1 / scale over as many taps as it covers, normalized."""
    def taps(ratio: float, scale: float) -> np.ndarray:
        s = min(scale, 1.0) if antialias else 1.0
        first = int(np.floor(-2 / s) + 1)
        w = np.array([_cubic_weight(s * (i - ratio), a) for i in range(first, 2 - first)])
        return w / w.sum() if antialias else w
    return taps


def linear(antialias: bool) -> Filter:
    """Linear taps: the two neighbours, or, antialiased and shrinking, a triangle
    stretched by 1 / scale, normalized."""
    def taps(ratio: float, scale: float) -> np.ndarray:
        s = min(scale, 1.0) if antialias else 1.0
        first = int(np.floor(-1 / s) + 1)
        w = np.clip(1 - np.abs((np.arange(first, 2 - first) - ratio) * s), 0, 1)
        return w / w.sum()
    return taps


def _nearest_taps(x: float, count: int, size: int) -> np.ndarray:
    """The `count` positions of [-pad, size + pad) nearest x, the smaller first on a tie
    (pad = ceil(count / 2): the edge padding of ONNX's reference), ascending."""
    pad = -(-count // 2)
    positions = np.arange(-pad, size + pad)
    nearest = np.lexsort((positions, np.abs(x - positions)))[:count]
    return np.sort(positions[nearest])


def weight_matrix(coords: np.ndarray, size: int, scale: float, taps: Filter,
                  exclude_outside: bool, inside: np.ndarray | None = None) -> np.ndarray:
    """[len(coords), size] weights: output row i mixes the inputs around source
    coordinate coords[i]; taps past the edge add to the edge element, or with
    exclude_outside are dropped and the rest renormalized. Rows not `inside` are 0."""
    w = np.zeros((coords.size, size))
    for i, x in enumerate(coords):
        if inside is not None and not inside[i]:
            continue
        base = np.floor(x)
        ratio = 1.0 if x == base else x - base
        c = np.array(taps(float(ratio), scale), dtype=np.float64)
        idx = _nearest_taps(float(x), c.size, size)
        if exclude_outside:
            c = np.where((idx >= 0) & (idx < size), c, 0.0)
            c = c / c.sum()
        np.add.at(w[i], np.clip(idx, 0, size - 1), c)
    return w


def apply_matrix(ctx: OpContext, y: Tensor, axis: int, w: np.ndarray) -> Tensor:
    """y with `axis` replaced by w @ y along it (a dot_general, then the new axis moved
    back into place)."""
    rank = y.type.rank
    dt = y.type.dtype
    r = ctx.node("dot_general", [y, ctx.constant(w, dt)], lhs_batch=(), rhs_batch=(),
                 lhs_contract=(axis,), rhs_contract=(1,), dtype=dt.name)
    if axis == rank - 1:
        return r
    perm = tuple(range(axis)) + (rank - 1,) + tuple(range(axis, rank - 1))
    return ctx.node("transpose", [r], permutation=perm)


def crop_coords(roi: np.ndarray, axis: int, rank: int, n: int, m: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """tf_crop_and_resize's source coordinates of one axis (roi holds the starts of
    every axis, then the ends, as fractions of the input) and which lie inside."""
    start, end = float(roi[axis]), float(roi[axis + rank])
    x = np.arange(m, dtype=np.float64)
    if m == 1:
        coords = np.full(1, (end - start) * (n - 1) / 2)
    else:
        coords = x * (end - start) * (n - 1) / (m - 1)
    coords = coords + start * (n - 1)
    return coords, (coords >= 0) & (coords <= n - 1)


def full_roi(ctx: OpContext, axes: list[int], rank: int) -> np.ndarray:
    """The roi input over every axis (starts, then ends), the axes not listed whole."""
    roi = ctx.optional_const(1, "roi")
    if roi is None or roi.size == 0:
        raise Unsupported("tf_crop_and_resize needs the roi input")
    roi = np.asarray(roi, np.float64).reshape(-1)
    if roi.size != 2 * len(axes):
        raise Unsupported(f"roi has {roi.size} values for {len(axes)} axes")
    full = np.array([0.0] * rank + [1.0] * rank)
    for i, a in enumerate(axes):
        full[a], full[a + rank] = roi[i], roi[i + len(axes)]
    return full


def extrapolated(ctx: OpContext, y: Tensor, axis: int, inside: np.ndarray, value: float
                 ) -> Tensor:
    """y with the positions of `axis` outside the crop set to `value` (their weight rows
    are 0, so adding the value there is enough)."""
    if inside.all():
        return y
    fill = np.where(inside, 0.0, value)
    add = ctx.broadcast(ctx.constant(fill, y.type.dtype), tuple(y.type.shape), (axis,))
    return ctx.node("add", [y, add])


__all__ = ["apply_matrix", "crop_coords", "cubic", "extrapolated", "full_roi", "linear",
           "weight_matrix"]
