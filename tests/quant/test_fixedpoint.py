"""toolchain.quant.fixedpoint on its edges, against values worked out by hand.

The transcendental helpers are checked against math within gemmlowp's own accuracy:
its exp evaluates a degree-4 Taylor polynomial about -1/8 on [-1/4, 0), whose
truncation error reaches (1/8)**5 / 5! ~ 2.5e-7 ~ 2**-22 near 0; 2**-21 absolute allows
that and nothing a wrong formula or constant could hide behind (those err by 1e-3 or
more). Their bit-exactness is proven against TFLite
Micro by the LOGISTIC / TANH / SOFTMAX tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolchain.quant import fixedpoint as fp

I32MIN, I32MAX = fp.INT32_MIN, fp.INT32_MAX


@pytest.mark.parametrize(("a", "b", "expected"), [
    (I32MIN, I32MIN, I32MAX),            # the one overflow saturates
    (I32MAX, I32MAX, I32MAX - 1),        # (2**31-1)**2 / 2**31 = 2**31 - 2 + (2**-31): rounds down
    (I32MIN, I32MAX, -(I32MAX)),         # -2**31 * (2**31-1) / 2**31 = -(2**31 - 1) exactly
    (1 << 30, 1 << 30, 1 << 29),         # 0.5 * 0.5 = 0.25
    (1 << 15, 1 << 15, 1),               # 2**30 / 2**31 = 0.5: tie rounds up
    (-(1 << 15), 1 << 15, 0),            # -0.5: tie rounds up, to 0
    (-3 << 15, 1 << 15, -1),             # -1.5 -> -1 (ties toward +infinity)
    (3 << 15, 1 << 15, 2),               # 1.5 -> 2
    (-(1 << 15), 3 << 14, -1),           # -0.75 -> -1 (not a tie)
    (0, I32MIN, 0),
    (-1, I32MIN, 1),                     # 2**31 / 2**31
])
def test_saturating_rounding_doubling_high_mul(a: int, b: int, expected: int) -> None:
    assert fp.saturating_rounding_doubling_high_mul(a, b) == expected
    assert fp.saturating_rounding_doubling_high_mul(b, a) == expected


@pytest.mark.parametrize(("x", "exponent", "expected"), [
    (5, 1, 3), (-5, 1, -3), (3, 1, 2), (-3, 1, -2),   # ties away from zero
    (7, 2, 2), (-7, 2, -2), (6, 2, 2), (-6, 2, -2), (5, 2, 1), (-5, 2, -1),
    (12345, 0, 12345), (-12345, 0, -12345),          # exponent 0 is the identity
    (I32MIN, 31, -1), (I32MAX, 31, 1), (1 << 30, 31, 1), (-(1 << 30), 31, -1),
    ((1 << 30) - 1, 31, 0), (-(1 << 30) + 1, 31, 0),
    (I32MIN, 1, -(1 << 30)), (I32MAX, 1, 1 << 30),
])
def test_rounding_divide_by_pot(x: int, exponent: int, expected: int) -> None:
    assert fp.rounding_divide_by_pot(x, exponent) == expected


def test_rounding_divide_by_pot_refuses_exponents_outside_0_31() -> None:
    with pytest.raises(ValueError, match=r"\[0, 31\]"):
        fp.rounding_divide_by_pot(1, 32)
    with pytest.raises(ValueError, match=r"\[0, 31\]"):
        fp.rounding_divide_by_pot(1, -1)


def test_vectorised_per_element_exponents() -> None:
    got = fp.rounding_divide_by_pot(np.array([5, -5, 7, 100]), np.array([1, 1, 0, 3]))
    assert got.tolist() == [3, -3, 7, 13]
    assert got.dtype == np.int32


@pytest.mark.parametrize(("real", "expected"), [
    (0.0, (0, 0)),
    (0.5, (1 << 30, 0)),
    (1.0, (1 << 30, 1)),
    (0.75, (3 << 29, 0)),
    (-0.75, (-(3 << 29), 0)),
    # q * 2**31 = 2**30 + 0.5 exactly: ties away from zero (Python's round() gives 2**30).
    ((2 ** 30 + 0.5) / 2 ** 31, ((1 << 30) + 1, 0)),
    ((2 ** 30 + 1.5) / 2 ** 31, ((1 << 30) + 2, 0)),
    # q * 2**31 rounds up to 2**31: halved, shift + 1.
    (1 - 2.0 ** -33, (1 << 30, 1)),
    (2.0 ** -32, (1 << 30, -31)),      # the smallest kept shift
    (2.0 ** -33, (0, 0)),              # shift -32: flushed to zero
    (2.0 ** -40, (0, 0)),
    (2.0 ** 40, (1 << 30, 41)),        # shifts above 31 are returned as computed
])
def test_quantize_multiplier(real: float, expected: tuple[int, int]) -> None:
    assert fp.quantize_multiplier(real) == expected


def test_quantize_multiplier_is_not_bankers_rounding() -> None:
    real = (2 ** 30 + 0.5) / 2 ** 31
    assert round(real * 2 ** 31) == 1 << 30          # what Python's round() would give
    assert fp.quantize_multiplier(real)[0] == (1 << 30) + 1


@pytest.mark.parametrize(("x", "multiplier", "shift", "expected"), [
    (100, 1 << 30, -1, 25),            # 100 * 0.5 * 0.5
    (-100, 1 << 30, -1, -25),
    (7, 1 << 30, -1, 2),               # 1.75
    (6, 1 << 30, -2, 1),               # 0.75
    (-6, 1 << 30, -2, -1),
    (3, 1 << 30, 2, 6),                # left shift first: 3 * 4 * 0.5
    # x * 2 = 2**31 overflows int32 and wraps to INT32_MIN, as the C product does on the
    # hardware: INT32_MIN * 0.5 = -2**30.
    (1 << 30, 1 << 30, 1, -(1 << 30)),
    (1, I32MAX, 0, 1),
    (-1, I32MAX, 0, -1),
    (I32MAX, I32MAX, 0, I32MAX - 1),
    (12345, I32MAX, -31, 0),
    # Double rounding at work: 2**30 * (1 - 2**-31) = 2**30 - 0.5, a tie SRDHM rounds up
    # to 2**30; then 2**30 / 2**31 = 0.5 rounds away to 1 (the exact product is < 0.5).
    (1 << 30, I32MAX, -31, 1),
    (I32MAX, 1 << 30, -31, 1),
])
def test_multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int,
                                          expected: int) -> None:
    assert fp.multiply_by_quantized_multiplier(x, multiplier, shift) == expected


def test_multiply_by_quantized_multiplier_refuses_undefined_shifts() -> None:
    with pytest.raises(ValueError, match="shift"):
        fp.multiply_by_quantized_multiplier(1, 1 << 30, 32)
    with pytest.raises(ValueError, match="shift"):
        fp.multiply_by_quantized_multiplier(1, 1 << 30, -32)


def test_double_and_single_rounding_differ() -> None:
    # Hand case: 5 * 0.5 * 2**-1 = 1.25. Double rounding: SRDHM(5, 2**30) = 2.5 -> 3,
    # then 3 / 2 = 1.5 -> 2. Single rounding: 1.25 -> 1.
    assert fp.multiply_by_quantized_multiplier(5, 1 << 30, -1) == 2
    assert fp.multiply_by_quantized_multiplier_single_rounding(5, 1 << 30, -1) == 1
    mult = 0x4CCCCCCD  # ~0.6
    x = np.arange(-4096, 4096)
    double = fp.multiply_by_quantized_multiplier(x, mult, -3)
    single = fp.multiply_by_quantized_multiplier_single_rounding(x, mult, -3)
    assert np.any(double != single)
    assert np.max(np.abs(double.astype(np.int64) - single)) == 1


def test_round_half_away() -> None:
    got = fp.round_half_away(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997,
                                       2.0, -2.0], dtype=np.float32))
    assert got.tolist() == [1, 2, 3, -1, -2, -3, 0, 0, 2, -2]
    assert got.dtype == np.float32
    # The largest double below 0.5: floor(x + 0.5) would wrongly give 1.
    assert fp.round_half_away(np.float64(0.49999999999999994)) == 0


def test_saturating_rounding_multiply_by_pot() -> None:
    x = np.array([1, -1, 1 << 28, -(1 << 28), (1 << 28) + 1, 1 << 29, -(1 << 29) - 1,
                  I32MAX, I32MIN])
    assert fp.saturating_rounding_multiply_by_pot(x, 2).tolist() == [
        4, -4, 1 << 30, -(1 << 30), (1 << 30) + 4, I32MAX, I32MIN, I32MAX, I32MIN]
    assert fp.saturating_rounding_multiply_by_pot(x, 0).tolist() == x.tolist()
    assert fp.saturating_rounding_multiply_by_pot(np.array([5, -5]), -1).tolist() == [3, -3]


def test_rounding_half_sum() -> None:
    assert fp.rounding_half_sum(1, 2) == 2          # 1.5 -> 2
    assert fp.rounding_half_sum(-1, -2) == -2       # -1.5 -> -2
    assert fp.rounding_half_sum(I32MAX, I32MAX) == I32MAX
    assert fp.rounding_half_sum(I32MIN, I32MIN) == I32MIN
    assert fp.rounding_half_sum(0, I32MAX) == 1 << 30


def test_count_leading_zeros() -> None:
    got = fp.count_leading_zeros_u32(np.array([0, 1, 2, 3, 1 << 19, I32MAX, -1, I32MIN]))
    assert got.tolist() == [32, 31, 30, 30, 12, 1, 0, 0]


TOL = 2.0 ** -21  # see the module docstring


def test_exp_on_negative_values() -> None:
    assert fp.exp_on_negative_values(0, 5) == I32MAX          # exp(0) = "one" in Q0.31
    values = np.linspace(-31.99, -1e-6, 4001)
    raw = np.round(values * 2 ** 26).astype(np.int64)        # Q5.26
    got = fp.exp_on_negative_values(raw, 5) / 2 ** 31
    assert np.max(np.abs(got - np.exp(raw / 2 ** 26))) < TOL
    # Every quarter boundary exercises one barrel-shifter constant.
    quarters = -np.arange(1, 128) * (1 << 24)
    got = fp.exp_on_negative_values(quarters, 5) / 2 ** 31
    assert np.max(np.abs(got - np.exp(quarters / 2 ** 26))) < TOL
    # With 6 integer bits, inputs below -32 are clamped to 0; -32 itself is not.
    q6 = np.array([-33 << 25, (-32 << 25) - 1, -32 << 25])
    got = fp.exp_on_negative_values(q6, 6)
    assert got[0] == 0 and got[1] == 0
    assert abs(got[2] / 2 ** 31 - math.exp(-32)) < TOL


def test_logistic_and_tanh() -> None:
    assert fp.logistic(0, 4) == 1 << 30
    assert fp.tanh(0, 4) == 0
    values = np.linspace(-15.99, 15.99, 4001)
    raw = np.round(values * 2 ** 27).astype(np.int64)        # Q4.27
    real = raw / 2 ** 27
    assert np.max(np.abs(fp.logistic(raw, 4) / 2 ** 31 - 1 / (1 + np.exp(-real)))) < TOL
    assert np.max(np.abs(fp.tanh(raw, 4) / 2 ** 31 - np.tanh(real))) < TOL
    # Odd / complementary symmetry holds exactly in gemmlowp's construction.
    assert np.array_equal(fp.tanh(-raw, 4), -fp.tanh(raw, 4).astype(np.int64))
    assert np.array_equal(fp.logistic(-raw[raw != 0], 4).astype(np.int64),
                          I32MAX - fp.logistic(raw[raw != 0], 4).astype(np.int64))


def test_reciprocals() -> None:
    a = np.linspace(0, 1 - 2 ** -31, 2001)
    raw = np.round(a * 2 ** 31).astype(np.int64)
    got = fp.one_over_one_plus_x_for_x_in_0_1(raw) / 2 ** 31
    assert np.max(np.abs(got - 1 / (1 + raw / 2 ** 31))) < TOL
    got = fp.one_minus_x_over_one_plus_x_for_x_in_0_1(raw) / 2 ** 31
    assert np.max(np.abs(got - (1 - raw / 2 ** 31) / (1 + raw / 2 ** 31))) < TOL


def test_get_reciprocal() -> None:
    # 1.0 in Q12.19: headroom 12, nothing over unit, reciprocal ~1.
    scale, bits = fp.get_reciprocal(1 << 19, 12)
    assert bits == 0 and abs(scale / 2 ** 31 - 1) < TOL
    # 3.0: 1 bit over unit, scale = 1 / 1.5.
    scale, bits = fp.get_reciprocal(3 << 19, 12)
    assert bits == 1 and abs(scale / 2 ** 31 - 2 / 3) < TOL
    # 1/128: 7 bits under unit.
    scale, bits = fp.get_reciprocal(1 << 12, 12)
    assert bits == -7 and abs(scale / 2 ** 31 - 1) < TOL
    with pytest.raises(ValueError, match="positive"):
        fp.get_reciprocal(0, 12)


def test_int16_helpers() -> None:
    i16min, i16max = fp.INT16_MIN, fp.INT16_MAX
    assert fp.saturating_rounding_doubling_high_mul_int16(i16min, i16min) == i16max
    assert fp.saturating_rounding_doubling_high_mul_int16(1 << 7, 1 << 7) == 1   # 0.5 -> 1
    assert fp.saturating_rounding_doubling_high_mul_int16(-(1 << 7), 1 << 7) == 0
    # HARD_SWISH's own doubling multiply truncates toward zero instead of rounding.
    assert fp.saturating_doubling_high_mul_int16(3 << 7, 1 << 7) == 1            # 1.5 -> 1
    assert fp.saturating_doubling_high_mul_int16(-3 << 7, 1 << 7) == -1
    assert fp.saturating_doubling_high_mul_int16(i16min, i16min) == i16max
    assert fp.rounding_divide_by_pot_int16(np.array([5, -5, 3]), 1).tolist() == [3, -3, 2]
    # With exponent >= 16 the int16 mask is -1 and the threshold -1 (non-negative x) or
    # 0 (negative x): the C code then gives 1 for every non-negative input, 0 included,
    # and x >> 16 = -1 for the negative ones.
    assert fp.rounding_divide_by_pot_int16(np.array([0, 100, -100]), 16).tolist() == [1, 1, -1]
    assert fp.saturating_left_shift_int16(np.array([300, -300, 3]), 7).tolist() == [
        i16max, i16min, 384]
    assert fp.downscale_int32_to_int16_multiplier(1 << 30) == 1 << 14
    assert fp.downscale_int32_to_int16_multiplier(I32MAX) == i16max
    assert fp.downscale_int32_to_int16_multiplier((1 << 16) + (1 << 15)) == 2  # tie rounds up


def test_wraps() -> None:
    assert fp.wrap_int32(np.int64(1) << 31) == I32MIN
    assert fp.wrap_int32(-(np.int64(1) << 31) - 1) == I32MAX
    assert fp.wrap_int16(1 << 15) == fp.INT16_MIN


@pytest.mark.parametrize("real", [math.inf, -math.inf, math.nan])
def test_quantize_multiplier_refuses_a_non_finite_multiplier(real: float) -> None:
    # Was OverflowError from the rounding: a hostile model's scales of inf or NaN, or a
    # ratio of finite ones that overflows, reached it.
    with pytest.raises(ValueError, match="not a finite number"):
        fp.quantize_multiplier(real)
