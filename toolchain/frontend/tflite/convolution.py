"""Shared pieces of the windowed layers: TFLite's SAME / VALID padding, NHWC
convolutions, bias adds and option checks.

TFLite's layouts map straight onto StableHLO's convolution dimension numbers: input
NHWC, CONV_2D filters OHWI, DEPTHWISE_CONV_2D filters 1HW(C*M) (a grouped convolution
with one group per input channel: output channel c*M + m reads input channel c), so
nothing is transposed. SAME / VALID padding is computed as TFLite computes it
(tensorflow/lite/kernels/padding.h): out = ceil(in / stride) for SAME, and the total
padding (out - 1) * stride + effective window - in, the smaller half before.
"""

from __future__ import annotations

import math

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor
from toolchain.graph.verify import MAX_TENSOR_BYTES
from toolchain.types import TensorType

NHWC = {"input_batch": 0, "input_feature": 3, "input_spatial": (1, 2),
        "output_batch": 0, "output_feature": 3, "output_spatial": (1, 2)}


def same_or_valid(kind: int, size: int, window: int, stride: int,
                  dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding of one spatial dimension for TFLite padding `kind`."""
    name = schema.PADDINGS.get(kind)
    if name not in ("SAME", "VALID"):
        raise Unsupported(f"unknown padding {kind}")
    effective = (window - 1) * dilation + 1
    out = -(-size // stride) if name == "SAME" else (size + stride - effective) // stride
    if out <= 0:
        raise Unsupported(f"a window of {effective} with VALID padding does not fit an input "
                          f"of {size}")
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def same_quantization(a: TensorType, b: TensorType) -> bool:
    """Whether two tensors hold values on one scale, as TFLite Micro judges it: the same
    zero points and scales within 1e-6 (its pooling kernels' check)."""
    if a.quant is None or b.quant is None:
        return a.quant is None and b.quant is None
    qa, qb = a.quant, b.quant
    return (qa.axis == qb.axis and qa.zero_points == qb.zero_points
            and len(qa.scales) == len(qb.scales)
            and all(abs(x - y) <= 1e-6 for x, y in zip(qa.scales, qb.scales)))


def positive(ctx: OpContext, *keys: str) -> tuple[int, ...]:
    values = tuple(int(ctx.option(k)) for k in keys)
    for k, v in zip(keys, values):
        if v < 1:
            raise Unsupported(f"{k} is {v}; it must be at least 1")
    return values


def require_rank(t: Tensor, rank: int, what: str) -> None:
    if t.type.rank != rank:
        raise Unsupported(f"the {what} has shape {list(t.type.shape)}; a rank-{rank} tensor "
                          "is expected")


def float_weights(ctx: OpContext, i: int, what: str) -> Tensor:
    w = ctx.input(i)
    if not w.type.dtype.is_float or w.type.dtype != ctx.input(0).type.dtype:
        raise Unsupported(f"{what} of element type {w.type.dtype} with {ctx.input(0).type.dtype} "
                          "activations (hybrid quantization) is not supported")
    return w


def add_bias(ctx: OpContext, y: Tensor, index: int, channel_dim: int) -> Tensor:
    """y + bias (input `index`, one value per output channel) when the operator has one."""
    if not ctx.has_input(index):
        return y
    b = ctx.input(index)
    channels = y.type.shape[channel_dim]
    if b.type.shape != (channels,):
        raise Unsupported(f"the bias has shape {list(b.type.shape)}; {channels} values (one "
                          "per output channel) are expected")
    if b.type.dtype != y.type.dtype:
        raise Unsupported(f"the bias has element type {b.type.dtype}, the output {y.type.dtype}")
    return ctx.node("add", [y, ctx.broadcast(b, y.type.shape, (channel_dim,))])


def _conv_padding(ctx: OpContext, x: Tensor, kh: int, kw: int, strides: tuple[int, int],
                  dilations: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    kind = ctx.option("padding")
    return (same_or_valid(kind, x.type.shape[1], kh, strides[0], dilations[0]),
            same_or_valid(kind, x.type.shape[2], kw, strides[1], dilations[1]))


def check_padded(x: Tensor, padding: tuple[tuple[int, int], ...], spatial: tuple[int, ...]
                 ) -> None:
    """Refuses a window whose padding would make the padded input larger than any minirt
    tensor may be (a huge dilation or window: TFLite itself skips the taps outside the
    input, but the reference materializes the padded input)."""
    shape = list(x.type.shape)
    for d, (lo, hi) in zip(spatial, padding):
        shape[d] += lo + hi
    size = math.prod(shape) * x.type.dtype.itemsize
    if size > MAX_TENSOR_BYTES:
        raise Unsupported(f"its window needs padding {[list(p) for p in padding]}, which makes "
                          f"the padded input {size} bytes; minirt tensors are limited to "
                          f"{MAX_TENSOR_BYTES} bytes")


def convolution(ctx: OpContext, x: Tensor, w: Tensor, kernel: dict, groups: int,
                 out_dtype: str) -> Tensor:
    strides = positive(ctx, "stride_h", "stride_w")
    dilations = positive(ctx, "dilation_h_factor", "dilation_w_factor")
    kh, kw = (w.type.shape[d] for d in kernel["kernel_spatial"])
    padding = _conv_padding(ctx, x, kh, kw, strides, dilations)  # type: ignore[arg-type]
    check_padded(x, padding, (1, 2))
    return ctx.node("convolution", [x, w], strides=strides, padding=padding,
                    lhs_dilation=(1, 1), rhs_dilation=dilations, **NHWC, **kernel,
                    feature_group_count=groups, batch_group_count=1, dtype=out_dtype)


OHWI = {"kernel_output": 0, "kernel_spatial": (1, 2), "kernel_input": 3}
DEPTHWISE = {"kernel_input": 0, "kernel_spatial": (1, 2), "kernel_output": 3}



__all__ = ["DEPTHWISE", "NHWC", "OHWI", "add_bias", "check_padded", "convolution",
           "float_weights", "positive", "require_rank", "same_or_valid", "same_quantization"]
