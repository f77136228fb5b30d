"""Fixed-point primitives of TFLite / gemmlowp, exact, vectorised over numpy integer arrays.

Every function takes integer arrays (or Python ints) holding int32 values, computes in
int64 and returns int32 arrays (the 16-bit ones, used by HARD_SWISH, return int16).
Where the C++ code adds or negates int32 values without saturating, the result wraps
modulo 2**32 here, as two's complement hardware does.

What is mirrored (our own code, written from the behaviour of):
- gemmlowp `fixedpoint/fixedpoint.h`: SaturatingRoundingDoublingHighMul,
  RoundingDivideByPOT, SaturatingRoundingMultiplyByPOT, RoundingHalfSum, Rescale, and the
  transcendental helpers exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1,
  one_minus_x_over_one_plus_x_for_x_in_0_1, tanh and logistic. A `FixedPoint<int32_t, I>`
  value is represented by its raw int32 plus the integer-bit count `I` passed alongside.
- TFLite `kernels/internal/common.{h,cc}`: MultiplyByQuantizedMultiplier (the
  double-rounding form: TFLite Micro is built without TFLITE_SINGLE_ROUNDING, which the
  tests prove against the interpreter), GetReciprocal, CountLeadingZeros.
- TFLite `kernels/internal/quantization_util.cc`: QuantizeMultiplier.
- TFLite `kernels/internal/reference/hard_swish.h`: the int16 helpers.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT16_MIN = -(1 << 15)
INT16_MAX = (1 << 15) - 1

ArrayLike = np.ndarray | int


def _i64(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x: ArrayLike) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32 (what a C int32 add/mul leaves)."""
    return ((_i64(x) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def wrap_int16(x: ArrayLike) -> np.ndarray:
    """Two's-complement wrap to int16 (a C conversion of an int to int16_t)."""
    return ((_i64(x) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _div_trunc(n: np.ndarray, d: int) -> np.ndarray:
    """C integer division (rounds toward zero), d > 0."""
    q = np.abs(n) // d
    return np.where(n < 0, -q, q)


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """std::round / TfLiteRound: to nearest, ties away from zero (Python's round() is not).

    Works in the input's own float type (float32 stays float32) and is exact: the
    fraction x - trunc(x) is computed without rounding error.
    """
    x = np.asarray(x)
    t = np.trunc(x)
    frac = x - t
    return np.where(frac >= 0.5, t + 1, np.where(frac <= -0.5, t - 1, t)).astype(x.dtype)


# ---------------------------------------------------------------------------------------
# The requantization core.


def saturating_rounding_doubling_high_mul(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul for int32 (ARM VQRDMULH).

    (a * b + nudge) / 2**31, the division truncating toward zero and the nudge being
    +2**30 for a non-negative product, 1 - 2**30 otherwise: to nearest, ties toward
    +infinity (-0.5 gives 0, 0.5 gives 1); INT32_MIN * INT32_MIN, the only overflow,
    saturates to INT32_MAX.
    """
    a, b = _i64(a), _i64(b)
    ab = a * b  # |ab| <= 2**62: exact in int64
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = _div_trunc(ab + nudge, 1 << 31)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, high).astype(np.int32)


def rounding_divide_by_pot(x: ArrayLike, exponent: ArrayLike) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT for int32: x / 2**exponent, ties away from zero.

    exponent in [0, 31] (scalar or array). The threshold form of the C code: the
    remainder is compared with half the divisor, plus one for negative x.
    """
    x, e = _i64(x), _i64(exponent)
    if np.any((e < 0) | (e > 31)):
        raise ValueError(f"RoundingDivideByPOT exponent out of [0, 31]: {exponent}")
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return ((x >> e) + (remainder > threshold)).astype(np.int32)


def multiply_by_quantized_multiplier(x: ArrayLike, multiplier: ArrayLike,
                                     shift: ArrayLike) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift).

    The double-rounding form TFLite Micro is built with: x * 2**max(shift, 0) (an int32
    product that wraps when it overflows, as on the hardware), then
    SaturatingRoundingDoublingHighMul by the multiplier, then RoundingDivideByPOT by
    max(-shift, 0). `multiplier`/`shift` may be per-element arrays (per-channel).
    A left shift of 32 or more is undefined in C (and differs between x86 and ARM), so
    it is refused.
    """
    shift = _i64(shift)
    if np.any(shift > 31) or np.any(shift < -31):
        raise ValueError(f"quantized multiplier shift out of [-31, 31]: {shift}")
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = wrap_int32(_i64(x) * (np.int64(1) << left))
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier),
                                  right)


def multiply_by_quantized_multiplier_single_rounding(x: ArrayLike, multiplier: ArrayLike,
                                                     shift: ArrayLike) -> np.ndarray:
    """The TFLITE_SINGLE_ROUNDING form: (x * m + 2**(30 - shift)) >> (31 - shift).

    Not what TFLite Micro's build uses; kept so the tests can show the interpreter
    disagrees with it where the two forms differ.
    """
    shift = _i64(shift)
    total = 31 - shift
    return ((_i64(x) * _i64(multiplier) + (np.int64(1) << (total - 1))) >> total).astype(np.int32)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real ~= multiplier * 2**(shift - 31), multiplier in int32.

    frexp gives real = q * 2**shift with q in [0.5, 1); multiplier = round(q * 2**31)
    with ties away from zero (TfLiteRound, not Python's banker's round()). When that
    rounds up to 2**31 it is halved and the shift grows by one; a shift below -31
    flushes the multiplier to (0, 0). Zero gives (0, 0). The shift is returned as
    computed, so it may exceed 31 for absurd multipliers (MultiplyByQuantizedMultiplier
    then refuses it). A non-finite `real` raises ValueError.
    """
    real = float(real)
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real):
        # Scales from a hostile model (inf, NaN, or finite ones whose ratio overflows):
        # frexp would pass them on and the rounding raise OverflowError.
        raise ValueError(f"the rescale multiplier {real} is not a finite number")
    q, shift = math.frexp(real)
    q_fixed = int(round_half_away(np.float64(q) * float(1 << 31)))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def quantize_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over an array of doubles: (int32 multipliers, int32 shifts)."""
    pairs = [quantize_multiplier(r) for r in np.asarray(reals, dtype=np.float64).ravel()]
    mult = np.array([m for m, _ in pairs], dtype=np.int32)
    shifts = np.array([s for _, s in pairs], dtype=np.int32)
    return mult, shifts


# ---------------------------------------------------------------------------------------
# gemmlowp fixed point: raw int32 values of FixedPoint<int32_t, integer_bits>.


def saturating_rounding_multiply_by_pot(x: ArrayLike, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent>: saturating left shift for a
    positive exponent, RoundingDivideByPOT for a negative one."""
    x = _i64(x)
    if exponent == 0:
        return x.astype(np.int32)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    shifted = np.clip(x << exponent, INT32_MIN, INT32_MAX)
    out = np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))
    return out.astype(np.int32)


def rescale(x: ArrayLike, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    """gemmlowp Rescale<dst>(FixedPoint<int32, src>): multiply the raw by 2**(src - dst)."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def rounding_half_sum(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp RoundingHalfSum for int32: (a + b + sign) / 2, truncating division."""
    s = _i64(a) + _i64(b)
    return _div_trunc(s + np.where(s >= 0, 1, -1), 2).astype(np.int32)


def _add(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    return wrap_int32(_i64(a) + _i64(b))


def _sub(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    return wrap_int32(_i64(a) - _i64(b))


_srdhm = saturating_rounding_doubling_high_mul

# Constants of gemmlowp's exp and Newton-Raphson division, as raw Q0.31 / Q2.29 values.
_EXP_MINUS_ONE_EIGHTH = 1895147668   # exp(-1/8) in Q0.31
_ONE_THIRD = 715827883               # 1/3 in Q0.31
_48_OVER_17 = 1515870810             # 48/17 in Q2.29
_MINUS_32_OVER_17 = -1010580540      # -32/17 in Q2.29
# exp(-2**k) in Q0.31, applied for each bit k of the input's magnitude (k = -2 .. 4).
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: ArrayLike) -> np.ndarray:
    """gemmlowp: exp(a) for a Q0.31 `a` in [-1/4, 0), by a Taylor series around -1/8."""
    x = _add(a, 1 << 28)  # a + 1/8
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(_add(_srdhm(_add(x4_over_4, x3), _ONE_THIRD), x2), 1)
    return _add(_EXP_MINUS_ONE_EIGHTH, _srdhm(_EXP_MINUS_ONE_EIGHTH, _add(x, poly)))


def exp_on_negative_values(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values: Q0.31 exp(a) for a raw Q`integer_bits` a <= 0.

    The input splits into a part in [-1/4, 0) (Taylor series) and whole quarters, each
    set bit of which multiplies by a constant exp(-2**k). Inputs below -32 (only
    representable with more than 5 integer bits) give 0; a == 0 gives Q0 one
    (INT32_MAX).
    """
    a = _i64(a)
    frac_bits = 31 - integer_bits
    one_quarter = 1 << (frac_bits - 2)
    a_mod_quarter_minus_one_quarter = _sub(a & (one_quarter - 1), one_quarter)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = _sub(a_mod_quarter_minus_one_quarter, a)
    for k, multiplier in _EXP_BARREL:
        if integer_bits > k:
            bit = 1 << (frac_bits + k)
            result = np.where(remainder & bit, _srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))  # -32 in Q`integer_bits`
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result).astype(np.int32)


def _newton_reciprocal(half_denominator: np.ndarray) -> np.ndarray:
    """The shared Newton-Raphson loop: Q2.29 approximation of 1 / half_denominator."""
    x = _add(_48_OVER_17, _srdhm(half_denominator, _MINUS_32_OVER_17))
    for _ in range(3):
        half_denominator_times_x = _srdhm(half_denominator, x)
        one_minus = _sub(1 << 29, half_denominator_times_x)
        x = _add(x, rescale(_srdhm(x, one_minus), 4, 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a: ArrayLike) -> np.ndarray:
    """gemmlowp: Q0.31 1 / (1 + a) for a Q0.31 a in [0, 1)."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = _newton_reciprocal(half_denominator)
    return rescale(x, 1, 0)  # ExactMulByPot<-1>: Q2 raw read as Q1, then Rescale<0>


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: ArrayLike) -> np.ndarray:
    """gemmlowp: Q0.31 (1 - a) / (1 + a) for a Q0.31 a in [0, 1)."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = _newton_reciprocal(half_denominator)
    return rescale(_sub(x, 1 << 29), 2, 0)


def tanh(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp tanh: Q0.31 tanh of a raw Q`integer_bits` value."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap_int32(-a))
    # neg_tanh_on_negative_values: ExactMulByPot<1> reads the raw as one more integer bit.
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap_int32(-_i64(t)), t)).astype(np.int32)


def logistic(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp logistic: Q0.31 1 / (1 + exp(-a)) of a raw Q`integer_bits` value."""
    a = _i64(a)
    positive = a > 0
    abs_input = np.where(positive, a, wrap_int32(-a))
    result_if_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(wrap_int32(-abs_input), integer_bits))
    result_if_negative = _sub(INT32_MAX, result_if_positive)
    out = np.where(positive, result_if_positive, result_if_negative)
    return np.where(a == 0, 1 << 30, out).astype(np.int32)


def count_leading_zeros_u32(x: ArrayLike) -> np.ndarray:
    """CountLeadingZeros of the values as uint32 (32 for zero)."""
    u = _i64(x) & 0xFFFFFFFF
    n = np.zeros(u.shape, dtype=np.int64)
    for step in (16, 8, 4, 2, 1):
        small = u < (np.int64(1) << (32 - step))
        n = np.where(small, n + step, n)
        u = np.where(small, u << step, u)
    return np.where((_i64(x) & 0xFFFFFFFF) == 0, 32, n).astype(np.int32)


def get_reciprocal(x: ArrayLike, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetReciprocal: (Q0.31 raw of 2**k / x, num_bits_over_unit k) for x > 0.

    x, raw Q`x_integer_digits`, is shifted left until its top bit is set; the part above
    one feeds one_over_one_plus_x_for_x_in_0_1.
    """
    x = _i64(x)
    if np.any(x <= 0):
        raise ValueError("GetReciprocal needs a positive value (C shifts by 32 on zero)")
    headroom_plus_one = count_leading_zeros_u32(x).astype(np.int64)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = wrap_int32(((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
    return (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
            num_bits_over_unit.astype(np.int32))


# ---------------------------------------------------------------------------------------
# 16-bit helpers (HARD_SWISH's reference kernel computes in int16).


def saturating_rounding_doubling_high_mul_int16(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul for int16 (VQRDMULH.S16)."""
    a, b = _i64(a), _i64(b)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = wrap_int16(_div_trunc(ab + nudge, 1 << 15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, high).astype(np.int16)


def saturating_doubling_high_mul_int16(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """HARD_SWISH's own non-rounding variant: a * b / 2**15, truncating toward zero."""
    a, b = _i64(a), _i64(b)
    high = wrap_int16(_div_trunc(a * b, 1 << 15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, high).astype(np.int16)


def rounding_divide_by_pot_int16(x: ArrayLike, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT instantiated for int16.

    The mask (2**exponent - 1) is converted to int16, so for exponent >= 16 it becomes
    -1 and the result is (x >> exponent) + (x >= 0 ? 1 : 0 ...) exactly as the C code
    computes it; the final sum is truncated to int16.
    """
    if not 0 <= exponent <= 31:
        raise ValueError(f"RoundingDivideByPOT exponent out of [0, 31]: {exponent}")
    x = _i64(x)
    mask = wrap_int16((1 << exponent) - 1)
    remainder = wrap_int16(x & mask)
    threshold = wrap_int16((mask >> 1) + (x < 0))
    return wrap_int16((x >> exponent) + (remainder > threshold)).astype(np.int16)


def saturating_left_shift_int16(x: ArrayLike, amount: int) -> np.ndarray:
    """HARD_SWISH's SaturatingLeftShift: x * 2**amount clamped to int16."""
    return np.clip(_i64(x) * (1 << amount), INT16_MIN, INT16_MAX).astype(np.int16)


def downscale_int32_to_int16_multiplier(multiplier: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier: round the Q31 multiplier to Q15."""
    if multiplier >= INT32_MAX - (1 << 15):
        return INT16_MAX
    return (multiplier + (1 << 15)) >> 16
