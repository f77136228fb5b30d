"""How each suite compares an output with its expected value, written down with the
reason for each tolerance. Every judge returns None when the values agree, else one line
saying where they differ.

- Integers, booleans and `check.expect_eq(_const)`: exactly (NaN equal to NaN: a NaN the
  test expects is a NaN computed).
- ONNX node tests: as ONNX's own backend runner (onnx/backend/test/runner) judges them:
  the output's element type equal to the expected one's, and floats like
  numpy.isclose with the case's own rtol and atol (1e-3 and 1e-7 unless the case sets
  others: its expected values are often written to 4 digits), bfloat16 at rtol at least
  2**-6 (two of its ulps), NaN equal to NaN. minirt holds bfloat16 and the float8 /
  float4 types as float32 values rounded to them: such an output's type holds when
  every value is one the expected type has.
- `check.expect_almost_eq(_const)`: the StableHLO interpreter's rule
  (stablehlo/reference/Element.cpp, areApproximatelyEqual): equal values, or both NaN,
  or both finite with |a - b| <= tolerance, the op's `tolerance` attribute or 0.0001 by
  default (Element.h); complex parts each so. The rule has no sign test: a computed
  -1e-15 where the interpreter's DFT gives exactly 0 is a pass there, so here too.
- `check.expect_close`: within `max_ulp_difference` units in the last place of the
  element type (NaN equal to NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.small_floats import is_ml_dtype
from toolchain.types import round_to_bf16

__all__ = ["Judge", "exact", "onnx_close", "almost_eq", "ulp_close", "ALMOST_EQ_TOLERANCE"]

Judge = Callable[[np.ndarray, np.ndarray], "str | None"]

ALMOST_EQ_TOLERANCE = 1e-4  # stablehlo/reference/Element.h: APFloat(0.0001)
BFLOAT16_RTOL = 2.0**-6  # ONNX's runner: two bfloat16 ulps


def _shape(got: np.ndarray, want: np.ndarray) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    return None


def _first(bad: np.ndarray, got: np.ndarray, want: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (f"{int(bad.sum())} of {bad.size} elements differ; at {list(idx)} got "
            f"{got[idx]!r}, expected {want[idx]!r}")


def exact(got: np.ndarray, want: np.ndarray) -> str | None:
    """Equal elements (NaN equal to NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    if (problem := _shape(got, want)) is not None:
        return problem
    bad = got != want
    if want.dtype.kind in "fc":
        bad &= ~(np.isnan(got) & np.isnan(want))
    return _first(bad, got, want) if bad.any() else None


def onnx_close(rtol: float, atol: float) -> Judge:
    """An ONNX node test's judge: the expected element type, floats like
    numpy.isclose(rtol, atol, equal_nan), others exactly."""
    def judge(got: np.ndarray, want: np.ndarray) -> str | None:
        got, want = np.asarray(got), np.asarray(want)
        if want.dtype.name == "bfloat16" and got.dtype == np.float32:
            # minirt holds bf16 as float32 values already rounded to bf16 (types.py):
            # the type holds when every value is one bf16 can hold.
            if not np.array_equal(round_to_bf16(got), got, equal_nan=True):
                return "bfloat16 output holds values bfloat16 cannot"
        elif is_ml_dtype(want.dtype) and got.dtype == np.float32:
            # The float8 / float4 types likewise (small_floats.py): every value one of
            # the expected type's, which the comparison below then reads as float32.
            if not np.array_equal(got.astype(want.dtype).astype(np.float32), got,
                                  equal_nan=True):
                return f"{want.dtype} output holds values {want.dtype} cannot"
            want = want.astype(np.float32)
        elif got.dtype != want.dtype:
            return f"element type {got.dtype}, expected {want.dtype}"
        if want.dtype.kind not in "fcV" and want.dtype.name != "bfloat16":
            return exact(got, want)
        if (problem := _shape(got, want)) is not None:
            return problem
        r = max(rtol, BFLOAT16_RTOL) if want.dtype.name == "bfloat16" else rtol
        g, w = (got, want) if want.dtype.kind in "fc" else (got.astype(np.float32),
                                                           want.astype(np.float32))
        bad = ~np.isclose(g, w, rtol=r, atol=atol, equal_nan=True)
        return _first(bad, got, want) if bad.any() else None
    return judge


def _almost_real(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """The interpreter's areApproximatelyEqual, elementwise: True where a ~ b (equal,
    both NaN, or both finite and within `tol`, whatever their signs)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b)
        return same | (finite & (np.abs(a - b) <= tol))


def almost_eq(tolerance: float = ALMOST_EQ_TOLERANCE) -> Judge:
    """check.expect_almost_eq's judge with `tolerance`; integers exactly."""
    def judge(got: np.ndarray, want: np.ndarray) -> str | None:
        got, want = np.asarray(got), np.asarray(want)
        if want.dtype.kind not in "fc":
            return exact(got, want)
        if (problem := _shape(got, want)) is not None:
            return problem
        if want.dtype.kind == "c":
            ok = (_almost_real(got.real, want.real, tolerance)
                  & _almost_real(got.imag, want.imag, tolerance))
        else:
            ok = _almost_real(got, want, tolerance)
        return _first(~ok, got, want) if not ok.all() else None
    return judge


def ulp_close(max_ulps: int) -> Judge:
    """check.expect_close's judge: within `max_ulps` ulps of the element type."""
    def judge(got: np.ndarray, want: np.ndarray) -> str | None:
        got, want = np.asarray(got), np.asarray(want)
        if want.dtype.kind != "f":
            return exact(got, want)
        if (problem := _shape(got, want)) is not None:
            return problem
        g = got.astype(want.dtype)
        ulps = np.abs(g.astype(np.float64) - want.astype(np.float64)) / np.spacing(
            np.abs(want)).astype(np.float64)
        ok = (g == want) | (np.isnan(g) & np.isnan(want)) | (ulps <= max_ulps)
        return _first(~ok, got, want) if not ok.all() else None
    return judge
