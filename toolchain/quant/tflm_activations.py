"""TFLite Micro's int8 activations and SOFTMAX, bit for bit, in numpy.

LOGISTIC, TANH, HARD_SWISH, RELU, RELU6, LEAKY_RELU and SOFTMAX: for each, a `*_params`
function doing TFLite Micro's Prepare (with its float32 / double choices) and the
kernel mirroring its int8 reference kernel. Element-wise ones take any int8 array; their
256-entry tables are built from these functions in `toolchain.quant.tflm_tables`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.quant import fixedpoint as fp
from toolchain.quant.tflm import INT8_MAX, INT8_MIN, f32


def _as_int(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """CalculateInputRadius: the largest |input| whose rescaled value stays in range,
    floor(((2**ib - 1) * 2**(total - ib)) / 2**left_shift), computed in double."""
    if left_shift < 0:
        raise ValueError("TFLite's input radius shifts by a negative amount here (the "
                         "input scale is below 2**-28): undefined in C")
    value = ((1 << integer_bits) - 1) * float(1 << (total_signed_bits - integer_bits))
    return int(math.floor(value / float(1 << left_shift)))


# ---------------------------------------------------------------------------------------
# LOGISTIC and TANH.


@dataclass(frozen=True)
class SigmoidParams:
    """LOGISTIC / TANH's Prepare: the input rescale to Q4.27 and the saturation radius."""

    input_zp: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int


def _sigmoid_params(input_scale: float, input_zp: int) -> SigmoidParams:
    # input_scale * 2**27 in double, split by frexp; the multiplier is TfLiteRound(q * 2**31)
    # *without* QuantizeMultiplier's 2**31 fix-up (it cannot round up to 2**31: a float32
    # mantissa has 24 bits).
    real = float(f32(input_scale)) * float(1 << 27)
    q, left_shift = math.frexp(real)
    multiplier = int(fp.round_half_away(np.float64(q) * float(1 << 31)))
    return SigmoidParams(int(input_zp), _input_radius(4, left_shift), multiplier, left_shift)


def logistic_params(input_scale: float, input_zp: int) -> SigmoidParams:
    """CalculateArithmeticOpDataLogistic (int8). The output must be scale 1/256, zero
    point -128; TFLite Micro checks only the zero point and writes 1/256 steps."""
    return _sigmoid_params(input_scale, input_zp)


def tanh_params(input_scale: float, input_zp: int) -> SigmoidParams:
    """TANH's CalculateArithmeticOpData (int8). The kernel writes scale 1/128, zero point
    0 whatever the output tensor says (TFLite Micro checks neither)."""
    return _sigmoid_params(input_scale, input_zp)


def _rescale_to_q4(x: np.ndarray, p: SigmoidParams) -> tuple[np.ndarray, np.ndarray]:
    d = _as_int(x) - p.input_zp
    # The shift may exceed 31 for huge scales, but then the radius is 0 and every
    # element takes a saturated branch; keep the multiply in range for the others.
    inside = (d > -p.input_range_radius) & (d < p.input_range_radius)
    q4 = fp.multiply_by_quantized_multiplier(np.where(inside, d, 0), p.input_multiplier,
                                             min(p.input_left_shift, 31))
    return d, q4


def logistic(x: np.ndarray, params: SigmoidParams) -> np.ndarray:
    """LOGISTIC int8, mirroring reference_integer_ops::Logistic.

    d = x - input_zp; d <= -radius gives -128 (tested first, so with radius 0 even d = 0
    does), d >= radius gives 127; otherwise d is rescaled to Q4.27, gemmlowp's logistic
    gives Q0.31, RoundingDivideByPOT by 23 gives 1/256 steps, - 128, clamp.
    """
    d, q4 = _rescale_to_q4(x, params)
    out = fp.rounding_divide_by_pot(fp.logistic(q4, 4), 23).astype(np.int64) - 128
    out = np.clip(out, INT8_MIN, INT8_MAX)
    out = np.where(d >= params.input_range_radius, INT8_MAX, out)
    out = np.where(d <= -params.input_range_radius, INT8_MIN, out)
    return out.astype(np.int8)


