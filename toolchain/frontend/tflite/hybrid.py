"""Hybrid CONV_2D: float activations, int8 weights (TFLite's dynamic-range quantization).

A float model converted with weight-only quantization keeps float activations but
stores CONV_2D filters as int8 with one scale. TFLite then runs the hybrid kernel
(EvalHybrid in tensorflow/lite/kernels/conv.cc), which quantizes the activation on the
fly; its outputs (the float MLPerf Tiny KWS model's reference outputs among them) carry
that rounding, so the graph reproduces the same steps, in float32 where TFLite works in
float32:

    range  = max(|min x|, |max x|) over each batch element     (0 -> scale 1, q = 0)
    q      = clamp(round_half_away(x * (127 / range)), -127, 127)    int8
    acc    = convolution(q, filter) in int32                   (no zero points: symmetric)
    y      = float(acc) * ((range / 127) * filter_scale) + bias, then the fused activation

TFLite's hybrid kernel runs without dilation and without groups; filters with
per-channel scales take another kernel (asymmetric input quantization) that is not
reproduced here and is refused.
"""

from __future__ import annotations

from toolchain.frontend.tflite.activations import FLT_MAX, apply_activation
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.convolution import OHWI, add_bias, convolution
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor

# SymmetricQuantizeFloats maps [-range, range] onto [-127, 127].
_LEVELS = 127.0


def hybrid_conv_2d(ctx: OpContext) -> Tensor:
    """CONV_2D with a float input and an int8 filter, as TFLite's EvalHybrid computes it."""
    x = ctx.input(0)
    info = ctx.info(1)
    if info.data is None or info.quant is None:
        raise Unsupported("a hybrid CONV_2D needs a constant, quantized int8 filter")
    scales = set(info.quant.scales)
    if len(scales) != 1:
        # TFLite takes its per-channel hybrid kernel only when the scales differ.
        raise Unsupported("hybrid CONV_2D with per-channel filter scales is not supported")
    if ctx.option("dilation_h_factor") != 1 or ctx.option("dilation_w_factor") != 1:
        raise Unsupported("hybrid CONV_2D with dilation is not supported (TFLite's hybrid "
                          "kernel ignores the dilation)")
    if info.shape[3] != x.type.shape[3]:
        raise Unsupported("hybrid CONV_2D with groups is not supported")
    batch_dims = tuple(range(1, x.type.rank))
    hi = ctx.node("reduce", [x, ctx.scalar(-FLT_MAX, x)], kind="maximum", dims=batch_dims)
    lo = ctx.node("reduce", [x, ctx.scalar(FLT_MAX, x)], kind="minimum", dims=batch_dims)
    span = ctx.node("maximum", [ctx.node("abs", [lo]), ctx.node("abs", [hi])])
    empty = ctx.node("compare", [span, ctx.filled(0.0, span)], direction="EQ")
    span = ctx.node("select", [empty, ctx.filled(1.0, span), span])
    inverse = ctx.node("divide", [ctx.filled(_LEVELS, span), span])
    step = ctx.node("divide", [span, ctx.filled(_LEVELS, span)])
    step = ctx.node("multiply", [step, ctx.filled(float(info.quant.scales[0]), step)])
    scaled = ctx.node("multiply", [x, ctx.broadcast(inverse, x.type.shape, (0,))])
    q = ctx.node("clamp", [ctx.scalar(-_LEVELS, x), ctx.node("round_nearest_afz", [scaled]),
                           ctx.scalar(_LEVELS, x)])
    q = ctx.node("convert", [q], dtype="i8")
    # The raw stored filter, without its quantization: the product is plain integers.
    w = ctx.const(info.data, "i8")
    acc = convolution(ctx, q, w, OHWI, 1, "i32")
    y = ctx.node("convert", [acc], dtype=x.type.dtype.name)
    y = ctx.node("multiply", [y, ctx.broadcast(step, y.type.shape, (0,))])
    y = add_bias(ctx, y, 2, 3)
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


__all__ = ["hybrid_conv_2d"]
