"""TOSA's RESIZE (NEAREST_NEIGHBOR and BILINEAR) on NHWC tensors.

Every sampling position depends only on the output coordinate, so the specification's
index arithmetic (y = oy * scale_d + offset, iy = floor(y / scale_n), the remainder as
the fraction) runs at build time, per axis, into constant index and weight vectors.
The run-time work is then gathers along H and W and, for BILINEAR, the two-tap blends
along H and then W: for integers that is exactly the spec's sum of four products (in
i32, unit = scale_n); for floats it is the same interpolation in another summation
order, within the spec's error bound.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tosa.context import I32, TosaError, TosaOp
from toolchain.graph.ir import Tensor

__all__ = ["CONVERTERS", "sample_positions"]

MODES = ("NEAREST_NEIGHBOR", "BILINEAR", "NEAREST")


def sample_positions(size: int, out: int, n: int, d: int, offset: int, is_float: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per output coordinate along one axis: the two input taps (i0, i1), the nearest
    one, and the fraction toward i1 (ry / n for floats, ry for integers)."""
    pos = np.arange(out, dtype=np.int64) * d + offset
    i = np.floor_divide(pos, n)
    r = pos - i * n
    i0 = np.maximum(i, 0)
    i1 = np.minimum(i + 1, size - 1)
    if is_float:
        frac = r.astype(np.float64) / n
        nearest = np.where(frac >= 0.5, i1, i0)
    else:
        frac = r
        nearest = np.where(2 * r >= n, i1, i0)
    return i0, i1, nearest, frac


def _take(t: TosaOp, x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    """x[..., index, ...] along `axis` (constant indices)."""
    shape = tuple(x.type.shape)
    sizes = tuple(1 if d == axis else s for d, s in enumerate(shape))
    idx = t.b.const(np.asarray(index, np.int32).reshape(-1, 1), I32)
    return t.node("gather", [x, idx], offset_dims=tuple(d for d in range(len(shape))
                                                        if d != axis),
                  collapsed_slice_dims=(axis,), operand_batching_dims=(),
                  start_indices_batching_dims=(), start_index_map=(axis,),
                  index_vector_dim=1, slice_sizes=sizes)


def _blend(t: TosaOp, a: Tensor, b: Tensor, axis: int, wa: np.ndarray, wb: np.ndarray
           ) -> Tensor:
    """a * wa + b * wb with weights along `axis`."""
    dt, shape = a.type.dtype, tuple(a.type.shape)
    ta = t.b.along(wa.astype(dt.np_dtype), dt, shape, axis)
    tb = t.b.along(wb.astype(dt.np_dtype), dt, shape, axis)
    return t.node("add", [t.node("multiply", [a, ta]), t.node("multiply", [b, tb])])


def _resize(t: TosaOp) -> Tensor:
    x = t.input(0, "input")
    out = t.result()
    if x.type.rank != 4:
        raise TosaError("resizes NHWC tensors")
    if t.has_input(1):
        scale = t.shape(1, "scale")
        offset = t.shape(2, "offset")
        border = t.shape(3, "border")
    else:  # before TOSA 1.0: attributes
        scale, offset, border = t.ints("scale"), t.ints("offset"), t.ints("border")
    if len(scale) != 4 or len(offset) != 2 or len(border) != 2:
        raise TosaError("takes scale [y_n, y_d, x_n, x_d], offset [y, x] and border [y, x]")
    if min(scale) <= 0:
        raise TosaError(f"scale {list(scale)} must be positive")
    mode = t.enum("mode", MODES)
    n, ih, iw, c = x.type.shape
    dims = []
    for axis, size, (sn, sd), off, bor in ((1, ih, scale[0:2], offset[0], border[0]),
                                           (2, iw, scale[2:4], offset[1], border[1])):
        want = ((size - 1) * sn - off + bor) // sd + 1
        if out.shape[axis] != want:
            raise TosaError(f"output dimension {axis} is {out.shape[axis]}; scale, offset "
                            f"and border give {want}")
        dims.append((axis, size, sn, sd, off))
    is_float = x.type.dtype.is_float
    if mode != "BILINEAR":
        y = x
        for axis, size, sn, sd, off in dims:
            *_, nearest, _ = sample_positions(size, out.shape[axis], sn, sd, off, is_float)
            y = _take(t, y, axis, nearest)
        return t.convert(y, out.dtype)
    acc = out.dtype
    if not is_float and not (acc.is_integer and acc.bits >= 32):
        raise TosaError(f"integer BILINEAR returns i32 (scaled by scale_y_n * scale_x_n), "
                        f"not {acc}")
    y = t.convert(x, acc)
    for axis, size, sn, sd, off in dims:
        i0, i1, _, frac = sample_positions(size, out.shape[axis], sn, sd, off, is_float)
        unit = 1.0 if is_float else sn
        y = _blend(t, _take(t, y, axis, i0), _take(t, y, axis, i1), axis,
                   np.asarray(unit - frac), np.asarray(frac))
    return y


CONVERTERS: dict[str, Callable[[TosaOp], Tensor]] = {"tosa.resize": _resize}
