"""TRANSPOSE_CONV for float32 and int8 (the 16x8 form is int16.py's), and the geometry
all three share.

TFLite Micro's kernels scatter x[iy, ix] * w[oc, fy, fx] to out[iy * stride - pad + fy,
ix * stride - pad + fx]. The same sums gathered are a convolution of the input dilated
by the stride (lhs_dilation), padded by filter - 1 - pad before (and what makes the
declared output size after), with the filter flipped in space; taps that fall outside
the output are dropped by both. The inputs are (output shape, OHWI filter, input, bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.activations import (
    activation_name,
    apply_activation,
    quantized_range,
)
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.convolution import NHWC, positive, require_rank
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.int8 import _per_tensor, _weight_scales
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm
from toolchain.types import dtype


@dataclass(frozen=True)
class Geometry:
    """Where a TRANSPOSE_CONV's taps land: the declared output's [N, H, W, C], the
    filter's [O, H, W, I], the strides and TFLite Micro's leading padding per axis."""

    output: tuple[int, ...]
    filter: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[int, ...]

    def conv_attrs(self, in_hw: tuple[int, ...]) -> dict:
        """The gathered convolution's attributes (OHWI filter flipped in space by the
        caller): stride-dilated input, padding so the result is the declared size."""
        padding = []
        for d in range(2):
            k, s = self.filter[1 + d], self.strides[d]
            low = k - 1 - self.pads[d]
            dilated = (in_hw[d] - 1) * s + 1
            padding.append((low, self.output[1 + d] + k - 1 - low - dilated))
        return dict(strides=(1, 1), padding=tuple(padding), lhs_dilation=self.strides,
                    rhs_dilation=(1, 1), **NHWC, kernel_output=0, kernel_spatial=(1, 2),
                    kernel_input=3, feature_group_count=1, batch_group_count=1)


def padding_name(ctx: OpContext) -> str:
    """The operator's padding option's name, SAME or VALID."""
    name = schema.PADDINGS.get(ctx.option("padding"))
    if name not in ("SAME", "VALID"):
        raise Unsupported(f"unknown padding {ctx.option('padding')}")
    return name


def geometry(ctx: OpContext, filter_shape: tuple[int, ...]) -> Geometry:
    """Checks the output shape input against the output tensor and the filter against
    both, and computes TFLite Micro's padding (ComputePaddingHeightWidth on the *output*
    size, dilation 1)."""
    x, out = ctx.input(2), ctx.output_type()
    require_rank(x, 4, "input")
    # TFLite Micro's kernel reads the output tensor's dimensions, never this input's
    # values, so a model input here (the seanet models') is taken as the declared shape.
    shape = (list(out.shape) if ctx.info(0).data is None else
             [int(v) for v in ctx.value(0, "output shape").reshape(-1)])
    if shape != list(out.shape) or len(shape) != 4 or shape[0] != x.type.shape[0]:
        raise Unsupported(f"the output shape {shape} is not the output tensor's "
                          f"{list(out.shape)}")
    if len(filter_shape) != 4:
        raise Unsupported(f"the filter has shape {list(filter_shape)}; a rank-4 tensor is "
                          "expected")
    if filter_shape[3] != x.type.shape[3] or filter_shape[0] != shape[3]:
        raise Unsupported(f"filter shape {list(filter_shape)} does not map "
                          f"{x.type.shape[3]} to {shape[3]} channels")
    strides = positive(ctx, "stride_h", "stride_w")
    padding = padding_name(ctx)
    pads = tuple(tflm.compute_padding(shape[1 + d], filter_shape[1 + d], strides[d], 1,
                                      padding)[1] for d in range(2))
    for d in range(2):
        if (x.type.shape[1 + d] - 1) * strides[d] + 1 > shape[1 + d] + filter_shape[1 + d] - 1:
            raise Unsupported(f"the input's {x.type.shape[1 + d]} rows do not fit an output "
                              f"of {shape[1 + d]}")
    return Geometry(tuple(shape), tuple(filter_shape), strides, pads)


def _flipped(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(w[:, ::-1, ::-1, :])


def transpose_conv_float(ctx: OpContext) -> Tensor:
    """TRANSPOSE_CONV, float32: reference_ops::TransposeConv, then the bias and the
    fused activation."""
    x, out = ctx.input(2), ctx.output_type()
    info = ctx.info(1)
    if info.data is None or info.type != "FLOAT32":
        raise Unsupported("the filter must be a constant FLOAT32 tensor (TFLite Micro runs "
                          "no hybrid TRANSPOSE_CONV)")
    w = info.data.astype(np.float32)
    g = geometry(ctx, w.shape)
    y = ctx.node("convolution", [x, ctx.const(_flipped(w), "f32")],
                 **g.conv_attrs(x.type.shape[1:3]), dtype="f32")
    if ctx.has_input(3):
        b = ctx.input(3)
        if b.type.shape != (g.output[3],) or b.type.dtype.name != "f32":
            raise Unsupported(f"the bias is {b.type}; {g.output[3]} float32 values are "
                              "expected")
        y = ctx.node("add", [y, ctx.broadcast(b, y.type.shape, (3,))])
    if y.type.shape != out.shape:
        raise Unsupported(f"the result has shape {list(y.type.shape)}, the output "
                          f"{list(out.shape)}")
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


def transpose_conv_int8(ctx: OpContext) -> Tensor:
    """TRANSPOSE_CONV, int8 (per-channel symmetric filter, int32 bias):
    reference_integer_ops::TransposeConv. Its int32 scratch sums (x - input_zp) * w over
    the taps that land on an output; the holes the stride leaves and the border carry no
    tap, so the input zero point cannot move into the bias as CONV_2D's does: x - zp
    (int16) is what gets dilated, padded with zeros and convolved into int32. Then + bias
    and MultiplyByQuantizedMultiplier per channel, + output_zp, the activation clamp."""
    x, out = ctx.input(2), ctx.output_type()
    info = ctx.info(1)
    if info.data is None or info.type != "INT8":
        raise Unsupported("the filter must be a constant INT8 tensor")
    w = info.data.astype(np.int8)
    g = geometry(ctx, w.shape)
    if info.quant is not None and any(info.quant.zero_points):
        raise Unsupported("the filter has non-zero zero points; TFLite Micro's int8 kernel "
                          "ignores them")
    scales = _weight_scales(info, "filter", 0)
    in_scale, in_zp = _per_tensor(x.type, "input")
    out_scale, out_zp = _per_tensor(out, "output")
    mult, shift = tflm.conv_params(in_scale, scales, out_scale)
    channels = g.output[3]
    bias = None
    if ctx.has_input(3):
        binfo = ctx.info(3)
        if binfo.data is None or binfo.type != "INT32" or binfo.data.size != channels:
            raise Unsupported(f"the bias must be a constant INT32 tensor of {channels} values")
        bias = binfo.data.astype(np.int32).reshape(channels)
    lo, hi = quantized_range(activation_name(ctx.option("fused_activation_function")), out)
    b = GraphBuilder(ctx.graph)
    shape = tuple(x.type.shape)
    v = b.op("subtract", [b.op("convert", [x], dtype="i16"),
                          b.splat(in_zp, dtype("i16"), shape)])
    acc = b.op("convolution", [v, b.const(_flipped(w), dtype("i8"))],
               **g.conv_attrs(shape[1:3]), dtype="i32")
    if bias is not None:
        acc = b.op("add", [acc, b.along(bias, dtype("i32"), acc.type.shape, 3)])
    return build.requantize(b, acc, mult, shift, axis=3, output_zp=out_zp, act_min=lo,
                            act_max=hi, quant=out.quant)


__all__ = ["Geometry", "geometry", "padding_name", "transpose_conv_float",
           "transpose_conv_int8"]
