"""Data movement: RESHAPE, SQUEEZE, PAD, CONCATENATION, TRANSPOSE, STRIDED_SLICE.

These move stored values without arithmetic, so the same converter serves float and
quantized tensors: TFLite copies the bytes and the output tensor's own quantization
says what they mean (the importer gives the result the declared output type). The
quantized cases need only what TFLite Micro itself needs: PAD fills with the output's
zero point, CONCATENATION requires every input to share the output's scale and zero
point.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.activations import apply_activation
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor


def _axis(axis: int, rank: int, what: str) -> int:
    """A possibly negative axis as an index into `rank` dimensions."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise Unsupported(f"{what} {axis} is out of range for a rank-{rank} input")
    return a


def reshape(ctx: OpContext) -> Tensor:
    """RESHAPE to the output tensor's declared (static) shape; the element count must
    stay the same."""
    x = ctx.input(0)
    shape = tuple(ctx.output_info().shape)
    if int(np.prod(shape, dtype=object)) != x.type.num_elements:
        raise Unsupported(f"the output shape {list(shape)} does not hold the input's "
                          f"{x.type.num_elements} elements")
    return ctx.reshape(x, shape)


def squeeze(ctx: OpContext) -> Tensor:
    """SQUEEZE the listed size-1 dimensions (all of them when the list is empty)."""
    x = ctx.input(0)
    shape = x.type.shape
    dims = {_axis(d, len(shape), "squeeze dimension") for d in ctx.option("squeeze_dims")}
    if not dims:
        dims = {i for i, d in enumerate(shape) if d == 1}
    for d in sorted(dims):
        if shape[d] != 1:
            raise Unsupported(f"squeeze dimension {d} has size {shape[d]}, not 1")
    return ctx.reshape(x, tuple(d for i, d in enumerate(shape) if i not in dims))


def _zero(ctx: OpContext, x: Tensor) -> Tensor:
    """The value that stands for real 0 in the output's storage: its zero point when
    quantized (what TFLite pads with)."""
    q = ctx.output_type().quant
    if q is None:
        return ctx.scalar(0, x)
    if q.axis is not None:
        raise Unsupported("a padded tensor must be quantized per tensor")
    return ctx.scalar(q.zero_points[0], x)


def pad(ctx: OpContext) -> Tensor:
    """PAD with zeros (the zero point on quantized tensors); paddings [rank, 2] >= 0."""
    x = ctx.input(0)
    widths = ctx.value(1, "paddings")
    if widths.shape != (x.type.rank, 2):
        raise Unsupported(f"paddings of shape {list(widths.shape)} do not fit a rank-"
                          f"{x.type.rank} input ([{x.type.rank}, 2] expected)")
    if (widths < 0).any():
        raise Unsupported("paddings must not be negative")
    return ctx.node("pad", [x, _zero(ctx, x)], low=tuple(int(v) for v in widths[:, 0]),
                    high=tuple(int(v) for v in widths[:, 1]), interior=(0,) * x.type.rank)


def concatenation(ctx: OpContext) -> Tensor:
    """CONCATENATION along `axis`; quantized inputs must all have the output's scale and
    zero point (TFLite Micro refuses anything else)."""
    xs = [ctx.input(i) for i in range(len(ctx.op.inputs))]
    out = ctx.output_type()
    if out.quant is not None:
        for i, t in enumerate(xs):
            if t.type.quant != out.quant:
                raise Unsupported(f"int{out.dtype.name[1:]} CONCATENATION needs every input "
                                  f"to have the output's scale and zero point ({out.quant}), "
                                  f"but input {i} has {t.type.quant} (TFLite Micro requires "
                                  "it)")
    axis = _axis(ctx.option("axis"), xs[0].type.rank, "axis")
    y = ctx.node("concatenate", xs, dimension=axis)
    return apply_activation(ctx, y, ctx.option("fused_activation_function"), out)


