"""Windowed and dense layers: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
AVERAGE_POOL_2D, MAX_POOL_2D, in NHWC as TFLite keeps them (padding and layouts:
convolution.py)."""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.activations import FLT_MAX, apply_activation
from toolchain.frontend.tflite.context import OpContext, int_range
from toolchain.frontend.tflite.convolution import (
    DEPTHWISE,
    OHWI,
    add_bias,
    check_padded,
    convolution,
    float_weights,
    positive,
    require_rank,
    same_or_valid,
    same_quantization,
)
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.hybrid import hybrid_conv_2d
from toolchain.graph.ir import Tensor


def conv_2d(ctx: OpContext) -> Tensor:
    """CONV_2D: filters OHWI, optional bias, grouped when the input has a multiple of the
    filter's input channels. Float filters, or int8 ones (a hybrid model: hybrid.py
    computes what TFLite's default interpreter, XNNPACK, does)."""
    x = ctx.input(0)
    w = ctx.input(1)
    require_rank(x, 4, "input")
    require_rank(w, 4, "filter")
    channels, per_group = x.type.shape[3], w.type.shape[3]
    # An empty input (0 channels) would make the group count 0, a division by zero.
    if 0 in (per_group, channels) or channels % per_group or \
            w.type.shape[0] % (channels // per_group):
        raise Unsupported(f"the filter's {per_group} input channels do not divide the input's "
                          f"{channels} into groups")
    if w.type.dtype.name == "i8" and x.type.dtype.name == "f32":
        return hybrid_conv_2d(ctx)
    w = float_weights(ctx, 1, "a filter")
    y = convolution(ctx, x, w, OHWI, channels // per_group, x.type.dtype.name)
    y = add_bias(ctx, y, 2, 3)
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


def depthwise_conv_2d(ctx: OpContext) -> Tensor:
    """DEPTHWISE_CONV_2D: filter [1, H, W, C * depth_multiplier]."""
    x, w = ctx.input(0), float_weights(ctx, 1, "a filter")
    require_rank(x, 4, "input")
    require_rank(w, 4, "filter")
    channels, outs = x.type.shape[3], w.type.shape[3]
    if w.type.shape[0] != 1 or channels == 0 or outs % channels:
        raise Unsupported(f"filter shape {list(w.type.shape)} is not [1, H, W, k x "
                          f"{channels}] for {channels} input channels")
    multiplier = ctx.option("depth_multiplier")
    if multiplier != outs // channels:
        raise Unsupported(f"depth_multiplier {multiplier} does not match the filter's "
                          f"{outs} output channels for {channels} input channels")
    y = convolution(ctx, x, w, DEPTHWISE, channels, x.type.dtype.name)
    y = add_bias(ctx, y, 2, 3)
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


def fully_connected(ctx: OpContext) -> Tensor:
    """FULLY_CONNECTED: weights [O, K]; the input is read as [numel / K, K]; the result
    is [rows, O], or the input's leading shape + [O] with keep_num_dims."""
    x, w = ctx.input(0), float_weights(ctx, 1, "weights")
    require_rank(w, 2, "weights")
    fmt = schema.WEIGHTS_FORMATS.get(ctx.option("weights_format"))
    if fmt != "DEFAULT":
        raise Unsupported(f"weights_format {fmt or ctx.option('weights_format')} is not "
                          "supported")
    outs, depth = w.type.shape
    n = x.type.num_elements
    if depth == 0 or n % depth or x.type.rank == 0:
        raise Unsupported(f"an input of shape {list(x.type.shape)} cannot be read as rows of "
                          f"the weights' {depth} columns")
    keep = bool(ctx.option("keep_num_dims"))
    if keep and x.type.shape[-1] != depth:
        raise Unsupported(f"keep_num_dims needs the input's last dimension "
                          f"({x.type.shape[-1]}) to be the weights' {depth} columns")
    rows = x if x.type.shape == (n // depth, depth) else ctx.reshape(x, (n // depth, depth))
    y = ctx.node("dot_general", [rows, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,),
                 rhs_contract=(1,), dtype=x.type.dtype.name)
    y = add_bias(ctx, y, 2, 1)
    y = apply_activation(ctx, y, ctx.option("fused_activation_function"))
    if keep and x.type.rank != 2:
        y = ctx.reshape(y, x.type.shape[:-1] + (outs,))
    return y


def _pool_window(ctx: OpContext, x: Tensor) -> dict:
    require_rank(x, 4, "input")
    fh, fw = positive(ctx, "filter_height", "filter_width")
    sh, sw = positive(ctx, "stride_h", "stride_w")
    kind = ctx.option("padding")
    ph = same_or_valid(kind, x.type.shape[1], fh, sh)
    pw = same_or_valid(kind, x.type.shape[2], fw, sw)
    check_padded(x, (ph, pw), (1, 2))
    return {"window": (1, fh, fw, 1), "strides": (1, sh, sw, 1),
            "base_dilations": (1, 1, 1, 1), "window_dilations": (1, 1, 1, 1),
            "padding": ((0, 0), ph, pw, (0, 0))}


def _valid_counts(size: int, window: int, stride: int, before: int, out: int) -> np.ndarray:
    """How many input positions each output's window covers along one dimension
    (TFLite's average excludes the padding from its count)."""
    start = np.arange(out) * stride - before
    return np.minimum(start + window, size) - np.maximum(start, 0)


def average_pool_2d(ctx: OpContext) -> Tensor:
    """AVERAGE_POOL_2D (float): window sum / number of input elements in the window."""
    x = ctx.input(0)
    if not x.type.dtype.is_float:
        raise Unsupported(f"{x.type.dtype} AVERAGE_POOL_2D is not supported")
    win = _pool_window(ctx, x)
    total = ctx.node("reduce_window", [x, ctx.scalar(0, x)], kind="add", **win)
    _, oh, ow, _ = total.type.shape
    counts = np.outer(
        _valid_counts(x.type.shape[1], win["window"][1], win["strides"][1],
                      win["padding"][1][0], oh),
        _valid_counts(x.type.shape[2], win["window"][2], win["strides"][2],
                      win["padding"][2][0], ow))
    if (counts == counts.flat[0]).all():  # no window reaches into padding
        divisor = ctx.filled(float(counts.flat[0]), total)
    else:
        divisor = ctx.broadcast(ctx.const(counts, x.type.dtype), total.type.shape, (1, 2))
    y = ctx.node("divide", [total, divisor])
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


def max_pool_2d(ctx: OpContext) -> Tensor:
    """MAX_POOL_2D on float or quantized tensors: the window's maximum over input
    positions (padding never wins: it holds the type's lowest value, which is also the
    start value, as TFLite's kernels start from it), then the fused activation, clamped
    in the stored domain for quantized tensors."""
    x = ctx.input(0)
    dt = x.type.dtype
    lowest = -FLT_MAX if dt.is_float else int_range(dt)[0]
    out = ctx.output_type()
    if not same_quantization(x.type, out):
        raise Unsupported("MAX_POOL_2D needs the same scale and zero point on its input and "
                          "output (TFLite Micro requires it)")
    y = ctx.node("reduce_window", [x, ctx.scalar(lowest, x)], kind="maximum",
                 **_pool_window(ctx, x))
    return apply_activation(ctx, y, ctx.option("fused_activation_function"), out)


__all__ = ["average_pool_2d", "conv_2d", "depthwise_conv_2d", "fully_connected", "max_pool_2d"]
