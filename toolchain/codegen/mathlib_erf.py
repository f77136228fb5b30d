"""erf, erfc and erf_inv in f32 (CHLO's error functions).

- erf(x) = x + x * y(x*x) for |x| < 1 (Maclaurin, 12 terms). For |x| >= 1, erfc(x) =
  exp(-x*x) * R(1/x) / x with R a Chebyshev interpolant (degree 12, computed at import
  from the C library's float64 erfc: the only fitted coefficients of the special
  functions besides bessel_i1e's middle piece). exp(-x*x) keeps the square exact:
  x = xh + xl with xh's 12 leading bits, xh*xh exact, the rest (x - xh)(x + xh) added
  into exp's reduced argument; 2**n is applied last, so results down in the subnormals
  are rounded once.
- erf_inv: Halley's iteration on erf (on erfc near +-1, where 1 - |x| is exact) from the
  Maclaurin series or Winitzki's closed form.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numpy.polynomial import chebyshev

from toolchain.codegen.mathlib_exp import _expm1_poly, _ldexp, _reduce_ln2
from toolchain.codegen.mathlib_ir import (
    F32,
    I32,
    INF,
    NAN,
    _horner,
    _iconst,
    _negate_if,
    _signbit,
    fabs,
)
from toolchain.codegen.mathlib_roots import sqrt_f32
from toolchain.codegen.mathlib_special_ir import _c, _call, _ge, _isnan, _lt
from toolchain.codegen.mathlib_table import _define

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

# erf(x) = x + x * y(x*x): y(z) = 2/sqrt(pi) sum (-1)**n z**n / (n! (2n+1)) - 1; for
# z <= 1 the omitted n = 12 term is 3.3e-11.
ERF_Y = [TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1)) - (n == 0)
         for n in range(12)]

ERFC_HI = 10.0546  # erfc(10.0546) < 2**-150: beyond, erfc rounds to 0
# x * erfc(x) * exp(x*x) on [1, 3) and [3, ERFC_HI) as polynomials (degrees 10 and 6) in
# u in [-1, 1], u affine in t = 1/x: Chebyshev interpolants of the float64 function
# (relative error < 3e-9), converted to monomials in u (the largest 0.55: Horner in f32
# is stable).
ERFC_PIECES = ((0.84375, 3.0, 14), (3.0, ERFC_HI, 9))


def _erfc_fit(lo: float, hi: float, degree: int) -> tuple[list[float], float, float]:
    """Coefficients in u and the map u = t * scale + shift of one piece."""
    ta, tb = 1 / hi, 1 / lo

    def f(u: np.ndarray) -> np.ndarray:
        x = 1 / ((u + 1) / 2 * (tb - ta) + ta)
        return np.array([math.erfc(v) * math.exp(v * v) * v for v in x])

    coeffs = chebyshev.cheb2poly(chebyshev.chebinterpolate(f, degree))
    scale = 2 / (tb - ta)
    return [float(c) for c in coeffs], scale, -1 - ta * scale


ERFC_FITS = [_erfc_fit(*piece) for piece in ERFC_PIECES]


def _erf_y(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _horner(b, b.fmul(x, x), ERF_Y)


def _erfc_large(b: ir.IRBuilder, ax: ir.Value) -> ir.Value:
    """erfc(ax) for ax >= 1 (0 past ERFC_HI, inf included)."""
    xh = b.bitcast(b.and_(b.bitcast(ax, I32), _iconst(32, 0xFFFFF000)), F32)
    d = b.fmul(b.fsub(ax, xh), b.fadd(ax, xh))  # x*x = xh*xh + d; xh*xh is exact
    n, r = _reduce_ln2(b, b.fneg(b.fmul(xh, xh)))
    q = _expm1_poly(b, b.fsub(r, d))  # exp(-x*x) = 2**n (1 + q)
    t = b.fdiv(_c(1.0), ax)
    fits = []
    for coeffs, scale, shift in ERFC_FITS:
        fits.append(_horner(b, b.fadd(b.fmul(t, _c(scale)), _c(shift)), coeffs))
    fit = b.select(_lt(b, ax, ERFC_PIECES[0][1]), fits[0], fits[1])
    f = b.fdiv(fit, ax)
    m = b.fadd(f, b.fmul(f, q))  # f (1 + q) with one rounding fewer
    return b.select(_lt(b, ax, ERFC_HI), _ldexp(b, m, n), _c(0.0))


@_define("erf")
def _erf(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # |x| < 1: x + x*y, the Maclaurin series (error ~1 ulp); else 1 - erfc(|x|), where
    # erfc <= 0.16 leaves no cancellation.
    ax = fabs(b, x)
    small = b.fadd(x, b.fmul(x, _erf_y(b, x)))
    big = _negate_if(b, _signbit(b, x), b.fsub(_c(1.0), _erfc_large(b, ax)))
    r = b.select(_lt(b, ax, 1.0), small, big)
    return b.select(_isnan(b, x), x, r)


@_define("erfc")
def _erfc(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # x < 1/2: 1 - erf(x) (erfc > 0.47); [1/2, 1): (1 - x) - x*y with 1 - x exact;
    # x >= 1: the exp * R form; x <= -1: 2 - erfc(|x|).
    ax = fabs(b, x)
    xy = b.fmul(x, _erf_y(b, x))
    r = b.fsub(_c(1.0), b.fadd(x, xy))
    r = b.select(_ge(b, x, 0.5), b.fsub(b.fsub(_c(1.0), x), xy), r)
    large = _erfc_large(b, ax)
    r = b.select(_ge(b, x, ERFC_PIECES[0][0]), large, r)
    r = b.select(b.fcmp_ordered("<=", x, _c(-1.0)), b.fsub(_c(2.0), large), r)
    return b.select(_isnan(b, x), x, r)


@_define("erf_inv")
def _erf_inv(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    z = b.fmul(ax, ax)
    pi = math.pi
    series = b.fmul(b.fmul(_c(math.sqrt(pi) / 2), ax), _horner(
        b, z, [1.0, pi / 12, 7 * pi**2 / 480, 127 * pi**3 / 40320]))
    # Winitzki: erf_inv(a) ~ sqrt(sqrt(t**2 - l/0.147) - t), t = 2/(0.147 pi) + l/2,
    # l = log(1 - a*a) (relative error < 2e-3 for a in [1/2, 1)).
    one = _c(1.0)
    c = b.fsub(one, ax)  # exact for ax >= 1/2
    lw = _call(b, "log", b.fmul(c, b.fadd(one, ax)))
    t = b.fadd(_c(2 / (pi * 0.147)), b.fmul(lw, _c(0.5)))
    inner = sqrt_f32(b, b.fsub(b.fmul(t, t), b.fmul(lw, _c(1 / 0.147))))
    y = b.select(_lt(b, ax, 0.5), series, sqrt_f32(b, b.fsub(inner, t)))
    tail = _ge(b, ax, 0.5)
    # Halley on f(y) = erf(y) - a (or erfc(y) - (1 - a) in the tail); f'' = -2y f'.
    # The start is within 2e-3: after one step ~1e-8, the second reaches f32's limit.
    for _ in range(2):
        f = b.select(tail, b.fsub(_call(b, "erfc", y), c), b.fsub(_call(b, "erf", y), ax))
        slope = b.fmul(b.select(tail, _c(-TWO_OVER_SQRT_PI), _c(TWO_OVER_SQRT_PI)),
                       _call(b, "exponential", b.fneg(b.fmul(y, y))))
        step = b.fdiv(f, slope)
        y = b.fsub(y, b.fdiv(step, b.fadd(one, b.fmul(y, step))))
    y = b.select(b.fcmp_ordered("==", ax, _c(0.0)), ax, y)
    y = b.select(b.fcmp_ordered("==", ax, one), _c(INF), y)
    y = _negate_if(b, _signbit(b, x), y)
    return b.select(b.fcmp_unordered("ugt", ax, one), _c(NAN), y)
