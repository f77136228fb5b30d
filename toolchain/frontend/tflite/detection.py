"""TFLite_Detection_PostProcess (TFLite Micro's DETECTION_POSTPROCESS, a custom operator)
as a graph: SSD box decoding, then fast or regular non-max suppression
(detection_nms.py), then the four float32 outputs (boxes, classes, scores, count).

Inputs: box encodings [1, N, >= 4] (y, x, h, w), class scores [1, N, C or C + 1] (a
leading background class is skipped) and anchors [N, 4] (y, x, h, w). TFLite Micro's
kernel takes float32 only; int8 / uint8 inputs are dequantized first as TFLite's kernel
does ((float(q) - zero point) * scale in float32), which is what TFLite Micro computes
for a DEQUANTIZE followed by the float operator.

Decoding follows the kernel's arithmetic: the center and half sizes in double (the
scales read as float32, as its flexbuffer AsFloat gives them), rounded once to float32,
then corners as float32 differences (passes/affine.py may turn the division by a constant
scale into a multiplication: a 1-ulp change in double, which moves the float32 result
only for a value within 2**-29 of a rounding boundary). Fast NMS suppresses on each
anchor's best score and emits its best class (the lowest of equal scores) per kept
anchor (TFLite Micro misplaces the outputs of more classes per anchor: refused); regular
NMS suppresses each class on its own (detections_per_class at most) and keeps
the best max_detections over all classes, ties to the lower class, then the lower
position in that class's order (the kernel's partial sort over its merged buffer).

Where TFLite Micro fails the inference (a decoded box with ymin >= ymax or xmin >= xmax)
the graph, which cannot fail, reports no detections: every output zero. Output slots
the kernel leaves unwritten (past the count in fast NMS, past max_detections in
regular NMS) are zero here. NaN scores or coordinates are outside what is matched:
the kernel's sorts have no defined order for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.detection_nms import (
    BuildError,
    Ops,
    Suppressed,
    greedy_suppression,
    sort_descending,
)
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.signal_common import int_option, signal_options
from toolchain.graph.ir import Tensor

_REQUIRED = ("max_detections", "max_classes_per_detection", "nms_score_threshold",
             "nms_iou_threshold", "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")
# The kernel's defaults for the options a model may leave out.
_DEFAULTS = {"detections_per_class": 100, "use_regular_nms": False}
_LIMIT = 1 << 20  # counts above this would not fit any board's memory


@dataclass(frozen=True)
class Options:
    """The operator's flexbuffer options, checked."""

    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    use_regular_nms: bool
    score_threshold: float  # float32 values, as the kernel holds them
    iou_threshold: float
    num_classes: int
    scales: tuple[float, float, float, float]  # y, x, h, w


def _f32(options: dict[str, Any], key: str) -> float:
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"option {key} is {value!r}; a number is expected")
    return float(np.float32(value))


def read_options(ctx: OpContext) -> Options:
    """The options, refusing what TFLite Micro's kernel would reject when it runs."""
    o = signal_options(ctx, *_REQUIRED, defaults=_DEFAULTS)
    regular = o["use_regular_nms"]
    if not isinstance(regular, (bool, int)):
        raise Unsupported(f"option use_regular_nms is {regular!r}; a bool is expected")
    iou = _f32(o, "nms_iou_threshold")
    if not 0.0 < iou <= 1.0:
        raise Unsupported(f"option nms_iou_threshold is {iou}; it must be in (0, 1]")
    # Each mode checks only its own count (the kernel ignores the other mode's).
    least_per_class, least_classes = (1, -_LIMIT) if regular else (-_LIMIT, 1)
    return Options(
        max_detections=int_option(o, "max_detections", 0, _LIMIT),
        max_classes_per_detection=int_option(o, "max_classes_per_detection", least_classes,
                                             _LIMIT),
        detections_per_class=int_option(o, "detections_per_class", least_per_class, _LIMIT),
        use_regular_nms=bool(regular),
        score_threshold=_f32(o, "nms_score_threshold"),
        iou_threshold=iou,
        num_classes=int_option(o, "num_classes", 1, _LIMIT),
        scales=tuple(_f32(o, k) for k in ("y_scale", "x_scale", "h_scale", "w_scale")),
    )


def _as_float(ctx: OpContext, ops: Ops, i: int, what: str) -> Tensor:
    """Input i in float32: float32 as it is, int8 / uint8 dequantized in float32."""
    x = ctx.input(i)
    name = x.type.dtype.name
    if name == "f32":
        return x
    q = x.type.quant
    if name not in ("i8", "ui8") or q is None or len(q.scales) != 1:
        raise Unsupported(f"input {i} ({what}) is {x.type}; float32, or int8 / uint8 "
                          "quantized per tensor, is expected")
    wide = ops.node("convert", [x], dtype="i32")
    shifted = ops.node("subtract", [wide, ops.splat(int(q.zero_points[0]), wide)])
    f = ops.node("convert", [shifted], dtype="f32")
    return ops.node("multiply", [f, ops.splat(float(np.float32(q.scales[0])), f)])


