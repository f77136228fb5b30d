"""The graph pieces of TFLite_Detection_PostProcess (detection.py): score orderings as
stable `sort`s and TFLite Micro's greedy non-max suppression as a `while`.

Every ordering TFLite Micro's kernel uses is "score descending, the lower index first
on a tie" (its merge sort is stable, its partial sort breaks ties by index), so each is
one stable sort with a descending comparator over one or two keys. The suppression is
the kernel's loop, run for K independent score rows at once (one row for fast NMS, one
per class for regular NMS): candidate i of every row is taken when still active and the
row has room, and then every later candidate of that row overlapping it by more than
the IoU threshold is deactivated. IoU is computed in float32 in the kernel's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_node
from toolchain.types import TensorType, dtype

NodeFn = Callable[..., Tensor]


class BuildError(Exception):
    """A node the graph's verifier refused (the caller reports it as unsupported)."""


@dataclass
class Ops:
    """Builds typed nodes into one graph: the operator's (`OpContext.node`) or a region's
    (GraphBuilder), so the same helpers serve both."""

    node: NodeFn
    const_fn: Callable[[Any, str], Tensor]

    @staticmethod
    def of_region(graph: Graph) -> Ops:
        gb = GraphBuilder(graph)
        return Ops(lambda name, inputs, **attrs: gb.op(name, list(inputs), **attrs),
                   lambda value, dt: gb.const(value, dtype(dt)))

    def const(self, value: Any, dt: str) -> Tensor:
        return self.const_fn(value, dt)

    def splat(self, value: Any, like: Tensor) -> Tensor:
        """`value` in `like`'s element type and shape."""
        scalar = self.const(value, like.type.dtype.name)
        if not like.type.shape:
            return scalar
        return self.node("broadcast_in_dim", [scalar], dims=(), shape=like.type.shape)

    def bcast(self, t: Tensor, shape: tuple[int, ...], dims: tuple[int, ...]) -> Tensor:
        if t.type.shape == shape:
            return t
        return self.node("broadcast_in_dim", [t], dims=dims, shape=shape)

    def cmp(self, a: Tensor, direction: str, b: Tensor) -> Tensor:
        return self.node("compare", [a, b], direction=direction)

    def where(self, c: Tensor, a: Tensor, b: Tensor) -> Tensor:
        return self.node("select", [c, a, b])

    def c_max(self, a: Tensor, b: Tensor) -> Tensor:
        """std::max(a, b): (a < b) ? b : a (b is returned only when a is below it)."""
        return self.where(self.cmp(a, "LT", b), b, a)

    def c_min(self, a: Tensor, b: Tensor) -> Tensor:
        """std::min(a, b): (b < a) ? b : a."""
        return self.where(self.cmp(b, "LT", a), b, a)

    def iota(self, shape: tuple[int, ...], dim: int) -> Tensor:
        return self.node("iota", [], dimension=dim, shape=shape, dtype="i32")

    def column(self, t: Tensor, k: int) -> Tensor:
        """Column k of the last dim of `t`, that dim dropped."""
        shape = t.type.shape
        start = (0,) * len(shape[:-1]) + (k,)
        part = self.node("slice", [t], start=start, limit=shape[:-1] + (k + 1,),
                         strides=(1,) * len(shape))
        return self.node("reshape", [part], shape=shape[:-1])

    def take(self, values: Tensor, index: Tensor) -> Tensor:
        """values[index] along values' first dim (its other dims kept), any index shape."""
        rest = values.type.shape[1:]
        r = index.type.rank
        return self.node("gather", [values, index], offset_dims=tuple(range(r, r + len(rest))),
                         collapsed_slice_dims=(0,), operand_batching_dims=(),
                         start_indices_batching_dims=(), start_index_map=(0,),
                         index_vector_dim=r, slice_sizes=(1, *rest))

    def reduce(self, t: Tensor, kind: str, dims: tuple[int, ...], init: Any) -> Tensor:
        return self.node("reduce", [t, self.const(init, t.type.dtype.name)], kind=kind,
                         dims=dims)


