"""What the special functions (erf, gamma, zeta, Bessel, hyperbolic files) share: short
comparisons and clamps on f32 constants, calls of other math functions by name, f32
rounding of float64 constants, the Bernoulli numbers, and sums and logarithms carried
in double-f32 (a value as an unevaluated sum hi + lo of two f32).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from toolchain.codegen.mathlib_ir import F32, _fconst
from toolchain.codegen.mathlib_pow import _log2_double, _two_prod, _two_sum
from toolchain.codegen.mathlib_table import math_function


def _c(v: float) -> ir.Constant:
    return _fconst(F32, v)


def _call(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    return b.call(math_function(b.module, name), list(args))


def _lt(b: ir.IRBuilder, x: ir.Value, v: float | ir.Value) -> ir.Value:
    return b.fcmp_ordered("<", x, _c(v) if isinstance(v, float | int) else v)


def _ge(b: ir.IRBuilder, x: ir.Value, v: float | ir.Value) -> ir.Value:
    return b.fcmp_ordered(">=", x, _c(v) if isinstance(v, float | int) else v)


def _isnan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", x, x)


def _clamp_range(b: ir.IRBuilder, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """x clamped into [lo, hi] (NaN to lo): keeps later conversions (mathlib_gamma's
    _segment, fptosi) defined and arguments inside a formula's range."""
    x = b.select(b.fcmp_unordered("ult", x, _c(lo)), _c(lo), x)
    return b.select(b.fcmp_ordered(">", x, _c(hi)), _c(hi), x)


def _f32(v: float) -> float:
    return float(np.float32(v))


def _hi_lo(v: float) -> tuple[float, float]:
    """v as an f32 pair hi + lo (lo the float64 remainder rounded)."""
    hi = _f32(v)
    return hi, _f32(v - hi)


# B_2, B_4, ... (Bernoulli numbers), for the asymptotic and Euler-Maclaurin series.
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
             43867 / 798, -174611 / 330)
LN2 = _hi_lo(math.log(2))


# ----------------------------------------------------------------- double-f32 helpers


def _log_double(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log(x) as hi + lo (~2**-40 relative) for finite x > 0: mathlib_pow's log2 pair times
    ln 2 in double-f32."""
    hh, hl = _log2_double(b, x)
    p, e = _two_prod(b, hh, _c(LN2[0]))
    e = b.fadd(e, b.fadd(b.fmul(hh, _c(LN2[1])), b.fmul(hl, _c(LN2[0]))))
    return _fast_two_sum(b, p, e)


def _fast_two_sum(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """s + e = a + c exactly when |a| >= |c| (or a = 0)."""
    s = b.fadd(a, c)
    return s, b.fsub(c, b.fsub(s, a))


def _add_double(b: ir.IRBuilder, terms: list[tuple[ir.Value, ir.Value | None]]) -> ir.Value:
    """The sum of double-f32 terms (hi, lo), rounded once at the end: the hi parts are
    summed exactly with two-sum, their errors and the lo parts in plain f32."""
    s, err = terms[0][0], terms[0][1] or _c(0.0)
    for hi, lo in terms[1:]:
        s, e = _two_sum(b, s, hi)
        err = b.fadd(err, e if lo is None else b.fadd(e, lo))
    return b.fadd(s, err)
