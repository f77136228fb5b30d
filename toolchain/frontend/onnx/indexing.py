"""Gathers located by run-time indices: GatherND (with batch_dims) and ReverseSequence,
each one graph gather (StableHLO's, which has batching dimensions for GatherND's
batch_dims); negative GatherND indices count from the end of their axis.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def _as_i32(ctx: OpContext, t: Tensor, what: str) -> Tensor:
    if not t.type.dtype.is_integer:
        raise Unsupported(f"{what} of element type {t.type.dtype}")
    return t if t.type.dtype.name == "i32" else ctx.node("convert", [t], dtype="i32")


def gather_nd(ctx: OpContext) -> Tensor:
    """GatherND: the slices of data at the index tuples of indices' last dimension,
    the first batch_dims dimensions of both taken together."""
    data = ctx.input(0)
    ds = tuple(data.type.shape)
    idx = _as_i32(ctx, ctx.input(1), "indices")
    ish = tuple(idx.type.shape)
    b = int(ctx.attr("batch_dims", 0))
    if not ish or b < 0 or b >= min(len(ds), len(ish)) or ish[:b] != ds[:b]:
        raise Unsupported(f"indices {list(ish)} and batch_dims {b} do not fit data "
                          f"{list(ds)}")
    k = ish[-1]
    if k < 1 or b + k > len(ds):
        raise Unsupported(f"index tuples of {k} for data of rank {len(ds)} after {b} batch "
                          "dimensions")
    # Negative indices count from the end of the axis each indexes.
    sizes = ctx.broadcast(ctx.constant(np.asarray(ds[b:b + k]), "i32"), ish,
                          (len(ish) - 1,))
    negative = ctx.node("compare", [idx, ctx.filled(0, idx)], direction="LT")
    idx = ctx.node("select", [negative, ctx.node("add", [idx, sizes]), idx])
    indexed = tuple(range(b, b + k))
    out_rank = len(ish) - 1 + len(ds) - b - k
    return ctx.node("gather", [data, idx],
                    offset_dims=tuple(range(len(ish) - 1, out_rank)),
                    collapsed_slice_dims=indexed, operand_batching_dims=tuple(range(b)),
                    start_indices_batching_dims=tuple(range(b)), start_index_map=indexed,
                    index_vector_dim=len(ish) - 1,
                    slice_sizes=tuple(1 if d < b + k else s for d, s in enumerate(ds)))


def reverse_sequence(ctx: OpContext) -> Tensor:
    """ReverseSequence: along time_axis, the first sequence_lens[i] elements of batch
    i reversed, the rest as they are."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if len(shape) < 2:
        raise Unsupported(f"input of rank {len(shape)} (at least 2 expected)")
    t_axis = axis_of(ctx.attr("time_axis", 0), len(shape), "time_axis")
    b_axis = axis_of(ctx.attr("batch_axis", 1), len(shape), "batch_axis")
    lens = _as_i32(ctx, ctx.input(1), "sequence_lens")
    if t_axis == b_axis or tuple(lens.type.shape) != (shape[b_axis],):
        raise Unsupported(f"time_axis {t_axis}, batch_axis {b_axis} and sequence_lens "
                          f"{list(lens.type.shape)} do not fit input {list(shape)}")
    t = ctx.node("iota", [], dimension=t_axis, shape=shape, dtype="i32")
    n = ctx.broadcast(lens, shape, (b_axis,))
    inside = ctx.node("compare", [t, n], direction="LT")
    back = ctx.node("subtract", [ctx.node("subtract", [n, ctx.filled(1, n)]), t])
    source = ctx.node("select", [inside, back, t])
    columns = [source if d == t_axis else
               ctx.node("iota", [], dimension=d, shape=shape, dtype="i32")
               for d in range(len(shape))]
    full = ctx.node("concatenate", [ctx.reshape(c, (*shape, 1)) for c in columns],
                    dimension=len(shape))
    every = tuple(range(len(shape)))
    return ctx.node("gather", [x, full], offset_dims=(), collapsed_slice_dims=every,
                    operand_batching_dims=(), start_indices_batching_dims=(),
                    start_index_map=every, index_vector_dim=len(shape),
                    slice_sizes=(1,) * len(shape))


__all__ = ["gather_nd", "reverse_sequence"]
