"""Gathers and scatters located by run-time indices: GatherND (with batch_dims) and
ReverseSequence, each one graph gather (StableHLO's, which has batching dimensions for
GatherND's batch_dims), and MaxUnpool, one scatter; negative GatherND indices count from
the end of their axis.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.movement import scatter_into
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
    return _gather_all(ctx, x, t_axis, ctx.node("select", [inside, back, t]))


def max_unpool(ctx: OpContext) -> Tensor:
    """MaxUnpool: an output of zeros with each X value written at its index from I (a
    position in the whole flattened output, as MaxPool's Indices give it); its shape the
    constant output_shape, else what the kernel, strides and pads undo."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if len(shape) < 3 or tuple(ctx.input(1).type.shape) != shape:
        raise Unsupported(f"X {list(shape)} and I {list(ctx.input(1).type.shape)} must be "
                          "one [N, C, ...] shape")
    r = len(shape) - 2
    kernel = ctx.ints("kernel_shape")
    if kernel is None or len(kernel) != r or min(kernel) < 1:
        raise Unsupported(f"kernel_shape {kernel} must be {r} sizes >= 1")
    strides = ctx.ints_per_dim("strides", r, 1, 1)
    pads = ctx.ints_per_dim("pads", 2 * r, 0, 0)
    undone = shape[:2] + tuple((shape[2 + d] - 1) * strides[d] + kernel[d] - pads[d] -
                               pads[d + r] for d in range(r))
    given = ctx.optional_const(2, "output_shape")
    out = undone
    if given is not None:  # the indices still address `undone`, zero-padded at the end
        out = tuple(int(v) for v in np.asarray(given).reshape(-1))
        if len(out) != len(shape) or any(o < u for o, u in zip(out, undone)):
            raise Unsupported(f"output_shape {list(out)} is smaller than the unpooled "
                              f"{list(undone)}")
    total = int(np.prod(undone))
    zeros = ctx.node("broadcast_in_dim", [ctx.scalar(0, x)], dims=(), shape=(total,))
    idx = _as_i32(ctx, ctx.input(1), "I")
    count = x.type.num_elements
    flat = scatter_into(ctx, zeros, ctx.reshape(idx, (count, 1)), ctx.reshape(x, (count,)))
    y = ctx.reshape(flat, undone)
    if out == undone:
        return y
    return ctx.node("pad", [y, ctx.scalar(0, x)], low=(0,) * len(out),
                    high=tuple(o - u for o, u in zip(out, undone)), interior=(0,) * len(out))


def _gather_all(ctx: OpContext, x: Tensor, axis: int, along: Tensor) -> Tensor:
    """out[..., i, ...] = x[..., along[..., i, ...], ...]: `along` (i32, the output's
    shape) the position on `axis`, every other axis the output's own."""
    shape = tuple(along.type.shape)
    columns = [along if d == axis else
               ctx.node("iota", [], dimension=d, shape=shape, dtype="i32")
               for d in range(len(shape))]
    full = ctx.node("concatenate", [ctx.reshape(c, (*shape, 1)) for c in columns],
                    dimension=len(shape))
    every = tuple(range(len(shape)))
    return ctx.node("gather", [x, full], offset_dims=(), collapsed_slice_dims=every,
                    operand_batching_dims=(), start_indices_batching_dims=(),
                    start_index_map=every, index_vector_dim=len(shape),
                    slice_sizes=(1,) * len(shape))


def tensor_scatter(ctx: OpContext) -> Tensor:
    """TensorScatter (a KV cache update): the cache with the update's rows written from
    write_indices[b] on along `axis` (wrapping around with mode circular). Computed as
    a gather: cache row j of batch b takes update row j - write_indices[b] where that is
    one, and keeps its own elsewhere."""
    past, update = ctx.input(0), ctx.input(1)
    shape, ushape = tuple(past.type.shape), tuple(update.type.shape)
    axis = axis_of(ctx.attr("axis", -2), len(shape))
    mode = ctx.attr("mode", "linear")
    if axis == 0 or mode not in ("linear", "circular") or len(ushape) != len(shape) or \
            any(u != p for d, (u, p) in enumerate(zip(ushape, shape)) if d != axis) or \
            ushape[axis] > shape[axis] or update.type.dtype != past.type.dtype:
        raise Unsupported(f"past_cache {list(shape)}, update {list(ushape)}, axis {axis}, "
                          f"mode {mode!r} do not fit")
    m, n = shape[axis], ushape[axis]
    j = ctx.node("iota", [], dimension=axis, shape=shape, dtype="i32")
    if ctx.has_input(2):
        w = _as_i32(ctx, ctx.input(2), "write_indices")
        if tuple(w.type.shape) != (shape[0],):
            raise Unsupported(f"write_indices {list(w.type.shape)} is not [{shape[0]}]")
        if mode == "circular":  # w mod M, for w >= 0
            w = ctx.node("subtract", [w, ctx.node("multiply", [
                ctx.node("divide", [w, ctx.filled(m, w)]), ctx.filled(m, w)])])
        s = ctx.node("subtract", [j, ctx.broadcast(w, shape, (0,))])
    else:
        s = j
    if mode == "circular":
        negative = ctx.node("compare", [s, ctx.filled(0, s)], direction="LT")
        s = ctx.node("select", [negative, ctx.node("add", [s, ctx.filled(m, s)]), s])
    written = ctx.node("and", [
        ctx.node("compare", [s, ctx.filled(0, s)], direction="GE"),
        ctx.node("compare", [s, ctx.filled(n, s)], direction="LT")])
    at = ctx.node("clamp", [ctx.filled(0, s), s, ctx.filled(n - 1, s)])
    return ctx.node("select", [written, _gather_all(ctx, update, axis, at), past])


__all__ = ["gather_nd", "max_unpool", "reverse_sequence", "tensor_scatter"]
