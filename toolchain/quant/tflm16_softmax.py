"""TFLite Micro's int16 SOFTMAX: two 513-entry interpolated tables built in Prepare.

SoftmaxInt16 scales x - max(row) so that [-65535, 0] covers [-10, 0], reads exp from one
table (LUTPopulate<int16_t> over [-10, 0]), sums the row in Q16.15, normalizes the sum by
its leading zeros and reads its reciprocal from a second table (1 / (1 + x) over [0, 1]),
then multiplies each exp by it in int64. This module computes both tables exactly as
LUTPopulateInt16<float> does (float32 arithmetic, a bias that halves the interpolation's
midpoint error), the input multiplier, and a numpy mirror of the kernel; build16.softmax
builds the kernel from graph primitives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.quant.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from toolchain.quant.tflm import f32

INT16_MIN, INT16_MAX = -32768, 32767
LUT_STEPS = 512  # 9 index bits; 7 bits interpolate, and one more entry ends the last step
_RANGE = INT16_MAX - INT16_MIN  # 65535


def _round(x: np.float32) -> np.float32:
    """TfLiteRound on a float: half away from zero."""
    return np.float32(np.sign(x) * np.floor(np.abs(x) + np.float32(0.5)))


def lut_populate(input_scale: float, input_zp: int, output_scale: float, output_zp: int,
                 transform: Callable[[np.float32], np.float32]) -> np.ndarray:
    """LUTPopulateInt16<float>: 512 samples of `transform` over the int16 input range,
    each lowered by half the error linear interpolation makes at the step's midpoint,
    and the function at the range's end; in float32 throughout, clamped to int16."""
    s_in, s_out = np.float32(input_scale), np.float32(output_scale)
    in_min = s_in * np.float32(INT16_MIN - input_zp)
    in_max = s_in * np.float32(INT16_MAX - input_zp)
    out_min = s_out * np.float32(INT16_MIN - output_zp)
    out_max = s_out * np.float32(INT16_MAX - output_zp)
    step = np.float32((in_max - in_min) / np.float32(LUT_STEPS))
    half = np.float32(step / np.float32(2))
    inv = np.float32(np.float32(_RANGE + 1) / np.float32(out_max - out_min))
    lut = np.empty(LUT_STEPS + 1, np.int64)
    for i in range(LUT_STEPS):
        start = np.float32(in_min + np.float32(np.float32(i) * step))
        val = transform(start)
        mid = transform(np.float32(start + half))
        nxt = transform(np.float32(in_min + np.float32(np.float32(i + 1) * step)))
        sample = _round(np.float32(val * inv))
        interp = _round(np.float32(np.float32(nxt * inv) + sample) / np.float32(2))
        err = np.float32(interp - _round(np.float32(mid * inv)))
        bias = _round(np.float32(err / np.float32(2)))
        lut[i] = int(min(max(np.float32(sample - bias), INT16_MIN), INT16_MAX))
    end = _round(np.float32(transform(in_max) * inv))
    lut[LUT_STEPS] = int(min(max(end, INT16_MIN), INT16_MAX))
    return lut


def _exp(v: np.float32) -> np.float32:
    # expf, correctly rounded: the float64 exp rounded once to float32.
    return np.float32(np.exp(np.float64(v)))


def _one_over_one_plus(v: np.float32) -> np.float32:
    return np.float32(np.float32(1.0) / np.float32(np.float32(1.0) + v))


@dataclass(frozen=True)
class Softmax16Params:
    """SOFTMAX int16's Prepare: the input rescale and the two tables."""

    multiplier: int
    shift: int
    exp_lut: np.ndarray
    reciprocal_lut: np.ndarray


def softmax_params(input_scale: float, input_zp: int, output_scale: float, output_zp: int,
                   beta: float) -> Softmax16Params:
    """CalculateSoftmaxParams for int16: zero points 0 and an output scale of 2**-15
    (within 0.1 %), as TFLite Micro requires; QuantizeMultiplier(in_scale * beta /
    (10 / 65535)) in double; InitializeLutForInt16's tables."""
    if input_zp != 0 or output_zp != 0:
        raise ValueError("an int16 SOFTMAX needs zero points of 0 (TFLite Micro requires it)")
    if abs(float(f32(output_scale)) - 1 / 32768) > 0.001 / 32768:
        raise ValueError("an int16 SOFTMAX output must have scale 2**-15 (TFLite Micro "
                         "requires it)")
    m, s = quantize_multiplier(float(f32(input_scale)) * float(f32(beta)) / (10.0 / 65535.0))
    exp_lut = lut_populate(float(np.float32(10.0) / np.float32(_RANGE)), INT16_MAX,
                           float(np.float32(2.0) / np.float32(_RANGE)), 0, _exp)
    reciprocal_lut = lut_populate(float(np.float32(1.0) / np.float32(_RANGE)), INT16_MIN,
                                  float(np.float32(2.0) / np.float32(_RANGE)), 0,
                                  _one_over_one_plus)
    return Softmax16Params(m, s, exp_lut, reciprocal_lut)


def lut_lookup(v: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """LUTLookup(int16): entry 256 + (v >> 7), interpolated by the low 7 bits, rounded."""
    v = np.asarray(v, np.int64)
    index = 256 + (v >> 7)
    base = lut[index]
    slope = lut[index + 1] - base
    return base + ((slope * (v & 0x7F) + 64) >> 7)


def softmax(x: np.ndarray, p: Softmax16Params) -> np.ndarray:
    """SoftmaxInt16 over the last axis, in numpy."""
    x = np.asarray(x, np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    scaled = np.asarray(multiply_by_quantized_multiplier(diff, p.multiplier, p.shift),
                        np.int64)
    e = lut_lookup(np.clip(scaled + INT16_MAX, INT16_MIN, INT16_MAX), p.exp_lut)
    total = e.sum(axis=-1, keepdims=True)
    headroom = np.array([32 - int(t).bit_length() for t in total.reshape(-1)],
                        np.int64).reshape(total.shape)
    shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
    recip = lut_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX),
                       p.reciprocal_lut)
    right = 31 - headroom
    out = (e * recip + (np.int64(1) << (right - 1))) >> right
    return np.clip(out, 0, INT16_MAX).astype(np.int16)


__all__ = ["LUT_STEPS", "Softmax16Params", "lut_lookup", "lut_populate", "softmax",
           "softmax_params"]