def tanh(x: np.ndarray, params: SigmoidParams) -> np.ndarray:
    """TANH int8, mirroring reference_integer_ops::Tanh: as logistic() with gemmlowp's
    tanh, RoundingDivideByPOT by 24 (1/128 steps) and no output offset."""
    d, q4 = _rescale_to_q4(x, params)
    out = np.clip(fp.rounding_divide_by_pot(fp.tanh(q4, 4), 24), INT8_MIN, INT8_MAX)
    out = np.where(d >= params.input_range_radius, INT8_MAX, out)
    out = np.where(d <= -params.input_range_radius, INT8_MIN, out)
    return out.astype(np.int8)


# ---------------------------------------------------------------------------------------
# HARD_SWISH.


@dataclass(frozen=True)
class HardSwishParams:
    """HARD_SWISH's Prepare: two Q15 multipliers with their exponents."""

    input_zp: int
    output_zp: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int


def hard_swish_params(input_scale: float, input_zp: int, output_scale: float,
                      output_zp: int) -> HardSwishParams:
    """HardSwishPrepare (int8): two multipliers, in double.

    hires = input_scale / 128 (exact); output multiplier = hires / output_scale,
    reluish multiplier = hires / (3 / 32768); each QuantizeMultiplier'd and rounded to
    Q15 (DownScaleInt32ToInt16Multiplier). TFLite Micro refuses a positive output
    exponent (output scale below about input_scale / 128). (Some TFLite Micro sources
    round the quotients to float32; the interpreter does not: see the tests.)
    """
    hires = float(f32(input_scale)) / 128.0
    out_m, out_e = fp.quantize_multiplier(hires / float(f32(output_scale)))
    rel_m, rel_e = fp.quantize_multiplier(hires / (3.0 / 32768.0))
    if out_e > 0:
        raise ValueError("HARD_SWISH: TFLite Micro requires output_multiplier_exponent <= 0 "
                         f"(output scale {output_scale} too small for input {input_scale})")
    return HardSwishParams(int(input_zp), int(output_zp),
                           fp.downscale_int32_to_int16_multiplier(out_m), out_e,
                           fp.downscale_int32_to_int16_multiplier(rel_m), rel_e)


def hard_swish(x: np.ndarray, params: HardSwishParams) -> np.ndarray:
    """HARD_SWISH int8, mirroring reference_ops::HardSwish's quantized path (int16 math).

    x - zp is put on a hi-res scale (<< 7); one copy is multiplied down to the output
    scale, the other through the "reluish" multiplier to a [0, 1] gate in Q15
    (saturating shifts around a 16-bit rounding doubling multiply); the gate times the
    value (a truncating doubling multiply), RoundingDivideByPOT to the output scale,
    + output zp in int16 (wraps), clamp to int8.
    """
    p = params
    value = fp.wrap_int16(_as_int(x) - p.input_zp)
    hires = fp.wrap_int16(value * (1 << 7))
    preshift_output = fp.saturating_rounding_doubling_high_mul_int16(
        hires, p.output_multiplier_fixedpoint_int16)
    reluish = hires
    if p.reluish_multiplier_exponent > 0:
        reluish = fp.saturating_left_shift_int16(reluish, p.reluish_multiplier_exponent - 1)
    reluish = fp.saturating_rounding_doubling_high_mul_int16(
        reluish, p.reluish_multiplier_fixedpoint_int16)
    if p.reluish_multiplier_exponent > 0:
        reluish = fp.saturating_left_shift_int16(reluish, 1)
    if p.reluish_multiplier_exponent < 0:
        reluish = fp.rounding_divide_by_pot_int16(reluish, -p.reluish_multiplier_exponent)
    reluish = fp.wrap_int16((_as_int(reluish) + (1 << 15)) >> 1)
    preshift = fp.saturating_doubling_high_mul_int16(reluish, preshift_output)
    out = fp.rounding_divide_by_pot_int16(preshift, -p.output_multiplier_exponent)
    out = fp.wrap_int16(_as_int(out) + p.output_zp)
    return np.clip(out, INT8_MIN, INT8_MAX).astype(np.int8)


# ---------------------------------------------------------------------------------------
# RELU, RELU6, LEAKY_RELU.