def _descending_comparator(types: list[TensorType], keys: int) -> Graph:
    """sort's comparator over operands of `types`: lexicographically greater on the first
    `keys` operands (IEEE compares: -0 equals +0, as in C). With a stable sort, ties keep
    their index order."""
    g = Graph("detection.descending")
    pairs = [(g.add_input(TensorType((), t.dtype)), g.add_input(TensorType((), t.dtype)))
             for t in types]
    ops = Ops.of_region(g)
    result: Tensor | None = None
    for a, b in reversed(pairs[:keys]):
        greater = ops.cmp(a, "GT", b)
        result = greater if result is None else ops.node(
            "or", [greater, ops.node("and", [ops.cmp(a, "EQ", b), result])])
    assert result is not None
    g.outputs = [result]
    return g


def sort_descending(graph: Graph, operands: list[Tensor], keys: int, dim: int
                    ) -> list[Tensor]:
    """The operands stably sorted along `dim`, greatest first on the first `keys`."""
    types = [t.type for t in operands]
    node = graph.add("sort", list(operands), types, {"dimension": dim, "is_stable": True},
                     None, [_descending_comparator(types, keys)])
    err = verify_node(node)
    if err is not None:
        raise BuildError(err.message)
    return list(node.outputs)


@dataclass(frozen=True)
class Suppressed:
    """What the greedy suppression selects in each of K score rows, in selection order
    (score descending, ties by box index): slots past a row's count hold 0."""

    boxes: Tensor   # [K, L] i32: the selected boxes, L = min(limit, N) (at least 1)
    scores: Tensor  # [K, L] f32: their scores
    count: Tensor   # [K] i32: how many


def _iou(ops: Ops, box_i: Tensor, area_i: Tensor, boxes: Tensor, area: Tensor) -> Tensor:
    """TFLite Micro's ComputeIntersectionOverUnion in float32, [K, N]: box_i [K, N, 4]
    (broadcast) against boxes [K, N, 4]; 0 when either area is not positive."""
    zero = ops.splat(0.0, area)
    lo_y = ops.c_max(ops.column(box_i, 0), ops.column(boxes, 0))
    lo_x = ops.c_max(ops.column(box_i, 1), ops.column(boxes, 1))
    hi_y = ops.c_min(ops.column(box_i, 2), ops.column(boxes, 2))
    hi_x = ops.c_min(ops.column(box_i, 3), ops.column(boxes, 3))
    h = ops.c_max(ops.node("subtract", [hi_y, lo_y]), zero)
    w = ops.c_max(ops.node("subtract", [hi_x, lo_x]), zero)
    inter = ops.node("multiply", [h, w])
    union = ops.node("subtract", [ops.node("add", [area_i, area]), inter])
    iou = ops.node("divide", [inter, union])
    empty = ops.node("or", [ops.cmp(area_i, "LE", zero), ops.cmp(area, "LE", zero)])
    return ops.where(empty, zero, iou)


def box_areas(ops: Ops, boxes: Tensor) -> Tensor:
    """(ymax - ymin) * (xmax - xmin) of boxes [..., 4] in (ymin, xmin, ymax, xmax)."""
    h = ops.node("subtract", [ops.column(boxes, 2), ops.column(boxes, 0)])
    w = ops.node("subtract", [ops.column(boxes, 3), ops.column(boxes, 1)])
    return ops.node("multiply", [h, w])


