"""Convolutions, matrix products, batch normalization and pooling, in float.

The graph keeps ONNX's NCHW layout (OIHW weights): StableHLO's convolution dimension
numbers and reduce_window's per-dimension windows express it directly, so nothing is
transposed at the model's edges and a user's NCHW inputs and outputs stay as they are.
Any number of spatial dimensions works (Conv1d, Conv2d, Conv3d).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.shape_ops import slice_axis
from toolchain.graph.ir import Tensor
from toolchain.graph.verify import MAX_TENSOR_BYTES


def nchw(spatial: int) -> dict:
    """Convolution dimension numbers for NC<spatial> inputs and OI<spatial> kernels."""
    sp = tuple(range(2, 2 + spatial))
    return {"input_batch": 0, "input_feature": 1, "input_spatial": sp,
            "output_batch": 0, "output_feature": 1, "output_spatial": sp,
            "kernel_output": 0, "kernel_input": 1, "kernel_spatial": sp}


def window_pads(ctx: OpContext, sizes: list[int], kernel: list[int], strides: list[int],
                dilations: list[int], ceil_mode: bool = False
                ) -> tuple[list[tuple[int, int]], list[int]]:
    """(padding per spatial dim, output sizes) of a Conv or pooling window: `auto_pad`
    SAME_UPPER / SAME_LOWER (out = ceil(in / stride), the odd padding after / before),
    VALID, or the `pads` attribute (NOTSET), with ceil_mode's rounding up (a last
    window that would start in the trailing padding is dropped, as onnxruntime does)."""
    n = len(sizes)
    auto = ctx.attr("auto_pad", "NOTSET")
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        outs = [-(-i // s) for i, s in zip(sizes, strides)]
        pads = []
        for i, o, s, e in zip(sizes, outs, strides, eff):
            total = max((o - 1) * s + e - i, 0)
            small = total // 2
            pads.append((small, total - small) if auto == "SAME_UPPER" else
                        (total - small, small))
        return pads, outs
    if auto == "VALID":
        flat = [0] * (2 * n)
    elif auto == "NOTSET":
        flat = ctx.ints_per_dim("pads", 2 * n, 0, 0)
    else:
        raise Unsupported(f"auto_pad '{auto}' is not supported")
    pads = list(zip(flat[:n], flat[n:]))
    outs = []
    for i, (lo, hi), s, e in zip(sizes, pads, strides, eff):
        span = i + lo + hi - e
        if span < 0:
            raise Unsupported(f"a window of {e} does not fit an input of {i} padded by "
                              f"({lo}, {hi})")
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= i + lo:
            o -= 1
        outs.append(o)
    return pads, outs


def _check_padded(x: Tensor | tuple[int, ...], pads: list[tuple[int, int]],
                  itemsize: int = 4) -> None:
    """Refuses padding that makes the padded input (a tensor, or a shape of `itemsize`
    byte elements) larger than any minirt tensor."""
    if isinstance(x, Tensor):
        shape, itemsize = list(x.type.shape), x.type.dtype.itemsize
    else:
        shape = list(x)
    for d, (lo, hi) in enumerate(pads, 2):
        shape[d] += lo + hi
    if math.prod(shape) * itemsize > MAX_TENSOR_BYTES:
        raise Unsupported(f"padding {pads} makes the padded input larger than "
                          f"{MAX_TENSOR_BYTES} bytes")


def add_channel_bias(ctx: OpContext, y: Tensor, b: Tensor | None) -> Tensor:
    """y + b along dimension 1 (one value per output channel)."""
    if b is None:
        return y
    channels = y.type.shape[1]
    if b.type.shape != (channels,):
        raise Unsupported(f"the bias has shape {list(b.type.shape)}; {channels} values are "
                          "expected")
    return ctx.node("add", [y, ctx.broadcast(b, tuple(y.type.shape), (1,))])


def conv_geometry(ctx: OpContext, x_shape: tuple[int, ...], w_shape: tuple[int, ...]
                  ) -> dict:
    """A Conv node's attributes checked against its operands, as graph convolution
    attributes (NCHW) without the dtype."""
    if len(x_shape) < 3 or len(w_shape) != len(x_shape):
        raise Unsupported(f"input {list(x_shape)} and weights {list(w_shape)} are not "
                          "N x C x spatial and M x C/group x kernel")
    n = len(x_shape) - 2
    kernel = list(w_shape[2:])
    given = ctx.ints("kernel_shape")
    if given is not None and list(given) != kernel:
        raise Unsupported(f"kernel_shape {given} differs from the weights' {kernel}")
    group = ctx.attr("group", 1)
    if group < 1 or x_shape[1] != w_shape[1] * group or w_shape[0] % group:
        raise Unsupported(f"{x_shape[1]} input channels, weights {list(w_shape)} and group "
                          f"{group} do not fit")
    strides = ctx.ints_per_dim("strides", n, 1, 1)
    dilations = ctx.ints_per_dim("dilations", n, 1, 1)
    pads, _ = window_pads(ctx, list(x_shape[2:]), kernel, strides, dilations)
    # The int8 kernels pad a 32-bit copy of the input: the largest element either path pads.
    _check_padded(x_shape, pads, 4)
    return dict(strides=tuple(strides), padding=tuple(pads), lhs_dilation=(1,) * n,
                rhs_dilation=tuple(dilations), **nchw(n), feature_group_count=group,
                batch_group_count=1)


def conv_float(ctx: OpContext, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """A float Conv of graph tensors."""
    attrs = conv_geometry(ctx, tuple(x.type.shape), tuple(w.type.shape))
    if not x.type.dtype.is_float or w.type.dtype != x.type.dtype:
        raise Unsupported(f"Conv of {x.type.dtype} by {w.type.dtype} weights (float "
                          "tensors of one type are expected)")
    _check_padded(x, list(attrs["padding"]))
    y = ctx.node("convolution", [x, w], dtype=x.type.dtype.name, **attrs)
    return add_channel_bias(ctx, y, b)


def conv(ctx: OpContext) -> Tensor:
    """Conv (any spatial rank; pads, strides, dilations, group, auto_pad)."""
    return conv_float(ctx, ctx.input(0), ctx.input(1),
                      ctx.input(2) if ctx.has_input(2) else None)


def conv_transpose(ctx: OpContext) -> Tensor:
    """ConvTranspose as a convolution of the input dilated by the strides (lhs_dilation)
    with the kernel flipped and its in / out channels swapped per group; padding
    (k - 1) * d - pads on each side, plus output_padding after. Pads larger than that
    (negative padding) are cropped from the result."""
    x, w = ctx.input(0), ctx.input(1)
    xs, ws = tuple(x.type.shape), tuple(w.type.shape)
    if len(xs) < 3 or len(ws) != len(xs):
        raise Unsupported(f"input {list(xs)} and weights {list(ws)} are not N x C x spatial "
                          "and C x M/group x kernel")
    if not x.type.dtype.is_float or w.type.dtype != x.type.dtype:
        raise Unsupported("ConvTranspose takes float tensors of one type")
    n = len(xs) - 2
    group = ctx.attr("group", 1)
    if group < 1 or xs[1] != ws[0] or ws[0] % group:
        raise Unsupported(f"{xs[1]} input channels, weights {list(ws)} and group {group} do "
                          "not fit")
    kernel = list(ws[2:])
    if ctx.ints("kernel_shape") not in (None, kernel):
        raise Unsupported(f"kernel_shape {ctx.ints('kernel_shape')} differs from the "
                          f"weights' {kernel}")
    strides = ctx.ints_per_dim("strides", n, 1, 1)
    dilations = ctx.ints_per_dim("dilations", n, 1, 1)
    out_pad = ctx.ints_per_dim("output_padding", n, 0, 0)
    if any(p >= max(s, d) for p, s, d in zip(out_pad, strides, dilations)):
        raise Unsupported(f"output_padding {out_pad} must be {n} values below the strides "
                          "or dilations")
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    full = [s * (i - 1) + p + e for i, s, p, e in zip(xs[2:], strides, out_pad, eff)]
    auto = ctx.attr("auto_pad", "NOTSET")
    out_shape = ctx.ints("output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        if out_shape is None:
            out_shape = [i * s for i, s in zip(xs[2:], strides)]
        elif len(out_shape) == n + 2:  # the whole shape given: its spatial sizes count
            out_shape = out_shape[2:]
        if len(out_shape) != n or any(o < 1 for o in out_shape):
            raise Unsupported(f"output_shape {ctx.ints('output_shape')} must be {n} "
                              "spatial sizes >= 1")
        pads = []
        for f, o in zip(full, out_shape):
            total = f - o
            if total < 0:
                raise Unsupported(f"output_shape {out_shape} is larger than the full "
                                  f"transposed convolution {full}")
            half = total // 2
            pads.append((half, total - half) if auto == "SAME_UPPER" else (total - half, half))
    elif auto == "VALID":
        pads = [(0, 0)] * n
    elif auto == "NOTSET":
        flat = ctx.ints_per_dim("pads", 2 * n, 0, 0)
        pads = list(zip(flat[:n], flat[n:]))
    else:
        raise Unsupported(f"auto_pad '{auto}' is not supported")
    # The kernel of the equivalent convolution: [group * M/g, C/g, k...], flipped.
    c_g, m_g = ws[0] // group, ws[1]
    k = ctx.reshape(w, (group, c_g, m_g, *kernel))
    k = ctx.node("transpose", [k], permutation=(0, 2, 1, *range(3, 3 + n)))
    k = ctx.reshape(k, (group * m_g, c_g, *kernel))
    k = ctx.node("reverse", [k], dims=tuple(range(2, 2 + n)))
    padding = [(e - 1 - lo, e - 1 - hi + p) for e, (lo, hi), p in zip(eff, pads, out_pad)]
    clipped = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    _check_padded(x, clipped)
    y = ctx.node("convolution", [x, k], strides=(1,) * n, padding=tuple(clipped),
                 lhs_dilation=tuple(strides), rhs_dilation=tuple(dilations), **nchw(n),
                 feature_group_count=group, batch_group_count=1, dtype=x.type.dtype.name)
    for d, ((lo, hi), size) in enumerate(zip(padding, y.type.shape[2:]), 2):
        if lo < 0 or hi < 0:
            if size + min(lo, 0) + min(hi, 0) <= 0:
                raise Unsupported("pads remove the whole output")
            y = slice_axis(ctx, y, d, -min(lo, 0), size + min(hi, 0))
    return add_channel_bias(ctx, y, ctx.input(2) if ctx.has_input(2) else None)


def gemm(ctx: OpContext) -> Tensor:
    """alpha * A' B' + beta * C (A' = A transposed when transA, B' likewise), C
    broadcast to the result."""
    a, b = ctx.input(0), ctx.input(1)
    if a.type.rank != 2 or b.type.rank != 2:
        raise Unsupported(f"Gemm of {list(a.type.shape)} by {list(b.type.shape)} (2-D "
                          "operands are expected)")
    ta, tb = ctx.attr("transA", 0), ctx.attr("transB", 0)
    y = ctx.node("dot_general", [a, b], lhs_batch=(), rhs_batch=(),
                 lhs_contract=(0 if ta else 1,), rhs_contract=(1 if tb else 0,),
                 dtype=a.type.dtype.name)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if alpha != 1.0:
        y = ctx.node("multiply", [y, ctx.filled(alpha, y)])
    if ctx.has_input(2) and beta != 0.0:
        c = ctx.input(2)
        if beta != 1.0:
            c = ctx.node("multiply", [c, ctx.filled(beta, c)])
        try:
            c = ctx.broadcast(c, tuple(y.type.shape))
        except Unsupported:
            raise Unsupported(f"C of shape {list(c.type.shape)} does not broadcast to "
                              f"{list(y.type.shape)}") from None
        y = ctx.node("add", [y, c])
    return y


def matmul_tensors(ctx: OpContext, a: Tensor, b: Tensor) -> Tensor:
    """numpy.matmul: 1-D operands promoted (and the added dimension removed again),
    batch dimensions broadcast; a 2-D right operand needs no batching at all."""
    sa, sb = tuple(a.type.shape), tuple(b.type.shape)
    if not sa or not sb:
        raise Unsupported("MatMul of a scalar")
    if sa[-1] != (sb[0] if len(sb) == 1 else sb[-2]):
        raise Unsupported(f"MatMul of {list(sa)} by {list(sb)}: inner dimensions differ")
    a2 = ctx.reshape(a, (1, sa[0])) if len(sa) == 1 else a
    b2 = ctx.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
    ra, rb = a2.type.rank, b2.type.rank
    dt = a.type.dtype.name
    if rb == 2:
        y = ctx.node("dot_general", [a2, b2], lhs_batch=(), rhs_batch=(),
                     lhs_contract=(ra - 1,), rhs_contract=(0,), dtype=dt)
    else:
        batch = tuple(np.broadcast_shapes(a2.type.shape[:-2], b2.type.shape[:-2]))
        a3 = ctx.broadcast(a2, batch + tuple(a2.type.shape[-2:]))
        b3 = ctx.broadcast(b2, batch + tuple(b2.type.shape[-2:]))
        nb = len(batch)
        y = ctx.node("dot_general", [a3, b3], lhs_batch=tuple(range(nb)),
                     rhs_batch=tuple(range(nb)), lhs_contract=(nb + 1,),
                     rhs_contract=(nb,), dtype=dt)
    shape = list(y.type.shape)
    if len(sb) == 1:
        shape.pop(-1)
    if len(sa) == 1:
        shape.pop(-2 if len(sb) != 1 else -1)
    return ctx.reshape(y, tuple(shape))


def matmul(ctx: OpContext) -> Tensor:
    """MatMul with numpy's semantics (batched, broadcast, 1-D promoted)."""
    a, b = ctx.input(0), ctx.input(1)
    if a.type.dtype != b.type.dtype:
        raise Unsupported(f"MatMul of {a.type.dtype} by {b.type.dtype}")
    return matmul_tensors(ctx, a, b)


