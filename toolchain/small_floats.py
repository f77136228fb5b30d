"""The float formats narrower than bf16 (the 8-, 6- and 4-bit floats of MLIR's `f8E4M3FN`,
`f6E2M3FN`, `f4E2M1FN`, ...): storage types, computed in f32.

Each is a row of FORMATS: how its bits split into sign, exponent and mantissa, its bias,
and which codes are special. The kinds, as LLVM's APFloat and ml_dtypes define them:

- "ieee": IEEE 754 rules (an all-ones exponent is inf with mantissa 0, else NaN);
- "fn": finite and NaN (no inf); NaN is the all-ones code of either sign, so the
  all-ones exponent with another mantissa is an ordinary number (E4M3FN's 448);
- "fnuz": finite, NaN, unsigned zero: 0x80 (what would be -0) is the only NaN, and a
  value rounding to zero has no sign;
- "finite": no inf and no NaN at all (the 6- and 4-bit formats of the OCP MX spec);
- "e8m0": unsigned powers of two 2**-127 .. 2**127 (code 0 .. 254), 0xFF is NaN, no
  zero.

On the host a value of these types is a float32 already rounded to the format (as bf16
is), so numpy computes with it and only rounding touches the format. The host's rounding
is ml_dtypes' conversion (exact to the formats: round to nearest even, a finite value
past the largest becoming inf, NaN, or for "finite" formats the largest); the firmware's
is our own integer arithmetic (codegen/mathlib_small_float.py), tested against it over
every code and a sweep of f32 values. Two conversions the formats leave open follow
ml_dtypes, so that host and firmware agree: NaN into a "finite" format is zero of the
opposite sign, and e8m0 (no zero, no sign) takes 0, negatives and NaN to NaN and a value
below 2**-127 to 2**-127.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SmallFloat:
    """One narrow float format: `name` as MLIR spells it, its exponent and mantissa
    widths, exponent bias, special-value kind (module docstring) and the name of its
    ml_dtypes type (`ml_dtype`)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    kind: str
    ml_name: str

    @property
    def ml_dtype(self) -> type:
        """The ml_dtypes numpy type of the format (ml_dtypes imported on first use:
        see `_ml_dtypes`)."""
        return getattr(_ml_dtypes(), self.ml_name)

    @property
    def bits(self) -> int:
        """Width of a code: sign (none for e8m0), exponent, mantissa."""
        return (self.kind != "e8m0") + self.exponent_bits + self.mantissa_bits

    @property
    def max_code(self) -> int:
        """The code (sign bit clear) of the largest finite value."""
        all_ones = (1 << (self.exponent_bits + self.mantissa_bits)) - 1
        return {"ieee": all_ones - (1 << self.mantissa_bits), "fn": all_ones - 1,
                "fnuz": all_ones, "finite": all_ones, "e8m0": all_ones - 1}[self.kind]

    @property
    def max_value(self) -> float:
        """The largest finite value."""
        return float(from_bits(np.array([self.max_code]), self)[0])


def _ml_dtypes():
    """The ml_dtypes module, imported when a value first needs it rather than with this
    module: its import registers hundreds of numpy casts and ufunc loops, about 0.6 s of
    CPU (ml_dtypes 0.7, numpy 2.4), more than the rest of minirt-build's start-up, and a
    model without bf16 or small-float values never needs it."""
    return importlib.import_module("ml_dtypes")


def _row(name: str, e: int, m: int, bias: int, kind: str, ml: str) -> SmallFloat:
    return SmallFloat(name, e, m, bias, kind, ml)


FORMATS: dict[str, SmallFloat] = {f.name: f for f in [
    _row("f8E3M4", 3, 4, 3, "ieee", "float8_e3m4"),
    _row("f8E4M3", 4, 3, 7, "ieee", "float8_e4m3"),
    _row("f8E4M3FN", 4, 3, 7, "fn", "float8_e4m3fn"),
    _row("f8E4M3FNUZ", 4, 3, 8, "fnuz", "float8_e4m3fnuz"),
    _row("f8E4M3B11FNUZ", 4, 3, 11, "fnuz", "float8_e4m3b11fnuz"),
    _row("f8E5M2", 5, 2, 15, "ieee", "float8_e5m2"),
    _row("f8E5M2FNUZ", 5, 2, 16, "fnuz", "float8_e5m2fnuz"),
    _row("f8E8M0FNU", 8, 0, 127, "e8m0", "float8_e8m0fnu"),
    _row("f6E2M3FN", 2, 3, 1, "finite", "float6_e2m3fn"),
    _row("f6E3M2FN", 3, 2, 3, "finite", "float6_e3m2fn"),
    _row("f4E2M1FN", 2, 1, 1, "finite", "float4_e2m1fn"),
]}


def to_bits(x: np.ndarray, fmt: SmallFloat) -> np.ndarray:
    """float32 values (any values) rounded to `fmt`, as their codes (uint8)."""
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float32).astype(fmt.ml_dtype).view(np.uint8)


def from_bits(bits: np.ndarray, fmt: SmallFloat) -> np.ndarray:
    """The float32 values of `fmt` codes (exact; a NaN code is the quiet NaN of its sign,
    0x80 of an fnuz format the negative one, as ml_dtypes decodes it)."""
    mask = (1 << fmt.bits) - 1
    codes = (np.asarray(bits).astype(np.int64) & mask).astype(np.uint8)
    return codes.view(fmt.ml_dtype).astype(np.float32)


def round_to(x: np.ndarray, fmt: SmallFloat) -> np.ndarray:
    """float32 values rounded to `fmt`, still as float32: how the host holds `fmt`."""
    return from_bits(to_bits(x, fmt), fmt).reshape(np.shape(x))


def is_ml_dtype(dt: np.dtype) -> bool:
    """Whether `dt` is one of ml_dtypes' float types (bfloat16 and the small floats):
    what onnx's numpy_helper gives for those element types."""
    return np.dtype(dt).type.__module__.startswith("ml_dtypes")


def element_type_of(dt: np.dtype) -> str | None:
    """The element type name (bf16 or a small float) of one of ml_dtypes' numpy types,
    None for any other."""
    dt = np.dtype(dt)
    if not is_ml_dtype(dt):  # none of ml_dtypes' types: no need to import it
        return None
    if dt == np.dtype(_ml_dtypes().bfloat16):
        return "bf16"
    return next((f.name for f in FORMATS.values() if np.dtype(f.ml_dtype) == dt), None)
