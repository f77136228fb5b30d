"""bessel_i1e in f32 (CHLO's exp(-|x|) I1(x)): I1's power series (positive terms) for
|x| < 4, a Chebyshev interpolant of sqrt(x) i1e(x) on [4, 16], the asymptotic series
above.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numpy.polynomial import chebyshev

from toolchain.codegen.mathlib_ir import INF, _horner, _negate_if, _signbit, fabs
from toolchain.codegen.mathlib_roots import sqrt_f32
from toolchain.codegen.mathlib_special_ir import _c, _call, _clamp_range, _isnan, _lt
from toolchain.codegen.mathlib_table import _define

# bessel_i1e: for |x| < 4, I1(x) = (x/2) S(x*x/4) with S(y) = sum y**k / (k! (k+1)!)
# (degree 10: the omitted term is < 2e-10 of S; positive terms, no cancellation). On
# [4, 16], sqrt(x) * i1e(x) (between 0.33 and 0.39) as a polynomial of degree 15 in
# u = (x - 10)/6: a Chebyshev interpolant of the float64 series (relative error 3e-9).
# Above 16 the asymptotic series: I1(x) e**-x ~ (2 pi x)**-1/2 sum (-1)**k a_k / x**k,
# a_k = prod_{j<=k} (4 - (2j-1)**2) / (k! 8**k); the twelfth term is < 3e-12 at x = 16.
I1_SMALL = [1 / (math.factorial(k) * math.factorial(k + 1)) for k in range(11)]
I1_MID = (4.0, 16.0, 15)


def i1e64(x: float) -> float:
    """exp(-x) I1(x) in float64 for 0 <= x <= 30 from I1's power series."""
    y, term, total = x * x / 4, 1.0, 1.0
    for k in range(1, 120):
        term *= y / (k * (k + 1))
        total += term
    return math.exp(-x) * x / 2 * total


def _i1e_fit() -> list[float]:
    lo, hi, degree = I1_MID

    def f(u: np.ndarray) -> np.ndarray:
        x = (u + 1) / 2 * (hi - lo) + lo
        return np.array([i1e64(v) * math.sqrt(v) for v in x])

    return [float(c) for c in chebyshev.cheb2poly(chebyshev.chebinterpolate(f, degree))]


I1_MID_FIT = _i1e_fit()


def _i1_asymptotic() -> list[float]:
    coeffs, a = [1.0], 1.0
    for k in range(1, 12):
        a *= (4 - (2 * k - 1) ** 2) / (k * 8)
        coeffs.append((-1) ** k * a)
    return coeffs


I1_LARGE = _i1_asymptotic()
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


@_define("bessel_i1e")
def _bessel_i1e(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    y = b.fmul(b.fmul(ax, ax), _c(0.25))
    e = _call(b, "exponential", b.fneg(ax))
    small = b.fmul(b.fmul(e, b.fmul(ax, _c(0.5))), _horner(b, y, I1_SMALL))
    lo, hi, _ = I1_MID
    u = b.fmul(b.fsub(ax, _c((lo + hi) / 2)), _c(2 / (hi - lo)))
    mid = b.fdiv(_horner(b, u, I1_MID_FIT), sqrt_f32(b, _clamp_range(b, ax, lo, hi)))
    small = b.select(_lt(b, ax, lo), small, mid)
    xl = _clamp_range(b, ax, 16.0, INF)
    w = b.fdiv(_c(1.0), xl)
    root = b.fdiv(_c(INV_SQRT_2PI), sqrt_f32(b, xl))
    large = b.fmul(root, _horner(b, w, I1_LARGE))
    r = b.select(b.fcmp_ordered("<=", ax, _c(16.0)), small, large)
    r = _negate_if(b, _signbit(b, x), r)
    return b.select(_isnan(b, x), x, r)
