"""TFLite RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (NHWC), as TFLite Micro's
reference kernels compute them.

The source coordinates of every output row and column depend only on the sizes and the
options, so they are computed here (in TFLite's float32 or 10-bit fixed-point
arithmetic) and become constant gathers; the int8 bilinear weights are TFLite Micro's
integers, so the int8 result is bit-exact.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor
from toolchain.quant.fixedpoint import round_half_away


def _take(ctx: OpContext, x: Tensor, axis: int, index: np.ndarray) -> Tensor:
    """x gathered along `axis` at constant indices (one per output position)."""
    rank = x.type.rank
    idx = ctx.const(index.astype(np.int32), "i32")
    return ctx.node("gather", [x, idx], offset_dims=tuple(d for d in range(rank) if d != axis),
                    collapsed_slice_dims=(axis,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(axis,),
                    index_vector_dim=1,
                    slice_sizes=tuple(1 if d == axis else s for d, s in enumerate(x.type.shape)))


def _sizes(ctx: OpContext, types: tuple[str, ...]) -> tuple[Tensor, int, int, bool, bool]:
    """The input, the constant output height and width, align_corners, half_pixel_centers."""
    x = ctx.input(0)
    if x.type.dtype.name not in types:
        raise Unsupported(f"{ctx.op.opcode} of {x.type.dtype} is not supported")
    if x.type.rank != 4:
        raise Unsupported(f"{ctx.op.opcode} takes a rank-4 NHWC input, not rank {x.type.rank}")
    size = ctx.value(1, "size").reshape(-1)
    if size.size != 2 or (size < 1).any():
        raise Unsupported(f"the output size {size.tolist()} is not two positive numbers")
    align, half = bool(ctx.option("align_corners")), bool(ctx.option("half_pixel_centers"))
    if align and half:
        raise Unsupported("align_corners and half_pixel_centers together are not supported")
    return x, int(size[0]), int(size[1]), align, half


def nearest_indices(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """TFLite's GetNearestNeighbor for every output position, in float32."""
    f = np.float32
    scale = (f(in_size - 1) / f(out_size - 1) if align and out_size > 1
             else f(in_size) / f(out_size))
    pos = (np.arange(out_size, dtype=f) + f(0.5 if half else 0.0)) * scale
    idx = round_half_away(pos.astype(np.float64)) if align else np.floor(pos)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half else idx


def resize_nearest_neighbor(ctx: OpContext) -> Tensor:
    """RESIZE_NEAREST_NEIGHBOR: two constant gathers (rows, then columns); values move
    as stored."""
    x, oh, ow, align, half = _sizes(ctx, ("f32", "i8", "i16"))
    _, h, w, _ = x.type.shape
    y = _take(ctx, x, 1, nearest_indices(h, oh, align, half))
    return _take(ctx, y, 2, nearest_indices(w, ow, align, half))


def bilinear_float(in_size: int, out_size: int, align: bool, half: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, float32 fraction) per output position: TFLite's
    ComputeInterpolationValues."""
    f = np.float32
    scale = f(in_size) / f(out_size)
    if align and out_size > 1:
        scale = f(in_size - 1) / f(out_size - 1)
    v = np.arange(out_size, dtype=f)
    pos = ((v + f(0.5)) * scale - f(0.5)) if half else v * scale
    pos = pos.astype(f)
    lo = np.maximum(np.floor(pos).astype(np.int64), 0)
    hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    return lo, hi, (pos - lo.astype(f)).astype(f)


def bilinear_int(in_size: int, out_size: int, align: bool, half: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, lower weight, upper weight) per output position, in TFLite's
    10-bit fixed point (ComputeInterpolationValuesInteger; C division truncates)."""
    def cdiv(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    scale = cdiv((1 << 10) * in_size + out_size // 2, out_size)
    if align and out_size > 1:
        scale = cdiv((1 << 10) * (in_size - 1) + (out_size - 1) // 2, out_size - 1)
    lo, hi, w_lo, w_hi = [], [], [], []
    for v in range(out_size):
        pos = v * scale + cdiv(scale, 2) - (1 << 9) if half else v * scale
        low = max(cdiv(pos, 1 << 10), 0)
        lo.append(low)
        hi.append(min(cdiv(pos + (1 << 10) - 1, 1 << 10), in_size - 1))
        w_hi.append(pos - (1 << 10) * low)
        w_lo.append((1 << 10) - w_hi[-1])
    return tuple(np.array(a, dtype=np.int64) for a in (lo, hi, w_lo, w_hi))


def _weight(ctx: OpContext, values: np.ndarray, axis: int, like: Tensor) -> Tensor:
    """A per-row (axis 1) or per-column (axis 2) constant broadcast to `like`'s shape."""
    return ctx.broadcast(ctx.const(values, like.type.dtype), like.type.shape, (axis,))


def resize_bilinear(ctx: OpContext) -> Tensor:
    """RESIZE_BILINEAR: the four neighbours by constant gathers, weighted as TFLite's
    float kernel (float32) or its integer kernel (int8: 10-bit weights, the 20-bit sum
    rounded half away from zero)."""
    x, oh, ow, align, half = _sizes(ctx, ("f32", "i8"))
    _, h, w, _ = x.type.shape
    if x.type.dtype.name == "f32":
        y0, y1, fy = bilinear_float(h, oh, align, half)
        x0, x1, fx = bilinear_float(w, ow, align, half)
        one = np.float32(1.0)
        wy, wx = ((one - fy).astype(np.float32), fy), ((one - fx).astype(np.float32), fx)
        src = x
    else:
        y0, y1, *wy = bilinear_int(h, oh, align, half)
        x0, x1, *wx = bilinear_int(w, ow, align, half)
        src = ctx.node("convert", [x], dtype="i32")
    rows = [_take(ctx, src, 1, y0), _take(ctx, src, 1, y1)]
    total = None
    # TFLite's order: (y0, x0), (y1, x0), (y0, x1), (y1, x1), each v * wy * wx.
    for j, xi in ((0, x0), (1, x1)):
        for i in (0, 1):
            v = _take(ctx, rows[i], 2, xi)
            term = ctx.node("multiply", [v, _weight(ctx, wy[i], 1, v)])
            term = ctx.node("multiply", [term, _weight(ctx, wx[j], 2, v)])
            total = term if total is None else ctx.node("add", [total, term])
    assert total is not None
    if x.type.dtype.name == "f32":
        return total
    half_unit = ctx.filled(1 << 19, total)
    positive = ctx.node("compare", [total, ctx.filled(0, total)], direction="GT")
    rounded = ctx.node("select", [positive, ctx.node("add", [total, half_unit]),
                                  ctx.node("subtract", [total, half_unit])])
    scaled = ctx.node("divide", [rounded, ctx.filled(1 << 20, total)])
    return ctx.node("convert", [scaled], dtype="i8")


__all__ = ["bilinear_float", "bilinear_int", "nearest_indices", "resize_bilinear",
           "resize_nearest_neighbor"]
