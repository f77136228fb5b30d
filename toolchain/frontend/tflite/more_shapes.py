"""TFLite data movement and index ops of TFLite Micro's op resolver: EXPAND_DIMS,
BROADCAST_TO, FILL, ZEROS_LIKE, PACK, UNPACK, GATHER, GATHER_ND, ARG_MAX, ARG_MIN,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, PADV2, MIRROR_PAD and CUMSUM (float32, int8).

Data movement copies stored values, so one converter takes every element type TFLite
Micro's kernel takes (int8 values move as stored; the output's declared quantization
says what they mean, as in shape_ops.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite.context import OpContext, int_range
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.shape_ops import _axis, _zero
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm
from toolchain.quant.fixedpoint import multiply_by_quantized_multiplier

Converter = Callable[[OpContext], Tensor]

# Element types (graph names) TFLite Micro's data-movement kernels take.
_MOVABLE = ("f32", "i8", "i16", "i32", "i64", "i1")


def _data(ctx: OpContext, i: int = 0, types: tuple[str, ...] = _MOVABLE) -> Tensor:
    """Input i, refused when TFLite Micro's kernel does not take its element type."""
    x = ctx.input(i)
    if x.type.dtype.name not in types:
        raise Unsupported(f"{ctx.op.opcode} of {x.type.dtype} is not supported")
    return x


def expand_dims(ctx: OpContext) -> Tensor:
    """EXPAND_DIMS: a size-1 dimension inserted at a constant axis (-rank-1..rank)."""
    x = _data(ctx)
    axis = ctx.value(1, "axis").reshape(-1)
    if axis.size != 1:
        raise Unsupported("EXPAND_DIMS takes one axis")
    a = _axis(int(axis[0]), x.type.rank + 1, "axis")
    shape = list(x.type.shape)
    shape.insert(a, 1)
    return ctx.reshape(x, tuple(shape))


def broadcast_to(ctx: OpContext) -> Tensor:
    """BROADCAST_TO a constant shape, numpy's rule (any type: TFLite Micro copies bytes)."""
    x = _data(ctx, 0, _MOVABLE + ("ui8",))
    shape = tuple(int(d) for d in ctx.value(1, "shape").reshape(-1))
    if broadcast_shape(x.type.shape, shape) != shape:
        raise Unsupported(f"{list(x.type.shape)} does not broadcast to {list(shape)}")
    return ctx.broadcast(x, shape)


def fill(ctx: OpContext) -> Tensor:
    """FILL a constant shape with the (rank-0 or one-element) value input."""
    shape = tuple(int(d) for d in ctx.value(0, "dims").reshape(-1))
    value = _data(ctx, 1, ("f32", "i8", "i16", "i32", "i64", "i1"))
    if value.type.num_elements != 1:
        raise Unsupported("FILL's value must hold one element")
    return ctx.broadcast(ctx.reshape(value, ()), shape, ())


def zeros_like(ctx: OpContext) -> Tensor:
    """ZEROS_LIKE: zeros of the input's shape and type (float32, int8, int32, int64; a
    quantized int8 gets raw zeros, as TFLite Micro's memset writes)."""
    x = _data(ctx, 0, ("f32", "i8", "i32", "i64"))
    return ctx.filled(0, x)


def pack(ctx: OpContext) -> Tensor:
    """PACK `values_count` same-shaped inputs along a new axis."""
    xs = [_data(ctx, i, ("f32", "i8", "i16", "i32", "i64")) for i in range(len(ctx.op.inputs))]
    if len(xs) != ctx.option("values_count"):
        raise Unsupported(f"it has {len(xs)} inputs but values_count "
                          f"{ctx.option('values_count')}")
    shape = xs[0].type.shape
    if any(t.type.shape != shape or t.type.dtype != xs[0].type.dtype for t in xs):
        raise Unsupported("PACK's inputs must share one shape and element type")
    a = _axis(ctx.option("axis"), len(shape) + 1, "axis")
    expanded = shape[:a] + (1,) + shape[a:]
    return ctx.node("concatenate", [ctx.reshape(t, expanded) for t in xs], dimension=a)


