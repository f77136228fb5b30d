"""The 16x8 operators (int16 activations, int8 weights): TFLite Micro's kernels, bit for bit.

Each converter derives the integer parameters as TFLite Micro's Prepare does
(toolchain/quant/tflm16.py) and builds the reference kernel's arithmetic from graph
primitives (toolchain/quant/build16.py, build.py); docs/int16.md lists them. Data
movement (PAD, STRIDED_SLICE, ...) is shape_ops' converter, shared with int8.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.activations import activation_name, quantized_range
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.convolution import (
    positive,
    require_rank,
    same_or_valid,
    same_quantization,
)
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.int8 import _weight_scales, mean_or_sum
from toolchain.frontend.tflite.int8 import _weights as _int8_or_int4_weights
from toolchain.frontend.tflite.reader import TensorInfo
from toolchain.frontend.tflite.schema import WEIGHTS_FORMATS
from toolchain.frontend.tflite.transpose_conv import geometry as transpose_geometry
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, build16, tflm, tflm16, tflm16_lut, tflm16_softmax
from toolchain.types import TensorType

# The schema's TensorType value INT32 (a CONV_2D's quantized_bias_type option).
TENSOR_TYPE_INT32 = next(k for k, v in schema.TENSOR_TYPES.items() if v == "INT32")


def _weights(ctx: OpContext, i: int, what: str) -> tuple[np.ndarray, TensorInfo]:
    """Constant INT8 weights: TFLite Micro's 16x8 kernels take no INT4 ones."""
    if ctx.info(i).type == "INT4":
        raise Unsupported(f"the {what} is INT4; TFLite Micro's 16x8 kernels take INT8 weights "
                          "only")
    return _int8_or_int4_weights(ctx, i, what)


def _per_tensor(t: TensorType, what: str, types: tuple[str, ...] = ("i16",)) -> tuple[float, int]:
    q = t.quant
    if q is None or t.dtype.name not in types:
        want = " or ".join(types)
        raise Unsupported(f"the {what} is {t}; a {want} quantized tensor is expected")
    if q.axis is not None:
        raise Unsupported(f"the {what} must be quantized per tensor")
    return q.scales[0], q.zero_points[0]


def _symmetric(t: TensorType, what: str) -> float:
    """The scale of a 16x8 activation, whose zero point TFLite Micro requires to be 0."""
    scale, zp = _per_tensor(t, what)
    if zp != 0:
        raise Unsupported(f"the int16 {what} has zero point {zp}; TFLite Micro's 16x8 kernels "
                          "require 0")
    return scale


def _bias(ctx: OpContext, i: int, channels: int, types: tuple[str, ...]
          ) -> tuple[np.ndarray | None, str | None]:
    """A constant bias of one of `types` (values widened to int64) and its type."""
    if not ctx.has_input(i):
        return None, None
    info = ctx.info(i)
    if info.data is None or info.type not in types or info.data.size != channels:
        raise Unsupported(f"the bias must be a constant {' or '.join(types)} tensor of "
                          f"{channels} values")
    return info.data.astype(np.int64).reshape(channels), info.type


def _activation(ctx: OpContext, out: TensorType) -> tuple[int, int]:
    return quantized_range(activation_name(ctx.option("fused_activation_function")), out)


def _filter(ctx: OpContext, i: int, in_channels: int) -> tuple[np.ndarray, list[float]]:
    w, winfo = _weights(ctx, i, "filter")
    if w.ndim != 4:
        raise Unsupported(f"the filter has shape {list(w.shape)}; a rank-4 tensor is expected")
    if w.shape[3] == 0 or in_channels % w.shape[3]:
        raise Unsupported(f"the filter's {w.shape[3]} input channels do not divide the input's "
                          f"{in_channels}")
    return w, _weight_scales(winfo, "filter", 0)


