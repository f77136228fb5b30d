"""TFLite Micro's int16 LOGISTIC and TANH: a 256-entry sigmoid table with interpolation.

Both kernels (reference_integer_ops::Logistic / Tanh, int16) rescale the input to a
fixed point where 2**9 (logistic) or 2**8 (tanh, since tanh(x) = 2 sigmoid(2x) - 1) steps
are one table interval of 1/24, look up sigmoid(|x|) between two entries of a uint16
table, interpolate linearly and mirror for negative inputs. This module computes the
table and each operator's Prepare (input multiplier and shift); toolchain/quant/build16.py
builds the kernel from them, and `logistic` / `tanh` here mirror it in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.quant.tflm import f32


def _sigmoid_q16(x: np.ndarray) -> np.ndarray:
    return 65536.0 / (1.0 + np.exp(-x / 24.0))


def sigmoid_table() -> np.ndarray:
    """sigmoid(i / 24) in 0.16 fixed point for i in [0, 256), as TFLite's
    sigmoid_table_uint16: each entry moved by half the chord's error at the interval's
    midpoint (so that linear interpolation errs evenly) and rounded; the last entry is
    the uint16 maximum (the kernel saturates from there)."""
    i = np.arange(256, dtype=np.float64)
    f0, f1, mid = _sigmoid_q16(i), _sigmoid_q16(i + 1), _sigmoid_q16(i + 0.5)
    table = np.round(f0 + (mid - (f0 + f1) / 2) / 2)
    table[-1] = 65535
    return np.minimum(table, 65535).astype(np.int64)


@dataclass(frozen=True)
class SigmoidLutParams:
    """The kernel's input rescale: (x * multiplier + round) >> left_shift."""

    multiplier: int
    left_shift: int


def _checked_log2(x: float) -> tuple[bool, int]:
    """CheckedLog2: log(x) / log(2) in float32, rounded half away from zero; whether x is
    a power of two within 1e-3 of the exponent."""
    log2 = np.float32(np.log(np.float32(x))) * np.float32(1.0 / np.log(np.float32(2.0)))
    rounded = np.float32(np.sign(log2) * np.floor(np.abs(log2) + np.float32(0.5)))
    return bool(abs(np.float32(log2 - rounded)) < np.float32(1e-3)), int(rounded)


def _prepare(input_scale: float, input_zp: int, output_scale: float, output_zp: int,
             pot_shifts: tuple[int, ...]) -> SigmoidLutParams:
    """The int16 branch of LOGISTIC's / TANH's Prepare. A power-of-two input scale whose
    shift to Q3.12 is one of `pot_shifts` takes multiplier 3 << shift (the kernel's own
    substitution); any other scale is scaled to 1 / (3 * 4096) as a 15-bit multiplier."""
    if input_zp != 0 or output_zp != 0:
        raise ValueError("int16 LOGISTIC / TANH need zero points of 0 (TFLite Micro "
                         "requires it)")
    pot, log2 = _checked_log2(input_scale)
    shift = 12 + log2
    if pot and shift in pot_shifts:
        multiplier, shift = 3 << shift, 0
    else:
        real, shift = float(f32(input_scale)) * 4096.0 * 3.0, 0
        while real <= 32767.0 / 2.0 and shift <= 30:
            shift += 1
            real *= 2.0
        multiplier = int(real)
    if multiplier > 32767:
        raise ValueError(f"an int16 input scale of {float(input_scale):g} is too large for "
                         "TFLite Micro's sigmoid table")
    out_pot, out_log2 = _checked_log2(output_scale)
    if not out_pot or out_log2 != -15:
        raise ValueError("the int16 output scale must be 2**-15 (TFLite Micro requires it)")
    return SigmoidLutParams(multiplier, shift)


def logistic_params(input_scale: float, input_zp: int, output_scale: float,
                    output_zp: int) -> SigmoidLutParams:
    """CalculateArithmeticOpDataLogistic, int16: a power-of-two scale only when it is
    exactly Q3.12 (shift 0)."""
    return _prepare(input_scale, input_zp, output_scale, output_zp, (0,))


def tanh_params(input_scale: float, input_zp: int, output_scale: float,
                output_zp: int) -> SigmoidLutParams:
    """TANH's CalculateArithmeticOpData, int16: power-of-two scales with shift 0 or 1."""
    return _prepare(input_scale, input_zp, output_scale, output_zp, (0, 1))


@dataclass(frozen=True)
class SigmoidLutForm:
    """What separates the two kernels: the interpolation's fraction bits, and the final
    offset and right shift for each sign."""

    fraction_bits: int
    saturated: int
    positive_offset: int
    negative_offset: int  # the negative side is negative_offset - result
    final_shift: int


# Logistic: result + 2**9 (x >= 0) or 2**25 - result + 2**9 - 1, >> 10.
# Tanh: result - 2**23 + 2**7 (x >= 0) or -result + 2**23 + 2**7 - 1, >> 8.
FORMS = {
    "LOGISTIC": SigmoidLutForm(9, 0x7FFF << 10, 1 << 9, (1 << 25) + (1 << 9) - 1, 10),
    "TANH": SigmoidLutForm(8, 0xFFFF << 8, -(1 << 23) + (1 << 7), (1 << 23) + (1 << 7) - 1, 8),
}


def lut_activation(x: np.ndarray, params: SigmoidLutParams, op: str) -> np.ndarray:
    """LOGISTIC or TANH (int16) in numpy, as the reference kernel computes it."""
    form, table = FORMS[op], sigmoid_table()
    rnd = (1 << (params.left_shift - 1)) if params.left_shift > 0 else 0
    v = (np.asarray(x, np.int64) * params.multiplier + rnd) >> params.left_shift
    a = np.abs(v)
    uh = a >> form.fraction_bits
    idx = np.minimum(uh, 254)
    ua, ub = table[idx], table[idx + 1]
    frac = a & ((1 << form.fraction_bits) - 1)
    result = np.where(uh >= 255, form.saturated, (ua << form.fraction_bits) + frac * (ub - ua))
    result = np.where(v >= 0, result + form.positive_offset, form.negative_offset - result)
    return (result >> form.final_shift).astype(np.int16)


__all__ = ["FORMS", "SigmoidLutForm", "SigmoidLutParams", "logistic_params", "lut_activation",
           "sigmoid_table", "tanh_params"]
