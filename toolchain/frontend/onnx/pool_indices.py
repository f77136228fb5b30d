"""MaxPool's second output, Indices: where in X (flattened, batch and channel
included; storage_order 1 numbering the spatial positions column-major) each window's
maximum lies, the first such position when several hold it.

Every kernel tap is one strided slice of the padded input, so its values are a tensor
and its positions a constant; a running maximum over the taps carries the position of
the best so far (a select where a tap is strictly larger).
"""

from __future__ import annotations

import itertools

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.layers import lowest, max_pool, pool_window
from toolchain.graph.ir import Tensor


def max_pool_row(ctx: OpContext) -> Tensor | list[Tensor]:
    """MaxPool, with its Indices output when the model uses it."""
    if len(ctx.info.outputs) > 1 and ctx.info.outputs[1]:
        return max_pool_with_indices(ctx)
    return max_pool(ctx)


def max_pool_with_indices(ctx: OpContext) -> list[Tensor]:
    """MaxPool's values and Indices (int64)."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    kernel, strides, dilations, pads, outs = pool_window(ctx, x)
    r = len(kernel)
    order = int(ctx.attr("storage_order", 0))
    if order not in (0, 1):
        raise Unsupported(f"storage_order {order} must be 0 or 1")
    high = [max((o - 1) * s + (k - 1) * d + 1 - (i + lo + hi), 0) + hi
            for i, (lo, hi), s, k, d, o in zip(shape[2:], pads, strides, kernel, dilations,
                                                outs)]
    padded = ctx.node("pad", [x, ctx.scalar(lowest(x), x)], low=(0, 0, *(p[0] for p in pads)),
                      high=(0, 0, *high), interior=(0,) * len(shape))
    spatial = shape[2:]
    # Flat position of spatial index p: row-major, or column-major with storage_order 1.
    if order == 0:
        weights = [int(np.prod(spatial[d + 1:])) for d in range(r)]
    else:
        weights = [int(np.prod(spatial[:d])) for d in range(r)]
    base = (np.arange(shape[0])[:, None] * shape[1] + np.arange(shape[1])[None, :]) * int(
        np.prod(spatial))
    best, where = None, None
    for tap in itertools.product(*(range(k) for k in kernel)):
        start = [t * d for t, d in zip(tap, dilations)]
        values = ctx.node("slice", [padded], start=(0, 0, *start),
                          limit=(*shape[:2], *(a + (o - 1) * s + 1 for a, o, s in
                                               zip(start, outs, strides))),
                          strides=(1, 1, *strides))
        pos = base.reshape(*base.shape, *([1] * r)).astype(np.int64)
        for d in range(r):
            at = np.arange(outs[d]) * strides[d] - pads[d][0] + start[d]
            pos = pos + (at * weights[d]).reshape([1, 1] + [-1 if e == d else 1
                                                            for e in range(r)])
        here = ctx.constant(np.broadcast_to(pos, (*shape[:2], *outs)), "i64")
        if best is None:
            best, where = values, here
            continue
        better = ctx.node("compare", [values, best], direction="GT")
        best = ctx.node("select", [better, values, best])
        where = ctx.node("select", [better, here, where])
    assert best is not None and where is not None
    return [best, where]


__all__ = ["max_pool_row", "max_pool_with_indices"]