def batch_normalization(ctx: OpContext) -> Tensor:
    """Inference batch normalization along dimension 1. With constant statistics (the
    usual case) it is x * s + t with s = scale / sqrt(var + epsilon) and
    t = B - mean * s computed in float64 and rounded once; affine folding then merges
    it into a preceding convolution's weights."""
    if ctx.attr("training_mode", 0):
        raise Unsupported("training_mode=1 is not supported (inference only)")
    if len([o for o in ctx.info.outputs if o]) > 1:
        raise Unsupported("the running mean / variance outputs are not supported")
    x = ctx.input(0)
    if x.type.rank < 2:
        raise Unsupported(f"an input of shape {list(x.type.shape)} has no channel dimension")
    channels = x.type.shape[1]
    eps = float(ctx.attr("epsilon", 1e-5))
    values = [ctx.value(i) for i in range(1, 5)]
    if all(isinstance(v, np.ndarray) for v in values):
        with np.errstate(all="ignore"):  # NaN or infinite statistics stay what they are
            scale, bias, mean, var = (np.asarray(v, np.float64).reshape(-1) for v in values)
            if not all(v.size == channels for v in (scale, bias, mean, var)):
                raise Unsupported(f"scale, B, mean and var must hold {channels} values each")
            s = scale / np.sqrt(var + eps)
            t = bias - mean * s
        shape = tuple(x.type.shape)
        dt = x.type.dtype
        y = ctx.node("multiply", [x, ctx.broadcast(ctx.constant(s, dt), shape, (1,))])
        return ctx.node("add", [y, ctx.broadcast(ctx.constant(t, dt), shape, (1,))])
    scale, bias, mean, var = (ctx.input(i) for i in range(1, 5))
    return ctx.node("batch_norm_inference", [x, scale, bias, mean, var], epsilon=eps,
                    feature_index=1)


