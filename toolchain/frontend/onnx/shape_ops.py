"""Data movement (Reshape, Flatten, Transpose, Concat, Pad, Slice, Squeeze, Unsqueeze,
Gather, Expand) and the constant-like ops (Constant, Shape, Size, ConstantOfShape).

Data movement works on any element type, so the same converters move int8 values of a
QDQ model (quant.py wraps them). Shape arguments (a Reshape's shape, Slice's starts,
Pad's pads) must be constants: static shapes are what minirt compiles.
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of, empty_value
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.run_time_slice import run_time_slice
from toolchain.graph.ir import Tensor
from toolchain.graph.verify import MAX_TENSOR_BYTES


def _ints(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def reshape_target(shape_in: tuple[int, ...], spec: list[int], allowzero: bool
                   ) -> tuple[int, ...]:
    """ONNX Reshape's output shape: 0 copies the input's dimension (unless allowzero),
    one -1 is inferred from the element count."""
    out = []
    for i, d in enumerate(spec):
        if d == 0 and not allowzero:
            if i >= len(shape_in):
                raise Unsupported(f"shape {spec} copies dimension {i}, which the input "
                                  f"{list(shape_in)} does not have")
            d = shape_in[i]
        out.append(d)
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise Unsupported(f"shape {spec} is not a valid Reshape target")
    total = math.prod(shape_in)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise Unsupported(f"cannot reshape {list(shape_in)} to {spec}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise Unsupported(f"cannot reshape {list(shape_in)} ({total} elements) to {spec}")
    if 0 in out:
        raise Unsupported("a reshape to an empty tensor is not supported")
    return tuple(out)


def reshape(ctx: OpContext) -> Tensor:
    """Reshape by a constant shape (0 and -1 entries, allowzero)."""
    x = ctx.input(0)
    spec = _ints(ctx.const(1, "shape"))
    return ctx.reshape(x, reshape_target(tuple(x.type.shape), spec,
                                         bool(ctx.attr("allowzero", 0))))


def flatten(ctx: OpContext) -> Tensor:
    """To 2-D: dimensions before `axis` (default 1) and from it on."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    axis = ctx.attr("axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise Unsupported(f"axis {axis} is out of range for rank {len(shape)}")
    if axis < 0:
        axis += len(shape)
    return ctx.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))


def transpose(ctx: OpContext) -> Tensor:
    """Transpose by `perm` (default: the dimensions reversed)."""
    x = ctx.input(0)
    rank = x.type.rank
    perm = ctx.ints("perm", list(range(rank))[::-1])
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"perm {perm} is not a permutation of {rank} dimensions")
    if perm == list(range(rank)):
        return x
    return ctx.node("transpose", [x], permutation=tuple(perm))


def concat(ctx: OpContext) -> Tensor:
    """Concatenation along `axis`."""
    xs = [ctx.input(i) for i in range(len(ctx.info.inputs)) if ctx.has_input(i)]
    axis = axis_of(ctx.attr("axis", 0), xs[0].type.rank)
    if len(xs) == 1:
        return xs[0]
    return ctx.node("concatenate", xs, dimension=axis)