def transpose(ctx: OpContext) -> Tensor:
    """TRANSPOSE by a constant permutation."""
    x = ctx.input(0)
    perm = tuple(_axis(int(p), x.type.rank, "permutation entry")
                 for p in ctx.value(1, "permutation").reshape(-1))
    if sorted(perm) != list(range(x.type.rank)):
        raise Unsupported(f"{list(perm)} is not a permutation of the input's "
                          f"{x.type.rank} dimensions")
    return ctx.node("transpose", [x], permutation=perm)


def _slice_bounds(n: int, begin: int, end: int, stride: int, masked_begin: bool,
                  masked_end: bool, shrink: bool, offset: bool) -> tuple[int, int]:
    """TFLite's start and stop along one axis (strided_slice_logic.h): negative indices
    count from the end, then are clamped to [0, n] (stride > 0) or [-1, n - 1]; masks
    take the whole axis; a shrunk axis keeps one element."""
    start = begin + n if begin < 0 else begin
    start = min(max(start, 0), n) if stride > 0 else min(max(start, -1), n - 1)
    if masked_begin:
        start = 0 if stride > 0 else n - 1
    if shrink:
        if not 0 <= start < n:
            raise Unsupported(f"shrunk index {begin} is out of range for a dimension of {n}")
        return start, start + 1
    stop = end + start if offset else end
    stop = stop + n if stop < 0 else stop
    stop = min(max(stop, 0), n) if stride > 0 else min(max(stop, -1), n - 1)
    if masked_end:
        stop = n if stride > 0 else -1
    return start, stop


def strided_slice(ctx: OpContext) -> Tensor:
    """STRIDED_SLICE with begin / end / shrink-axis masks, negative indices and strides,
    and `offset`. A negative stride reverses the axis, then slices it forward."""
    x = ctx.input(0)
    rank = x.type.rank
    begin, end, strides = (ctx.value(i, what).reshape(-1) for i, what in
                           ((1, "begin"), (2, "end"), (3, "strides")))
    if not len(begin) == len(end) == len(strides) == rank:
        raise Unsupported(f"begin, end and strides have {len(begin)}, {len(end)} and "
                          f"{len(strides)} entries for a rank-{rank} input")
    for mask in ("ellipsis_mask", "new_axis_mask"):
        if ctx.option(mask):
            raise Unsupported(f"{mask} is not supported (TFLite Micro ignores it)")
    masks = {k: int(ctx.option(k)) for k in ("begin_mask", "end_mask", "shrink_axis_mask")}
    starts, limits, steps, reversed_dims, shrunk = [], [], [], [], []
    for i, n in enumerate(x.type.shape):
        s = int(strides[i])
        if s == 0:
            raise Unsupported(f"stride {i} is 0")
        shrink = bool(masks["shrink_axis_mask"] >> i & 1)
        if shrink and s < 0:
            raise Unsupported(f"dimension {i} is shrunk with a negative stride")
        start, stop = _slice_bounds(n, int(begin[i]), int(end[i]), s,
                                    bool(masks["begin_mask"] >> i & 1),
                                    bool(masks["end_mask"] >> i & 1), shrink,
                                    bool(ctx.option("offset")))
        if s < 0:  # index k of the reversed axis is n - 1 - k of the original
            reversed_dims.append(i)
            start, stop = n - 1 - start, n - 1 - stop
        starts.append(start)
        limits.append(max(stop, start))
        steps.append(abs(s))
        if shrink:
            shrunk.append(i)
    if reversed_dims:
        x = ctx.node("reverse", [x], dims=tuple(reversed_dims))
    y = ctx.node("slice", [x], start=tuple(starts), limit=tuple(limits), strides=tuple(steps))
    if shrunk:
        y = ctx.reshape(y, tuple(d for i, d in enumerate(y.type.shape) if i not in shrunk))
    return y


__all__ = ["concatenation", "pad", "reshape", "squeeze", "strided_slice", "transpose"]
