"""Hybrid CONV_2D: float activations, int8 filters (TFLite's dynamic-range quantization).

A float model converted with weight-only quantization keeps float activations but
stores CONV_2D filters as int8 with one scale per tensor or per output channel. Whoever
runs it quantizes the activation on the fly, and the rounding of that step is visible
in the outputs (1e-3 and more on the float MLPerf Tiny KWS model), so minirt has to pick
whose rounding it reproduces.

What minirt promises: the result of TFLite's default interpreter. `tf.lite.Interpreter`
and LiteRT (`ai_edge_litert`) apply their XNNPACK delegate to float models unless told
not to, and XNNPACK takes every hybrid CONV_2D minirt accepts: it declines only the
TANH and SIGN_BIT fused activations (refused by activations.py) and subnormal filter
scales (refused here), which TFLite then leaves to its own kernel. That is what a user
sees and what wrote the .npz outputs beside the MLPerf Tiny models. TFLite's own
hybrid kernel (EvalHybrid: symmetric per-batch quantization, rounding half away from
zero) only runs with the delegate switched off, and differs from it by up to 4e-3 on
KWS, so it is not what minirt computes. Neither interpreter runs a hybrid CONV_2D
without a bias (TFLite's Prepare rejects it), so minirt refuses that too.

XNNPACK's arithmetic (its "qd8" path: dynamically quantized int8 input, per-channel int8
filter, float output), in float32 throughout:

1.  Which elements share one set of parameters. A 1x1 convolution with stride 1, one
    group and more than two channels in and out together is rewritten by XNNPACK into a
    fully connected layer, whose input is quantized per row: one set per pixel. Every
    other convolution quantizes each batch element (image) as a whole.
2.  The range always holds 0: rmin = min(0, min x), rmax = max(0, max x).
3.  scale = 255 / (rmax - rmin), or 1 when rmax == rmin (an all-zero input).
4.  The zero point comes from whichever end gives the positive error sum:
        dmin, dmax = rmin * scale, rmax * scale
        zp = -128 - dmin  if (-128 + dmin) + (127 + dmax) > 0  else  127 - dmax
    clamped to [-128, 127] and rounded to nearest, ties to even (lrintf).
5.  q = clamp(round_half_even(x * scale) + zp, -128, 127), int8.
6.  acc = sum over the window of (q - zp) * w, in int32. Taps that fall into the
    padding contribute nothing (XNNPACK fills its padding buffer with zp and starts the
    accumulator at -zp * sum(w)). The filter's zero point takes no part.
7.  y = ((float(acc) * (1 / scale)) * filter_scale[o]) + bias[o], then the fused
    activation's clamp.

How the graph forms these integers. A convolution whose window never reaches the
padding multiplies q (int8) with the stored filter into int32 and subtracts
zp * sum(w) per output channel afterwards, as XNNPACK does. Where the window does reach
the padding, padded taps must count as q = zp, which differs per image, so there
q - zp (between -255 and 255) is formed once as int16 and convolved with plain zero
padding: the same integers either way. Where XNNPACK computes a parameter from a
constant (255 / span, 1 / scale), the graph divides by a tensor of ones made as
span / span: a constant of the parameters' shape (one value per pixel) would be folded
into a table in flash, while span / span is two more divisions per pixel. An all-zero
input gets a huge finite scale rather than 1; every value it leads to (zp = 127,
q = zp, acc = 0) is the same. Only a range narrower than 255 / FLT_MAX, where
XNNPACK's own scale overflows to infinity, ends differently.

The x86-64 wheel of ai-edge-litert 2.3.0 agrees with this to float32 rounding of the
last multiply-add (tests/frontend/tflite/test_tflite_hybrid.py).
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.activations import apply_activation
from toolchain.frontend.tflite.context import OpContext, tensor_type
from toolchain.frontend.tflite.convolution import (
    OHWI,
    add_bias,
    convolution,
    positive,
    same_or_valid,
)
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor

# The int8 range XNNPACK maps the activation range onto.
_QMIN, _QMAX = -128.0, 127.0
# The smallest normal float32: XNNPACK declines filter scales below it (and TFLite then
# falls back to EvalHybrid, which minirt does not reproduce).
_MIN_NORMAL = float(np.finfo(np.float32).tiny)
# The narrowest range whose scale 255 / span is finite in float32.
_MIN_SPAN = float(np.nextafter(np.float32(255.0) / np.finfo(np.float32).max, np.float32(1)))


def _filter_scales(ctx: OpContext) -> np.ndarray:
    """The filter's scale per output channel (float32), checked as XNNPACK checks it."""
    info = ctx.info(1)
    if info.data is None or info.quant is None:
        raise Unsupported("a hybrid CONV_2D needs a constant, quantized int8 filter")
    quant = tensor_type(info).quant
    assert quant is not None  # an int8 tensor with quantization parameters
    if any(z != 0 for z in quant.zero_points):
        raise Unsupported(f"a hybrid CONV_2D's filter must have zero point 0, not "
                          f"{list(quant.zero_points)}: TFLite ignores it, so the result "
                          "would differ from either the model or TFLite")
    if quant.axis not in (None, 0):
        raise Unsupported(f"a hybrid CONV_2D's filter is quantized along dimension "
                          f"{quant.axis}; per-channel scales must run along the output "
                          "channels (dimension 0)")
    if min(quant.scales) < _MIN_NORMAL:
        raise Unsupported(f"a hybrid CONV_2D's filter scale {min(quant.scales)} is "
                          "subnormal; TFLite's XNNPACK path takes normal scales only")
    return np.broadcast_to(np.asarray(quant.scales, np.float32), (info.shape[0],))