def squeeze(ctx: OpContext) -> Tensor:
    """Drops the given size-1 axes (input from opset 13), or every size-1 axis."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    axes = _ints(ctx.const(1, "axes")) if ctx.has_input(1) else ctx.ints("axes")
    if axes is None:
        dropped = {i for i, d in enumerate(shape) if d == 1}
    else:
        dropped = {axis_of(a, len(shape)) for a in axes}
        if any(shape[a] != 1 for a in dropped):
            raise Unsupported(f"cannot squeeze axes {axes} of shape {list(shape)}")
    return ctx.reshape(x, tuple(d for i, d in enumerate(shape) if i not in dropped))


def unsqueeze(ctx: OpContext) -> Tensor:
    """Inserts size-1 axes (positions in the output's rank)."""
    x = ctx.input(0)
    axes = _ints(ctx.const(1, "axes")) if ctx.has_input(1) else ctx.ints("axes", [])
    rank = x.type.rank + len(axes)
    inserted = {axis_of(a, rank) for a in axes}
    if len(inserted) != len(axes):
        raise Unsupported(f"axes {axes} repeat an axis")
    dims = iter(x.type.shape)
    return ctx.reshape(x, tuple(1 if i in inserted else next(dims) for i in range(rank)))


def expand(ctx: OpContext) -> Tensor:
    """Broadcast to numpy.broadcast_shapes(input, shape)."""
    x = ctx.input(0)
    try:
        shape = tuple(np.broadcast_shapes(tuple(x.type.shape),
                                          tuple(_ints(ctx.const(1, "shape")))))
    except ValueError:
        raise Unsupported(f"shape {list(x.type.shape)} does not broadcast to "
                          f"{_ints(ctx.const(1, 'shape'))}") from None
    return ctx.broadcast(x, shape)


def gather(ctx: OpContext) -> Tensor:
    """Gather along `axis`: out = data.shape[:axis] + indices.shape + data.shape[axis+1:].
    Constant indices are checked and made non-negative at import; computed ones get
    `i + size` where negative."""
    data = ctx.input(0)
    shape = tuple(data.type.shape)
    axis = axis_of(ctx.attr("axis", 0), len(shape))
    size = shape[axis]
    v = ctx.value(1)
    if isinstance(v, np.ndarray):
        idx = v.astype(np.int64)
        if np.any((idx < -size) | (idx >= size)):
            raise Unsupported(f"an index is outside [-{size}, {size - 1}]")
        indices = ctx.constant(np.where(idx < 0, idx + size, idx), "i32")
    else:
        indices = ctx.input(1)
        if not indices.type.dtype.is_integer:
            raise Unsupported(f"indices of element type {indices.type.dtype}")
        if indices.type.dtype.name != "i32":
            indices = ctx.node("convert", [indices], dtype="i32")
        negative = ctx.node("compare", [indices, ctx.filled(0, indices)], direction="LT")
        indices = ctx.node("select", [negative, ctx.node("add", [indices,
                                                                ctx.filled(size, indices)]),
                                      indices])
    irank = indices.type.rank
    out_rank = len(shape) - 1 + irank
    return ctx.node("gather", [data, indices],
                    offset_dims=tuple(list(range(axis)) + list(range(axis + irank, out_rank))),
                    collapsed_slice_dims=(axis,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(axis,),
                    index_vector_dim=irank,
                    slice_sizes=tuple(1 if d == axis else s for d, s in enumerate(shape)))


def slice_axis(ctx: OpContext, x: Tensor, axis: int, start: int, stop: int, step: int = 1
               ) -> Tensor:
    """x[start:stop:step] along `axis` (0 <= start <= stop <= size, step > 0)."""
    rank = x.type.rank
    if start == 0 and stop == x.type.shape[axis] and step == 1:
        return x
    starts, limits, strides = [0] * rank, list(x.type.shape), [1] * rank
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return ctx.node("slice", [x], start=tuple(starts), limit=tuple(limits),
                    strides=tuple(strides))


def _clamped(start: int, end: int, step: int, size: int) -> range:
    """The indices ONNX Slice takes along one axis: negative starts and ends count from
    the end, then both are clamped ([0, size] for a positive step, [-1, size - 1] for a
    negative one). A range, not a list: an axis may have 2**28 elements."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
    else:
        start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return range(start, end, step)


def slice_(ctx: OpContext) -> Tensor | np.ndarray:
    """Slice with starts / ends / axes / steps inputs, negative and clamped as ONNX
    says; a negative step reverses the axis first."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if any(isinstance(ctx.value(i), Tensor) for i in (1, 2)):
        # Starts computed at run time, ends a constant distance away (run_time_slice.py).
        count = ctx.shape(1)[0] if len(ctx.shape(1)) == 1 else 0
        axes = _ints(ctx.const(3, "axes")) if ctx.has_input(3) else list(range(count))
        steps = _ints(ctx.const(4, "steps")) if ctx.has_input(4) else [1] * count
        moved = run_time_slice(ctx, axes, steps)
        if moved is not None:
            return moved
    starts, ends = _ints(ctx.const(1, "starts")), _ints(ctx.const(2, "ends"))
    axes = _ints(ctx.const(3, "axes")) if ctx.has_input(3) else list(range(len(starts)))
    steps = _ints(ctx.const(4, "steps")) if ctx.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise Unsupported("starts, ends, axes and steps differ in length")
    seen, cuts = set(), []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = axis_of(axis, len(shape))
        if axis in seen:
            raise Unsupported(f"axis {axis} is sliced twice")
        seen.add(axis)
        if step == 0:
            raise Unsupported("a step of 0")
        cuts.append((axis, step, _clamped(start, end, step, shape[axis])))
    if any(not idx for _, _, idx in cuts):  # an empty result: no values to compute
        out = list(shape)
        for axis, _, idx in cuts:
            out[axis] = len(idx)
        return empty_value(tuple(out), x.type.dtype)
    for axis, step, idx in cuts:
        size = shape[axis]
        if step < 0:
            x = ctx.node("reverse", [x], dims=(axis,))
            idx = range(size - 1 - idx[0], size - 1 - idx[-1] + 1, -step)
            step = -step
        x = slice_axis(ctx, x, axis, idx[0], idx[-1] + 1, step)
    return x


def _pad_axis(ctx: OpContext, x: Tensor, axis: int, lo: int, hi: int, mode: str) -> Tensor:
    """Edge, reflect or wrap padding of one axis, from slices of x and a concatenation."""
    n = x.type.shape[axis]
    pieces = []
    if mode == "edge":
        for count, at in ((lo, 0), (hi, n - 1)):
            if count:
                edge = slice_axis(ctx, x, axis, at, at + 1)
                shape = list(x.type.shape)
                shape[axis] = count
                pieces.append(ctx.broadcast(edge, tuple(shape), tuple(range(x.type.rank))))
            else:
                pieces.append(None)
    elif mode == "reflect":
        if lo > n - 1 or hi > n - 1:
            raise Unsupported(f"reflect padding ({lo}, {hi}) of an axis of {n} needs pads "
                              f"smaller than {n}")
        left = slice_axis(ctx, x, axis, 1, lo + 1) if lo else None
        right = slice_axis(ctx, x, axis, n - 1 - hi, n - 1) if hi else None
        pieces = [None if p is None else ctx.node("reverse", [p], dims=(axis,))
                  for p in (left, right)]
    else:  # wrap
        if lo > n or hi > n:
            raise Unsupported(f"wrap padding ({lo}, {hi}) of an axis of {n} needs pads of at "
                              f"most {n}")
        pieces = [slice_axis(ctx, x, axis, n - lo, n) if lo else None,
                  slice_axis(ctx, x, axis, 0, hi) if hi else None]
    parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
    return parts[0] if len(parts) == 1 else ctx.node("concatenate", parts, dimension=axis)


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad(ctx: OpContext) -> Tensor:
    """Pad (opset 11+: pads, constant_value and axes inputs): constant with the graph's
    pad; edge, reflect and wrap from slices and concatenations. Negative pads crop."""
    return pad_tensor(ctx, ctx.input(0), None)


def pad_tensor(ctx: OpContext, x: Tensor, fill: Tensor | None) -> Tensor:
    """Pad's work on `x`; `fill` (a scalar) replaces the constant_value input (an int8
    view pads with its zero point)."""
    rank = x.type.rank
    mode = ctx.attr("mode", "constant")
    if mode not in PAD_MODES:
        raise Unsupported(f"mode '{mode}' is not supported ({', '.join(PAD_MODES)} are)")
    pads = _ints(ctx.const(1, "pads"))
    axes = (_ints(ctx.const(3, "axes")) if ctx.has_input(3) else list(range(rank)))
    axes = [axis_of(a, rank) for a in axes]
    if len(pads) != 2 * len(axes):
        raise Unsupported(f"{len(pads)} pads for {len(axes)} axes")
    low, high = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        low[a], high[a] = pads[k], pads[k + len(axes)]
    for a in range(rank):  # negative pads remove elements
        lo, hi = min(low[a], 0), min(high[a], 0)
        if lo or hi:
            if x.type.shape[a] + lo + hi <= 0:
                raise Unsupported(f"pads crop axis {a} to nothing")
            x = slice_axis(ctx, x, a, -lo, x.type.shape[a] + hi)
    low, high = [max(v, 0) for v in low], [max(v, 0) for v in high]
    if not any(low) and not any(high):
        return x
    if mode == "constant":
        if fill is not None:
            value = fill
        elif ctx.has_input(2):
            value = ctx.reshape(ctx.input(2), ())
            if value.type.dtype != x.type.dtype:
                raise Unsupported("constant_value's element type differs from the input's")
        else:
            value = ctx.scalar(0, x)
        return ctx.node("pad", [x, value], low=tuple(low), high=tuple(high),
                        interior=(0,) * rank)
    for a in range(rank):
        if low[a] or high[a]:
            x = _pad_axis(ctx, x, a, low[a], high[a], mode)
    return x


# ------------------------------------------------------------------ constant-like ops


def constant(ctx: OpContext) -> np.ndarray:
    """Constant: its value, value_float(s) or value_int(s) attribute."""
    for key, dt in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                    ("value_int", np.int64), ("value_ints", np.int64)):
        if key in ctx.info.attrs:
            value = ctx.info.attrs[key]
            if dt is None and not isinstance(value, np.ndarray):
                raise Unsupported("its 'value' is not a dense tensor")
            return np.asarray(value, dtype=dt)
    raise Unsupported("Constant without a value, value_float(s) or value_int(s) attribute")


def shape(ctx: OpContext) -> np.ndarray:
    """Shape of a static tensor (start / end from opset 15): a constant."""
    dims = ctx.shape(0)
    start, end = ctx.attr("start", 0), ctx.attr("end", len(dims))
    return np.asarray(dims[slice(start, end)], dtype=np.int64)


def size(ctx: OpContext) -> np.ndarray:
    """Size of a static tensor: a constant."""
    return np.asarray(math.prod(ctx.shape(0)), dtype=np.int64)


def constant_of_shape(ctx: OpContext) -> np.ndarray:
    """ConstantOfShape of a constant shape: a constant (float 0 without `value`)."""
    dims = _ints(ctx.const(0, "shape"))
    value = np.asarray(ctx.attr("value", np.zeros(1, np.float32)))
    if any(d < 0 for d in dims):
        raise Unsupported(f"shape {dims} has a negative dimension")
    if value.size != 1:
        raise Unsupported(f"'value' holds {value.size} elements; one is expected")
    # Checked before numpy allocates it: a hostile shape asks for terabytes.
    size = math.prod(dims) * value.dtype.itemsize
    if size > MAX_TENSOR_BYTES:
        raise Unsupported(f"shape {dims} makes a constant of {size} bytes; minirt tensors "
                          f"are limited to {MAX_TENSOR_BYTES} bytes")
    return np.full(dims, value.reshape(-1)[0], dtype=value.dtype)


__all__ = ["PAD_MODES", "concat", "constant", "constant_of_shape", "expand", "flatten",
           "gather", "pad", "pad_tensor", "reshape", "reshape_target", "shape", "size", "slice_",
           "slice_axis", "squeeze", "transpose", "unsqueeze"]
