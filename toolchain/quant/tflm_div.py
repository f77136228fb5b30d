"""TFLite Micro's int8 DIV (reference_ops::DivElementwise) for every pair of int8 values.

The quotient of two int8 values depends on nothing else, so the whole kernel becomes a
256 x 256 table computed here with the kernel's integer steps: the divisor's reciprocal
(GetReciprocal: Q0.31 with its exponent), the dividend shifted left by its headroom,
their SaturatingRoundingDoublingHighMul, then the output multiplier and the combined
right shift (the double-rounding MultiplyByQuantizedMultiplierSmallerThanOneExp).

Two corners of that C code are undefined, and the table follows what TFLite Micro's
interpreter (its x86-64 build, this project's oracle) computes there:
- a tiny dividend's large headroom can make the final right shift 32 or more:
  RoundingDivideByPOT then builds its mask in 64 bits (all ones once truncated) and
  shifts by the exponent modulo 32, as x86 does;
- a divisor equal to its zero point (a real zero; the kernel only DCHECKs it): the
  reciprocal of 0 has a count of leading zeros of 32, a shift by 32 that x86 reduces to
  0, and the same arithmetic then runs on that.
The output multiplier is formed in double (input1 / (input2 * output) scale), as the
interpreter does.
"""

from __future__ import annotations

import numpy as np

from toolchain.quant.fixedpoint import (
    count_leading_zeros_u32,
    one_over_one_plus_x_for_x_in_0_1,
    quantize_multiplier,
    saturating_rounding_doubling_high_mul,
    wrap_int32,
)

INT8_MIN, INT8_MAX = -128, 127


def count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values: the redundant sign bits (31 for zero)."""
    x = np.asarray(x, np.int64)
    positive = count_leading_zeros_u32(np.where(x > 0, x, 1)).astype(np.int64) - 1
    negative = count_leading_zeros_u32(np.where(x < 0, 2 * -x - 1, 1)).astype(np.int64)
    return np.where(x == 0, 31, np.where(x > 0, positive, negative))


def reciprocal_x86(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GetReciprocal(x, 31): (Q0.31 raw of 2**k / x, k), for x >= 0; x = 0 as x86 runs
    it (a uint32 shift by 32 is a shift by 0)."""
    x = np.asarray(x, np.int64)
    headroom_plus_one = count_leading_zeros_u32(x).astype(np.int64)
    shifted = (x << (headroom_plus_one & 31)) & 0xFFFFFFFF
    raw = one_over_one_plus_x_for_x_in_0_1(wrap_int32(shifted - (1 << 31)))
    return raw.astype(np.int64), 31 - headroom_plus_one


def rounding_divide_by_pot_x86(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int32 with x86's semantics for exponents of 32 to
    62: mask (1 << e) - 1 truncated to int32 (all ones), x >> (e mod 32)."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    mask = np.where(e >= 32, -1, (np.int64(1) << np.minimum(e, 31)) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return wrap_int32((x >> (e & 31)) + (remainder > threshold))


def div_multiplier(s1: float, s2: float, so: float) -> tuple[int, int]:
    """DIV's Prepare: QuantizeMultiplier(s1 / (s2 * so)), the float32 scales combined in
    double."""
    f = np.float32
    return quantize_multiplier(float(f(s1)) / (float(f(s2)) * float(f(so))))


def div_int8_table(s1: float, z1: int, s2: float, z2: int, so: float, zo: int,
                   act_min: int = INT8_MIN, act_max: int = INT8_MAX) -> np.ndarray:
    """table[(a + 128) * 256 + (b + 128)] = TFLite Micro's int8 a / b, clamped to
    [act_min, act_max] (the fused activation's range)."""
    multiplier, shift = div_multiplier(s1, s2, so)
    a = np.repeat(np.arange(-128, 128, dtype=np.int64), 256) - z1
    b = np.tile(np.arange(-128, 128, dtype=np.int64), 256) - z2
    a = np.where(b < 0, -a, a)  # the kernel makes the divisor positive
    b = np.abs(b)
    inverse, recip_shift = reciprocal_x86(b)
    headroom = count_leading_sign_bits(a)
    unscaled = saturating_rounding_doubling_high_mul(wrap_int32(a << headroom), inverse)
    total = shift - recip_shift - headroom
    if np.any(total > 0):
        raise ValueError("DIV's scales make its final rescale a left shift, which TFLite "
                         "Micro's kernel does not define")
    scaled = saturating_rounding_doubling_high_mul(unscaled, multiplier)
    q = rounding_divide_by_pot_x86(scaled, -total).astype(np.int64) + zo
    return np.clip(q, act_min, act_max).astype(np.int8)


__all__ = ["count_leading_sign_bits", "div_int8_table", "div_multiplier", "reciprocal_x86",
           "rounding_divide_by_pot_x86"]