# ------------------------------------------------------------------ pooling


def pool_window(ctx: OpContext, x: Tensor) -> tuple[list[int], list[int], list[int],
                                                      list[tuple[int, int]], list[int]]:
    """kernel, strides, dilations, padding and output sizes of a pooling node."""
    n = x.type.rank - 2
    if n < 1:
        raise Unsupported(f"an input of shape {list(x.type.shape)} has no spatial dimension")
    kernel = ctx.ints("kernel_shape")
    if kernel is None or len(kernel) != n or any(k < 1 for k in kernel):
        raise Unsupported(f"kernel_shape {kernel} must be {n} values >= 1")
    strides = ctx.ints_per_dim("strides", n, 1, 1)
    dilations = ctx.ints_per_dim("dilations", n, 1, 1)
    pads, outs = window_pads(ctx, list(x.type.shape[2:]), kernel, strides, dilations,
                             bool(ctx.attr("ceil_mode", 0)))
    return kernel, strides, dilations, pads, outs


def _window(ctx: OpContext, x: Tensor, kind: str, init: float | int, kernel, strides,
            dilations, pads, outs) -> Tensor:
    """reduce_window over the spatial dims; extra trailing padding (of the init value)
    makes room for ceil_mode's last windows."""
    padding = []
    for i, (lo, hi), s, k, d, o in zip(x.type.shape[2:], pads, strides, kernel, dilations,
                                       outs):
        extra = max((o - 1) * s + (k - 1) * d + 1 - (i + lo + hi), 0)
        padding.append((lo, hi + extra))
    _check_padded(x, padding)
    y = ctx.node("reduce_window", [x, ctx.scalar(init, x)], kind=kind,
                 window=(1, 1, *kernel), strides=(1, 1, *strides),
                 base_dilations=(1,) * x.type.rank, window_dilations=(1, 1, *dilations),
                 padding=((0, 0), (0, 0), *padding))
    if tuple(y.type.shape[2:]) != tuple(outs):  # the extra padding made one window more
        for d, o in enumerate(outs, 2):
            y = slice_axis(ctx, y, d, 0, o)
    return y


