"""The int8 arithmetic operators: TFLite Micro's integer kernels, bit for bit.

Each converter derives the operator's integer parameters from its tensors' scales and
zero points exactly as TFLite Micro's Prepare does (toolchain/quant/tflm*.py) and builds
the kernel as graph primitives (toolchain/quant/build.py). Element-wise int8 -> int8
functions (LOGISTIC, TANH, RELU, RELU6, HARD_SWISH, int8 QUANTIZE) become a lookup in a
256-entry table computed by the same exact kernels; SOFTMAX uses two such tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
from toolchain.frontend.tflite.reader import TensorInfo
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm, tflm_activations, tflm_tables
from toolchain.types import TensorType


def _per_tensor(t: TensorType, what: str) -> tuple[float, int]:
    q = t.quant
    if q is None or t.dtype.name != "i8":
        raise Unsupported(f"the {what} is {t}; an int8 quantized tensor is expected")
    if q.axis is not None:
        raise Unsupported(f"the {what} must be quantized per tensor")
    return q.scales[0], q.zero_points[0]


def _weights(ctx: OpContext, i: int, what: str) -> tuple[np.ndarray, TensorInfo]:
    """Constant int8 weights (input i) and their tensor: symmetric, per tensor or per
    channel. INT4 weights (TFLite Micro's int8 CONV_2D, DEPTHWISE_CONV_2D and
    FULLY_CONNECTED take them) are unpacked to int8 first, as its kernels do."""
    info = ctx.info(i)
    if info.data is not None and info.type == "INT4":
        return unpack_int4(info.data, info.shape), info
    if info.data is None or info.type != "INT8":
        raise Unsupported(f"the {what} must be a constant INT8 tensor")
    return info.data.astype(np.int8), info


def unpack_int4(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """TFLite's packed INT4 (two to a byte, the first element in the low nibble, each a
    4-bit two's complement) as int8 values of `shape` (UnpackDenseInt4IntoInt8)."""
    count = int(np.prod(shape, dtype=np.int64))
    data = np.asarray(raw, np.uint8).reshape(-1)
    if data.size != (count + 1) // 2:
        raise Unsupported(f"an INT4 tensor of shape {list(shape)} needs {(count + 1) // 2} "
                          f"bytes, not {data.size}")
    nibbles = np.stack([data & 0xF, data >> 4], axis=1).reshape(-1)[:count].astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8).reshape(shape)


def _weight_scales(info: TensorInfo, what: str, channel_axis: int) -> list[float]:
    q = info.quant
    if q is None:
        raise Unsupported(f"the {what} has no quantization")
    if q.per_channel and q.axis != channel_axis:
        raise Unsupported(f"the {what} is quantized along dimension {q.axis}, not its output "
                          f"channels ({channel_axis})")
    return [float(np.float32(s)) for s in q.scales]


def _bias(ctx: OpContext, i: int, channels: int) -> np.ndarray | None:
    if not ctx.has_input(i):
        return None
    info = ctx.info(i)
    if info.data is None or info.type != "INT32" or info.data.size != channels:
        raise Unsupported(f"the bias must be a constant INT32 tensor of {channels} values")
    return info.data.astype(np.int32).reshape(channels)


def _activation(ctx: OpContext, out: TensorType) -> tuple[int, int]:
    return quantized_range(activation_name(ctx.option("fused_activation_function")), out)


