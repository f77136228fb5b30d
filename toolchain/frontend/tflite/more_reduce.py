"""The rest of TFLite Micro's op resolver that is data movement or a plain reduction:
REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, SLICE, REVERSE_V2, ROUND, SHAPE, BROADCAST_ARGS,
EMBEDDING_LOOKUP, DYNAMIC_UPDATE_SLICE and float32 L2_POOL_2D.

Quantized values move or compare as stored, as TFLite Micro's kernels do (REDUCE_MAX /
REDUCE_MIN require the input's scale on the output, as TFLite Micro does).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite.activations import apply_activation
from toolchain.frontend.tflite.context import OpContext, int_range
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.layers import _pool_window, _valid_counts
from toolchain.frontend.tflite.more_shapes import _data
from toolchain.frontend.tflite.shape_ops import _axis
from toolchain.graph.ir import Tensor

Converter = Callable[[OpContext], Tensor]
def _reduce(kind: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        x = _data(ctx, 0, ("i1",) if kind == "and" else ("f32", "i8", "i16", "i32"))
        out = ctx.output_type()
        if (x.type.quant is None) != (out.quant is None) or (
                x.type.quant is not None and x.type.quant.scales != out.quant.scales):
            raise Unsupported("its output must keep the input's scale (TFLite Micro requires "
                              "it)")
        rank = x.type.rank
        axes = sorted({_axis(int(a), rank, "axis") for a in ctx.value(1, "axes").reshape(-1)})
        if kind == "and":
            init = 1
        elif x.type.dtype.is_float:
            init = float("-inf") if kind == "maximum" else float("inf")
        else:
            lo, hi = int_range(x.type.dtype)
            init = lo if kind == "maximum" else hi
        y = ctx.node("reduce", [x, ctx.scalar(init, x)], kind=kind, dims=tuple(axes))
        if ctx.option("keep_dims"):
            y = ctx.reshape(y, tuple(1 if d in axes else s for d, s in enumerate(x.type.shape)))
        return y

    convert.__doc__ = (f"The `{kind}` reduction over constant axes (keep_dims kept as 1); "
                       "REDUCE_ALL takes bool.")
    return convert


reduce_max = _reduce("maximum")
reduce_min = _reduce("minimum")
reduce_all = _reduce("and")


def slice_(ctx: OpContext) -> Tensor:
    """SLICE from constant begin with constant sizes (-1: to the end)."""
    x = _data(ctx)
    begin, size = ctx.value(1, "begin").reshape(-1), ctx.value(2, "size").reshape(-1)
    shape = x.type.shape
    if begin.size != len(shape) or size.size != len(shape):
        raise Unsupported(f"begin {begin.tolist()} and size {size.tolist()} do not fit rank "
                          f"{len(shape)}")
    limit = [int(d) if s == -1 else int(b + s) for b, s, d in zip(begin, size, shape)]
    if any(b < 0 or b > lim or lim > d for b, lim, d in zip(begin, limit, shape)):
        raise Unsupported(f"the slice {begin.tolist()} + {size.tolist()} leaves "
                          f"{list(shape)}")
    return ctx.node("slice", [x], start=tuple(int(b) for b in begin), limit=tuple(limit),
                    strides=(1,) * len(shape))


def reverse_v2(ctx: OpContext) -> Tensor:
    """REVERSE_V2 along constant axes (every type TFLite Micro's kernel copies, uint8
    too)."""
    x = _data(ctx, 0, ("f32", "i8", "ui8", "i16", "i32", "i64", "i1"))
    axes = {_axis(int(a), x.type.rank, "axis") for a in ctx.value(1, "axis").reshape(-1)}
    return ctx.node("reverse", [x], dims=tuple(sorted(axes)))


def round_(ctx: OpContext) -> Tensor:
    """float32 ROUND: to nearest, ties to even (TFLite's RoundToNearest)."""
    return ctx.node("round_nearest_even", [_data(ctx, 0, ("f32",))])


def shape(ctx: OpContext) -> Tensor:
    """SHAPE: the input's static shape, a constant of the output's type."""
    x, out = ctx.input(0), ctx.output_type()
    if out.dtype.name not in ("i32", "i64"):
        raise Unsupported(f"SHAPE to {out.dtype} is not supported")
    return ctx.const(np.array(x.type.shape, dtype=np.int64), out.dtype)


def broadcast_args(ctx: OpContext) -> Tensor:
    """BROADCAST_ARGS of two shape vectors (known at run time): right-aligned, a 1 takes
    the other side's size."""
    a, b = _data(ctx, 0, ("i32", "i64")), _data(ctx, 1, ("i32", "i64"))
    if a.type.rank != 1 or b.type.rank != 1 or a.type.dtype != b.type.dtype:
        raise Unsupported("BROADCAST_ARGS takes two shape vectors of one type")
    n = max(a.type.shape[0], b.type.shape[0])

    def padded(t: Tensor) -> Tensor:
        k = n - t.type.shape[0]
        return t if k == 0 else ctx.node("concatenate", [ctx.const(np.ones(k), t.type.dtype),
                                                         t], dimension=0)

    a, b = padded(a), padded(b)
    one = ctx.node("compare", [a, ctx.filled(1, a)], direction="EQ")
    return ctx.node("select", [one, b, a])


def embedding_lookup(ctx: OpContext) -> Tensor:
    """EMBEDDING_LOOKUP: rows of the value table (input 1) at int32 ids (input 0), the
    table and output of one type (float32 or int8)."""
    ids, table = ctx.input(0), _data(ctx, 1, ("f32", "i8"))
    if ids.type.dtype.name != "i32" or ids.type.rank != 1:
        raise Unsupported("EMBEDDING_LOOKUP's ids must be an int32 vector")
    if ctx.output_type().dtype != table.type.dtype:
        raise Unsupported("an EMBEDDING_LOOKUP that dequantizes its table is not supported")
    rest = table.type.shape[1:]
    return ctx.node("gather", [table, ids], offset_dims=tuple(range(1, 1 + len(rest))),
                    collapsed_slice_dims=(0,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(0,), index_vector_dim=1,
                    slice_sizes=(1, *rest))


def dynamic_update_slice(ctx: OpContext) -> Tensor:
    """DYNAMIC_UPDATE_SLICE: the update written at start indices known at run time,
    clamped so it fits (TFLite's clamping, the graph op's too)."""
    x, update = _data(ctx, 0, ("f32", "i8", "i16", "i32", "i64")), _data(ctx, 1)
    start = _data(ctx, 2, ("i32", "i64"))
    rank = x.type.rank
    if start.type.shape != (rank,):
        raise Unsupported(f"start indices of shape {list(start.type.shape)} for rank {rank}")
    starts = [ctx.reshape(ctx.node("slice", [start], start=(d,), limit=(d + 1,), strides=(1,)),
                          ()) for d in range(rank)]
    return ctx.node("dynamic_update_slice", [x, update, *starts])


__all__ = ["reduce_all", "broadcast_args", "dynamic_update_slice", "embedding_lookup", "reduce_max",
           "reduce_min", "reverse_v2", "round_", "shape", "slice_"]


def l2_pool_2d(ctx: OpContext) -> Tensor:
    """float32 L2_POOL_2D: sqrt(window sum of squares / in-bounds count), then the fused
    activation (TFLite's L2Pool)."""
    x = _data(ctx, 0, ("f32",))
    win = _pool_window(ctx, x)
    sq = ctx.node("multiply", [x, x])
    total = ctx.node("reduce_window", [sq, ctx.scalar(0.0, sq)], kind="add", **win)
    _, oh, ow, _ = total.type.shape
    counts = np.outer(*(_valid_counts(x.type.shape[d], win["window"][d], win["strides"][d],
                                      win["padding"][d][0], n) for d, n in ((1, oh), (2, ow))))
    divisor = ctx.broadcast(ctx.const(counts.astype(np.float32), "f32"), total.type.shape,
                            (1, 2))
    y = ctx.node("sqrt", [ctx.node("divide", [total, divisor])])
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


__all__ += ["l2_pool_2d"]