def conv_2d(ctx: OpContext) -> Tensor:
    """CONV_2D 16x8: TFLite Micro's ConvPerChannel with an int64 accumulator and bias."""
    x, out = ctx.input(0), ctx.output_type()
    require_rank(x, 4, "input")
    w, scales = _filter(ctx, 1, x.type.shape[3])
    mult, shift = tflm.conv_params(_symmetric(x.type, "input"), scales,
                                   _symmetric(out, "output"))
    strides = positive(ctx, "stride_h", "stride_w")
    dilations = positive(ctx, "dilation_h_factor", "dilation_w_factor")
    kind = ctx.option("padding")
    padding = (same_or_valid(kind, x.type.shape[1], w.shape[1], strides[0], dilations[0]),
               same_or_valid(kind, x.type.shape[2], w.shape[2], strides[1], dilations[1]))
    lo, hi = _activation(ctx, out)
    bias, kind = _bias(ctx, 2, w.shape[0], ("INT64", "INT32"))
    int32_acc = _int32_bias(ctx, kind)
    return build16.conv2d(GraphBuilder(ctx.graph), x, w, bias, strides=strides,
                          padding=padding, dilations=dilations, multipliers=mult,
                          shifts=shift, act_min=lo, act_max=hi, int32_accumulator=int32_acc,
                          quant=out.quant)


def _int32_bias(ctx: OpContext, kind: str | None) -> bool:
    """Whether TFLite Micro instantiates the kernel with an int32 accumulator: for an
    INT32 bias, or none when the options say the bias type would be INT32."""
    return kind == "INT32" or (kind is None and
                               ctx.op.options.get("quantized_bias_type") == TENSOR_TYPE_INT32)


def depthwise_conv_2d(ctx: OpContext) -> Tensor:
    """DEPTHWISE_CONV_2D 16x8: TFLite Micro's DepthwiseConvPerChannel (int16), int64
    products and bias, the int64 requantization."""
    x, out = ctx.input(0), ctx.output_type()
    require_rank(x, 4, "input")
    w, winfo = _weights(ctx, 1, "filter")
    if w.ndim != 4 or w.shape[0] != 1 or w.shape[3] % x.type.shape[3]:
        raise Unsupported(f"filter shape {list(w.shape)} is not [1, H, W, k x "
                          f"{x.type.shape[3]}]")
    mult, shift = tflm.conv_params(_symmetric(x.type, "input"),
                                   _weight_scales(winfo, "filter", 3),
                                   _symmetric(out, "output"))
    strides = positive(ctx, "stride_h", "stride_w")
    dilations = positive(ctx, "dilation_h_factor", "dilation_w_factor")
    kind = ctx.option("padding")
    padding = (same_or_valid(kind, x.type.shape[1], w.shape[1], strides[0], dilations[0]),
               same_or_valid(kind, x.type.shape[2], w.shape[2], strides[1], dilations[1]))
    lo, hi = _activation(ctx, out)
    # TFLite Micro reads a 16x8 depthwise bias as int64 whatever its type says.
    bias, _ = _bias(ctx, 2, w.shape[3], ("INT64",))
    return build16.conv2d(GraphBuilder(ctx.graph), x, w, bias, strides=strides,
                          padding=padding, dilations=dilations, multipliers=mult,
                          shifts=shift, act_min=lo, act_max=hi, depthwise=True,
                          quant=out.quant)