def _conv(ctx: OpContext, depthwise: bool) -> Tensor:
    x, out = ctx.input(0), ctx.output_type()
    require_rank(x, 4, "input")
    w, winfo = _weights(ctx, 1, "filter")
    if w.ndim != 4:
        raise Unsupported(f"the filter has shape {list(w.shape)}; a rank-4 tensor is expected")
    in_scale, in_zp = _per_tensor(x.type, "input")
    out_scale, out_zp = _per_tensor(out, "output")
    channels = w.shape[3] if depthwise else w.shape[0]
    if depthwise:
        if w.shape[0] != 1 or w.shape[3] % x.type.shape[3]:
            raise Unsupported(f"filter shape {list(w.shape)} is not [1, H, W, k x "
                              f"{x.type.shape[3]}]")
    elif w.shape[3] == 0 or x.type.shape[3] % w.shape[3]:
        raise Unsupported(f"the filter's {w.shape[3]} input channels do not divide the input's "
                          f"{x.type.shape[3]} into groups")
    mult, shift = tflm.conv_params(in_scale, _weight_scales(winfo, "filter",
                                                            3 if depthwise else 0), out_scale)
    strides = positive(ctx, "stride_h", "stride_w")
    dilations = positive(ctx, "dilation_h_factor", "dilation_w_factor")
    kind = ctx.option("padding")
    padding = (same_or_valid(kind, x.type.shape[1], w.shape[1], strides[0], dilations[0]),
               same_or_valid(kind, x.type.shape[2], w.shape[2], strides[1], dilations[1]))
    lo, hi = _activation(ctx, out)
    return build.conv2d(GraphBuilder(ctx.graph), x, w, _bias(ctx, 2, channels),
                        strides=strides, padding=padding, dilations=dilations,
                        depthwise=depthwise, input_zp=in_zp, multipliers=mult, shifts=shift,
                        output_zp=out_zp, act_min=lo, act_max=hi, quant=out.quant)


def conv_2d(ctx: OpContext) -> Tensor:
    """CONV_2D, int8: TFLite Micro's ConvPerChannel."""
    return _conv(ctx, depthwise=False)


def depthwise_conv_2d(ctx: OpContext) -> Tensor:
    """DEPTHWISE_CONV_2D, int8: TFLite Micro's DepthwiseConvPerChannel."""
    return _conv(ctx, depthwise=True)