def _decode(ops: Ops, encodings: Tensor, anchors: Tensor, scales: tuple[float, ...]
            ) -> Tensor:
    """Corners [N, 4] (ymin, xmin, ymax, xmax) of CenterSize encodings [N, >= 4] on
    anchors [N, 4], the kernel's double arithmetic rounded once to float32."""
    def f64(t: Tensor, k: int) -> Tensor:
        return ops.node("convert", [ops.column(t, k)], dtype="f64")

    def mul(a: Tensor, b: Tensor) -> Tensor:
        return ops.node("multiply", [a, b])

    def scale(k: int, like: Tensor) -> Tensor:
        return ops.splat(scales[k], like)

    y, x, h, w = (f64(encodings, k) for k in range(4))
    ay, ax, ah, aw = (f64(anchors, k) for k in range(4))

    def center(v: Tensor, k: int, size: Tensor, origin: Tensor) -> Tensor:
        ratio = ops.node("divide", [v, scale(k, v)])
        return ops.node("convert", [ops.node("add", [mul(ratio, size), origin])], dtype="f32")

    def half(v: Tensor, k: int, size: Tensor) -> Tensor:
        grown = ops.node("exponential", [ops.node("divide", [v, scale(k, v)])])
        return ops.node("convert", [mul(mul(ops.splat(0.5, grown), grown), size)],
                        dtype="f32")

    yc, xc = center(y, 0, ah, ay), center(x, 1, aw, ax)
    hh, hw = half(h, 2, ah), half(w, 3, aw)
    corners = [ops.node("subtract", [yc, hh]), ops.node("subtract", [xc, hw]),
               ops.node("add", [yc, hh]), ops.node("add", [xc, hw])]
    n = yc.type.shape[0]
    columns = [ops.node("reshape", [c], shape=(n, 1)) for c in corners]
    return ops.node("concatenate", columns, dimension=1)


def _boxes_valid(ops: Ops, boxes: Tensor) -> Tensor:
    """The kernel's ValidateBoxes: every box has ymin < ymax and xmin < xmax (i1 scalar)."""
    bad = ops.node("or", [ops.cmp(ops.column(boxes, 0), "GE", ops.column(boxes, 2)),
                          ops.cmp(ops.column(boxes, 1), "GE", ops.column(boxes, 3))])
    return ops.node("not", [ops.reduce(bad, "or", (0,), False)])


@dataclass(frozen=True)
class Detections:
    """Per output slot [M]: whether written, the anchor, the class and the score; and
    the count (i32 scalar)."""

    written: Tensor
    anchor: Tensor
    cls: Tensor
    score: Tensor
    count: Tensor


def _fast(ctx: OpContext, ops: Ops, scores: Tensor, boxes: Tensor, o: Options, slots: int
          ) -> Detections:
    """NonMaxSuppressionMultiClassFastHelper with one class per detection: suppression
    on each anchor's best score, a slot per selected anchor in selection order."""
    n, c = scores.type.shape
    # The first class of the kernel's descending partial sort: the greatest score, the
    # lowest class among equal ones.
    top = ops.reduce(scores, "maximum", (1,), -np.inf)
    is_top = ops.cmp(scores, "EQ", ops.bcast(top, (n, c), (0,)))
    classes = ops.where(is_top, ops.iota((n, c), 1), ops.splat(c, ops.iota((n, c), 1)))
    top_class = ops.reduce(classes, "minimum", (1,), c)
    best = ops.node("reshape", [top], shape=(1, n))
    s: Suppressed = greedy_suppression(ops, ctx.graph, best, boxes, o.score_threshold,
                                       o.iou_threshold, o.max_detections)
    picked = ops.node("reshape", [s.boxes], shape=s.boxes.type.shape[1:])
    count = ops.node("reshape", [s.count], shape=())
    slot = np.arange(slots)
    anchor = ops.take(picked, ops.const(np.minimum(slot, picked.type.shape[0] - 1), "i32"))
    written = ops.cmp(ops.const(slot, "i32"), "LT", ops.bcast(count, (slots,), ()))
    return Detections(written, anchor, ops.take(top_class, anchor), ops.take(top, anchor),
                      count)


def _regular(ctx: OpContext, ops: Ops, scores: Tensor, boxes: Tensor, o: Options, slots: int
             ) -> Detections:
    """NonMaxSuppressionMultiClassRegularHelper: suppression per class, then the best
    max_detections of every class's selections, ties to the lower class and position."""
    n, c = scores.type.shape
    per_class = ops.node("transpose", [scores], permutation=(1, 0))  # [C, N]
    s = greedy_suppression(ops, ctx.graph, per_class, boxes, o.score_threshold,
                           o.iou_threshold, o.detections_per_class)
    per = s.boxes.type.shape[1]
    flat = (c * per,)
    # Every class's selections, flattened class by class in selection order, sorted by
    # (written, score) descending: stable, so ties go to the lower class, then the
    # earlier selection, as the kernel's merges leave them.
    written = ops.cmp(ops.iota((c, per), 1), "LT", ops.bcast(s.count, (c, per), (0,)))
    written = ops.node("reshape", [ops.node("convert", [written], dtype="i32")], shape=flat)
    picked_scores = ops.node("reshape", [s.scores], shape=flat)
    _, _, position = sort_descending(ctx.graph, [written, picked_scores, ops.iota(flat, 0)],
                                     2, 0)
    total = ops.reduce(s.count, "add", (0,), 0)
    count = ops.node("minimum", [total, ops.const(o.max_detections, "i32")])
    slot = np.arange(slots)
    q = ops.take(position, ops.const(np.minimum(slot, c * per - 1), "i32"))
    anchor = ops.take(ops.node("reshape", [s.boxes], shape=flat), q)
    cls = ops.node("divide", [q, ops.splat(per, q)])
    score = ops.take(picked_scores, q)
    in_count = ops.cmp(ops.const(slot, "i32"), "LT", ops.bcast(count, (slots,), ()))
    return Detections(in_count, anchor, cls, score, count)