@dataclass(frozen=True)
class ReluParams:
    """RELU's Prepare: requantization from the input's to the output's scale, and clamp."""

    input_zp: int
    output_zp: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int


def relu_params(input_scale: float, input_zp: int, output_scale: float,
                output_zp: int) -> ReluParams:
    """CalculateReluOpData<int8>: QuantizeMultiplier(double(in_scale) / double(out_scale));
    the clamp is [max(-128, output_zp), 127]. (Some TFLite Micro sources round the
    quotient to float32; the interpreter does not: see the tests.)"""
    m, s = fp.quantize_multiplier(float(f32(input_scale)) / float(f32(output_scale)))
    return ReluParams(int(input_zp), int(output_zp), m, s, max(INT8_MIN, int(output_zp)),
                      INT8_MAX)


def relu(x: np.ndarray, params: ReluParams) -> np.ndarray:
    """RELU int8, mirroring tflite::ReluQuantized: requantize x - in_zp, + out_zp, clamp."""
    out = fp.multiply_by_quantized_multiplier(_as_int(x) - params.input_zp, params.multiplier,
                                              params.shift)
    out = _as_int(out) + params.output_zp
    return np.clip(out, params.act_min, params.act_max).astype(np.int8)


@dataclass(frozen=True)
class Relu6Params:
    """RELU6's Prepare: 0 and 6 quantized with the *input's* parameters."""

    zero: int
    six: int


def relu6_params(input_scale: float, input_zp: int) -> Relu6Params:
    """Relu6Prepare (int8): zero = input_zp, six = FloatToQuantizedType(6, in_scale, in_zp)
    (round(6 / scale) in float, + zp, clamped to int8). TFLite Micro ignores the output's
    scale and zero point: RELU6 int8 does no requantization."""
    q = float(fp.round_half_away(np.float32(6.0) / f32(input_scale)))
    if abs(q) >= 2.0 ** 31:
        raise ValueError("RELU6: 6 / input_scale beyond int32 (undefined in TFLite Micro)")
    six = min(max(int(q + int(input_zp)), INT8_MIN), INT8_MAX)
    return Relu6Params(int(input_zp), six)


def relu6(x: np.ndarray, params: Relu6Params) -> np.ndarray:
    """RELU6 int8, mirroring Relu6Quantized: clamp to [zero, six] (upper bound tested first)."""
    x = _as_int(x)
    out = np.where(x > params.six, params.six, np.where(x < params.zero, params.zero, x))
    return out.astype(np.int8)


@dataclass(frozen=True)
class LeakyReluParams:
    """LEAKY_RELU's Prepare: one multiplier for each side of zero."""

    input_zp: int
    output_zp: int
    multiplier_alpha: int
    shift_alpha: int
    multiplier_identity: int
    shift_identity: int


def leaky_relu_params(input_scale: float, input_zp: int, output_scale: float,
                      output_zp: int, alpha: float) -> LeakyReluParams:
    """CalculateOpDataLeakyRelu (int8): QuantizeMultiplier of in_scale * alpha / out_scale
    and of in_scale / out_scale, in double from the float32 scales and alpha. (Some
    TFLite Micro sources form both in float32; the interpreter does not: see the tests.)
    """
    s_in, s_out, a = float(f32(input_scale)), float(f32(output_scale)), float(np.float32(alpha))
    ma, sa = fp.quantize_multiplier(s_in * a / s_out)
    mi, si = fp.quantize_multiplier(s_in / s_out)
    return LeakyReluParams(int(input_zp), int(output_zp), ma, sa, mi, si)


def leaky_relu(x: np.ndarray, params: LeakyReluParams) -> np.ndarray:
    """LEAKY_RELU int8, mirroring reference_ops::QuantizeLeakyRelu: x - zp >= 0 goes
    through the identity multiplier, below zero through the alpha one (a negative alpha
    multiplies by |alpha| and negates), + output zp, clamp."""
    p = params
    d = _as_int(x) - p.input_zp
    identity = _as_int(fp.multiply_by_quantized_multiplier(d, p.multiplier_identity,
                                                           p.shift_identity))
    scaled = _as_int(fp.multiply_by_quantized_multiplier(d, abs(p.multiplier_alpha),
                                                         p.shift_alpha))
    alpha_side = -scaled if p.multiplier_alpha < 0 else scaled
    out = p.output_zp + np.where(d >= 0, identity, alpha_side)
    return np.clip(out, INT8_MIN, INT8_MAX).astype(np.int8)