def unpack(ctx: OpContext) -> list[Tensor]:
    """UNPACK along an axis into `num` outputs, each without that axis."""
    x = _data(ctx, 0, ("f32", "i8", "i16", "i32", "i64"))
    a = _axis(ctx.option("axis"), x.type.rank, "axis")
    n = x.type.shape[a]
    if n != ctx.option("num") or len(ctx.op.outputs) != n:
        raise Unsupported(f"UNPACK of a dimension of {n} into {len(ctx.op.outputs)} outputs "
                          f"(num {ctx.option('num')})")
    rest = x.type.shape[:a] + x.type.shape[a + 1:]
    outs = []
    for k in range(n):
        start = tuple(k if d == a else 0 for d in range(x.type.rank))
        limit = tuple(k + 1 if d == a else s for d, s in enumerate(x.type.shape))
        piece = ctx.node("slice", [x], start=start, limit=limit, strides=(1,) * x.type.rank)
        outs.append(ctx.reshape(piece, rest))
    return outs


def _indices(ctx: OpContext, i: int) -> Tensor:
    idx = ctx.input(i)
    if idx.type.dtype.name not in ("i32", "i64"):
        raise Unsupported(f"its indices have element type {idx.type.dtype}, not int32/int64")
    return idx


def gather(ctx: OpContext) -> Tensor:
    """GATHER along `axis` (batch_dims 0): params[..., indices, ...]. Indices must be in
    range, as TFLite Micro requires (it fails the inference otherwise)."""
    params = _data(ctx, 0, ("f32", "i8", "i32"))
    idx = _indices(ctx, 1)
    if ctx.options.get("batch_dims", 0):
        raise Unsupported("GATHER with batch_dims is not supported")
    p = params.type.shape
    a = _axis(ctx.option("axis"), len(p), "axis")
    ir = idx.type.rank
    out_rank = len(p) - 1 + ir
    offset_dims = tuple(range(a)) + tuple(range(a + ir, out_rank))
    sizes = tuple(1 if d == a else s for d, s in enumerate(p))
    return ctx.node("gather", [params, idx], offset_dims=offset_dims,
                    collapsed_slice_dims=(a,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(a,),
                    index_vector_dim=ir, slice_sizes=sizes)


def gather_nd(ctx: OpContext) -> Tensor:
    """GATHER_ND: the last dimension of indices picks the leading k dimensions of params."""
    params = _data(ctx, 0, ("f32", "i8", "i16", "i32", "i64"))
    idx = _indices(ctx, 1)
    if idx.type.rank == 0:
        raise Unsupported("GATHER_ND's indices need rank 1 or more")
    k = idx.type.shape[-1]
    p = params.type.shape
    if not 1 <= k <= len(p):
        raise Unsupported(f"indices of depth {k} for params of rank {len(p)}")
    ir = idx.type.rank
    out_rank = ir - 1 + len(p) - k
    return ctx.node("gather", [params, idx], offset_dims=tuple(range(ir - 1, out_rank)),
                    collapsed_slice_dims=tuple(range(k)), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=tuple(range(k)),
                    index_vector_dim=ir - 1, slice_sizes=(1,) * k + p[k:])


def _arg(kind: str) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        x = _data(ctx, 0, ("f32", "i8", "i32"))
        axis = ctx.value(1, "axis").reshape(-1)
        if axis.size != 1:
            raise Unsupported("it takes one axis")
        a = _axis(int(axis[0]), x.type.rank, "axis")
        out = ctx.output_type()
        if out.dtype.name not in ("i32", "i64"):
            raise Unsupported(f"its output type {out.dtype} is not int32 or int64")
        keep = tuple(d for d in range(x.type.rank) if d != a)
        init = float("-inf") if kind == "maximum" else float("inf")
        if x.type.dtype.is_integer:
            lo, hi = int_range(x.type.dtype)
            init = lo if kind == "maximum" else hi
        best = ctx.node("reduce", [x, ctx.scalar(init, x)], kind=kind, dims=(a,))
        hit = ctx.node("compare", [x, ctx.broadcast(best, x.type.shape, keep)], direction="EQ")
        index = ctx.node("iota", [], dimension=a, shape=x.type.shape, dtype=out.dtype.name)
        n = ctx.filled(x.type.shape[a], index)
        # The first index holding the extreme value, as TFLite's ArgMinMax scan keeps.
        first = ctx.node("select", [hit, index, n])
        return ctx.node("reduce", [first, ctx.scalar(x.type.shape[a], first)],
                        kind="minimum", dims=(a,))

    convert.__doc__ = f"ARG_{kind[:3].upper()} along a constant axis: the first extreme index."
    return convert


arg_max = _arg("maximum")
arg_min = _arg("minimum")


def depth_to_space(ctx: OpContext) -> Tensor:
    """DEPTH_TO_SPACE (NHWC): channel (bh * b + bw) * C' + c goes to pixel (h*b+bh, w*b+bw)."""
    x = _data(ctx, 0, ("f32", "i8"))
    b = int(ctx.option("block_size"))
    if x.type.rank != 4 or b < 1 or x.type.shape[3] % (b * b):
        raise Unsupported(f"DEPTH_TO_SPACE of {list(x.type.shape)} with block size {b}")
    n, h, w, c = x.type.shape
    y = ctx.reshape(x, (n, h, w, b, b, c // (b * b)))
    y = ctx.node("transpose", [y], permutation=(0, 1, 3, 2, 4, 5))
    return ctx.reshape(y, (n, h * b, w * b, c // (b * b)))


def space_to_depth(ctx: OpContext) -> Tensor:
    """SPACE_TO_DEPTH (NHWC): the inverse of DEPTH_TO_SPACE."""
    x = _data(ctx, 0, ("f32", "i8"))
    b = int(ctx.option("block_size"))
    if x.type.rank != 4 or b < 1 or x.type.shape[1] % b or x.type.shape[2] % b:
        raise Unsupported(f"SPACE_TO_DEPTH of {list(x.type.shape)} with block size {b}")
    n, h, w, c = x.type.shape
    y = ctx.reshape(x, (n, h // b, b, w // b, b, c))
    y = ctx.node("transpose", [y], permutation=(0, 1, 3, 2, 4, 5))
    return ctx.reshape(y, (n, h // b, w // b, b * b * c))


def _widths(ctx: OpContext, x: Tensor) -> np.ndarray:
    widths = ctx.value(1, "paddings")
    if widths.shape != (x.type.rank, 2) or (widths < 0).any():
        raise Unsupported(f"paddings {widths.tolist()} do not fit a rank-{x.type.rank} input")
    return widths


def padv2(ctx: OpContext) -> Tensor:
    """PADV2: PAD with the (one-element) constant value input, or zero when absent."""
    x = _data(ctx, 0, ("f32", "i8", "i16", "i32"))
    widths = _widths(ctx, x)
    if ctx.has_input(2):
        value = ctx.input(2)
        if value.type.num_elements != 1 or value.type.dtype != x.type.dtype:
            raise Unsupported("PADV2's value must be one element of the input's type")
        value = ctx.reshape(value, ())
    else:
        value = _zero(ctx, x)
    return ctx.node("pad", [x, value], low=tuple(int(v) for v in widths[:, 0]),
                    high=tuple(int(v) for v in widths[:, 1]), interior=(0,) * x.type.rank)


def _take(ctx: OpContext, x: Tensor, dim: int, begin: int, end: int) -> Tensor:
    start = tuple(begin if d == dim else 0 for d in range(x.type.rank))
    limit = tuple(end if d == dim else s for d, s in enumerate(x.type.shape))
    return ctx.node("slice", [x], start=start, limit=limit, strides=(1,) * x.type.rank)


def mirror_pad(ctx: OpContext) -> Tensor:
    """MIRROR_PAD, REFLECT (edge not repeated) or SYMMETRIC (edge repeated), one axis at
    a time from reversed slices."""
    x = _data(ctx, 0, ("f32", "i8", "i16", "i32"))
    widths = _widths(ctx, x)
    mode = ctx.option("mode")
    symmetric = mode in (1, "SYMMETRIC")
    skip = 0 if symmetric else 1
    for d in range(x.type.rank):
        lo, hi = (int(v) for v in widths[d])
        n = x.type.shape[d]
        if lo + skip > n or hi + skip > n:
            raise Unsupported(f"padding {lo}, {hi} is too wide for dimension {d} of size {n}")
        parts = []
        if lo:
            parts.append(ctx.node("reverse", [_take(ctx, x, d, skip, skip + lo)], dims=(d,)))
        parts.append(x)
        if hi:
            parts.append(ctx.node("reverse", [_take(ctx, x, d, n - skip - hi, n - skip)],
                                  dims=(d,)))
        if len(parts) > 1:
            x = ctx.node("concatenate", parts, dimension=d)
    return x


def _cumsum_axis(ctx: OpContext, x: Tensor) -> int:
    axis = ctx.value(1, "axis").reshape(-1)
    if axis.size != 1:
        raise Unsupported("CUMSUM takes one axis")
    return _axis(int(axis[0]), x.type.rank, "axis")


def _running_sum(ctx: OpContext, x: Tensor, a: int) -> Tensor:
    """The running sum of x along axis a, `exclusive` (shifted by one, starting from
    zero) and `reverse` (from the end) as the options say."""
    rank, n = x.type.rank, x.type.shape[a]
    reverse = bool(ctx.option("reverse"))
    if reverse:
        x = ctx.node("reverse", [x], dims=(a,))
    if ctx.option("exclusive"):
        x = ctx.node("pad", [x, ctx.scalar(0, x)], low=tuple(int(d == a) for d in range(rank)),
                     high=tuple(-int(d == a) for d in range(rank)), interior=(0,) * rank)
    y = ctx.node("reduce_window", [x, ctx.scalar(0, x)], kind="add",
                 window=tuple(n if d == a else 1 for d in range(rank)), strides=(1,) * rank,
                 padding=tuple((n - 1, 0) if d == a else (0, 0) for d in range(rank)),
                 base_dilations=(1,) * rank, window_dilations=(1,) * rank)
    return ctx.node("reverse", [y], dims=(a,)) if reverse else y


def cumsum(ctx: OpContext) -> Tensor:
    """Float CUMSUM along a constant axis, `exclusive` (shifted by one) and `reverse`."""
    x = _data(ctx, 0, ("f32",))
    return _running_sum(ctx, x, _cumsum_axis(ctx, x))


# TFLite Micro's int8 CUMSUM shifts inputs left by this much (kCumSumIntegerShift).
_CUMSUM_LEFT_SHIFT = 20


def cumsum_int8(ctx: OpContext) -> Tensor:
    """int8 CUMSUM as TFLite Micro: each (x - zp) << 20 halved by a fixed-point
    multiplier, summed in int32 (wrapping) onto a start value that is TFLite Micro's
    -zp << 20 halved too, then rescaled by 2 * s_in / (2**20 * s_out) + zp_out."""
    x, out = ctx.input(0), ctx.output_type()
    for ty, what in ((x.type, "input"), (out, "output")):
        if ty.dtype.name != "i8" or ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be int8, quantized per tensor")
    s_in, z_in = float(np.float32(x.type.quant.scales[0])), x.type.quant.zero_points[0]
    s_out, z_out = float(np.float32(out.quant.scales[0])), out.quant.zero_points[0]
    a = _cumsum_axis(ctx, x)
    twice = 2.0 * s_in
    m_in, sh_in = tflm._smaller_than_one(s_in / twice)
    m_out, sh_out = tflm._smaller_than_one(twice / ((1 << _CUMSUM_LEFT_SHIFT) * s_out))
    g = GraphBuilder(ctx.graph)
    shape = x.type.shape
    v = build._offset(g, x, z_in, shape)
    v = ctx.node("shift_left", [v, ctx.filled(_CUMSUM_LEFT_SHIFT, v)])
    total = _running_sum(ctx, build.rescale(g, v, m_in, sh_in), a)
    start = int(multiply_by_quantized_multiplier(-z_in * (1 << _CUMSUM_LEFT_SHIFT), m_in,
                                                 sh_in))
    total = ctx.node("add", [total, ctx.filled(start, total)])
    return build.requantize(g, total, m_out, sh_out, axis=None, output_zp=z_out,
                            quant=out.quant)


__all__ = ["arg_max", "arg_min", "broadcast_to", "cumsum", "cumsum_int8", "depth_to_space",
           "expand_dims", "fill", "gather", "gather_nd", "mirror_pad", "pack", "padv2",
           "space_to_depth", "unpack", "zeros_like"]