def fully_connected(ctx: OpContext) -> Tensor:
    """FULLY_CONNECTED 16x8: TFLite Micro's FullyConnected(PerChannel) with int16 input
    and output, int8 weights, an int64 accumulator (an INT64 bias) or an int32 one (an
    INT32 bias); the input read as rows of the weights' depth."""
    x, out = ctx.input(0), ctx.output_type()
    w, winfo = _weights(ctx, 1, "weights")
    if w.ndim != 2:
        raise Unsupported(f"the weights have shape {list(w.shape)}; [units, depth] is expected")
    if WEIGHTS_FORMATS.get(ctx.option("weights_format")) != "DEFAULT":
        raise Unsupported(f"weights_format {ctx.option('weights_format')} is not supported")
    units, depth = w.shape
    n = x.type.num_elements
    if depth == 0 or n % depth:
        raise Unsupported(f"an input of shape {list(x.type.shape)} cannot be read as rows of "
                          f"{depth}")
    in_scale, in_zp = _per_tensor(x.type, "input")
    out_scale, out_zp = _per_tensor(out, "output")
    q = winfo.quant
    filter_zp = int(q.zero_points[0]) if q is not None and not q.per_channel else 0
    mult, shift = tflm.fully_connected_params(in_scale, _weight_scales(winfo, "weights", 0),
                                              out_scale)
    bias, kind = _bias(ctx, 2, units, ("INT64", "INT32"))
    b = GraphBuilder(ctx.graph)
    rows = x if x.type.shape == (n // depth, depth) else ctx.reshape(x, (n // depth, depth))
    lo, hi = _activation(ctx, out)
    y = build16.fully_connected(b, rows, w, bias, input_zp=in_zp, filter_zp=filter_zp,
                                multipliers=mult, shifts=shift, output_zp=out_zp,
                                act_min=lo, act_max=hi,
                                int32_accumulator=_int32_bias(ctx, kind), quant=out.quant)
    if y.type.shape != out.shape:
        y = b.op("reshape", [y], quant=out.quant, shape=out.shape)
    return y


def average_pool_2d(ctx: OpContext) -> Tensor:
    """AVERAGE_POOL_2D int16: TFLite Micro's AveragePool (int16), the int8 arithmetic
    (int32 sum, C-rounded division by the in-image taps) in int16."""
    x, out = ctx.input(0), ctx.output_type()
    require_rank(x, 4, "input")
    _per_tensor(x.type, "input")
    if not same_quantization(x.type, out):
        raise Unsupported("AVERAGE_POOL_2D needs the same scale and zero point on its input "
                          "and output (TFLite Micro requires it)")
    fh, fw = positive(ctx, "filter_height", "filter_width")
    sh, sw = positive(ctx, "stride_h", "stride_w")
    kind = ctx.option("padding")
    padding = (same_or_valid(kind, x.type.shape[1], fh, sh),
               same_or_valid(kind, x.type.shape[2], fw, sw))
    lo, hi = _activation(ctx, out)
    return build.average_pool(GraphBuilder(ctx.graph), x, window=(fh, fw), strides=(sh, sw),
                              padding=padding, act_min=lo, act_max=hi)


def mul(ctx: OpContext) -> Tensor:
    """MUL int16 (numpy broadcasting): TFLite Micro's MulElementwise, the int32 product
    rescaled by one multiplier for s1 * s2 / so; all zero points 0, as it requires."""
    x1, x2, out = ctx.input(0), ctx.input(1), ctx.output_type()
    s1, s2 = _symmetric(x1.type, "first input"), _symmetric(x2.type, "second input")
    so = _symmetric(out, "output")
    p = tflm.mul_params(s1, 0, s2, 0, so, 0)
    lo, hi = _activation(ctx, out)
    return build.mul(GraphBuilder(ctx.graph), x1, x2, input1_zp=0, input2_zp=0,
                     multiplier=p.multiplier, shift=p.shift, output_zp=0, act_min=lo,
                     act_max=hi, quant=out.quant, out="i16")


def mean(ctx: OpContext) -> Tensor:
    """MEAN int16: TFLite Micro's QuantizedMeanOrSum, as int8 with int16's clamp."""
    return mean_or_sum(ctx, False, _per_tensor, "i16")


def sum_(ctx: OpContext) -> Tensor:
    """SUM int16: QuantizedMeanOrSum with compute_sum (the same rescale, no 1/n)."""
    return mean_or_sum(ctx, True, _per_tensor, "i16")


def relu(ctx: OpContext) -> Tensor:
    """RELU int16: TFLite Micro's ReluQuantized, x requantized by in_scale / out_scale
    (double) and clamped to [0, 32767]; zero points 0, as it requires."""
    x, out = ctx.input(0), ctx.output_type()
    si, so = _symmetric(x.type, "input"), _symmetric(out, "output")
    p = tflm.requantize_params(si, 0, so, 0)
    return build16.requantize(GraphBuilder(ctx.graph), x, multiplier=p.multiplier,
                              shift=p.shift, input_zp=0, output_zp=0, out="i16", act_min=0,
                              act_max=tflm16.INT16_MAX, quant=out.quant)


def relu6(ctx: OpContext) -> Tensor:
    """RELU6 int16: TFLite Micro's Relu6Quantized, a clamp to the input's zero point and
    6 quantized with the input's scale (no requantization: the output's scale is not
    read)."""
    x, out = ctx.input(0), ctx.output_type()
    si, zi = _per_tensor(x.type, "input")
    _per_tensor(out, "output")
    q = tflm.quantize_real(6.0, si, 0)
    if abs(q) >= 1 << 31:
        raise Unsupported(f"6 / input scale {si:g} is beyond int32 (undefined in TFLite Micro)")
    # FloatToQuantizedType clamps to int16's range.
    six = min(max(q + zi, tflm16.INT16_MIN), tflm16.INT16_MAX)
    return build16.clamp(GraphBuilder(ctx.graph), x, zi, six)


def _sigmoid(op: str) -> Callable[[OpContext], Tensor]:
    def convert(ctx: OpContext) -> Tensor:
        x, out = ctx.input(0), ctx.output_type()
        si, zi = _per_tensor(x.type, "input")
        so, zo = _per_tensor(out, "output")
        params = getattr(tflm16_lut, f"{op.lower()}_params")
        try:
            p = params(si, zi, so, zo)
        except ValueError as e:
            raise Unsupported(str(e)) from None
        return build16.sigmoid_lut(GraphBuilder(ctx.graph), x, p, op, quant=out.quant)

    convert.__doc__ = (f"{op} int16: TFLite Micro's reference_integer_ops kernel, the "
                       "256-entry sigmoid table with linear interpolation.")
    return convert


def softmax(ctx: OpContext) -> Tensor:
    """SOFTMAX int16 over the last axis: TFLite Micro's SoftmaxInt16, its exp and
    reciprocal tables (513 entries each, interpolated) computed as its Prepare does."""
    x, out = ctx.input(0), ctx.output_type()
    si, zi = _per_tensor(x.type, "input")
    so, zo = _per_tensor(out, "output")
    try:
        p = tflm16_softmax.softmax_params(si, zi, so, zo, float(ctx.option("beta")))
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return build16.softmax(GraphBuilder(ctx.graph), x, p, quant=out.quant)


logistic = _sigmoid("LOGISTIC")
tanh = _sigmoid("TANH")


def transpose_conv(ctx: OpContext) -> Tensor:
    """TRANSPOSE_CONV 16x8 (inputs: output shape, OHWI filter, input, bias):
    reference_integer_ops::TransposeConv with its int64 scratch accumulator."""
    x, out = ctx.input(2), ctx.output_type()
    require_rank(x, 4, "input")
    w, scales = _filter(ctx, 1, x.type.shape[3])
    g = transpose_geometry(ctx, w.shape)
    mult, shift = tflm.conv_params(_symmetric(x.type, "input"), scales,
                                   _symmetric(out, "output"))
    lo, hi = _activation(ctx, out)
    return build16.transpose_conv(GraphBuilder(ctx.graph), x, w,
                                  # TFLite Micro widens an INT16 bias; an INT32 one it
                                  # would read as int64, so it is refused.
                                  _bias(ctx, 3, w.shape[0], ("INT64", "INT16"))[0],
                                  output_hw=g.output[1:3], strides=g.strides, pads=g.pads,
                                  multipliers=mult, shifts=shift, act_min=lo, act_max=hi,
                                  quant=out.quant)


def _binary(kind: str) -> Callable[[OpContext], Tensor]:
    def convert(ctx: OpContext) -> Tensor:
        x1, x2, out = ctx.input(0), ctx.input(1), ctx.output_type()
        s1, z1 = _per_tensor(x1.type, "first input")
        s2, z2 = _per_tensor(x2.type, "second input")
        so, zo = _per_tensor(out, "output")
        act = activation_name(ctx.option("fused_activation_function"))
        try:
            p = getattr(tflm16, f"{kind}_params")(s1, z1, s2, z2, so, zo, act)
        except ValueError as e:  # TFLite Micro refuses these scales in Prepare
            raise Unsupported(str(e)) from None
        return getattr(build, kind)(
            GraphBuilder(ctx.graph), x1, x2, left_shift=p.left_shift,
            input1=(-p.input1_offset, p.input1_multiplier, p.input1_shift),
            input2=(-p.input2_offset, p.input2_multiplier, p.input2_shift),
            output=(p.output_offset, p.output_multiplier, p.output_shift),
            act_min=p.act_min, act_max=p.act_max, quant=out.quant, out="i16")

    convert.__doc__ = (f"{kind.upper()}, int16 (numpy broadcasting): TFLite Micro's general "
                       "rescaling path with a left shift of 15.")
    return convert


add = _binary("add")
sub = _binary("sub")


def leaky_relu(ctx: OpContext) -> Tensor:
    """LEAKY_RELU, int16: TFLite Micro's QuantizeLeakyRelu (int8 is a table:
    int8.py)."""
    x, out = ctx.input(0), ctx.output_type()
    si, zi = _per_tensor(x.type, "input", ("i8", "i16"))
    so, zo = _per_tensor(out, "output", (x.type.dtype.name,))
    try:
        p = tflm16.leaky_relu_params(si, zi, so, zo, float(ctx.option("alpha")))
    except ValueError as e:
        raise Unsupported(str(e)) from None
    lo, hi = tflm16.RANGES[x.type.dtype.name]
    return build16.leaky_relu(GraphBuilder(ctx.graph), x, p, act_min=lo, act_max=hi,
                              quant=out.quant)


def quantize(ctx: OpContext) -> Tensor:
    """QUANTIZE between int8, int16 and int32 with an int16 side: TFLite Micro's
    Requantize (one multiplier for in_scale / out_scale, in double); from float32 to
    int16 its AffineQuantize."""
    x, out = ctx.input(0), ctx.output_type()
    if x.type.dtype.name == "f32":
        scale, zp = _per_tensor(out, "output")
        return build.quantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp,
                              quant=out.quant, out="i16")
    types = ("i8", "i16", "i32")
    si, zi = _per_tensor(x.type, "input", types)
    so, zo = _per_tensor(out, "output", types)
    p = tflm.requantize_params(si, zi, so, zo)
    lo, hi = tflm16.RANGES[out.dtype.name]
    return build16.requantize(GraphBuilder(ctx.graph), x, multiplier=p.multiplier,
                              shift=p.shift, input_zp=p.input_zp, output_zp=p.output_zp,
                              out=out.dtype.name, act_min=lo, act_max=hi, quant=out.quant)


def dequantize(ctx: OpContext) -> Tensor:
    """DEQUANTIZE int16 -> float32: scale * (x - zero point)."""
    x, out = ctx.input(0), ctx.output_type()
    if out.dtype.name != "f32":
        raise Unsupported(f"DEQUANTIZE to {out.dtype} is not supported")
    scale, zp = _per_tensor(x.type, "input")
    return build.dequantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp)


__all__ = ["add", "average_pool_2d", "conv_2d", "depthwise_conv_2d", "dequantize",
           "fully_connected", "leaky_relu", "logistic", "mean", "mul", "quantize", "relu",
           "relu6", "softmax", "sub", "sum_", "tanh", "transpose_conv"]