def _body(carried: list[TensorType], captured: list[TensorType], iou_threshold: float,
          limit: int) -> Graph:
    """One step of the suppression: candidate i of every row, taken when still active
    and the row has room; a taken one is written at its row's count and deactivates the
    later candidates it overlaps."""
    g = Graph("detection.nms.body")
    i, active, count, picked_box, picked_score = (g.add_input(t) for t in carried)
    decoded, order, scores, _, _ = (g.add_input(t) for t in captured)
    ops = Ops.of_region(g)
    # Each row's boxes in its own order, gathered here rather than carried: the gather
    # fuses into the IoU's loads, so no [K, N, 4] copy is kept.
    boxes = ops.take(decoded, order)
    area = box_areas(ops, boxes)
    k, n = active.type.shape
    slots = picked_box.type.shape[1]
    zero = ops.const(0, "i32")
    kn = (k, n)

    def at_i(t: Tensor) -> Tensor:  # position i of every row, that dim dropped
        starts = [zero, i] + [zero] * (t.type.rank - 2)
        part = ops.node("dynamic_slice", [t, *starts], slice_sizes=(k, 1, *t.type.shape[2:]))
        return ops.node("reshape", [part], shape=(k, *t.type.shape[2:]))

    room = ops.cmp(count, "LT", ops.splat(limit, count))
    take = ops.node("and", [at_i(active), room])
    later = ops.cmp(ops.iota(kn, 1), "GT", ops.bcast(i, kn, ()))
    box_i = ops.bcast(at_i(boxes), (k, n, 4), (0, 2))
    area_i = ops.bcast(at_i(area), kn, (0,))
    overlap = ops.cmp(_iou(ops, box_i, area_i, boxes, area), "GT",
                      ops.splat(iou_threshold, area))
    dropped = ops.node("and", [ops.bcast(take, kn, (0,)), ops.node("and", [overlap, later])])
    ks = (k, slots)
    write = ops.node("and", [ops.bcast(take, ks, (0,)),
                             ops.cmp(ops.iota(ks, 1), "EQ", ops.bcast(count, ks, (0,)))])
    g.outputs = [
        ops.node("add", [i, ops.const(1, "i32")]),
        ops.node("and", [active, ops.node("not", [dropped])]),
        ops.node("add", [count, ops.node("convert", [take], dtype="i32")]),
        ops.where(write, ops.bcast(at_i(order), ks, (0,)), picked_box),
        ops.where(write, ops.bcast(at_i(scores), ks, (0,)), picked_score),
    ]
    return g


def _cond(carried: list[TensorType], captured: list[TensorType]) -> Graph:
    """Goes on while some row still has room and kept candidates at or after i."""
    g = Graph("detection.nms.cond")
    i, _, count, _, _ = (g.add_input(t) for t in carried)
    *_, kept_end, out_size = (g.add_input(t) for t in captured)
    ops = Ops.of_region(g)
    more = ops.cmp(i, "LT", kept_end)
    room = ops.reduce(ops.cmp(count, "LT", out_size), "or", (0,), False)
    g.outputs = [ops.node("and", [more, room])]
    return g


def greedy_suppression(ops: Ops, graph: Graph, scores: Tensor, boxes: Tensor,
                       score_threshold: float, iou_threshold: float, limit: int
                       ) -> Suppressed:
    """TFLite Micro's NonMaxSuppressionSingleClassHelper for every row of scores [K, N]
    over the decoded boxes [N, 4] at once: the scores at or above `score_threshold`
    sorted, then greedily selected (at most `limit` per row), each selection dropping
    the later candidates whose IoU with it exceeds `iou_threshold`."""
    k, n = scores.type.shape
    kept = ops.node("convert", [ops.cmp(scores, "GE", ops.splat(score_threshold, scores))],
                    dtype="i32")
    kept_s, scores_s, order = sort_descending(graph, [kept, scores, ops.iota((k, n), 1)], 2, 1)
    kept_count = ops.reduce(kept_s, "add", (1,), 0)
    out_size = ops.node("minimum", [kept_count, ops.splat(limit, kept_count)])
    kept_end = ops.reduce(kept_count, "maximum", (0,), 0)
    active = ops.cmp(kept_s, "EQ", ops.splat(1, kept_s))
    slots = max(1, min(limit, n))
    start = [ops.const(0, "i32"), active, ops.splat(0, kept_count),
             ops.const(np.zeros((k, slots), np.int32), "i32"),
             ops.const(np.zeros((k, slots), np.float32), "f32")]
    carried = [t.type for t in start]
    # Both regions take every capture: the boxes, order and scores (the body's), the
    # end of the kept candidates and each row's output size (the cond's).
    captured = [boxes, order, scores_s, kept_end, out_size]
    cap_types = [t.type for t in captured]
    cond = _cond(carried, cap_types)
    body = _body(carried, cap_types, iou_threshold, limit)
    node = graph.add("while", [*start, *captured], carried, {}, None, [cond, body])
    err = verify_node(node)
    if err is not None:
        raise BuildError(err.message)
    _, _, count, picked_box, picked_score = node.outputs
    return Suppressed(picked_box, picked_score, count)


__all__ = ["BuildError", "Ops", "Suppressed", "box_areas", "greedy_suppression",
           "sort_descending"]
