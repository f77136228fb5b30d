"""TFLite Micro's int8 operators, bit for bit, in numpy: parameter derivation and kernels.

For each operator there are two halves:
- a `*_params` function doing what TFLite Micro's Prepare does with the tensors' scales
  and zero points. Scales are float32 in the flatbuffer; which products and quotients
  TFLite Micro forms in float32 and which in double decides the multipliers' last bits,
  so each docstring says which, and the code does the same (`np.float32` arithmetic for
  the float ones, Python floats for the double ones);
- the kernel, mirroring TFLite Micro's int8 reference kernel (the one its Python
  interpreter runs), in numpy. Accumulators are exact and wrap to int32 like the C code.

The reference is TFLite Micro's own interpreter (the `tflite-micro` wheel, built from
tflite-micro commit 8f6596d). Where it departs from the TFLite Micro source read for this
(commit 90b983c), the interpreter wins and the tests show the difference: it derives the
multipliers of SUB, per-tensor FULLY_CONNECTED, RELU, LEAKY_RELU and HARD_SWISH in double
where that source rounds a quotient or product to float32 first. Activation bounds,
RELU6's bound and QUANTIZE still divide in float32.

Activations are NHWC, conv filters OHWI, depthwise filters 1HWO, fully-connected weights
(units, depth). Integer arrays in, int8 arrays out.

The element-wise activations (LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, LEAKY_RELU) and
SOFTMAX are in `toolchain.quant.tflm_activations`; their 256-entry tables and SOFTMAX's
phases in `toolchain.quant.tflm_tables`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolchain.quant.fixedpoint import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    quantize_multipliers,
    round_half_away,
    wrap_int32,
)

INT8_MIN, INT8_MAX = -128, 127

# Fused activation -> the real interval it clamps to (None: unbounded on that side).
# TFLite's CalculateActivationRangeQuantized quantizes these bounds with the output's
# scale and zero point.
ACTIVATION_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "NONE": (None, None),
    "RELU": (0.0, None),
    "RELU_N1_TO_1": (-1.0, 1.0),
    "RELU6": (0.0, 6.0),
}


def f32(x: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """A scale as TFLite holds it: float32 (the flatbuffer's type)."""
    return np.asarray(x, dtype=np.float32)


def _as_int(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _to_int8(acc: np.ndarray, act_min: int, act_max: int) -> np.ndarray:
    return np.clip(acc, act_min, act_max).astype(np.int8)


# ---------------------------------------------------------------------------------------
# Shared Prepare-time helpers.


def quantize_real(value: float, scale: float, zero_point: int) -> int:
    """TFLite's Quantize() in kernel_util.cc: zp + int(TfLiteRound(value / scale)).

    The division is in float32 (value and scale are floats there).
    """
    q = round_half_away(np.float32(value) / f32(scale))
    return int(zero_point) + int(q)


def activation_range(activation: str, output_scale: float, output_zp: int,
                     qmin: int = INT8_MIN, qmax: int = INT8_MAX) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the int8 clamp of a fused activation.

    NONE, RELU, RELU6 or RELU_N1_TO_1; each real bound is quantized with the output's
    scale (float32 division, ties away from zero) and intersected with [qmin, qmax].
    """
    if activation not in ACTIVATION_BOUNDS:
        raise ValueError(f"unknown fused activation {activation!r}; "
                         f"expected one of {', '.join(ACTIVATION_BOUNDS)}")
    low, high = ACTIVATION_BOUNDS[activation]
    act_min = qmin if low is None else max(qmin, quantize_real(low, output_scale, output_zp))
    act_max = qmax if high is None else min(qmax, quantize_real(high, output_scale, output_zp))
    return act_min, act_max


def compute_padding(in_size: int, filter_size: int, stride: int, dilation: int,
                    padding: str) -> tuple[int, int]:
    """ComputePaddingHeightWidth for one spatial axis: (output size, padding before).

    SAME: out = ceil(in / stride); VALID: out = (in - effective_filter) / stride + 1.
    The padding before is half the total, rounded down; the rest goes after (the
    kernels skip taps outside the image, so only the leading padding matters).
    """
    effective = (filter_size - 1) * dilation + 1
    if padding == "SAME":
        out = (in_size + stride - 1) // stride
    elif padding == "VALID":
        out = (in_size + stride - effective) // stride
    else:
        raise ValueError(f"padding must be SAME or VALID, got {padding!r}")
    if out < 0:
        raise ValueError(f"filter {filter_size} (dilation {dilation}) larger than input {in_size}")
    total = max(0, (out - 1) * stride + effective - in_size)
    return out, total // 2


# ---------------------------------------------------------------------------------------
# Convolutions and fully connected.


def conv_params(input_scale: float, filter_scales: Sequence[float] | float,
                output_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """PopulateConvolutionQuantizationParams (CONV_2D, DEPTHWISE_CONV_2D): per channel.

    effective = double(input_scale) * double(filter_scale[c]) / double(output_scale),
    all in double, then QuantizeMultiplier. A single filter scale is per-tensor; the
    caller broadcasts it over the channels. Returns (int32 multipliers, int32 shifts).
    """
    scales = np.atleast_1d(f32(filter_scales)).astype(np.float64)
    effective = float(f32(input_scale)) * scales / float(f32(output_scale))
    return quantize_multipliers(effective)


def fully_connected_params(input_scale: float, filter_scales: Sequence[float] | float,
                           output_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """CalculateOpDataFullyConnected: (int32 multipliers, int32 shifts), as conv_params.

    Per-channel and per-tensor weights alike use double(input_scale) *
    double(filter_scale) / double(output_scale). (Some TFLite Micro sources form the
    per-tensor product in float32 first; the interpreter this project checks against
    does not, and the tests hold us to the interpreter.)
    """
    return conv_params(input_scale, filter_scales, output_scale)


def _gather_windows(xs: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
                    dilations: tuple[int, int], pads: tuple[int, int],
                    out_hw: tuple[int, int], fill: int) -> np.ndarray:
    """(N, H, W, C) -> (N, out_h, out_w, kh, kw, C): every tap of every output position.

    Taps outside the image read `fill`; callers choose a value that is neutral for their
    reduction, which is how TFLite's kernels skipping those taps is reproduced.
    """
    n, h, w, c = xs.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl), (oh, ow) = kernel, strides, dilations, pads, out_hw
    iy = (np.arange(oh) * sh)[:, None] + (np.arange(kh) * dh)[None, :]  # padded coordinates
    ix = (np.arange(ow) * sw)[:, None] + (np.arange(kw) * dw)[None, :]
    pb = max(0, int(iy.max(initial=0)) + 1 - h - pt)
    pr = max(0, int(ix.max(initial=0)) + 1 - w - pl)
    padded = np.pad(xs, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    return padded[:, iy[:, None, :, None], ix[None, :, None, :], :]


def _exact_dot(cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """cols (M, K) @ weights (O, K).T, exact, as int64.

    float64 products of |v| <= 255 * 128 summed over K terms stay integers below 2**53
    for any K < 2**37, so BLAS gives the exact integer sum.
    """
    if cols.shape[1] >= 1 << 37:
        raise ValueError("accumulation depth too large for an exact float64 dot product")
    return (cols.astype(np.float64) @ weights.astype(np.float64).T).astype(np.int64)


def _requantize_acc(acc: np.ndarray, bias: np.ndarray | None, multipliers: np.ndarray,
                    shifts: np.ndarray, output_zp: int, act_min: int, act_max: int) -> np.ndarray:
    """The common tail of the conv / FC kernels, channels on the last axis."""
    if bias is not None:
        acc = acc + _as_int(bias)
    acc = wrap_int32(acc)  # the C accumulator is int32
    scaled = _as_int(multiply_by_quantized_multiplier(acc, multipliers, shifts))
    return _to_int8(scaled + output_zp, act_min, act_max)


def _per_channel(values: np.ndarray, channels: int) -> np.ndarray:
    values = np.atleast_1d(np.asarray(values))
    return np.broadcast_to(values, (channels,)) if values.size == 1 else values


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *,
           strides: tuple[int, int], padding: str, dilations: tuple[int, int] = (1, 1),
           input_zp: int, output_zp: int, multipliers: np.ndarray, shifts: np.ndarray,
           act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """CONV_2D, mirroring reference_integer_ops::ConvPerChannel.

    x (N, H, W, Cin) int8, w (Cout, KH, KW, Cin / groups) int8, bias (Cout,) int32 or
    None. acc = sum w * (x - input_zp) over in-image taps (the filter zero point is
    ignored: int8 filters are symmetric), + bias, wrapped to int32; then
    MultiplyByQuantizedMultiplier per output channel, + output_zp, clamp.
    """
    x, w = _as_int(x), _as_int(w)
    n, h, wd, cin = x.shape
    cout, kh, kw, fin = w.shape
    groups = cin // fin
    if groups * fin != cin or cout % groups:
        raise ValueError(f"input depth {cin} is not a multiple of filter depth {fin}")
    oh, pt = compute_padding(h, kh, strides[0], dilations[0], padding)
    ow, pl = compute_padding(wd, kw, strides[1], dilations[1], padding)
    win = _gather_windows(x - input_zp, (kh, kw), strides, dilations, (pt, pl), (oh, ow), 0)
    per_group = cout // groups
    acc = np.empty((n * oh * ow, cout), dtype=np.int64)
    for g in range(groups):
        cols = win[..., g * fin:(g + 1) * fin].reshape(n * oh * ow, kh * kw * fin)
        out = slice(g * per_group, (g + 1) * per_group)
        acc[:, out] = _exact_dot(cols, w[out].reshape(per_group, -1))
    return _requantize_acc(acc.reshape(n, oh, ow, cout), bias, _per_channel(multipliers, cout),
                           _per_channel(shifts, cout), output_zp, act_min, act_max)


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *,
                     strides: tuple[int, int], padding: str, depth_multiplier: int,
                     dilations: tuple[int, int] = (1, 1), input_zp: int, output_zp: int,
                     multipliers: np.ndarray, shifts: np.ndarray,
                     act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """DEPTHWISE_CONV_2D, mirroring reference_integer_ops::DepthwiseConvPerChannel.

    x (N, H, W, C) int8, w (1, KH, KW, C * depth_multiplier) int8. Output channel
    oc = ic * depth_multiplier + m reads input channel ic = oc // depth_multiplier;
    otherwise as conv2d.
    """
    x, w = _as_int(x), _as_int(w)
    n, h, wd, c = x.shape
    _, kh, kw, cout = w.shape
    if cout != c * depth_multiplier:
        raise ValueError(f"filter has {cout} channels, expected {c} x {depth_multiplier}")
    oh, pt = compute_padding(h, kh, strides[0], dilations[0], padding)
    ow, pl = compute_padding(wd, kw, strides[1], dilations[1], padding)
    win = _gather_windows(x - input_zp, (kh, kw), strides, dilations, (pt, pl), (oh, ow), 0)
    win = win[..., np.arange(cout) // depth_multiplier]  # (N, oh, ow, kh, kw, Cout)
    acc = np.einsum("nyxhwc,hwc->nyxc", win, w[0])
    return _requantize_acc(acc, bias, _per_channel(multipliers, cout),
                           _per_channel(shifts, cout), output_zp, act_min, act_max)


def fully_connected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *,
                    input_zp: int, output_zp: int, multipliers: np.ndarray,
                    shifts: np.ndarray, filter_zp: int = 0,
                    act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """FULLY_CONNECTED, mirroring reference_integer_ops::FullyConnected(PerChannel).

    x is read as (batches, depth) rows, w is (units, depth); returns (batches, units).
    acc = sum (w - filter_zp) * (x - input_zp) + bias (the per-tensor kernel applies
    the filter zero point, the per-channel one does not: give 0 there, as the
    quantization spec requires), then requantized per unit like conv2d.
    """
    x, w = _as_int(x), _as_int(w)
    units, depth = w.shape
    rows = x.reshape(-1, depth)
    acc = _exact_dot(rows - input_zp, w - filter_zp)
    return _requantize_acc(acc, bias, _per_channel(multipliers, units),
                           _per_channel(shifts, units), output_zp, act_min, act_max)


# ---------------------------------------------------------------------------------------
# Pooling and MEAN.


def average_pool(x: np.ndarray, *, filter_size: tuple[int, int], strides: tuple[int, int],
                 padding: str, act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """AVERAGE_POOL_2D, mirroring reference_integer_ops::AveragePool (int8).

    The raw int8 values (no zero point: input and output share it) are summed over the
    in-image taps only; the average divides by that tap count n, rounding half away
    from zero the C way: (acc + n/2) / n for acc > 0, else (acc - n/2) / n, both
    divisions truncating.
    """
    x = _as_int(x)
    n, h, w, c = x.shape
    (kh, kw), (sh, sw) = filter_size, strides
    oh, pt = compute_padding(h, kh, sh, 1, padding)
    ow, pl = compute_padding(w, kw, sw, 1, padding)
    win = _gather_windows(x, (kh, kw), strides, (1, 1), (pt, pl), (oh, ow), 0)
    inside = _gather_windows(np.ones((1, h, w, 1), dtype=np.int64), (kh, kw), strides,
                             (1, 1), (pt, pl), (oh, ow), 0)
    acc = win.sum(axis=(3, 4))
    count = inside.sum(axis=(3, 4))  # (1, oh, ow, 1)
    if np.any(count == 0):
        raise ValueError("a pooling window lies entirely in the padding")
    half = count // 2
    num = np.where(acc > 0, acc + half, acc - half)
    avg = np.sign(num) * (np.abs(num) // count)  # C division truncates toward zero
    return _to_int8(avg, act_min, act_max)


def max_pool(x: np.ndarray, *, filter_size: tuple[int, int], strides: tuple[int, int],
             padding: str, act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """MAX_POOL_2D, mirroring reference_integer_ops::MaxPool: max over in-image taps."""
    x = _as_int(x)
    n, h, w, c = x.shape
    (kh, kw), (sh, sw) = filter_size, strides
    oh, pt = compute_padding(h, kh, sh, 1, padding)
    ow, pl = compute_padding(w, kw, sw, 1, padding)
    win = _gather_windows(x, (kh, kw), strides, (1, 1), (pt, pl), (oh, ow), INT8_MIN)
    return _to_int8(win.max(axis=(3, 4)), act_min, act_max)


@dataclass(frozen=True)
class MeanParams:
    """MEAN's Prepare: the input/output rescale as one multiplier, and the zero points."""

    multiplier: int
    shift: int
    input_zp: int
    output_zp: int


def mean_params(input_scale: float, input_zp: int, output_scale: float,
                output_zp: int) -> MeanParams:
    """PrepareMeanOrSumHelper: QuantizeMultiplier(double(in_scale) / double(out_scale))."""
    m, s = quantize_multiplier(float(f32(input_scale)) / float(f32(output_scale)))
    return MeanParams(m, s, int(input_zp), int(output_zp))


def mean(x: np.ndarray, axes: Sequence[int], keep_dims: bool, params: MeanParams) -> np.ndarray:
    """MEAN (int8), mirroring reference_ops::QuantizedMeanOrSum with compute_sum=false.

    sum - input_zp * n over the reduced axes (int32), then the 1/n factor folded into
    the multiplier in integers: with s = min(floor(log2 n), 32, 31 + shift),
    multiplier' = (multiplier << s) // n and shift' = shift - s; then
    MultiplyByQuantizedMultiplier, + output_zp, clamp.
    """
    x = _as_int(x)
    resolved = sorted({a + x.ndim if a < 0 else a for a in axes})
    count = int(np.prod([x.shape[a] for a in resolved], dtype=np.int64))
    total = x.sum(axis=tuple(resolved), keepdims=keep_dims)
    if count == 0:
        return np.zeros(total.shape, dtype=np.int8)
    s = min(count.bit_length() - 1, 32, 31 + params.shift)
    multiplier = (params.multiplier << s) // count
    shift = params.shift - s
    shifted_sum = wrap_int32(total - params.input_zp * count)
    out = _as_int(multiply_by_quantized_multiplier(shifted_sum, multiplier, shift))
    return _to_int8(out + params.output_zp, INT8_MIN, INT8_MAX)


# ---------------------------------------------------------------------------------------
# ADD, SUB, MUL.


@dataclass(frozen=True)
class AddParams:
    """ADD / SUB's Prepare: each input rescaled to a common scale with 20 bits of headroom."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


def _smaller_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: QuantizeMultiplier, checked to be < 1."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"TFLite Micro aborts here: multiplier {real} is not in (0, 1)")
    return quantize_multiplier(real)


def add_params(input1_scale: float, input1_zp: int, input2_scale: float, input2_zp: int,
               output_scale: float, output_zp: int, activation: str = "NONE") -> AddParams:
    """CalculateOpDataAdd (int8): all in double.

    twice_max = 2 * double(max(s1, s2)) (the max taken in float32);
    m1 = s1 / twice_max, m2 = s2 / twice_max, mo = twice_max / (2**20 * so).
    """
    s1, s2, so = f32(input1_scale), f32(input2_scale), f32(output_scale)
    twice_max = 2 * float(max(s1, s2))
    m1 = _smaller_than_one(float(s1) / twice_max)
    m2 = _smaller_than_one(float(s2) / twice_max)
    mo = _smaller_than_one(twice_max / ((1 << 20) * float(so)))
    return AddParams(-int(input1_zp), -int(input2_zp), int(output_zp), 20, *m1, *m2, *mo,
                     *activation_range(activation, output_scale, output_zp))


def sub_params(input1_scale: float, input1_zp: int, input2_scale: float, input2_zp: int,
               output_scale: float, output_zp: int, activation: str = "NONE") -> AddParams:
    """SUB's Prepare (int8): the same derivation as add_params, in double.

    TFLite Micro's source at some revisions forms SUB's quotients in float32; the
    interpreter this project checks against (the tflite-micro wheel) does them in double,
    like ADD, and the tests hold us to the interpreter.
    """
    return add_params(input1_scale, input1_zp, input2_scale, input2_zp, output_scale,
                      output_zp, activation)


def _rescaled_inputs(x1: np.ndarray, x2: np.ndarray,
                     p: AddParams) -> tuple[np.ndarray, np.ndarray]:
    a = _as_int(x1) + p.input1_offset
    b = _as_int(x2) + p.input2_offset
    a = multiply_by_quantized_multiplier(a << p.left_shift, p.input1_multiplier, p.input1_shift)
    b = multiply_by_quantized_multiplier(b << p.left_shift, p.input2_multiplier, p.input2_shift)
    return _as_int(a), _as_int(b)


def _finish_add(raw: np.ndarray, p: AddParams) -> np.ndarray:
    out = _as_int(multiply_by_quantized_multiplier(wrap_int32(raw), p.output_multiplier,
                                                   p.output_shift))
    return _to_int8(out + p.output_offset, p.act_min, p.act_max)


def add(x1: np.ndarray, x2: np.ndarray, params: AddParams) -> np.ndarray:
    """ADD (int8, numpy broadcasting), mirroring reference_integer_ops::AddFunc.

    Each input: (x + offset) << 20, MultiplyByQuantizedMultiplierSmallerThanOneExp by
    its multiplier; the sum likewise by the output multiplier; + output zp; clamp.
    """
    a, b = _rescaled_inputs(x1, x2, params)
    return _finish_add(a + b, params)


def sub(x1: np.ndarray, x2: np.ndarray, params: AddParams) -> np.ndarray:
    """SUB (int8, numpy broadcasting), mirroring reference_ops::Sub's quantized path:
    as add() with the difference of the rescaled inputs."""
    a, b = _rescaled_inputs(x1, x2, params)
    return _finish_add(a - b, params)


@dataclass(frozen=True)
class MulParams:
    """MUL's Prepare: one multiplier for s1 * s2 / so, and the zero points."""

    input1_zp: int
    input2_zp: int
    output_zp: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int


def mul_params(input1_scale: float, input1_zp: int, input2_scale: float, input2_zp: int,
               output_scale: float, output_zp: int, activation: str = "NONE") -> MulParams:
    """CalculateOpDataMul: QuantizeMultiplier(double(s1) * double(s2) / double(so))."""
    real = float(f32(input1_scale)) * float(f32(input2_scale)) / float(f32(output_scale))
    m, s = quantize_multiplier(real)
    return MulParams(int(input1_zp), int(input2_zp), int(output_zp), m, s,
                     *activation_range(activation, output_scale, output_zp))


def mul(x1: np.ndarray, x2: np.ndarray, params: MulParams) -> np.ndarray:
    """MUL (int8, numpy broadcasting), mirroring reference_integer_ops::MulElementwise:
    MultiplyByQuantizedMultiplier((x1 - zp1) * (x2 - zp2)) + output zp, clamp."""
    prod = (_as_int(x1) - params.input1_zp) * (_as_int(x2) - params.input2_zp)
    out = _as_int(multiply_by_quantized_multiplier(prod, params.multiplier, params.shift))
    return _to_int8(out + params.output_zp, params.act_min, params.act_max)


# ---------------------------------------------------------------------------------------
# QUANTIZE, DEQUANTIZE, requantization.


def quantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """QUANTIZE float32 -> int8, mirroring reference_ops::AffineQuantize.

    TfLiteRound(x / scale) in float32 (the scale is held as a double but divided as a
    float), + zero point, clamp to int8. NaN and values beyond int32 are undefined in
    the C code, so they are refused.
    """
    x = np.asarray(x, dtype=np.float32)
    q = round_half_away(x / f32(scale))
    if not np.all(np.isfinite(q)) or np.any(np.abs(q) >= 2.0 ** 31):
        raise ValueError("quantize: a value is NaN or beyond int32 once divided by the scale")
    return _to_int8(q.astype(np.int64) + int(zero_point), INT8_MIN, INT8_MAX)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """DEQUANTIZE int8 -> float32, mirroring reference_ops::Dequantize:
    float(double(scale) * (q - zero_point))."""
    d = float(f32(scale)) * (_as_int(q) - int(zero_point)).astype(np.float64)
    return d.astype(np.float32)


@dataclass(frozen=True)
class RequantizeParams:
    """QUANTIZE int8 -> int8's Prepare: one multiplier for in_scale / out_scale."""

    multiplier: int
    shift: int
    input_zp: int
    output_zp: int


def requantize_params(input_scale: float, input_zp: int, output_scale: float,
                      output_zp: int) -> RequantizeParams:
    """PrepareQuantizeReference: QuantizeMultiplier(double(in_scale) / double(out_scale))."""
    m, s = quantize_multiplier(float(f32(input_scale)) / float(f32(output_scale)))
    return RequantizeParams(m, s, int(input_zp), int(output_zp))


def requantize(x: np.ndarray, params: RequantizeParams) -> np.ndarray:
    """QUANTIZE int8 -> int8, mirroring reference_ops::Requantize:
    MultiplyByQuantizedMultiplier(x - in_zp) + out_zp, clamp."""
    out = multiply_by_quantized_multiplier(_as_int(x) - params.input_zp, params.multiplier,
                                           params.shift)
    return _to_int8(_as_int(out) + params.output_zp, INT8_MIN, INT8_MAX)


# ---------------------------------------------------------------------------------------
# Data movement.


def pad(x: np.ndarray, paddings: np.ndarray, output_zp: int) -> np.ndarray:
    """PAD (int8): paddings (rank, 2) of (before, after); the pad value is the output's
    zero point (TFLite Micro's PAD without constant_values)."""
    paddings = np.asarray(paddings, dtype=np.int64)
    if np.any(paddings < 0):
        raise ValueError("negative padding")
    return np.pad(np.asarray(x, dtype=np.int8), [tuple(p) for p in paddings.tolist()],
                  constant_values=int(output_zp))


def concatenation(xs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """CONCATENATION (int8): TFLite Micro requires every input to share the output's scale
    and zero point, and applies no fused activation to int8, so this is a copy."""
    return np.concatenate([np.asarray(x, dtype=np.int8) for x in xs], axis=axis)


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """TRANSPOSE: a permutation of the axes (negative entries count from the end)."""
    return np.transpose(np.asarray(x), [p % np.ndim(x) for p in perm]).copy()


def strided_slice(x: np.ndarray, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int], *, begin_mask: int = 0, end_mask: int = 0,
                  shrink_axis_mask: int = 0, offset: bool = False) -> np.ndarray:
    """STRIDED_SLICE, mirroring reference_ops::StridedSlice's index rules.

    Per axis: a negative index counts from the end; start is clamped to [0, size] for a
    positive stride, [-1, size - 1] for a negative one, and the begin mask overrides it
    with the first (or last) element; end likewise (the end mask gives size, or -1); a
    shrunk axis takes one element and disappears; with `offset`, end is relative to
    start. Ellipsis and new-axis masks are not supported by TFLite Micro either.
    """
    x = np.asarray(x)
    if not len(begin) == len(end) == len(strides) == x.ndim:
        raise ValueError("begin, end and strides need one entry per input dimension")
    index: list[slice | int] = []
    for axis, size in enumerate(x.shape):
        stride = int(strides[axis])
        if stride == 0:
            raise ValueError("strided_slice: zero stride")
        start = int(begin[axis]) + (size if begin[axis] < 0 else 0)
        start = min(max(start, 0), size) if stride > 0 else min(max(start, -1), size - 1)
        if begin_mask & (1 << axis):
            start = 0 if stride > 0 else size - 1
        if shrink_axis_mask & (1 << axis):
            index.append(start)
            continue
        stop = int(end[axis]) + (start if offset else 0)
        stop += size if stop < 0 else 0
        stop = min(max(stop, 0), size) if stride > 0 else min(max(stop, -1), size - 1)
        if end_mask & (1 << axis):
            stop = size if stride > 0 else -1
        if stride > 0 and stop <= start or stride < 0 and stop >= start:
            index.append(slice(0, 0))
        else:
            index.append(slice(start, None if stop < 0 else stop, stride))
    return x[tuple(index)].copy()

