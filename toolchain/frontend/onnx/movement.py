"""More data movement: Split, Tile, Trilu, GatherElements, ScatterND, ScatterElements,
SpaceToDepth / DepthToSpace, CumSum / CumProd, OneHot, EyeLike.

Sizes that decide an output's shape (Split's split, Tile's repeats, CumSum's axis,
OneHot's depth) must be constants, as for the other shape arguments (shape_ops.py);
values that only choose elements (Trilu's k, OneHot's values, GatherElements' indices)
may be computed at run time, as may scatter and gather indices and updates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of, empty_value
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.shape_ops import slice_axis
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.types import TensorType


def _ints(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _scalar_int(ctx: OpContext, i: int, what: str) -> int:
    v = ctx.const(i, what)
    if v.size != 1 or v.dtype.kind not in "iu":
        raise Unsupported(f"{what} must be one integer, not {v.tolist()}")
    return int(v.reshape(-1)[0])


def split(ctx: OpContext) -> list[Tensor | np.ndarray]:
    """Split along `axis` into the constant `split` sizes, or into num_outputs parts (the
    last smaller where the size does not divide, opset 18), or into equal parts, one
    per output."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    axis = axis_of(ctx.attr("axis", 0), len(shape))
    n, size = len(ctx.info.outputs), shape[axis]
    if ctx.has_input(1):
        sizes = _ints(ctx.const(1, "split"))
        if len(sizes) != n or sum(sizes) != size or any(s < 0 for s in sizes):
            raise Unsupported(f"split {sizes} must be {n} sizes >= 0 adding up to {size}")
    elif ctx.attr("num_outputs") is not None:
        parts = ctx.attr("num_outputs")
        chunk = -(-size // parts) if parts >= 1 else 0
        if parts != n or chunk * (parts - 1) >= size:
            raise Unsupported(f"num_outputs={parts} cannot split {size} elements into "
                              f"{n} outputs")
        sizes = [chunk] * (parts - 1) + [size - chunk * (parts - 1)]
    else:
        if size % n:
            raise Unsupported(f"{size} elements do not split into {n} equal parts")
        sizes = [size // n] * n
    starts = np.cumsum([0, *sizes])
    return [slice_axis(ctx, x, axis, int(a), int(b)) if b > a else
            empty_value(shape[:axis] + (0,) + shape[axis + 1:], x.type.dtype)
            for a, b in zip(starts, starts[1:])]


def tile(ctx: OpContext) -> Tensor:
    """Each axis repeated: x broadcast to (r0, d0, r1, d1, ...), then merged pairwise."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    reps = _ints(ctx.const(1, "repeats"))
    if len(reps) != len(shape) or any(r < 1 for r in reps):
        raise Unsupported(f"repeats {reps} must be {len(shape)} values >= 1")
    wide = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    y = ctx.broadcast(x, wide, tuple(range(1, 2 * len(shape), 2)))
    return ctx.reshape(y, tuple(r * d for r, d in zip(reps, shape)))


def _iota(ctx: OpContext, shape: tuple[int, ...], dim: int, dt: str = "i64") -> Tensor:
    return ctx.node("iota", [], dimension=dim, shape=shape, dtype=dt)


def trilu(ctx: OpContext) -> Tensor:
    """The upper (upper=1, the default) or lower triangle of the last two axes: kept
    where column - row >= k (upper) or <= k (lower), 0 elsewhere; k (input 1, default 0)
    may be computed at run time."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if len(shape) < 2:
        raise Unsupported(f"an input of rank {len(shape)} (2 or more expected)")
    diff = ctx.node("subtract", [_iota(ctx, shape, len(shape) - 1),
                                 _iota(ctx, shape, len(shape) - 2)])
    if ctx.has_input(1):
        k = ctx.input(1)
        if k.type.shape not in ((), (1,)) or k.type.dtype.name != "i64":
            raise Unsupported("k must be one int64 value")
        k = ctx.broadcast(ctx.reshape(k, ()), shape, ())
    else:
        k = ctx.filled(0, diff)
    keep = ctx.node("compare", [diff, k], direction="GE" if ctx.attr("upper", 1) else "LE")
    return ctx.node("select", [keep, x, ctx.filled(0, x)])


def _indices(ctx: OpContext, i: int, size: int, what: str) -> Tensor:
    """Integer input i as i32, negative values made non-negative by adding `size`."""
    idx = ctx.input(i)
    if not idx.type.dtype.is_integer:
        raise Unsupported(f"{what} of element type {idx.type.dtype}")
    if idx.type.dtype.name != "i32":
        idx = ctx.node("convert", [idx], dtype="i32")
    negative = ctx.node("compare", [idx, ctx.filled(0, idx)], direction="LT")
    return ctx.node("select", [negative, ctx.node("add", [idx, ctx.filled(size, idx)]), idx])


def gather_elements(ctx: OpContext) -> Tensor:
    """out[i, j, k] = data[index[i, j, k], j, k] (axis 0): a gather of single elements,
    each located by the index along `axis` and its own position on the other axes."""
    data = ctx.input(0)
    shape = tuple(data.type.shape)
    axis = axis_of(ctx.attr("axis", 0), len(shape))
    idx = _indices(ctx, 1, shape[axis], "indices")
    out = tuple(idx.type.shape)
    if len(out) != len(shape):
        raise Unsupported(f"indices of rank {len(out)} for data of rank {len(shape)}")
    columns = [idx if d == axis else _iota(ctx, out, d, "i32") for d in range(len(shape))]
    full = ctx.node("concatenate", [ctx.reshape(c, (*out, 1)) for c in columns],
                    dimension=len(out))
    every = tuple(range(len(shape)))
    return ctx.node("gather", [data, full], offset_dims=(), collapsed_slice_dims=every,
                    operand_batching_dims=(), start_indices_batching_dims=(),
                    start_index_map=every, index_vector_dim=len(out),
                    slice_sizes=(1,) * len(shape))


# ScatterND / ScatterElements' reduction -> the graph op combining the old value (first)
# with the update; "none" replaces it.
SCATTER_REDUCTIONS = {"none": None, "add": "add", "mul": "multiply", "max": "maximum",
                      "min": "minimum"}


def _scatter(ctx: OpContext, data: Tensor, idx: Tensor, updates: Tensor, attrs: dict
             ) -> Tensor:
    """The graph's scatter with an update region from `reduction`; updates apply in
    row-major order (of repeated indices under "none" the last one wins)."""
    reduction = ctx.attr("reduction", "none")
    if reduction not in SCATTER_REDUCTIONS:
        raise Unsupported(f"reduction {reduction!r} is not supported")
    if updates.type.dtype != data.type.dtype:
        raise Unsupported(f"updates of element type {updates.type.dtype} for data of "
                          f"{data.type.dtype}")
    scalar = TensorType((), data.type.dtype)
    region = Graph("onnx.scatter.update")
    old, new = region.add_input(scalar), region.add_input(scalar)
    op = SCATTER_REDUCTIONS[reduction]
    region.outputs = [new if op is None else region.add(op, [old, new], [scalar]).output]
    attrs = {**attrs, "input_batching_dims": (), "scatter_indices_batching_dims": (),
             "indices_are_sorted": False, "unique_indices": False}
    inputs = [data, idx, updates]
    OPS["scatter"].infer(Node("scatter", inputs, [], attrs, None, [region]))  # checks
    return ctx.graph.add("scatter", inputs, [data.type], attrs, None, [region]).output


def scatter_into(ctx: OpContext, data: Tensor, idx: Tensor, updates: Tensor) -> Tensor:
    """data [L] with data[idx[i, 0]] = updates[i] (later updates win)."""
    return _scatter(ctx, data, idx, updates, {
        "update_window_dims": (), "inserted_window_dims": (0,),
        "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1})


def scatter_nd(ctx: OpContext) -> Tensor:
    """ScatterND: data with data[indices[i]] = updates[i] (or combined by `reduction`),
    each index vector naming the first k axes; negative indices count from the end."""
    data, idx, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = tuple(data.type.shape)
    if not idx.type.dtype.is_integer or idx.type.rank < 1:
        raise Unsupported("indices must be an integer tensor of rank >= 1")
    k = idx.type.shape[-1]
    want = tuple(idx.type.shape[:-1]) + shape[k:]
    if k > len(shape) or tuple(updates.type.shape) != want:
        raise Unsupported(f"updates of shape {list(updates.type.shape)} ({list(want)} "
                          "expected)")
    if idx.type.dtype.name != "i64":
        idx = ctx.node("convert", [idx], dtype="i64")
    sizes = ctx.broadcast(ctx.constant(np.array(shape[:k], np.int64), "i64"),
                          tuple(idx.type.shape), (idx.type.rank - 1,))
    negative = ctx.node("compare", [idx, ctx.filled(0, idx)], direction="LT")
    idx = ctx.node("select", [negative, ctx.node("add", [idx, sizes]), idx])
    batch = idx.type.rank - 1
    return _scatter(ctx, data, idx, updates, {
        "update_window_dims": tuple(range(batch, updates.type.rank)),
        "inserted_window_dims": tuple(range(k)),
        "scatter_dims_to_operand_dims": tuple(range(k)), "index_vector_dim": batch})


def scatter_elements(ctx: OpContext) -> Tensor:
    """ScatterElements: out[index[i, j], j] = updates[i, j] (axis 0), each element
    located by its index along `axis` and its own position on the other axes."""
    data, updates = ctx.input(0), ctx.input(2)
    shape = tuple(data.type.shape)
    axis = axis_of(ctx.attr("axis", 0), len(shape))
    idx = _indices(ctx, 1, shape[axis], "indices")
    out = tuple(idx.type.shape)
    if len(out) != len(shape) or tuple(updates.type.shape) != out:
        raise Unsupported(f"indices {list(out)} and updates {list(updates.type.shape)} must "
                          f"have one shape of rank {len(shape)}")
    columns = [idx if d == axis else _iota(ctx, out, d, "i32") for d in range(len(shape))]
    full = ctx.node("concatenate", [ctx.reshape(c, (*out, 1)) for c in columns],
                    dimension=len(out))
    every = tuple(range(len(shape)))
    return _scatter(ctx, data, full, updates, {
        "update_window_dims": (), "inserted_window_dims": every,
        "scatter_dims_to_operand_dims": every, "index_vector_dim": len(out)})


# The block axes' place among (N, C, H/b, by, W/b, bx) for SpaceToDepth, per mode:
# DCR numbers output channels (by, bx, c), CRD (c, by, bx).
_TO_DEPTH = {"DCR": (0, 3, 5, 1, 2, 4), "CRD": (0, 1, 3, 5, 2, 4)}


def _block(ctx: OpContext) -> tuple[Tensor, int, str]:
    x = ctx.input(0)
    if x.type.rank != 4:
        raise Unsupported(f"an input of rank {x.type.rank} (NCHW expected)")
    b, mode = ctx.attr("blocksize"), ctx.attr("mode", "DCR")
    if not isinstance(b, int) or b < 1:
        raise Unsupported(f"blocksize={b} must be >= 1")
    if mode not in _TO_DEPTH:
        raise Unsupported(f"mode {mode!r} must be DCR or CRD")
    return x, b, mode


def space_to_depth(ctx: OpContext) -> Tensor:
    """b x b blocks of H and W moved into channels."""
    x, b, mode = _block(ctx)
    n, c, h, w = x.type.shape
    if h % b or w % b:
        raise Unsupported(f"blocksize {b} does not divide H {h} and W {w}")
    y = ctx.reshape(x, (n, c, h // b, b, w // b, b))
    y = ctx.node("transpose", [y], permutation=_TO_DEPTH[mode])
    return ctx.reshape(y, (n, c * b * b, h // b, w // b))


def depth_to_space(ctx: OpContext) -> Tensor:
    """Channels moved into b x b blocks of H and W (SpaceToDepth's inverse)."""
    x, b, mode = _block(ctx)
    n, c, h, w = x.type.shape
    if c % (b * b):
        raise Unsupported(f"blocksize {b}: {c} channels are not a multiple of {b * b}")
    split = (n, b, b, c // (b * b), h, w) if mode == "DCR" else (n, c // (b * b), b, b, h, w)
    perm = (0, 3, 4, 1, 5, 2) if mode == "DCR" else (0, 1, 4, 2, 5, 3)
    y = ctx.node("transpose", [ctx.reshape(x, split)], permutation=perm)
    return ctx.reshape(y, (n, c // (b * b), h * b, w * b))


def cumulative(kind: str, identity: int) -> Callable[[OpContext], Tensor]:
    """CumSum (kind add, identity 0) or CumProd (multiply, 1): running results along
    the (constant) axis, a reduce_window of the whole axis padded with the identity on
    the side the values come from; exclusive ones run over x shifted by one."""

    def convert(ctx: OpContext) -> Tensor:
        x = ctx.input(0)
        shape = tuple(x.type.shape)
        axis = axis_of(_scalar_int(ctx, 1, "axis"), len(shape))
        n, rank = shape[axis], len(shape)
        reverse = bool(ctx.attr("reverse", 0))
        fill = ctx.scalar(identity, x)

        def padded(t: Tensor, lo: int, hi: int) -> Tensor:
            low, high = [0] * rank, [0] * rank
            low[axis], high[axis] = lo, hi
            return ctx.node("pad", [t, fill], low=tuple(low), high=tuple(high),
                            interior=(0,) * rank)

        if ctx.attr("exclusive", 0):
            x = (padded(slice_axis(ctx, x, axis, 1, n), 0, 1) if reverse
                 else padded(slice_axis(ctx, x, axis, 0, n - 1), 1, 0)) if n > 1 else \
                ctx.filled(identity, x)
        window = [1] * rank
        window[axis] = n
        pad = [(0, 0)] * rank
        pad[axis] = (0, n - 1) if reverse else (n - 1, 0)
        return ctx.node("reduce_window", [x, fill], kind=kind, window=tuple(window),
                        strides=(1,) * rank, base_dilations=(1,) * rank,
                        window_dilations=(1,) * rank, padding=tuple(pad))

    return convert


cum_sum = cumulative("add", 0)
cum_prod = cumulative("multiply", 1)


def one_hot(ctx: OpContext) -> Tensor:
    """values[1] where the axis position equals the index (negative ones count from the
    end), values[0] elsewhere; indices outside [-depth, depth - 1] hit nothing."""
    depth = ctx.const(1, "depth")
    if depth.size != 1 or not float(depth.reshape(-1)[0]).is_integer() or depth.reshape(
            -1)[0] < 1:
        raise Unsupported(f"depth {depth.tolist()} must be one integer >= 1")
    depth_n = int(depth.reshape(-1)[0])
    idx = ctx.input(0)
    values = ctx.input(2)
    if tuple(values.type.shape) != (2,):
        raise Unsupported(f"values of shape {list(values.type.shape)} ([off, on] expected)")
    rank = idx.type.rank + 1
    axis = axis_of(ctx.attr("axis", -1), rank)
    out = (*idx.type.shape[:axis], depth_n, *idx.type.shape[axis:])
    if idx.type.dtype.name != "i64":  # float indices are truncated, as ONNX's cast
        idx = ctx.node("convert", [idx], dtype="i64")
    negative = ctx.node("compare", [idx, ctx.filled(0, idx)], direction="LT")
    idx = ctx.node("select", [negative, ctx.node("add", [idx, ctx.filled(depth_n, idx)]),
                              idx])
    idx = ctx.broadcast(idx, out, tuple(d for d in range(rank) if d != axis))
    hit = ctx.node("compare", [_iota(ctx, out, axis), idx], direction="EQ")

    def pick(i: int) -> Tensor:
        return ctx.broadcast(ctx.reshape(slice_axis(ctx, values, 0, i, i + 1), ()), out, ())

    return ctx.node("select", [hit, pick(1), pick(0)])


def eye_like(ctx: OpContext) -> np.ndarray:
    """Ones on the k-th diagonal of a 2-D shape like the input's, in `dtype` (default:
    the input's type): a constant, since only the input's static shape is read."""
    from onnx import helper

    shape = ctx.shape(0)
    if len(shape) != 2:
        raise Unsupported(f"an input of rank {len(shape)} (2 expected)")
    dt = ctx.attr("dtype")
    np_dt = (helper.tensor_dtype_to_np_dtype(dt) if dt is not None
             else ctx.input(0).type.dtype.np_dtype)
    return np.eye(shape[0], shape[1], k=ctx.attr("k", 0), dtype=np_dt)


__all__ = ["SCATTER_REDUCTIONS", "cum_prod", "cum_sum", "cumulative", "depth_to_space",
           "eye_like", "gather_elements", "one_hot", "scatter_elements", "scatter_nd",
           "scatter_into", "space_to_depth", "split", "tile", "trilu"]
