"""LOG_SOFTMAX int8 -> int8 as TFLite Micro computes it (reference_ops::LogSoftmax's
quantized path, with the parameters of its Prepare), in numpy: our own code, the same
fixed-point arithmetic (gemmlowp's FixedPoint on int32 raws: `*` a saturating rounding
doubling high multiply, `+` / `-` wrapping).

Per row over the last axis, with d = x - row max (an integer in [-255, 0]):

    sum   = sum over d >= diff_min of Rescale<12>(exp_on_negative_values<5>(d * m))
    log   = log_x_for_x_greater_than_or_equal_to_1<5>(sum)      (Q5.26)
    cut   = max(diff_min - 1, MultiplyByQuantizedMultiplier(log + INT32_MIN, rev, -rev_shift))
    out   = d > cut ? clamp(RoundingDivideByPOT(d * m - log, 22) + 127) : -128

with d * m = MultiplyByQuantizedMultiplier(d, input_multiplier, input_left_shift), in
Q5.26. The output is scale 16/256, zero point 127 (TFLite Micro requires both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.quant import fixedpoint as fp
from toolchain.quant.tflm_activations import softmax_params

INPUT_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12
OUTPUT_INTEGER_BITS = 4
OUTPUT_SCALE = 16.0 / 256
OUTPUT_ZERO_POINT = 127
# RoundingDivideByPOT of the Q5.26 difference down to the output's units.
OUTPUT_SHIFT = 31 - INPUT_INTEGER_BITS - OUTPUT_INTEGER_BITS

# gemmlowp constants of log(x) for x >= 1, raw Q0.31.
LOG_2 = 1488522236
SQRT_SQRT_HALF = 1805811301
SQRT_HALF = 1518500250
ONE_QUARTER = 536870912
ALPHA_N = 117049297   # 11/240 * 2**(1/4)
ALPHA_D = 127690142   # 1/20 * 2**(1/4)
ALPHA_I = 1057819769  # 2 / 2**(1/4) - 2**(1/4)
ALPHA_F = 638450708   # 1/4 * 2**(1/4)


@dataclass(frozen=True)
class LogSoftmaxParams:
    """LOG_SOFTMAX's Prepare (int8): the difference rescale (as SOFTMAX's, beta 1), its
    inverse as a multiplier below one, and the cut-off."""

    input_multiplier: int
    input_left_shift: int
    reverse_scaling_divisor: int
    reverse_scaling_right_shift: int  # >= 0
    diff_min: int


def log_softmax_params(input_scale: float) -> LogSoftmaxParams:
    """PreprocessLogSoftmaxScalingExp with beta 1 and 5 integer bits: SOFTMAX's rescale,
    then QuantizeMultiplier of 2**(31 - left_shift) / multiplier (double), which must be
    in (0, 1) (TFLite aborts otherwise). ValueError for a scale TFLite Micro rejects."""
    p = softmax_params(input_scale, 1.0)
    reverse = float(1 << (31 - p.input_left_shift)) / float(p.input_multiplier)
    if not 0.0 < reverse < 1.0:
        raise ValueError(f"LOG_SOFTMAX: the reverse scaling divisor {reverse} must be in "
                         "(0, 1) (TFLite aborts)")
    divisor, shift = fp.quantize_multiplier(reverse)
    if shift > 0:
        raise ValueError(f"LOG_SOFTMAX: reverse scaling shift {shift} above 0 (TFLite aborts)")
    return LogSoftmaxParams(p.input_multiplier, p.input_left_shift, divisor, -shift,
                            p.diff_min)


def _sat_shift(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """TFLite SaturatingRoundingMultiplyByPOTParam for an exponent in [0, 31] (a
    per-element array): x * 2**exponent, saturated to int32."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    threshold = (np.int64(1) << (31 - e)) - 1
    shifted = fp.wrap_int32(x << e)
    out = np.where(x > threshold, fp.INT32_MAX, np.where(x < -threshold, fp.INT32_MIN, shifted))
    return np.where(e == 0, x, out).astype(np.int32)


def _sat_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(a, np.int64) + b, fp.INT32_MIN, fp.INT32_MAX).astype(np.int32)


def _clz32(x: np.ndarray) -> np.ndarray:
    return fp.count_leading_zeros_u32(np.asarray(x, np.int64) & 0xFFFFFFFF)


