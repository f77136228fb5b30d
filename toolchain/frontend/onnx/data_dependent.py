"""Ops whose output size depends on input values (Compress, Unique, NonZero,
NonMaxSuppression, Range): minirt's shapes are static, so the values that decide the size must
be known when the model is built (constants, or inputs pinned with --input-value;
shape_operands.py lists them).

Compress needs only its condition: the selected positions are then constant and the
data moves at run time (a gather). Unique and NonMaxSuppression need every input, since
each output element depends on all of them: they are computed here, at build time
(as is a Range, whose every element follows from its three scalars),
following the ONNX spec, and the firmware holds their results.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of, empty_value
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.resize import take_along
from toolchain.graph.ir import Tensor


def compress(ctx: OpContext) -> Tensor | np.ndarray:
    """The slices of the input (flattened without `axis`) where the constant condition
    is true; a condition shorter than the axis leaves the rest out."""
    x = ctx.input(0)
    condition = np.asarray(ctx.const(1, "condition")).reshape(-1).astype(bool)
    axis = ctx.attr("axis")
    if axis is None:
        x = ctx.reshape(x, (x.type.num_elements,))
        axis = 0
    shape = tuple(x.type.shape)
    axis = axis_of(axis, len(shape))
    if condition.size > shape[axis]:
        raise Unsupported(f"condition has {condition.size} entries for an axis of "
                          f"{shape[axis]}")
    keep = np.flatnonzero(condition)
    if keep.size == 0:
        return empty_value(shape[:axis] + (0,) + shape[axis + 1:], x.type.dtype)
    return take_along(ctx, x, axis, keep)


def unique(ctx: OpContext) -> list[np.ndarray]:
    """Unique of constant X: the distinct values (slices along `axis`, or elements of
    the flattened X), sorted or in order of first occurrence; the first index of each,
    each input's index into them, and their counts (int64)."""
    x = np.asarray(ctx.const(0, "X: Unique's output size depends on its values"))
    axis = ctx.attr("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    else:
        axis = axis_of(axis, x.ndim)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis)
    if not ctx.attr("sorted", 1):
        order = np.argsort(first, kind="stable")  # by first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, inverse, counts = first[order], rank[inverse.reshape(-1)], counts[order]
        y = np.take(x, first, axis=axis)
    as_i64 = [np.asarray(v, np.int64).reshape(-1) for v in (first, inverse, counts)]
    return [np.ascontiguousarray(y), *as_i64]


def non_zero(ctx: OpContext) -> np.ndarray:
    """NonZero of constant X: the indices of its non-zero elements, one row per
    dimension, in row-major order (int64 [rank, count])."""
    x = np.asarray(ctx.const(0, "X: NonZero's output size depends on its values"))
    return np.asarray(np.nonzero(x.reshape(x.shape or (1,))), np.int64).reshape(
        max(x.ndim, 1), -1)


# The most elements a Range computed at build time may have (its values become a
# constant of the firmware image).
RANGE_LIMIT = 1 << 20


def range_(ctx: OpContext) -> np.ndarray:
    """Range of constant start, limit and delta: max(ceil((limit - start) / delta), 0)
    elements, each the previous plus delta in the inputs' element type, as the spec's
    function body accumulates them."""
    what = "Range's length depends on its values"
    start, limit, delta = (np.asarray(ctx.const(i, f"{name}: {what}")).reshape(())
                           for i, name in enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise Unsupported("delta is 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    if count > RANGE_LIMIT:
        raise Unsupported(f"its {count} elements are more than the {RANGE_LIMIT} minirt "
                          "computes at build time")
    out = np.empty(count, start.dtype)
    value = start.copy()
    for i in range(count):
        out[i] = value
        value = (value + delta).astype(start.dtype)
    return out


def _corners(box: np.ndarray, center_point_box: int) -> tuple[float, float, float, float]:
    """(y_min, x_min, y_max, x_max) of a box given as corners (either pair order) or,
    with center_point_box, as [x_center, y_center, width, height]."""
    if center_point_box:
        xc, yc, w, h = (float(v) for v in box)
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    y1, x1, y2, x2 = (float(v) for v in box)
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _iou_above(a: tuple, b: tuple, threshold: float) -> bool:
    """Whether boxes a and b overlap by more than `threshold` (intersection over union);
    boxes that do not overlap, or have no area, never suppress each other."""
    h = min(a[2], b[2]) - max(a[0], b[0])
    w = min(a[3], b[3]) - max(a[1], b[1])
    if h <= 0 or w <= 0:
        return False
    inter = h * w
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > threshold


def non_max_suppression(ctx: OpContext) -> np.ndarray:
    """NonMaxSuppression of constant boxes [B, N, 4] and scores [B, C, N]: per batch and
    class, boxes by descending score (the lower index first on a tie), those above
    score_threshold, each kept unless it overlaps a kept one by more than iou_threshold,
    at most max_output_boxes_per_class; rows [batch, class, box] (int64)."""
    what = "NonMaxSuppression's output size depends on its values"
    boxes = np.asarray(ctx.const(0, f"boxes: {what}"), np.float64)
    scores = np.asarray(ctx.const(1, f"scores: {what}"), np.float64)

    def scalar(i: int, name: str, default: float) -> float:
        v = ctx.optional_const(i, f"{name}: {what}")
        return default if v is None or v.size == 0 else float(np.asarray(v).reshape(-1)[0])

    limit = max(int(scalar(2, "max_output_boxes_per_class", 0)), 0)
    iou = scalar(3, "iou_threshold", 0.0)
    floor = ctx.optional_const(4, f"score_threshold: {what}")
    center = int(ctx.attr("center_point_box", 0))
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
            scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise Unsupported(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} must "
                          "be [B, N, 4] and [B, C, N]")
    rows = []
    for b in range(boxes.shape[0]):
        corners = [_corners(box, center) for box in boxes[b]]
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.lexsort((np.arange(s.size), -s))
                     if floor is None or s[i] > float(np.asarray(floor).reshape(-1)[0])]
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit:
                    break
                if not any(_iou_above(corners[i], corners[k], iou) for k in kept):
                    kept.append(i)
            rows += [(b, c, i) for i in kept]
    return np.asarray(rows, np.int64).reshape(-1, 3)


__all__ = ["RANGE_LIMIT", "compress", "non_max_suppression", "non_zero", "range_",
           "unique"]