def _outputs(ctx: OpContext, ops: Ops, d: Detections, boxes: Tensor, valid: Tensor,
             slots: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The four float32 outputs, zero where nothing was written or the boxes failed."""
    written = ops.node("and", [d.written, ops.bcast(valid, (slots,), ())])
    zero = ops.const(np.zeros(slots, np.float32), "f32")
    box = ops.take(boxes, d.anchor)  # [M, 4]
    box = ops.where(ops.bcast(written, (slots, 4), (0,)), box,
                    ops.const(np.zeros((slots, 4), np.float32), "f32"))
    cls = ops.where(written, ops.node("convert", [d.cls], dtype="f32"), zero)
    score = ops.where(written, d.score, zero)
    count = ops.where(valid, d.count, ops.const(0, "i32"))
    num = ops.node("convert", [count], dtype="f32")
    return (ops.node("reshape", [box], shape=(1, slots, 4)),
            ops.node("reshape", [cls], shape=(1, slots)),
            ops.node("reshape", [score], shape=(1, slots)),
            ops.node("reshape", [num], shape=(1,)))


def detection_postprocess(ctx: OpContext) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """TFLite_Detection_PostProcess: (boxes [1, M, 4], classes [1, M], scores [1, M],
    num_detections [1]), all float32, M the model's declared detection slots."""
    o = read_options(ctx)
    ops = Ops(ctx.node, lambda value, dt: ctx.const(value, dt))
    encodings = _as_float(ctx, ops, 0, "box encodings")
    scores = _as_float(ctx, ops, 1, "class scores")
    anchors = _as_float(ctx, ops, 2, "anchors")
    es, ss, ans = encodings.type.shape, scores.type.shape, anchors.type.shape
    if len(es) != 3 or es[0] != 1 or es[2] < 4:
        raise Unsupported(f"box encodings of shape {list(es)}; [1, boxes, >= 4] is expected")
    n = es[1]
    if len(ss) != 3 or ss[:2] != (1, n) or ss[2] - o.num_classes not in (0, 1):
        raise Unsupported(f"class scores of shape {list(ss)}; [1, {n}, {o.num_classes}] or "
                          f"[1, {n}, {o.num_classes + 1}] (num_classes, or with a "
                          "background class) is expected")
    if ans != (n, 4):
        raise Unsupported(f"anchors of shape {list(ans)}; [{n}, 4] is expected")
    out_types = [ctx.output_type(k) for k in range(4)]
    slots = out_types[0].shape[1] if len(out_types[0].shape) == 3 else -1
    per = min(o.max_classes_per_detection, o.num_classes)
    if not o.use_regular_nms and per > 1:
        raise Unsupported(f"fast NMS with {per} classes per detection "
                          "(max_classes_per_detection and num_classes both above 1): "
                          "TFLite Micro's kernel places those detections at offsets that "
                          "grow with the square of the count, past its output tensors; "
                          "only 1 class per detection (or use_regular_nms) is supported")
    needed = o.max_detections
    if out_types[0].shape != (1, slots, 4) or slots < needed or n == 0:
        raise Unsupported(f"detection boxes of shape {list(out_types[0].shape)} for {n} "
                          f"boxes; [1, M, 4] with M >= {needed} is expected")
    for k, shape in ((1, (1, slots)), (2, (1, slots)), (3, (1,))):
        if out_types[k].shape != shape or out_types[k].dtype.name != "f32":
            raise Unsupported(f"output {k} is {out_types[k]}; float32 {list(shape)} is "
                              "expected")
    try:
        boxes = _decode(ops, ops.node("reshape", [encodings], shape=es[1:]), anchors,
                        o.scales)
        valid = _boxes_valid(ops, boxes)
        offset = ss[2] - o.num_classes  # 1: a background class first, skipped
        classes = ops.node("slice", [ops.node("reshape", [scores], shape=ss[1:])],
                           start=(0, offset), limit=(n, ss[2]), strides=(1, 1))
        pick = _regular if o.use_regular_nms else _fast
        return _outputs(ctx, ops, pick(ctx, ops, classes, boxes, o, slots), boxes, valid,
                        slots)
    except BuildError as e:
        raise Unsupported(str(e)) from None


__all__ = ["Options", "detection_postprocess", "read_options"]
