"""TFLite Micro's 16x8 operators (int16 activations, int8 weights): their Prepare.

Integer parameters from the tensors' scales, in float32 or double exactly where TFLite
Micro's Prepare uses each; toolchain/quant/build16.py builds the kernels from them and
docs/int16.md says which reference kernel each one follows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.quant.fixedpoint import quantize_multiplier
from toolchain.quant.tflm import AddParams, _smaller_than_one, activation_range, f32

INT16_MIN, INT16_MAX = -32768, 32767
# The storage range of each integer type QUANTIZE writes (its clamp).
RANGES = {"i8": (-128, 127), "i16": (INT16_MIN, INT16_MAX), "i32": (-(1 << 31), (1 << 31) - 1)}


def add_params(input1_scale: float, input1_zp: int, input2_scale: float, input2_zp: int,
               output_scale: float, output_zp: int, activation: str = "NONE") -> AddParams:
    """CalculateOpDataAdd for an int16 output: as int8's (double quotients) with a left
    shift of 15 instead of 20, so that 65535 << 15 still fits the int32 sum."""
    s1, s2, so = f32(input1_scale), f32(input2_scale), f32(output_scale)
    twice_max = 2 * float(max(s1, s2))
    m1 = _smaller_than_one(float(s1) / twice_max)
    m2 = _smaller_than_one(float(s2) / twice_max)
    mo = _smaller_than_one(twice_max / ((1 << 15) * float(so)))
    return AddParams(-int(input1_zp), -int(input2_zp), int(output_zp), 15, *m1, *m2, *mo,
                     *activation_range(activation, output_scale, output_zp, INT16_MIN,
                                       INT16_MAX))


def sub_params(input1_scale: float, input1_zp: int, input2_scale: float, input2_zp: int,
               output_scale: float, output_zp: int, activation: str = "NONE") -> AddParams:
    """SUB's Prepare for an int16 output: add_params' derivation, in double.

    sub_common.cc at the revision of ../shared forms these quotients in float32, but
    TFLite Micro's own goldens for the seanet SUB models (sub0, sub1, sub3) differ from
    that in one LSB and agree with the double form, as int8 SUB does (tflm.sub_params)."""
    return add_params(input1_scale, input1_zp, input2_scale, input2_zp, output_scale,
                      output_zp, activation)


@dataclass(frozen=True)
class LeakyReluParams:
    """LEAKY_RELU's Prepare: one multiplier for x >= 0 (identity), one for x < 0 (alpha)."""

    input_zp: int
    output_zp: int
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int


def leaky_relu_params(input_scale: float, input_zp: int, output_scale: float, output_zp: int,
                      alpha: float) -> LeakyReluParams:
    """CalculateOpDataLeakyRelu: in_scale * alpha / out_scale and in_scale / out_scale in
    float32 (TfLiteTensor scales and the option are floats), then QuantizeMultiplier."""
    si, so, a = f32(input_scale), f32(output_scale), f32(alpha)
    alpha_m = quantize_multiplier(float(si * a / so))
    ident_m = quantize_multiplier(float(si / so))
    return LeakyReluParams(int(input_zp), int(output_zp), *ident_m, *alpha_m)


def reduced_multipliers(multipliers: np.ndarray, shifts: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """MultiplyByQuantizedMultiplier(int64 x, ...)'s constants: the Q31 multiplier
    rounded to Q15 ((m + 2**15) >> 16, or 0x7FFF from 0x7FFF0000 up, where that rounding
    would reach 2**15) and the total right shift 15 - shift (shift < 8 keeps it >= 8)."""
    m = np.asarray(multipliers, dtype=np.int64)
    s = np.asarray(shifts, dtype=np.int64)
    if np.any(s >= 8) or np.any(s < -31) or np.any(m < 0):
        raise ValueError(f"a 16x8 requantization shift out of [-31, 7]: {s.tolist()}")
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    return reduced, 15 - s


__all__ = ["INT16_MAX", "INT16_MIN", "RANGES", "LeakyReluParams", "add_params",
           "leaky_relu_params", "reduced_multipliers", "sub_params"]