def lowest(x: Tensor) -> float | int:
    """The identity of `maximum` for x's element type (what padding reads in a max)."""
    dt = x.type.dtype
    return -np.inf if dt.is_float else int(np.iinfo(dt.np_dtype).min)


def max_pool(ctx: OpContext) -> Tensor:
    """MaxPool (pads, strides, dilations, ceil_mode, auto_pad; not the Indices output)."""
    if len(ctx.info.outputs) > 1 and ctx.info.outputs[1]:
        raise Unsupported("the Indices output is not supported")
    if ctx.attr("storage_order", 0):
        raise Unsupported("storage_order=1 is not supported")
    x = ctx.input(0)
    return _window(ctx, x, "maximum", lowest(x), *pool_window(ctx, x))


def _tap_counts(size: int, k: int, s: int, d: int, lo: int, out: int, lower: int,
                upper: int) -> np.ndarray:
    """Per output position, how many window taps fall in [lower, upper): the taps t in
    [0, k) with lower <= base + t * d < upper, counted without listing them (a hostile
    kernel has 2**25 taps per position)."""
    base = np.arange(out, dtype=np.int64) * s - lo
    first = np.maximum(-((base - lower) // d), 0)  # ceil((lower - base) / d), at least 0
    stop = np.minimum(-((base - upper) // d), k)  # ceil((upper - base) / d), at most k
    return np.maximum(stop - first, 0)


def average_counts(ctx: OpContext, x: Tensor, kernel, strides, dilations, pads, outs
                   ) -> np.ndarray:
    """Per output position (shape (1, 1, *outs)), the divisor of an AveragePool: the taps
    in the input (count_include_pad=0) or in the input and its explicit padding (=1;
    ceil_mode's extra positions never count), as onnxruntime divides."""
    include = bool(ctx.attr("count_include_pad", 0))
    counts = np.ones((1, 1), np.int64)
    for i, k, s, d, (lo, hi), o in zip(x.type.shape[2:], kernel, strides, dilations, pads,
                                       outs):
        c = _tap_counts(i, k, s, d, lo, o, -lo if include else 0, i + hi if include else i)
        counts = np.multiply.outer(counts, c)
    counts = counts.reshape((1, 1, *outs))
    if np.any(counts == 0):
        raise Unsupported("a pooling window lies entirely in the padding")
    return counts


def window_sum(ctx: OpContext, x: Tensor, kernel, strides, dilations, pads, outs) -> Tensor:
    """The sum of each pooling window, padding read as 0."""
    return _window(ctx, x, "add", 0, kernel, strides, dilations, pads, outs)


def average_pool(ctx: OpContext) -> Tensor:
    """AveragePool: the window sum divided by average_counts."""
    x = ctx.input(0)
    if not x.type.dtype.is_float:
        raise Unsupported(f"AveragePool of {x.type.dtype}")
    window = pool_window(ctx, x)
    total = window_sum(ctx, x, *window)
    counts = average_counts(ctx, x, *window)
    shape = tuple(total.type.shape)
    if np.all(counts == counts.reshape(-1)[0]):
        divisor = ctx.filled(float(counts.reshape(-1)[0]), total)
    else:
        divisor = ctx.broadcast(ctx.constant(counts, x.type.dtype), shape)
    return ctx.node("divide", [total, divisor])


def global_pool(kind: str) -> Callable[[OpContext], Tensor]:
    """GlobalAveragePool / GlobalMaxPool: over every spatial dimension, kept as 1s."""

    def convert(ctx: OpContext) -> Tensor:
        x = ctx.input(0)
        shape = tuple(x.type.shape)
        if len(shape) < 3:
            raise Unsupported(f"an input of shape {list(shape)} has no spatial dimension")
        dims = tuple(range(2, len(shape)))
        init = 0 if kind == "add" else lowest(x)
        y = ctx.node("reduce", [x, ctx.scalar(init, x)], kind=kind, dims=dims)
        if kind == "add":
            if not x.type.dtype.is_float:
                raise Unsupported(f"GlobalAveragePool of {x.type.dtype}")
            y = ctx.node("divide", [y, ctx.filled(math.prod(shape[2:]), y)])
        return ctx.reshape(y, shape[:2] + (1,) * len(dims))

    convert.__doc__ = f"Global {'average' if kind == 'add' else 'max'} pooling."
    return convert


def lp_pool(ctx: OpContext) -> Tensor:
    """LpPool: (sum of |x|^p over each window)^(1 / p), padding read as 0 (p 2; the
    window attributes as MaxPool's)."""
    x = ctx.input(0)
    if not x.type.dtype.is_float:
        raise Unsupported(f"LpPool of element type {x.type.dtype}")
    p = ctx.attr("p", 2)
    if not isinstance(p, int) or p < 1:
        raise Unsupported(f"p={p} must be an integer >= 1")
    mag = ctx.node("abs", [x])
    powered = mag if p == 1 else ctx.node("power", [mag, ctx.filled(p, x)])
    total = window_sum(ctx, powered, *pool_window(ctx, x))
    if p == 1:
        return total
    if p == 2:
        return ctx.node("sqrt", [total])
    return ctx.node("power", [total, ctx.filled(1 / p, total)])


__all__ = ["add_channel_bias", "average_pool", "batch_normalization", "conv", "conv_float",
           "lp_pool", "conv_geometry", "conv_transpose", "gemm", "global_pool", "lowest", "matmul",
           "matmul_tensors", "max_pool", "nchw", "pool_window", "window_pads", "window_sum",
           "average_counts"]
