"""Int8 kernels as chains of graph primitives, with TFLite's exact integer arithmetic.

Every quantized frontend (.tflite, StableHLO `!quant.uniform`, quantization of float
models) builds its int8 operators here, from integer parameters it derived already
(multipliers and shifts: toolchain/quant/tflm.py computes them as TFLite Micro does).
Each function emits plain graph ops, so the numpy reference executes the arithmetic
op by op, and fusion makes each chain one dispatch (docs/int8.md):

- a convolution or dot product is an i8 x i8 -> i32 contraction over the input padded
  with its zero point; the zero point's share, input_zp * sum(weights) per channel, is
  folded into the bias at build time, so the inner loop multiplies raw int8 values;
- requantization is `rounding_divide_by_pot(saturating_rounding_doubling_high_mul(
  acc << left, multiplier), right)` per channel, then the output zero point, the
  activation clamp and the narrowing to i8: the reduction's epilogue;
- element-wise int8 -> int8 functions (logistic, tanh, hard swish, ...) are a gather
  from a 256-entry table computed at build time by the exact TFLite algorithm.

Layouts are TFLite's: NHWC activations, OHWI convolution filters, [1, H, W, C * M]
depthwise filters, [N, K] fully-connected weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.types import QuantParams, dtype

__all__ = [
    "CONV_ATTRS",
    "add",
    "average_pool",
    "conv2d",
    "convolution",
    "dequantize",
    "dot_general",
    "fully_connected",
    "lookup",
    "mean",
    "mul",
    "quantize",
    "requantize",
    "rescale",
    "softmax",
    "sub",
]

I8, I32, F32 = dtype("i8"), dtype("i32"), dtype("f32")
INT8_MIN, INT8_MAX = -128, 127


def _ints(values: int | Sequence[int] | np.ndarray) -> np.ndarray:
    return np.atleast_1d(np.asarray(values, dtype=np.int64))


def rescale(b: GraphBuilder, x: Tensor, multiplier: int | Sequence[int] | np.ndarray,
            shift: int | Sequence[int] | np.ndarray, axis: int | None = None) -> Tensor:
    """TFLite's MultiplyByQuantizedMultiplier on an i32 tensor, per tensor or per channel
    along `axis`: x * 2**max(shift, 0) (wrapping, like the C int32 product), the
    saturating rounding doubling high multiply, then a rounding right shift by
    max(-shift, 0)."""
    shape = tuple(x.type.shape)
    shift = _ints(shift)
    mult = _ints(multiplier)
    if np.any(np.abs(shift) > 31):
        raise ValueError(f"requantization shift out of [-31, 31]: {shift.tolist()}")

    def channel(values: np.ndarray) -> Tensor:
        if values.size == 1 or axis is None:
            return b.splat(values[0], I32, shape)
        return b.along(values, I32, shape, axis)

    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    if np.any(left):
        x = b.op("shift_left", [x, channel(left)])
    x = b.op("saturating_rounding_doubling_high_mul", [x, channel(mult)])
    if np.any(right):
        x = b.op("rounding_divide_by_pot", [x, channel(right)])
    return x


def _narrow(b: GraphBuilder, x: Tensor, output_zp: int, act_min: int, act_max: int,
            quant: QuantParams | None, out: str = "i8") -> Tensor:
    """+ output zero point, the activation clamp, i32 -> i8 (or `out`: i16 for 16x8)."""
    shape = tuple(x.type.shape)
    x = b.op("add", [x, b.splat(output_zp, I32, shape)])
    x = b.op("clamp", [b.const(act_min, I32), x, b.const(act_max, I32)])
    return b.op("convert", [x], quant=quant, dtype=out)


def requantize(b: GraphBuilder, acc: Tensor, multiplier, shift, *, axis: int | None,
               output_zp: int, act_min: int = INT8_MIN, act_max: int = INT8_MAX,
               quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """An i32 accumulator to int8 (or `out`): rescale, + output zero point, clamp, narrow."""
    return _narrow(b, rescale(b, acc, multiplier, shift, axis), output_zp, act_min, act_max,
                   quant, out)


def _widen(b: GraphBuilder, x: Tensor) -> Tensor:
    return b.op("convert", [x], dtype="i32")


def _padded(b: GraphBuilder, x: Tensor, pads: Sequence[tuple[int, int]], value: int,
            spatial: Sequence[int] = (1, 2)) -> Tensor:
    """x padded along its `spatial` dims (NHWC's H and W by default) by `pads` with
    `value` (a zero point: what TFLite reads outside the image)."""
    if not any(lo or hi for lo, hi in pads):
        return x
    low, high = [0] * x.type.rank, [0] * x.type.rank
    for d, (lo, hi) in zip(spatial, pads, strict=True):
        low[d], high[d] = lo, hi
    return b.op("pad", [x, b.const(value, x.type.dtype)], low=tuple(low), high=tuple(high),
                interior=(0,) * x.type.rank)


def _bias(bias: np.ndarray | None, weight_sums: np.ndarray, input_zp: int) -> np.ndarray:
    """bias - input_zp * sum(weights) per output channel, wrapped to int32 as the C
    accumulator wraps: sum((x - zp) * w) + bias == sum(x * w) + this."""
    total = -np.int64(input_zp) * weight_sums.astype(np.int64)
    if bias is not None:
        total = total + np.asarray(bias, dtype=np.int64)
    return ((total + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


CONV_ATTRS = ("strides", "padding", "lhs_dilation", "rhs_dilation", "input_batch",
              "input_feature", "input_spatial", "kernel_input", "kernel_output",
              "kernel_spatial", "output_batch", "output_feature", "output_spatial",
              "feature_group_count", "batch_group_count")


def convolution(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
                attrs: dict, input_zp: int, multipliers=None, shifts=None,
                output_zp: int = 0, act_min: int = INT8_MIN, act_max: int = INT8_MAX,
                quant: QuantParams | None = None) -> Tensor:
    """An int8 convolution with the graph's own attributes (`CONV_ATTRS`: any dimension
    numbers, groups, strides, padding, dilations; no lhs dilation). The padding becomes a
    pad by the input zero point and the zero point's share moves into the bias. Without
    `multipliers` the result is the i32 accumulator sum((x - zp) * w) + bias itself (a
    quantized accumulator type); with them, int8 requantized per output channel."""
    if any(d != 1 for d in attrs["lhs_dilation"]):
        raise ValueError("an int8 convolution with input dilation is not supported")
    w = np.asarray(w)
    out_axis = attrs["kernel_output"]
    sums = w.astype(np.int64).sum(axis=tuple(a for a in range(w.ndim) if a != out_axis))
    xp = _padded(b, x, attrs["padding"], input_zp, attrs["input_spatial"])
    conv = {k: attrs[k] for k in CONV_ATTRS}
    conv["padding"] = tuple((0, 0) for _ in attrs["padding"])
    acc = b.op("convolution", [xp, b.const(w, dtype(_int_name(w)))], dtype="i32", **conv)
    channel = attrs["output_feature"]
    acc = b.op("add", [acc, b.along(_bias(bias, sums, input_zp), I32, acc.type.shape,
                                    channel)])
    if multipliers is None:
        return acc
    return requantize(b, acc, multipliers, shifts, axis=channel, output_zp=output_zp,
                      act_min=act_min, act_max=act_max, quant=quant)


def _int_name(w: np.ndarray) -> str:
    return {np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32"}[
        w.dtype]


def conv2d(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
           strides: Sequence[int], padding: Sequence[tuple[int, int]],
           dilations: Sequence[int] = (1, 1), depthwise: bool = False, input_zp: int,
           multipliers, shifts, output_zp: int, act_min: int = INT8_MIN,
           act_max: int = INT8_MAX, quant: QuantParams | None = None) -> Tensor:
    """CONV_2D (OHWI filter, grouped when the input has a multiple of its input channels)
    or, with `depthwise`, DEPTHWISE_CONV_2D ([1, H, W, C * M] filter, output channel
    c * M + m reading input channel c), int8 in and out, NHWC. `padding` is
    ((top, bottom), (left, right)) as TFLite computed it."""
    w = np.asarray(w, dtype=np.int8)
    channels = x.type.shape[3]
    attrs = dict(strides=tuple(strides), padding=tuple(padding), lhs_dilation=(1, 1),
                 rhs_dilation=tuple(dilations), input_batch=0, input_feature=3,
                 input_spatial=(1, 2), kernel_spatial=(1, 2), output_batch=0,
                 output_feature=3, output_spatial=(1, 2),
                 feature_group_count=channels if depthwise else channels // w.shape[3],
                 batch_group_count=1)
    # OHWI, or for depthwise IHWO with I = 1 and one group per input channel.
    if depthwise:
        attrs.update(kernel_input=0, kernel_output=3)
    else:
        attrs.update(kernel_input=3, kernel_output=0)
    return convolution(b, x, w, bias, attrs=attrs, input_zp=input_zp,
                       multipliers=multipliers, shifts=shifts, output_zp=output_zp,
                       act_min=act_min, act_max=act_max, quant=quant)


def dot_general(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
                attrs: dict, input_zp: int, multipliers=None, shifts=None,
                channel_axis: int | None = None, output_zp: int = 0,
                act_min: int = INT8_MIN, act_max: int = INT8_MAX,
                quant: QuantParams | None = None) -> Tensor:
    """An int8 dot_general with constant weights, the graph's own dimension numbers
    (no batch dimensions). The input zero point's share moves into the bias (per
    element of the weights' free dims). Without `multipliers` the result is the i32
    accumulator; with them, requantized (per channel along the result's
    `channel_axis`, or per tensor)."""
    if attrs["lhs_batch"] or attrs["rhs_batch"]:
        raise ValueError("an int8 dot_general with batch dimensions is not supported")
    w = np.asarray(w)
    acc = b.op("dot_general", [x, b.const(w, dtype(_int_name(w)))],
               lhs_batch=(), rhs_batch=(), lhs_contract=tuple(attrs["lhs_contract"]),
               rhs_contract=tuple(attrs["rhs_contract"]), dtype="i32")
    sums = w.astype(np.int64).sum(axis=tuple(attrs["rhs_contract"]))  # the free dims
    shape = tuple(acc.type.shape)
    free = len(shape) - sums.ndim  # result position of the weights' first free dim
    correction = b.const(_bias(None, sums.reshape(-1), input_zp).reshape(sums.shape), I32)
    acc = b.op("add", [acc, b.op("broadcast_in_dim", [correction],
                                 dims=tuple(range(free, len(shape))), shape=shape)])
    if bias is not None:
        acc = b.op("add", [acc, b.broadcast_to(b.const(np.asarray(bias, np.int32), I32),
                                               shape)])
    if multipliers is None:
        return acc
    return requantize(b, acc, multipliers, shifts, axis=channel_axis, output_zp=output_zp,
                      act_min=act_min, act_max=act_max, quant=quant)


def fully_connected(b: GraphBuilder, x: Tensor, w: np.ndarray, bias: np.ndarray | None, *,
                    input_zp: int, multipliers, shifts, output_zp: int, filter_zp: int = 0,
                    act_min: int = INT8_MIN, act_max: int = INT8_MAX,
                    quant: QuantParams | None = None) -> Tensor:
    """FULLY_CONNECTED with [N, K] weights on x's last dimension (K), int8 in and out;
    per tensor or per output channel. A filter zero point (allowed per tensor) is taken
    out of the weights at build time: they are then stored as i16."""
    w = np.asarray(w, dtype=np.int8)
    if filter_zp:
        w = w.astype(np.int16) - np.int16(filter_zp)
    rank = x.type.rank
    attrs = dict(lhs_batch=(), rhs_batch=(), lhs_contract=(rank - 1,), rhs_contract=(1,))
    return dot_general(b, x, w, bias, attrs=attrs, input_zp=input_zp,
                       multipliers=multipliers, shifts=shifts, channel_axis=rank - 1,
                       output_zp=output_zp, act_min=act_min, act_max=act_max, quant=quant)


def _window_counts(size: int, window: int, stride: int, low: int, out: int) -> np.ndarray:
    """How many taps of each output's window lie inside [0, size)."""
    starts = np.arange(out) * stride - low
    return np.minimum(starts + window, size) - np.maximum(starts, 0)