def fully_connected(ctx: OpContext) -> Tensor:
    """FULLY_CONNECTED, int8: the input read as rows of the weights' depth; per tensor
    (with the filter zero point TFLite allows there) or per output channel."""
    x, out = ctx.input(0), ctx.output_type()
    w, winfo = _weights(ctx, 1, "weights")
    if w.ndim != 2:
        raise Unsupported(f"the weights have shape {list(w.shape)}; [units, depth] is expected")
    fmt = schema.WEIGHTS_FORMATS.get(ctx.option("weights_format"))
    if fmt != "DEFAULT":
        raise Unsupported(f"weights_format {fmt} is not supported")
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
    b = GraphBuilder(ctx.graph)
    rows = x if x.type.shape == (n // depth, depth) else ctx.reshape(x, (n // depth, depth))
    lo, hi = _activation(ctx, out)
    y = build.fully_connected(b, rows, w, _bias(ctx, 2, units), input_zp=in_zp,
                              multipliers=mult, shifts=shift, output_zp=out_zp,
                              filter_zp=filter_zp, act_min=lo, act_max=hi, quant=out.quant)
    if y.type.shape != out.shape:
        y = b.op("reshape", [y], quant=out.quant, shape=out.shape)
    return y


def average_pool_2d(ctx: OpContext) -> Tensor:
    """AVERAGE_POOL_2D, int8: the rounded average of the in-image taps (input and
    output share their quantization, as TFLite Micro requires)."""
    x, out = ctx.input(0), ctx.output_type()
    require_rank(x, 4, "input")
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


def _binary(kind: str) -> Callable[[OpContext], Tensor]:
    def convert(ctx: OpContext) -> Tensor:
        x1, x2, out = ctx.input(0), ctx.input(1), ctx.output_type()
        s1, z1 = _per_tensor(x1.type, "first input")
        s2, z2 = _per_tensor(x2.type, "second input")
        so, zo = _per_tensor(out, "output")
        act = activation_name(ctx.option("fused_activation_function"))
        b = GraphBuilder(ctx.graph)
        try:
            if kind == "mul":
                p = tflm.mul_params(s1, z1, s2, z2, so, zo, act)
                return build.mul(b, x1, x2, input1_zp=p.input1_zp, input2_zp=p.input2_zp,
                                 multiplier=p.multiplier, shift=p.shift, output_zp=p.output_zp,
                                 act_min=p.act_min, act_max=p.act_max, quant=out.quant)
            p = getattr(tflm, f"{kind}_params")(s1, z1, s2, z2, so, zo, act)
        except ValueError as e:  # TFLite Micro refuses these scales in Prepare
            raise Unsupported(str(e)) from None
        return getattr(build, kind)(
            b, x1, x2, left_shift=p.left_shift,
            input1=(-p.input1_offset, p.input1_multiplier, p.input1_shift),
            input2=(-p.input2_offset, p.input2_multiplier, p.input2_shift),
            output=(p.output_offset, p.output_multiplier, p.output_shift),
            act_min=p.act_min, act_max=p.act_max, quant=out.quant)

    convert.__doc__ = f"{kind.upper()}, int8 (numpy broadcasting): TFLite Micro's arithmetic."
    return convert


add = _binary("add")
sub = _binary("sub")
mul = _binary("mul")


def _table(op: str, params: Callable[[float, int, float, int], Any]
           ) -> Callable[[OpContext], Tensor]:
    def convert(ctx: OpContext) -> Tensor:
        x, out = ctx.input(0), ctx.output_type()
        s_in, z_in = _per_tensor(x.type, "input")
        s_out, z_out = _per_tensor(out, "output")
        try:
            table = tflm_tables.lookup_table(op, params(s_in, z_in, s_out, z_out))
        except ValueError as e:
            raise Unsupported(str(e)) from None
        return build.lookup(GraphBuilder(ctx.graph), x, table, quant=out.quant)

    convert.__doc__ = f"{op}, int8: a 256-entry table of TFLite Micro's exact kernel."
    return convert


logistic = _table("LOGISTIC", lambda si, zi, so, zo: tflm_activations.logistic_params(si, zi))
tanh = _table("TANH", lambda si, zi, so, zo: tflm_activations.tanh_params(si, zi))
relu = _table("RELU", tflm_activations.relu_params)
relu6 = _table("RELU6", lambda si, zi, so, zo: tflm_activations.relu6_params(si, zi))
hard_swish = _table("HARD_SWISH", tflm_activations.hard_swish_params)


def leaky_relu(ctx: OpContext) -> Tensor:
    """LEAKY_RELU, int8: a 256-entry table of TFLite Micro's QuantizeLeakyRelu, its
    multipliers formed in double as its int8 Prepare does (the 16-bit kernel's float32
    ones differ on some scales: 3 of 256 outputs with scales 0.03 -> 0.01, alpha 1.7)."""
    x, out = ctx.input(0), ctx.output_type()
    s_in, z_in = _per_tensor(x.type, "input")
    s_out, z_out = _per_tensor(out, "output")
    try:
        params = tflm_activations.leaky_relu_params(s_in, z_in, s_out, z_out,
                                                    float(ctx.option("alpha")))
        table = tflm_tables.lookup_table("LEAKY_RELU", params)
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return build.lookup(GraphBuilder(ctx.graph), x, table, quant=out.quant)


# QUANTIZE from int8 to int8: a requantization.
requantize = _table("REQUANTIZE", tflm.requantize_params)


def softmax(ctx: OpContext) -> Tensor:
    """SOFTMAX, int8, over the last axis: TFLite Micro's fixed-point algorithm from two
    256-entry tables (output scale 1/256, zero point -128, which TFLite Micro requires)."""
    x, out = ctx.input(0), ctx.output_type()
    s_in, _ = _per_tensor(x.type, "input")
    if out.dtype.name == "i16":
        return _softmax_int16_output(ctx, x, out, s_in)
    s_out, z_out = _per_tensor(out, "output")
    if z_out != -128 or abs(s_out - 1 / 256) > 1e-6:
        raise Unsupported("an int8 SOFTMAX output must have scale 1/256 and zero point -128 "
                          "(TFLite Micro requires it)")
    try:
        params = tflm_activations.softmax_params(s_in, float(ctx.option("beta")))
    except ValueError as e:
        raise Unsupported(str(e)) from None
    exp_table, sum_table = tflm_tables.softmax_exp_table(params)
    return build.softmax(GraphBuilder(ctx.graph), x, exp_table, sum_table, quant=out.quant)


def _softmax_int16_output(ctx: OpContext, x: Tensor, out: TensorType, s_in: float) -> Tensor:
    """SOFTMAX int8 -> int16 (keyword_scrambled's): the int8 kernel's fixed point with
    TFLite Micro's required output scale 1/65536 and zero point -32768."""
    q = out.quant
    if (q is None or q.axis is not None or q.zero_points[0] != -32768
            or abs(q.scales[0] - 1 / 65536) > 0.001 / 65536):
        raise Unsupported("an int16 SOFTMAX output of int8 input must have scale 1/65536 and "
                          "zero point -32768 (TFLite Micro requires it)")
    try:
        params = tflm_activations.softmax_params(s_in, float(ctx.option("beta")))
    except ValueError as e:
        raise Unsupported(str(e)) from None
    exp_table, sum_table = tflm_tables.softmax_exp_table(params)
    return build.softmax(GraphBuilder(ctx.graph), x, exp_table, sum_table, quant=q, out="i16")


def mean_or_sum(ctx: OpContext, compute_sum: bool,
                per_tensor: Callable[[TensorType, str], tuple[float, int]] = _per_tensor,
                out_type: str = "i8") -> Tensor:
    """MEAN or SUM by TFLite Micro's QuantizedMeanOrSum, for int8 or (with int16.py's
    `per_tensor` and "i16") int16: the same rescale, only the clamp differs."""
    x, out = ctx.input(0), ctx.output_type()
    axes = [int(a) for a in ctx.value(1, "axes").reshape(-1)]
    if any(not -x.type.rank <= a < x.type.rank for a in axes):
        raise Unsupported(f"axes {axes} are out of range for rank {x.type.rank}")
    s_in, z_in = per_tensor(x.type, "input")
    s_out, z_out = per_tensor(out, "output")
    p = tflm.mean_params(s_in, z_in, s_out, z_out)
    return build.mean(GraphBuilder(ctx.graph), x, axes, keep_dims=bool(ctx.option("keep_dims")),
                      input_zp=p.input_zp, multiplier=p.multiplier, shift=p.shift,
                      output_zp=p.output_zp, quant=out.quant, out=out_type,
                      compute_sum=compute_sum)


def mean(ctx: OpContext) -> Tensor:
    """MEAN, int8: TFLite Micro's QuantizedMeanOrSum."""
    return mean_or_sum(ctx, compute_sum=False)


def sum_(ctx: OpContext) -> Tensor:
    """SUM, int8: QuantizedMeanOrSum with compute_sum (the same rescale, no 1/n)."""
    return mean_or_sum(ctx, compute_sum=True)


def quantize(ctx: OpContext) -> Tensor:
    """QUANTIZE: float32 -> int8 by TFLite Micro's AffineQuantize."""
    x, out = ctx.input(0), ctx.output_type()
    if x.type.dtype.name != "f32":
        raise Unsupported(f"QUANTIZE from {x.type.dtype} is not supported")
    scale, zp = _per_tensor(out, "output")
    return build.quantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp,
                          quant=out.quant)


def quantize_op(ctx: OpContext) -> Tensor:
    """QUANTIZE to int8: from float32 (AffineQuantize) or from int8 (a requantization)."""
    return quantize(ctx) if ctx.input(0).type.dtype.is_float else requantize(ctx)


def dequantize(ctx: OpContext) -> Tensor:
    """DEQUANTIZE: int8 -> float32, scale * (x - zero point)."""
    x, out = ctx.input(0), ctx.output_type()
    if out.dtype.name != "f32":
        raise Unsupported(f"DEQUANTIZE to {out.dtype} is not supported")
    scale, zp = _per_tensor(x.type, "input")
    return build.dequantize(GraphBuilder(ctx.graph), x, scale=scale, zero_point=zp)


__all__ = ["add", "average_pool_2d", "conv_2d", "depthwise_conv_2d", "dequantize",
           "fully_connected", "hard_swish", "leaky_relu", "logistic", "mean", "mul", "quantize",
           "quantize_op",
           "relu", "relu6", "requantize", "softmax", "sub", "sum_", "tanh"]