def log_x_ge_1(x: np.ndarray, input_integer_bits: int = ACCUMULATION_INTEGER_BITS,
               output_integer_bits: int = INPUT_INTEGER_BITS) -> np.ndarray:
    """log_x_for_x_greater_than_or_equal_to_1<output, input>: raw Q`output` log of a
    positive raw Q`input` x. The input is split as 2**k * r with r near [sqrt(1/2), 1)
    (two candidate splits, the better taken), and log r from a rational approximation
    around 2**(-1/4), then k log 2 added."""
    accum_bits = output_integer_bits + 1
    srdhm = fp.saturating_rounding_doubling_high_mul
    x = np.asarray(x, np.int64)
    quarter = fp.rescale(ONE_QUARTER, 0, accum_bits)
    headroom_a = _clz32(x)
    r_a = _sat_shift(srdhm(_sat_shift(x, headroom_a - 1), SQRT_HALF), np.int64(1))
    pow_a = _sat_add(_sat_shift(input_integer_bits - headroom_a, np.int64(31 - accum_bits)),
                     quarter)
    z_b = srdhm(x, SQRT_HALF)
    headroom_b = _clz32(z_b) - 1
    r_b = _sat_shift(x, headroom_b)
    pow_b = np.clip(_sat_shift(input_integer_bits - headroom_b, np.int64(31 - accum_bits))
                    .astype(np.int64) - quarter, fp.INT32_MIN, fp.INT32_MAX)
    r = np.minimum(r_a, r_b)
    pow_adj = np.maximum(pow_a, pow_b)
    p = fp.rounding_half_sum(r, SQRT_SQRT_HALF)
    q = fp.wrap_int32(np.asarray(r, np.int64) - SQRT_SQRT_HALF)
    q = fp.wrap_int32(q.astype(np.int64) * 2)
    common_sq = srdhm(q, q)
    num = fp.wrap_int32(srdhm(q, r).astype(np.int64) + srdhm(srdhm(q, common_sq), ALPHA_N))
    inner = fp.wrap_int32(np.int64(ALPHA_I) + q + srdhm(ALPHA_D, common_sq))
    denom_minus_one = fp.wrap_int32(srdhm(p, inner).astype(np.int64) + srdhm(ALPHA_F, q))
    recip = fp.one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = fp.rescale(num, 0, accum_bits)
    total = fp.wrap_int32(srdhm(pow_adj, LOG_2).astype(np.int64) + srdhm(num_scaled, recip))
    return fp.rescale(total, accum_bits, output_integer_bits)


def difference_terms(params: LogSoftmaxParams) -> tuple[np.ndarray, np.ndarray]:
    """(scaled[256], term[256]) int32, indexed by k = row max - x in [0, 255]: the Q5.26
    difference d * m, and the Q12.19 exp of it the row sum adds (0 for d below
    diff_min, which the kernel skips)."""
    d = -np.arange(256, dtype=np.int64)
    scaled = fp.multiply_by_quantized_multiplier(d, params.input_multiplier,
                                                 params.input_left_shift)
    e = fp.exp_on_negative_values(scaled, INPUT_INTEGER_BITS)
    term = fp.rescale(e, 0, ACCUMULATION_INTEGER_BITS)
    return scaled.astype(np.int32), np.where(d >= params.diff_min, term, 0).astype(np.int32)


def cut_off(log_sum: np.ndarray, params: LogSoftmaxParams) -> np.ndarray:
    """The row's adjusted_diff_min: elements with d above it are computed, the others
    written as -128."""
    shifted = fp.wrap_int32(np.asarray(log_sum, np.int64) + fp.INT32_MIN)
    reverse = fp.multiply_by_quantized_multiplier(shifted, params.reverse_scaling_divisor,
                                                  -params.reverse_scaling_right_shift)
    return np.maximum(np.int64(params.diff_min - 1), reverse).astype(np.int32)


def log_softmax(x: np.ndarray, params: LogSoftmaxParams) -> np.ndarray:
    """LOG_SOFTMAX int8 -> int8 over the last axis, the kernel's loops as array steps."""
    x = np.asarray(x, np.int64)
    scaled, term = difference_terms(params)
    k = x.max(axis=-1, keepdims=True) - x
    total = fp.wrap_int32(term[k].astype(np.int64).sum(axis=-1, keepdims=True))
    log_sum = log_x_ge_1(total)
    cut = cut_off(log_sum, params)
    diff = fp.wrap_int32(scaled[k].astype(np.int64) - log_sum)
    out = fp.rounding_divide_by_pot(diff, OUTPUT_SHIFT).astype(np.int64) + 127
    return np.where(-k > cut, np.clip(out, -128, 127), -128).astype(np.int8)


__all__ = ["LogSoftmaxParams", "cut_off", "difference_terms", "log_softmax",
           "log_softmax_params", "log_x_ge_1"]