def average_pool(b: GraphBuilder, x: Tensor, *, window: Sequence[int],
                 strides: Sequence[int], padding: Sequence[tuple[int, int]],
                 act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> Tensor:
    """AVERAGE_POOL_2D on int8 or int16 (input and output share their quantization): the
    int32 sum of the in-image taps, divided by their count with C's rounding,
    (acc +- n / 2) / n truncated, then the activation clamp, in x's type."""
    n, h, w, c = x.type.shape
    xp = _padded(b, x, padding, 0)
    total = b.op("reduce_window", [_widen(b, xp), b.const(0, I32)], kind="add",
                 window=(1, *window, 1), strides=(1, *strides, 1), base_dilations=(1,) * 4,
                 window_dilations=(1,) * 4, padding=((0, 0),) * 4)
    shape = tuple(total.type.shape)
    count = np.outer(_window_counts(h, window[0], strides[0], padding[0][0], shape[1]),
                     _window_counts(w, window[1], strides[1], padding[1][0], shape[2]))
    if np.any(count <= 0):
        raise ValueError("a pooling window lies entirely in the padding")

    def per_position(values: np.ndarray) -> Tensor:
        grid = b.const(values.reshape(1, shape[1], shape[2], 1), I32)
        return b.op("broadcast_in_dim", [grid], dims=(0, 1, 2, 3), shape=shape)

    counts, halves = per_position(count), per_position(count // 2)
    positive = b.op("compare", [total, b.splat(0, I32, shape)], direction="GT")
    rounded = b.op("select", [positive, b.op("add", [total, halves]),
                              b.op("subtract", [total, halves])])
    avg = b.op("divide", [rounded, counts])  # truncating, like C
    return _narrow(b, avg, 0, act_min, act_max, x.type.quant, x.type.dtype.name)


def _offset(b: GraphBuilder, x: Tensor, zp: int, shape: tuple[int, ...]) -> Tensor:
    """x broadcast to `shape` (an index map, fused), as i32, minus its zero point."""
    x = b.broadcast_to(x, shape)
    return b.op("subtract", [_widen(b, x), b.splat(zp, I32, shape)])


def _add_or_sub(op: str, b: GraphBuilder, x1: Tensor, x2: Tensor, *, left_shift: int,
                input1: tuple[int, int, int], input2: tuple[int, int, int],
                output: tuple[int, int, int], act_min: int, act_max: int,
                quant: QuantParams | None, out: str = "i8") -> Tensor:
    shape = tuple(np.broadcast_shapes(x1.type.shape, x2.type.shape))
    terms = []
    for x, (zp, mult, shift) in ((x1, input1), (x2, input2)):
        v = _offset(b, x, zp, shape)
        v = b.op("shift_left", [v, b.splat(left_shift, I32, shape)])
        terms.append(rescale(b, v, mult, shift))
    raw = b.op(op, terms)
    zp, mult, shift = output
    return _narrow(b, rescale(b, raw, mult, shift), zp, act_min, act_max, quant, out)


def add(b: GraphBuilder, x1: Tensor, x2: Tensor, *, left_shift: int,
        input1: tuple[int, int, int], input2: tuple[int, int, int],
        output: tuple[int, int, int], act_min: int = INT8_MIN, act_max: int = INT8_MAX,
        quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """ADD of int8 tensors (numpy broadcasting). Each input (zero point, multiplier,
    shift) is offset, shifted left by `left_shift` (20 for int8, 15 for int16) and rescaled to a
    common scale; the sum is rescaled by `output`'s multiplier and shift and gets its
    zero point."""
    return _add_or_sub("add", b, x1, x2, left_shift=left_shift, input1=input1,
                       input2=input2, output=output, act_min=act_min, act_max=act_max,
                       quant=quant, out=out)


def sub(b: GraphBuilder, x1: Tensor, x2: Tensor, *, left_shift: int,
        input1: tuple[int, int, int], input2: tuple[int, int, int],
        output: tuple[int, int, int], act_min: int = INT8_MIN, act_max: int = INT8_MAX,
        quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """SUB of int8 tensors: as `add`, with the difference of the rescaled inputs."""
    return _add_or_sub("subtract", b, x1, x2, left_shift=left_shift, input1=input1,
                       input2=input2, output=output, act_min=act_min, act_max=act_max,
                       quant=quant, out=out)


def mul(b: GraphBuilder, x1: Tensor, x2: Tensor, *, input1_zp: int, input2_zp: int,
        multiplier: int, shift: int, output_zp: int, act_min: int = INT8_MIN,
        act_max: int = INT8_MAX, quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """MUL of int8 (or int16, `out`) tensors (numpy broadcasting): the product of the
    offset inputs in int32, rescaled, + output zero point."""
    shape = tuple(np.broadcast_shapes(x1.type.shape, x2.type.shape))
    raw = b.op("multiply", [_offset(b, x1, input1_zp, shape), _offset(b, x2, input2_zp, shape)])
    return requantize(b, raw, multiplier, shift, axis=None, output_zp=output_zp,
                      act_min=act_min, act_max=act_max, quant=quant, out=out)


def lookup(b: GraphBuilder, x: Tensor, table: np.ndarray,
           quant: QuantParams | None = None) -> Tensor:
    """table[x + 128] for an int8 x: any element-wise int8 -> int8 function, the table
    computed at build time for all 256 inputs."""
    table = np.asarray(table)
    if table.shape != (256,):
        raise ValueError(f"an int8 lookup table has 256 entries, not {table.shape}")
    shape = tuple(x.type.shape)
    index = b.op("add", [_widen(b, x), b.splat(128, I32, shape)])
    out_dt = I8 if table.dtype == np.int8 else dtype("i32")
    return b.op("gather", [b.const(table, out_dt, quant), index], quant=quant,
                offset_dims=(), collapsed_slice_dims=(0,), operand_batching_dims=(),
                start_indices_batching_dims=(), start_index_map=(0,),
                index_vector_dim=len(shape), slice_sizes=(1,))


# The storage range of each quantized integer type (AffineQuantize's clamp).
STORAGE_RANGES = {"i8": (INT8_MIN, INT8_MAX), "i16": (-32768, 32767)}


def quantize(b: GraphBuilder, x: Tensor, *, scale: float, zero_point: int,
             quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """QUANTIZE f32 -> int8 (or `out`, int16) as TFLite Micro's AffineQuantize: x / scale
    in f32, rounded half away from zero, + zero point, clamped to the output type."""
    shape = tuple(x.type.shape)
    v = b.op("divide", [x, b.splat(np.float32(scale), F32, shape)])
    v = b.op("convert", [b.op("round_nearest_afz", [v])], dtype="i32")
    return _narrow(b, v, zero_point, *STORAGE_RANGES[out], quant, out)


def dequantize(b: GraphBuilder, x: Tensor, *, scale, zero_point, axis: int | None = None
               ) -> Tensor:
    """DEQUANTIZE int8 or int16 -> f32: scale * (x - zero_point), one f32 rounding (the
    product of an f32 scale and a 17-bit integer is exact in TFLite's double, so f32's
    one rounding of the exact product gives the same bits); per tensor, or per channel
    along `axis`."""
    shape = tuple(x.type.shape)
    zp = np.atleast_1d(np.asarray(zero_point))
    v = b.op("subtract", [_widen(b, x), b.along(zp, I32, shape, axis) if axis is not None
                          else b.splat(zp[0], I32, shape)])
    v = b.op("convert", [v], dtype="f32")
    scales = np.atleast_1d(np.asarray(scale, np.float32))
    factor = (b.along(scales, F32, shape, axis) if axis is not None
              else b.splat(scales[0], F32, shape))
    return b.op("multiply", [v, factor])


def mean(b: GraphBuilder, x: Tensor, axes: Sequence[int], *, keep_dims: bool,
         input_zp: int, multiplier: int, shift: int, output_zp: int,
         quant: QuantParams | None = None, out: str = "i8",
         compute_sum: bool = False) -> Tensor:
    """MEAN of int8 (or int16, `out`) over `axes` as TFLite Micro's QuantizedMeanOrSum
    (with `compute_sum`, SUM: the same without 1/n): the int32 sum minus
    input_zp * n, and 1/n folded into the multiplier in integers at build time
    (s = min(floor(log2 n), 32, 31 + shift); multiplier * 2**s // n, shift - s)."""
    shape = tuple(x.type.shape)
    axes = sorted({a % len(shape) for a in axes})
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    if count == 0:
        raise ValueError("MEAN over an empty dimension")
    widened, zero = _widen(b, x), b.const(0, I32)
    if keep_dims:  # a window over the reduced axes keeps them as 1s, with no reshape
        rank = len(shape)
        total = b.op("reduce_window", [widened, zero], kind="add",
                     window=tuple(shape[i] if i in axes else 1 for i in range(rank)),
                     strides=(1,) * rank, base_dilations=(1,) * rank,
                     window_dilations=(1,) * rank, padding=((0, 0),) * rank)
    else:
        total = b.op("reduce", [widened, zero], kind="add", dims=tuple(axes))
    s = 0 if compute_sum else min(count.bit_length() - 1, 32, 31 + shift)
    folded = (int(multiplier) << s) // (1 if compute_sum else count)
    kept = tuple(total.type.shape)
    v = b.op("subtract", [total, b.splat(_wrap32(int(input_zp) * count), I32, kept)])
    return requantize(b, v, folded, shift - s, axis=None, output_zp=output_zp,
                      act_min=STORAGE_RANGES[out][0], act_max=STORAGE_RANGES[out][1],
                      quant=quant, out=out)


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


# gemmlowp's Newton-Raphson division constants (Q2.29): 48/17 and -32/17.
_48_OVER_17, _MINUS_32_OVER_17 = 1515870810, -1010580540


def _srdhm(b: GraphBuilder, x: Tensor, y: Tensor | int) -> Tensor:
    if isinstance(y, int):
        y = b.splat(y, I32, tuple(x.type.shape))
    return b.op("saturating_rounding_doubling_high_mul", [x, y])


def _i32(b: GraphBuilder, op: str, x: Tensor, y: Tensor | int) -> Tensor:
    if isinstance(y, int):
        y = b.splat(y, I32, tuple(x.type.shape))
    return b.op(op, [x, y])


def _saturating_shift_left(b: GraphBuilder, x: Tensor, e: int) -> Tensor:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent: x * 2**e,
    saturated to int32."""
    shape = tuple(x.type.shape)
    threshold = (1 << (31 - e)) - 1
    shifted = _i32(b, "shift_left", x, e)
    low = b.op("select", [b.op("compare", [x, b.splat(-threshold, I32, shape)],
                                direction="LT"), b.splat(-(1 << 31), I32, shape), shifted])
    return b.op("select", [b.op("compare", [x, b.splat(threshold, I32, shape)],
                                direction="GT"), b.splat((1 << 31) - 1, I32, shape), low])


def _one_over_one_plus_x(b: GraphBuilder, a: Tensor) -> Tensor:
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 on Q0.31 raw values: 1 / (1 + a) by three
    Newton-Raphson steps from 48/17 - 32/17 * d, d = (1 + a) / 2 (a rounding half sum in
    64 bits)."""
    shape = tuple(a.type.shape)
    i64 = dtype("i64")
    total = b.op("add", [b.op("convert", [a], dtype="i64"), b.splat((1 << 31) - 1, i64, shape)])
    positive = b.op("compare", [total, b.splat(0, i64, shape)], direction="GE")
    nudged = b.op("add", [total, b.op("select", [positive, b.splat(1, i64, shape),
                                                  b.splat(-1, i64, shape)])])
    half = b.op("convert", [b.op("divide", [nudged, b.splat(2, i64, shape)])], dtype="i32")
    x = _i32(b, "add", _srdhm(b, half, _MINUS_32_OVER_17), _48_OVER_17)
    for _ in range(3):
        one_minus = b.op("subtract", [b.splat(1 << 29, I32, shape), _srdhm(b, half, x)])
        x = b.op("add", [x, _saturating_shift_left(b, _srdhm(b, x, one_minus), 2)])
    return _saturating_shift_left(b, x, 1)


def softmax(b: GraphBuilder, x: Tensor, exp_table: np.ndarray, sum_table: np.ndarray,
            quant: QuantParams | None = None, out: str = "i8") -> Tensor:
    """SOFTMAX of int8 over the last axis as TFLite Micro computes it, from the two
    256-entry tables of toolchain/quant/tflm_tables.softmax_exp_table (indexed by
    k = row max - x): the row sum of sum_table[k], its reciprocal in fixed point
    (GetReciprocal: leading zeros, then 1 / (1 + a)), and per element
    clamp(rounding_divide_by_pot(srdhm(scale, exp_table[k]), 35 - clz(sum)) - 128).
    `out` "i16" is the int8 -> int16 kernel: the same sums, an exponent 8 smaller and
    the offset -32768."""
    shape = tuple(x.type.shape)
    last = len(shape) - 1
    rows = shape[:-1]

    def per_row(t: Tensor) -> Tensor:
        return b.op("broadcast_in_dim", [t], dims=tuple(range(last)), shape=shape)

    top = b.op("reduce", [x, b.const(INT8_MIN, I8)], kind="maximum", dims=(last,))

    def table(values: np.ndarray) -> Tensor:
        # k is built anew for each table, so each copy fuses into its one reader
        # instead of a [rows, N] i32 tensor in RAM.
        k = b.op("subtract", [_widen(b, per_row(top)), _widen(b, x)])
        return b.op("gather", [b.const(np.asarray(values, np.int32), I32), k],
                    offset_dims=(), collapsed_slice_dims=(0,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(0,),
                    index_vector_dim=len(shape), slice_sizes=(1,))

    total = b.op("reduce", [table(sum_table), b.const(0, I32)], kind="add", dims=(last,))
    headroom = b.op("count_leading_zeros", [total])
    shifted = _i32(b, "subtract", b.op("shift_left", [total, headroom]), -(1 << 31))
    scale = _one_over_one_plus_x(b, shifted)
    lo, hi = STORAGE_RANGES[out]
    exponent = b.op("subtract", [b.splat(12 + 31 - dtype(out).bits, I32, rows), headroom])
    v = _srdhm(b, per_row(scale), table(exp_table))
    v = b.op("rounding_divide_by_pot", [v, per_row(exponent)])
    return _narrow(b, v, lo, lo, hi, quant, out)
