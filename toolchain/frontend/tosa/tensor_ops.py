"""TOSA's tensor operators: CONV2D, CONV3D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL
(and pre-1.0 FULLY_CONNECTED), AVG_POOL2D, MAX_POOL2D.

Layouts are TOSA's: NHWC / NDHWC activations, OHWI / ODHWI weights, [KH, KW, C, M]
depthwise weights (output channel c * M + m), all mapped onto the graph's convolution
with its dimension numbers. Integer convolutions accumulate (x - input_zp) * (w -
weight_zp) in i32: constant weights get their zero point subtracted at build time (and
are stored as i16 when that no longer fits i8), the input's zero point becomes a pad by
that zero point plus a constant per-channel correction, so the inner loop still
multiplies raw integers. TRANSPOSE_CONV2D is the convolution of the input dilated by the
stride with the flipped kernel. AVG_POOL2D on integers divides with TOSA's
reciprocal_scale and apply_scale_32, as the specification does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from toolchain.frontend.tosa.context import I32, I64, TosaError, TosaOp, int_range
from toolchain.frontend.tosa.elementwise import is_nan
from toolchain.frontend.tosa.rescale import apply_scale, reciprocal_scale
from toolchain.graph.ir import Tensor
from toolchain.types import DType, dtype

__all__ = ["CONVERTERS"]


def _weight_array(values: np.ndarray, zp: int) -> tuple[np.ndarray, DType]:
    """Constant integer weights minus their zero point, in the narrowest type that holds
    them (i8 when the zero point is 0)."""
    w = values.astype(np.int64) - int(zp)
    for name in ("i8", "i16", "i32"):
        dt = dtype(name)
        lo, hi = int_range(dt)
        if w.size == 0 or (w.min() >= lo and w.max() <= hi):
            return w.astype(dt.np_dtype), dt
    raise TosaError("weights minus their zero point do not fit 32 bits")


def _acc_dtype(t: TosaOp, x: Tensor) -> DType:
    """The accumulator type: acc_type when given, else i32 for integers and the result
    type for floats."""
    acc = t.type_attr("acc_type")
    if x.type.dtype.is_integer:
        if acc is not None and acc.name not in ("i32",):
            raise TosaError(f"acc_type {acc} is not supported for integer inputs (minirt "
                            "accumulates integers in i32)")
        return I32
    return acc if acc is not None and acc.is_float else t.result().dtype


def _convolution(t: TosaOp, *, weight: Tensor, prepare: Callable[[np.ndarray], np.ndarray],
                 prepare_node: Callable[[Tensor], Tensor], attrs: dict, channel_axis: int,
                 zero_point_pad: bool = True) -> Tensor:
    """(x - input_zp) conv (w - weight_zp) + bias, in the accumulator type, as the
    result type. `prepare` lays out constant weights (numpy), `prepare_node` the same for
    weights computed at run time; `attrs` are the graph convolution's."""
    x = t.input(0, "input")
    out = t.result()
    in_zp = t.zero_point(3, "input_zp", "input_zp")
    w_zp = t.zero_point(4, "weight_zp", "weight_zp")
    acc = _acc_dtype(t, x)
    spatial = attrs["input_spatial"]
    if acc.is_float:
        if in_zp or w_zp:
            raise TosaError("float convolutions take zero points 0")
        xs = t.convert(x, acc)
        ws = t.convert(prepare_node(weight), acc)
        result = t.node("convolution", [xs, ws], dtype=acc.name, **attrs)
    else:
        w_const = _constant_value(t.outer(weight))  # (also from outside a loop)
        if w_const is not None:
            w_np, w_dt = _weight_array(prepare(w_const), int(w_zp))
            ws = t.b.const(w_np, w_dt)
        else:
            ws = prepare_node(weight)
            if w_zp:
                ws = t.node("subtract", [t.convert(ws, I32),
                                         t.splat(int(w_zp), I32, ws.type.shape)])
        if in_zp and zero_point_pad and w_const is not None:
            # Pad by the zero point and take its share out per output channel, so the
            # inner loop reads raw int8 values.
            xs = _pad_spatial(t, x, attrs["padding"], int(in_zp), spatial)
            conv_attrs = dict(attrs, padding=tuple((0, 0) for _ in attrs["padding"]))
            result = t.node("convolution", [xs, ws], dtype=acc.name, **conv_attrs)
            sums = w_np.astype(np.int64).sum(axis=tuple(
                a for a in range(w_np.ndim) if a != attrs["kernel_output"]))
            correction = _wrap32(-int(in_zp) * sums)
            result = t.node("add", [result, t.b.along(correction, I32, result.type.shape,
                                                      channel_axis)])
        else:
            xs = x
            if in_zp:
                xs = t.node("subtract", [t.convert(x, I32), t.splat(int(in_zp), I32,
                                                                     x.type.shape)])
            result = t.node("convolution", [xs, ws], dtype=acc.name, **attrs)
    result = _add_bias(t, result, t.input(2, "bias"), channel_axis, acc)
    if tuple(result.type.shape) != tuple(out.shape):
        raise TosaError(f"computes shape {list(result.type.shape)}, not the declared "
                        f"{list(out.shape)}")
    return t.convert(result, out.dtype)


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((np.asarray(v, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _constant_value(t: Tensor) -> np.ndarray | None:
    node = t.producer
    if node is not None and node.op == "constant":
        return np.asarray(node.attrs["value"])
    return None


def _add_bias(t: TosaOp, acc: Tensor, bias: Tensor, axis: int, dt: DType) -> Tensor:
    """acc + bias per output channel (one value broadcast when the bias has one)."""
    shape = tuple(acc.type.shape)
    n = bias.type.num_elements
    flat = t.node("reshape", [t.convert(bias, dt)], shape=(n,) if n != 1 else ())
    if n == 1:
        b = t.node("broadcast_in_dim", [flat], dims=(), shape=shape)
    elif n == shape[axis]:
        b = t.node("broadcast_in_dim", [flat], dims=(axis,), shape=shape)
    else:
        raise TosaError(f"bias has {n} values for {shape[axis]} output channels")
    return t.node("add", [acc, b])


def _pad_spatial(t: TosaOp, x: Tensor, pads: Sequence[tuple[int, int]], value: int,
                 spatial: Sequence[int]) -> Tensor:
    if not any(lo or hi for lo, hi in pads):
        return x
    low, high = [0] * x.type.rank, [0] * x.type.rank
    for d, (lo, hi) in zip(spatial, pads):
        low[d], high[d] = lo, hi
    return t.node("pad", [x, t.b.const(value, x.type.dtype)], low=tuple(low),
                  high=tuple(high), interior=(0,) * x.type.rank)


def _pairs(values: Sequence[int], n: int, what: str) -> tuple[tuple[int, int], ...]:
    if len(values) != 2 * n:
        raise TosaError(f"'{what}' needs {2 * n} values, got {len(values)}")
    if any(v < 0 for v in values):
        raise TosaError(f"'{what}' values must not be negative")
    return tuple((values[2 * i], values[2 * i + 1]) for i in range(n))


def _conv_attrs(n: int, strides, padding, dilation, kernel: tuple[int, tuple, int],
                groups: int = 1, lhs_dilation=None) -> dict:
    """Graph convolution attributes for channels-last activations of n spatial dims;
    `kernel` = (kernel_output, kernel_spatial, kernel_input)."""
    spatial = tuple(range(1, n + 1))
    return dict(strides=tuple(strides), padding=tuple(padding),
                lhs_dilation=tuple(lhs_dilation or (1,) * n), rhs_dilation=tuple(dilation),
                input_batch=0, input_feature=n + 1, input_spatial=spatial,
                kernel_output=kernel[0], kernel_spatial=kernel[1], kernel_input=kernel[2],
                output_batch=0, output_feature=n + 1, output_spatial=spatial,
                feature_group_count=groups, batch_group_count=1)


def _conv(n: int) -> Callable[[TosaOp], Tensor]:
    """CONV2D (n = 2) and CONV3D (n = 3): OHWI / ODHWI weights."""

    def convert(t: TosaOp) -> Tensor:
        w = t.input(1, "weight")
        pad = _pairs(t.ints("pad"), n, "pad")
        attrs = _conv_attrs(n, t.ints("stride"), pad, t.ints("dilation"),
                            (0, tuple(range(1, n + 1)), n + 1))
        return _convolution(t, weight=w, prepare=lambda a: a, prepare_node=lambda v: v,
                            attrs=attrs, channel_axis=n + 1)

    return convert


def _rank4(t: TosaOp, i: int, what: str, layout: str) -> tuple[int, ...]:
    shape = tuple(t.input(i, what).type.shape)
    if len(shape) != 4:
        raise TosaError(f"{what} must be {layout} (rank 4), not {list(shape)}")
    return shape


def _depthwise_conv2d(t: TosaOp) -> Tensor:
    """DEPTHWISE_CONV2D: [KH, KW, C, M] weights as [KH, KW, 1, C * M], one group per
    input channel."""
    w = t.input(1, "weight")
    kh, kw, c, m = _rank4(t, 1, "weight", "[KH, KW, C, M]")
    pad = _pairs(t.ints("pad"), 2, "pad")
    attrs = _conv_attrs(2, t.ints("stride"), pad, t.ints("dilation"), (3, (0, 1), 2),
                        groups=c)
    flat = (kh, kw, 1, c * m)
    return _convolution(t, weight=w, prepare=lambda a: a.reshape(flat),
                        prepare_node=lambda v: t.node("reshape", [v], shape=flat),
                        attrs=attrs, channel_axis=3)


def _transpose_conv2d(t: TosaOp) -> Tensor:
    """TRANSPOSE_CONV2D: out[oy, ox] += x[iy, ix] * w[ky, kx] where oy = iy * stride_y +
    out_pad_top + ky: the input dilated by the stride, padded by K - 1 + out_pad, against
    the spatially flipped OHWI kernel."""
    w = t.input(1, "weight")
    _, kh, kw, _ = _rank4(t, 1, "weight", "OHWI")
    top, bottom, left, right = _four(t.ints("out_pad"), "out_pad")
    if min(top, bottom) <= -kh or min(left, right) <= -kw:
        raise TosaError("out_pad must be greater than minus the kernel size")
    stride = t.ints("stride")
    padding = ((kh - 1 + top, kh - 1 + bottom), (kw - 1 + left, kw - 1 + right))
    attrs = _conv_attrs(2, (1, 1), padding, (1, 1), (0, (1, 2), 3), lhs_dilation=stride)
    return _convolution(t, weight=w, prepare=lambda a: np.flip(a, (1, 2)),
                        prepare_node=lambda v: t.node("reverse", [v], dims=(1, 2)),
                        attrs=attrs, channel_axis=3, zero_point_pad=False)


def _four(values: Sequence[int], what: str) -> tuple[int, int, int, int]:
    if len(values) != 4:
        raise TosaError(f"'{what}' needs 4 values, got {len(values)}")
    return values[0], values[1], values[2], values[3]


def _matmul(t: TosaOp, transposed: bool = False) -> Tensor:
    """MATMUL [N, H, C] x [N, C, W] -> [N, H, W], (a - a_zp) * (b - b_zp) summed in the
    result type; MATMUL_T takes b as [N or 1, W, C]."""
    a, b = t.input(0, "a"), t.input(1, "b")
    out = t.result()
    a_zp = t.zero_point(2, "a_zp", "a_zp")
    b_zp = t.zero_point(3, "b_zp", "b_zp")
    acc = out.dtype
    if acc.is_float:
        if a_zp or b_zp:
            raise TosaError("float MATMUL takes zero points 0")
        a, b = t.convert(a, acc), t.convert(b, acc)
    else:
        acc = I64 if out.dtype.bits > 32 else I32
        if a_zp:
            a = t.node("subtract", [t.convert(a, acc), t.splat(int(a_zp), acc, a.type.shape)])
        if b_zp:
            b = t.node("subtract", [t.convert(b, acc), t.splat(int(b_zp), acc, b.type.shape)])
    n, m = a.type.shape[0], b.type.shape[0]
    if m == 1 and n > 1:  # MATMUL_T broadcasts a batch of one
        b = t.node("broadcast_in_dim", [b], dims=(0, 1, 2), shape=(n, *b.type.shape[1:]))
    elif n != m:
        raise TosaError(f"batch sizes differ: {n} and {m}")
    result = t.node("dot_general", [a, b], lhs_batch=(0,), rhs_batch=(0,),
                    lhs_contract=(2,), rhs_contract=(2 if transposed else 1,),
                    dtype=acc.name)
    return t.convert(result, out.dtype)


def _fully_connected(t: TosaOp) -> Tensor:
    """Pre-1.0 FULLY_CONNECTED: [N, IC] x [OC, IC]^T + bias[OC]."""
    x, w = t.input(0, "input"), t.input(1, "weight")
    out = t.result()
    acc = _acc_dtype(t, x)
    x, w = t.convert(x, acc) if acc.is_float else x, t.convert(w, acc) if acc.is_float else w
    result = t.node("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,),
                    rhs_contract=(1,), dtype=acc.name)
    return t.convert(_add_bias(t, result, t.input(2, "bias"), 1, acc), out.dtype)


# The *_ADAPTIVE pools take kernel, stride and pad as shape operands from this index.
_ADAPTIVE = {"tosa.max_pool2d_adaptive": 1, "tosa.avg_pool2d_adaptive": 3}


def _pool_geometry(t: TosaOp) -> tuple[tuple[int, int], tuple[int, int],
                                       tuple[tuple[int, int], ...]]:
    first = _ADAPTIVE.get(t.op.name)
    if first is None:
        kernel, stride, pad4 = t.ints("kernel"), t.ints("stride"), t.ints("pad")
    else:
        kernel, stride, pad4 = (t.shape(first + i, what) for i, what in
                                enumerate(("kernel", "stride", "pad")))
    pad = _pairs(pad4, 2, "pad")
    if len(kernel) != 2 or len(stride) != 2 or min(kernel) < 1 or min(stride) < 1:
        raise TosaError("kernel and stride take two values of at least 1")
    if pad[0][0] >= kernel[0] or pad[0][1] >= kernel[0] or pad[1][0] >= kernel[1] \
            or pad[1][1] >= kernel[1]:
        raise TosaError("padding must be smaller than the kernel")
    return (kernel[0], kernel[1]), (stride[0], stride[1]), pad


def _window(t: TosaOp, x: Tensor, init: Tensor, kind: str) -> Tensor:
    kernel, stride, pad = _pool_geometry(t)
    return t.node("reduce_window", [x, init], kind=kind, window=(1, *kernel, 1),
                  strides=(1, *stride, 1), base_dilations=(1,) * 4,
                  window_dilations=(1,) * 4, padding=((0, 0), *pad, (0, 0)))


def _max_pool2d(t: TosaOp) -> Tensor:
    """MAX_POOL2D: the window maximum over in-image taps (padding never wins); with
    nan_mode IGNORE NaNs lose, and an all-NaN window gives NaN."""
    x = t.input(0, "input")
    dt = x.type.dtype
    if dt.is_float:
        lowest = t.b.const(-np.inf, dt)
        if t.nan_mode() == "IGNORE":
            nan = is_nan(t, x)
            clean = t.node("select", [nan, t.splat(-np.inf, dt, x.type.shape), x])
            pooled = _window(t, clean, lowest, "maximum")
            all_nan = _window(t, nan, t.b.const(True, nan.type.dtype), "and")
            return t.node("select", [all_nan, t.splat(np.nan, dt, pooled.type.shape),
                                     pooled])
        return _window(t, x, lowest, "maximum")
    return _window(t, x, t.b.const(int_range(dt)[0], dt), "maximum")


def _avg_pool2d(t: TosaOp) -> Tensor:
    """AVG_POOL2D: the mean of the in-image taps. Floats: sum / count. Integers: the
    spec's sum of (x - input_zp) in i32, apply_scale_32 by reciprocal_scale(count),
    + output_zp, saturated."""
    x = t.input(0, "input")
    out = t.result()
    dt = x.type.dtype
    in_zp = t.zero_point(1, "input_zp", "input_zp")
    out_zp = t.zero_point(2, "output_zp", "output_zp")
    kernel, stride, pad = _pool_geometry(t)
    n, h, w, c = x.type.shape
    oh = (h + pad[0][0] + pad[0][1] - kernel[0]) // stride[0] + 1
    ow = (w + pad[1][0] + pad[1][1] - kernel[1]) // stride[1] + 1
    count = np.outer(_taps(h, kernel[0], stride[0], pad[0][0], oh),
                     _taps(w, kernel[1], stride[1], pad[1][0], ow))
    oshape = (n, oh, ow, c)

    def per_position(values: np.ndarray, at: DType) -> Tensor:
        grid = t.b.const(np.asarray(values).reshape(1, oh, ow, 1), at)
        return t.node("broadcast_in_dim", [grid], dims=(0, 1, 2, 3), shape=oshape)

    if dt.is_float:
        if in_zp or out_zp:
            raise TosaError("float AVG_POOL2D takes zero points 0")
        acc = t.type_attr("acc_type") or dt
        acc = acc if acc.is_float else dt
        total = _window(t, t.convert(x, acc), t.b.const(0.0, acc), "add")
        return t.convert(t.node("divide", [total, per_position(count, acc)]), out.dtype)
    if (in_zp or out_zp) and dt.bits != 8:
        raise TosaError(f"zero points are only allowed for i8, not {dt}")
    v = t.convert(x, I32)
    if in_zp:
        v = t.node("subtract", [v, t.splat(int(in_zp), I32, x.type.shape)])
    total = t.convert(_window(t, v, t.b.const(0, I32), "add"), I64)
    scales = [reciprocal_scale(int(k)) for k in count.reshape(-1)]
    mult = np.array([m for m, _ in scales], np.int64).reshape(count.shape)
    shift = np.array([s for _, s in scales], np.int64).reshape(count.shape)
    scaled = apply_scale(t, total, mult, shift, False, lambda a: per_position(a, I64))
    if out_zp:
        scaled = t.node("add", [scaled, t.splat(int(out_zp), I64, oshape)])
    lo, hi = int_range(out.dtype)
    clamped = t.node("clamp", [t.b.const(lo, I64), scaled, t.b.const(hi, I64)])
    return t.convert(clamped, out.dtype)


def _taps(size: int, window: int, stride: int, low: int, out: int) -> np.ndarray:
    """How many taps of each output's window lie inside [0, size)."""
    starts = np.arange(out) * stride - low
    return np.minimum(starts + window, size) - np.maximum(starts, 0)


CONVERTERS: dict[str, Callable[[TosaOp], Tensor]] = {
    "tosa.conv2d": _conv(2),
    "tosa.conv3d": _conv(3),
    "tosa.depthwise_conv2d": _depthwise_conv2d,
    "tosa.transpose_conv2d": _transpose_conv2d,
    "tosa.matmul": _matmul,
    "tosa.matmul_t": lambda t: _matmul(t, transposed=True),
    "tosa.fully_connected": _fully_connected,
    "tosa.max_pool2d": _max_pool2d,
    "tosa.avg_pool2d": _avg_pool2d,
    "tosa.max_pool2d_adaptive": _max_pool2d,
    "tosa.avg_pool2d_adaptive": _avg_pool2d,
}