# ---------------------------------------------------------------------------------------
# SOFTMAX.

SOFTMAX_DIFF_INTEGER_BITS = 5      # the scaled difference is Q5.26
SOFTMAX_ACCUMULATION_BITS = 12     # the sum of exps is Q12.19


@dataclass(frozen=True)
class SoftmaxParams:
    """SOFTMAX's Prepare (int8): the beta * scale rescale of differences, and the cut-off."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int


def softmax_params(input_scale: float, beta: float = 1.0) -> SoftmaxParams:
    """CalculateSoftmaxParams (int8 -> int8) via PreprocessSoftmaxScaling, in double.

    real = min(double(beta) * double(input_scale) * 2**26, 2**31 - 1), which must be
    above 1 (QuantizeMultiplierGreaterThanOne aborts otherwise); diff_min =
    -CalculateInputRadius(5, left_shift). The output must be scale 1/256, zero point
    -128 (TFLite Micro checks both). The input zero point plays no part.
    """
    real = min(float(np.float32(beta)) * float(f32(input_scale)) * float(1 << 26),
               float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"SOFTMAX: beta * input_scale * 2**26 = {real} must exceed 1 "
                         "(TFLite Micro aborts)")
    m, shift = fp.quantize_multiplier(real)
    return SoftmaxParams(m, shift, -_input_radius(SOFTMAX_DIFF_INTEGER_BITS, shift))


def softmax_scaled_diff_exp(diff: np.ndarray, params: SoftmaxParams) -> np.ndarray:
    """exp of a (x - row max) difference as SOFTMAX computes it: Q0.31 raw, int32.

    diff >= diff_min: MultiplyByQuantizedMultiplierGreaterThanOne (saturating nothing:
    a plain x * 2**shift then rounding doubling multiply) to Q5.26, then gemmlowp's
    exp_on_negative_values. Below diff_min the element is skipped by the kernel; 0 here.
    """
    d = _as_int(diff)
    inside = d >= params.diff_min
    shifted = fp.wrap_int32(np.where(inside, d, 0) * (np.int64(1) << params.input_left_shift))
    scaled = fp.saturating_rounding_doubling_high_mul(shifted, params.input_multiplier)
    e = fp.exp_on_negative_values(scaled, SOFTMAX_DIFF_INTEGER_BITS)
    return np.where(inside, e, 0).astype(np.int32)


def softmax(x: np.ndarray, params: SoftmaxParams) -> np.ndarray:
    """SOFTMAX int8 -> int8 over the last axis, mirroring reference_ops::Softmax.

    Per row: the max; for each element within diff_min of it, exp of the rescaled
    difference (Q0.31), summed after Rescale to Q12.19; the sum's reciprocal by
    GetReciprocal (a Q0.31 scale and a power of two, exponent = bits over unit + 23);
    each output RoundingDivideByPOT(scale * exp, exponent) - 128, clamped; elements
    below diff_min give -128.
    """
    x = _as_int(x)
    diff = x - x.max(axis=-1, keepdims=True)
    exps = softmax_scaled_diff_exp(diff, params)
    terms = fp.rescale(exps, 0, SOFTMAX_ACCUMULATION_BITS).astype(np.int64)
    total = fp.wrap_int32(terms.sum(axis=-1, keepdims=True))
    shifted_scale, bits_over_unit = fp.get_reciprocal(total, SOFTMAX_ACCUMULATION_BITS)
    exponent = bits_over_unit.astype(np.int64) + 31 - 8
    if np.any((exponent < 0) | (exponent > 31)):
        raise ValueError("SOFTMAX: reciprocal exponent outside [0, 31] (TFLite Micro aborts)")
    out = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(shifted_scale, exps),
                                    exponent).astype(np.int64) - 128
    out = np.where(diff >= params.diff_min, np.clip(out, INT8_MIN, INT8_MAX), INT8_MIN)
    return out.astype(np.int8)