def _per_pixel(ctx: OpContext, x: Tensor, groups: int) -> bool:
    """Whether XNNPACK runs this convolution as a fully connected layer, quantizing its
    input per pixel rather than per image (see the module docstring, step 1)."""
    outs, kh, kw, _ = ctx.info(1).shape
    strides = positive(ctx, "stride_h", "stride_w")
    return ((kh, kw) == (1, 1) and strides == (1, 1) and groups == 1
            and x.type.shape[3] + outs > 2)


def _reaches_padding(ctx: OpContext, x: Tensor) -> bool:
    """Whether some window of the convolution covers padding."""
    _, kh, kw, _ = ctx.info(1).shape
    strides = positive(ctx, "stride_h", "stride_w")
    dilations = positive(ctx, "dilation_h_factor", "dilation_w_factor")
    kind = ctx.option("padding")
    return any(same_or_valid(kind, size, k, s, d) != (0, 0) for size, k, s, d in
               zip(x.type.shape[1:3], (kh, kw), strides, dilations))


def _parameters(ctx: OpContext, x: Tensor, kept: tuple[int, ...]
                ) -> tuple[Tensor, Tensor, Tensor]:
    """XNNPACK's (scale, zero point, 1 / scale) of each group of elements of x that
    keeps the dimensions `kept` (steps 2 to 4; the zero point as a float)."""
    dims = tuple(d for d in range(x.type.rank) if d not in kept)
    # Reducing from 0 includes 0 in the range (step 2).
    rmin = ctx.node("reduce", [x, ctx.scalar(0.0, x)], kind="minimum", dims=dims)
    rmax = ctx.node("reduce", [x, ctx.scalar(0.0, x)], kind="maximum", dims=dims)
    span = ctx.node("subtract", [rmax, rmin])
    span = ctx.node("clamp", [ctx.scalar(_MIN_SPAN, span), span,
                              ctx.scalar(float("inf"), span)])
    ones = ctx.node("divide", [span, span])
    levels = ctx.node("multiply", [ones, ctx.filled(_QMAX - _QMIN, ones)])
    scale = ctx.node("divide", [levels, span])
    low = ctx.node("multiply", [rmin, scale])
    high = ctx.node("multiply", [rmax, scale])
    # (-128 + low) + (127 + high) > 0 exactly when 127 + high > -(-128 + low), and
    # negating a rounded sum gives the rounded negated sum: 128 - low.
    from_low = ctx.node("subtract", [ctx.filled(-_QMIN, low), low])
    from_high = ctx.node("add", [ctx.filled(_QMAX, high), high])
    low_side = ctx.node("compare", [from_high, from_low], direction="GT")
    zp = ctx.node("select", [low_side, ctx.node("subtract", [ctx.filled(_QMIN, low), low]),
                             ctx.node("subtract", [ctx.filled(_QMAX, high), high])])
    zp = ctx.node("clamp", [ctx.scalar(_QMIN, zp), zp, ctx.scalar(_QMAX, zp)])
    zp = ctx.node("round_nearest_even", [zp])
    return scale, zp, ctx.node("divide", [ones, scale])


def hybrid_conv_2d(ctx: OpContext) -> Tensor:
    """CONV_2D with a float input and an int8 filter, as TFLite's default interpreter
    (its XNNPACK delegate) computes it."""
    x = ctx.input(0)
    scales = _filter_scales(ctx)
    if not ctx.has_input(2):
        raise Unsupported("a hybrid CONV_2D without a bias is not supported (TFLite's "
                          "interpreter refuses it too)")
    filt = ctx.info(1).data
    assert filt is not None  # _filter_scales checked it
    groups = x.type.shape[3] // filt.shape[3]
    kept = (0, 1, 2) if _per_pixel(ctx, x, groups) else (0,)
    scale, zp, inverse = _parameters(ctx, x, kept)

    # Step 5, in float32: whole numbers in [-128, 127].
    zp_x = ctx.broadcast(zp, x.type.shape, kept)
    q = ctx.node("round_nearest_even", [
        ctx.node("multiply", [x, ctx.broadcast(scale, x.type.shape, kept)])])
    q = ctx.node("clamp", [ctx.scalar(_QMIN, x), ctx.node("add", [q, zp_x]),
                           ctx.scalar(_QMAX, x)])
    # Step 6. The raw stored filter, without its quantization: plain integer products.
    w = ctx.const(filt, "i8")
    if _reaches_padding(ctx, x):
        centred = ctx.node("convert", [ctx.node("subtract", [q, zp_x])], dtype="i16")
        acc = convolution(ctx, centred, w, OHWI, groups, "i32")
    else:
        acc = convolution(ctx, ctx.node("convert", [q], dtype="i8"), w, OHWI, groups, "i32")
        sums = ctx.const(filt.astype(np.int64).sum(axis=(1, 2, 3)), "i32")
        zp_i = ctx.broadcast(ctx.node("convert", [zp], dtype="i32"), acc.type.shape, kept)
        acc = ctx.node("subtract", [acc, ctx.node(
            "multiply", [zp_i, ctx.broadcast(sums, acc.type.shape, (3,))])])

    # Step 7.
    y = ctx.node("convert", [acc], dtype=x.type.dtype.name)
    y = ctx.node("multiply", [y, ctx.broadcast(inverse, y.type.shape, kept)])
    if len(set(scales.tolist())) == 1:
        per_channel = ctx.filled(float(scales[0]), y)
    else:
        per_channel = ctx.broadcast(ctx.const(scales, y.type.dtype), y.type.shape, (3,))
    y = ctx.node("multiply", [y, per_channel])
    y = add_bias(ctx, y, 2, 3)
    return apply_activation(ctx, y, ctx.option("fused_activation_function"))


__all__ = ["hybrid_conv_2d"]
