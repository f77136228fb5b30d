"""The math library's special functions (CHLO's ops): error function and its inverse,
log-gamma, digamma, zeta, polygamma, the Bessel function I1e, next_after, and the
inverse trigonometric and hyperbolic functions.

They register into mathlib's table like its own functions (internal IR functions in
`.text.mrt_math_*` sections, f32, no libm; f64 operands go through f32) and follow the
same rules: only basic float arithmetic and integer operations, special values as C99
and numpy give them, or as CHLO's decompositions define them where C has no function.
docs/mathlib.md has the measured accuracy of each (ulps over sweeps of the whole f32
range, tests/codegen/test_codegen_mathlib_special.py).

Where mathlib's other functions use truncated Taylor series with exact coefficients,
these do too when a series converges fast enough on a reduced argument:

- erf(x) = x + x * y(x*x) for |x| < 1 (Maclaurin, 12 terms). For |x| >= 1, erfc(x) =
  exp(-x*x) * R(1/x) / x with R a Chebyshev interpolant (degree 12, computed at import
  from the C library's float64 erfc: the only fitted coefficients here). exp(-x*x) keeps
  the square exact: x = xh + xl with xh's 12 leading bits, xh*xh exact, the rest
  (x - xh)(x + xh) added into exp's reduced argument; 2**n is applied last, so results
  down in the subnormals are rounded once.
- lgamma and digamma on [0.75, 3.75): Taylor series (degree 14 and 16) around 1, 1.5
  (for digamma its positive root x0, carried in two f32 parts so that relative accuracy
  holds where digamma crosses 0), 2, 2.5, 3 and 3.5, from a 360- and a 408-byte table;
  their coefficients are Hurwitz zeta values computed at import. Above, the asymptotic
  (Stirling) series with log x in double-f32 (mathlib's log2 pair); below, Gamma's
  recurrence (x -> x + 1); for x < 0 the reflection formulas.
- erf_inv: Halley's iteration on erf (on erfc near +-1, where 1 - |x| is exact) from the
  Maclaurin series or Winitzki's closed form.
- bessel_i1e: I1's power series (positive terms) for |x| <= 16, its asymptotic series
  above.
- zeta(s, q): nine terms of the sum, then Euler-Maclaurin with eight Bernoulli terms;
  polygamma(n, x) = (-1)**(n+1) n! zeta(n+1, x) (n! from a table), digamma for n = 0.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from llvmlite import ir
from numpy.polynomial import chebyshev

from toolchain.codegen.mathlib import (
    _COS_TAYLOR,
    _SIN_TAYLOR,
    F32,
    I16,
    I32,
    INF,
    LN2_F32,
    NAN,
    _atan2,
    _bits,
    _define,
    _expm1_poly,
    _fconst,
    _floor,
    _fmt,
    _horner,
    _iconst,
    _ldexp,
    _load_entry,
    _log2_double,
    _negate_if,
    _reduce_ln2,
    _rodata_table,
    _round_to_i32,
    _signbit,
    _sin_cos_poly,
    _two_prod,
    _two_sum,
    bf16_bits_to_f32,
    f16_bits_to_f32,
    f32_to_bf16_bits,
    f32_to_f16_bits,
    fabs,
    math_function,
    sqrt_value,
)

PREFIX = "mrt_math_"

# Graph ops computed by these functions: unary, binary (emit.py calls them by name).
SPECIAL_UNARY = frozenset({
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh"})  # fmt: skip
SPECIAL_BINARY = frozenset({"zeta", "polygamma"})

__all__ = ["SPECIAL_BINARY", "SPECIAL_UNARY", "next_after"]


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


def _poly(b: ir.IRBuilder, t: ir.Value, table: ir.GlobalVariable, base: ir.Value,
          degree: int) -> ir.Value:
    """c0 + c1 t + ... + c_degree t**degree from a table row [c0_lo, c0_hi, c1, ...]:
    Horner, with the last step c0 + t * (...) in double-f32 (exact product and sum, c0's
    low part included), so that where the sum is smaller than c0 (digamma at 1.25 is
    0.23, its centre's value -0.58) only one rounding remains."""
    def coeff(k: int) -> ir.Value:
        return _load_entry(b, table, b.add(base, _iconst(32, k)))

    acc = coeff(degree + 1)
    for k in range(degree, 1, -1):
        acc = b.fadd(b.fmul(acc, t), coeff(k))
    p, pe = _two_prod(b, acc, t)
    s, e = _two_sum(b, coeff(1), p)
    return b.fadd(s, b.fadd(e, b.fadd(pe, coeff(0))))


def _row(coeffs: list[float]) -> list[float]:
    """A Taylor table row: the constant term split into lo, hi, then the others."""
    hi, lo = _hi_lo(coeffs[0])
    return [lo, hi] + coeffs[1:]


def _f32(v: float) -> float:
    return float(np.float32(v))


def _hi_lo(v: float) -> tuple[float, float]:
    """v as an f32 pair hi + lo (lo the float64 remainder rounded)."""
    hi = _f32(v)
    return hi, _f32(v - hi)


# ----------------------------------------------------------------- float64 constants

# B_2, B_4, ... (Bernoulli numbers), for the asymptotic and Euler-Maclaurin series.
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
             43867 / 798, -174611 / 330)


def hurwitz64(s: int, q: float) -> float:
    """zeta(s, q) in float64 for an integer s >= 2 and q >= 1/2 (coefficients only):
    30 terms of the sum, then Euler-Maclaurin (ten Bernoulli terms, < 1e-20 left)."""
    total = math.fsum((q + k) ** -s for k in range(30))
    a = q + 30
    em = a ** (1 - s) / (s - 1) + a**-s / 2
    rising, term = float(s), a ** (-s - 1)
    for j, bern in enumerate(BERNOULLI, 1):
        em += bern / math.factorial(2 * j) * rising * term
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        term /= a * a
    return total + em


def digamma64(x: float) -> float:
    """digamma(x) in float64 for x >= 1/2 (coefficients only)."""
    shift = 0.0
    while x < 20:
        shift += 1 / x
        x += 1
    z = 1 / (x * x)
    series = sum(bern / (2 * k) * z**k for k, bern in enumerate(BERNOULLI, 1))
    return math.log(x) - 0.5 / x - series - shift


# The positive root of digamma (OEIS A030169); tests check it against digamma64.
_ROOT_DIGITS = Decimal("1.4616321449683623412626595423257213284681962040064463512959884086")
DIGAMMA_ROOT = float(_ROOT_DIGITS)
ROOT = (_f32(DIGAMMA_ROOT), _f32(float(_ROOT_DIGITS - Decimal(_f32(DIGAMMA_ROOT)))))
LN2 = _hi_lo(math.log(2))
HALF_LOG_2PI = _hi_lo(0.5 * math.log(2 * math.pi))
LOG_PI = _hi_lo(math.log(math.pi))
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
EULER_GAMMA = 0.5772156649015329

# Taylor tables on [0.75, 3.75): segment i covers x in [0.75 + i/2, 1.25 + i/2) around
# its centre; lgamma's centres are 1, 1.5, ..., 3.5, digamma's the same with x0 for 1.5.
LGAMMA_DEGREE, DIGAMMA_DEGREE = 14, 16
_CENTRES = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5)


def _lgamma_taylor(c: float) -> list[float]:
    """lgamma(c + t) = lgamma(c) + psi(c) t + sum_k>=2 (-1)**k zeta(k, c)/k t**k."""
    return [math.lgamma(c), digamma64(c)] + [
        (-1) ** k * hurwitz64(k, c) / k for k in range(2, LGAMMA_DEGREE + 1)]


def _digamma_taylor(c: float) -> list[float]:
    """psi(c + t) = psi(c) + sum_k>=1 (-1)**(k+1) zeta(k+1, c) t**k (psi(x0) = 0)."""
    return [0.0 if c == DIGAMMA_ROOT else digamma64(c)] + [
        (-1) ** (k + 1) * hurwitz64(k + 1, c) for k in range(1, DIGAMMA_DEGREE + 1)]


LGAMMA_TABLE = [v for c in _CENTRES for v in _row(_lgamma_taylor(c))]
DIGAMMA_CENTRES = [DIGAMMA_ROOT if c == 1.5 else c for c in _CENTRES]
DIGAMMA_TABLE = [v for c in DIGAMMA_CENTRES for v in _row(_digamma_taylor(c))]
# Per segment: the centre as hi, lo (x - hi is exact in every segment: Sterbenz).
DIGAMMA_CENTRE_TABLE = [v for c in DIGAMMA_CENTRES
                        for v in (ROOT if c == DIGAMMA_ROOT else _hi_lo(c))]

# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum B_2k / (2k (2k-1) x**(2k-1));
# from x = 3.75 the seventh term is below 2.1e-10 of the result.
STIRLING = [BERNOULLI[k - 1] / (2 * k * (2 * k - 1)) for k in range(1, 7)]
# digamma(x) = log x - 1/(2x) - sum B_2k / (2k x**2k); from 3.75 the eighth term < 8e-10.
PSI_ASYMPTOTIC = [BERNOULLI[k - 1] / (2 * k) for k in range(1, 8)]

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

# zeta(s, q): ZETA_TERMS terms of the sum, then Euler-Maclaurin at a = q + ZETA_TERMS:
# a**(1-s)/(s-1) + a**-s/2 + a**-s/a * s * (B2/2! + w (s+1)(s+2) (B4/4! + w (s+3)(s+4) ...)),
# w = 1/a**2.
ZETA_TERMS = 9
# The largest power of two the terms are scaled by: 2**-m stays within _ldexp's range.
ZETA_SCALE = 240.0
ZETA_EM = [BERNOULLI[j - 1] / math.factorial(2 * j) for j in range(1, 9)]
# n! for polygamma, rounded to f32; 35! overflows f32 (JAX's exp(lgamma(n + 1)) too).
FACTORIALS = [_f32(float(math.factorial(n))) for n in range(35)]


# ----------------------------------------------------------------- double-f32 helpers


def _log_double(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log(x) as hi + lo (~2**-40 relative) for finite x > 0: mathlib's log2 pair times
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


# ----------------------------------------------------------------- error function


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
    inner = sqrt_value(b, b.fsub(b.fmul(t, t), b.fmul(lw, _c(1 / 0.147))))
    y = b.select(_lt(b, ax, 0.5), series, sqrt_value(b, b.fsub(inner, t)))
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


# ----------------------------------------------------------------- gamma family


def _segment(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The Taylor segment of x in [0.75, 3.75): floor(2x + 1/2) - 2, clamped to 0..5."""
    i = b.fptosi(b.fadd(b.fmul(x, _c(2.0)), _c(0.5)), I32)
    i = b.sub(i, _iconst(32, 2))
    i = b.select(b.icmp_signed("<", i, _iconst(32, 0)), _iconst(32, 0), i)
    return b.select(b.icmp_signed(">", i, _iconst(32, 5)), _iconst(32, 5), i)


def _clamp_range(b: ir.IRBuilder, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """x clamped into [lo, hi] (NaN to lo): keeps the conversions in _segment defined."""
    x = b.select(b.fcmp_unordered("ult", x, _c(lo)), _c(lo), x)
    return b.select(b.fcmp_ordered(">", x, _c(hi)), _c(hi), x)


def _lgamma_taylor(b: ir.IRBuilder, seg: ir.Value, t: ir.Value) -> ir.Value:
    table = _rodata_table(b.module, PREFIX + "lgamma_taylor", F32, LGAMMA_TABLE)
    base = b.mul(seg, _iconst(32, LGAMMA_DEGREE + 2))
    return _poly(b, t, table, base, LGAMMA_DEGREE)


def _lgamma_positive(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """lgamma(x) for x > 0 (finite) as hi + lo."""
    zero = _c(0.0)
    # [0.75, 3.75): Taylor, t = x - centre exact.
    xm = _clamp_range(b, x, 0.75, 3.74)
    seg = _segment(b, xm)
    centre = b.fmul(b.sitofp(b.add(seg, _iconst(32, 2)), F32), _c(0.5))
    mid = _lgamma_taylor(b, seg, b.fsub(x, centre))
    # (0, 0.75): lgamma(x + 1) - log x, lgamma(x + 1) around 1 or 1.5 (t = x or x - 1/2).
    upper = _ge(b, x, 0.25)
    seg_s = b.zext(upper, I32)
    low = _lgamma_taylor(b, seg_s, b.fsub(x, b.select(upper, _c(0.5), zero)))
    lh, ll = _log_double(b, _clamp_range(b, x, 2.0**-149, 3.0e38))
    s1, e1 = _two_sum(b, low, b.fneg(lh))
    small = (s1, b.fsub(e1, ll))
    # [3.75, inf): Stirling, with x log x and log x in double-f32.
    xs = _clamp_range(b, x, 3.75, 2.0**64)
    sh, sl = _log_double(b, xs)
    p, pe = _two_prod(b, xs, sh)
    pe = b.fadd(pe, b.fmul(xs, sl))
    w = b.fdiv(_c(1.0), xs)
    series = b.fmul(w, _horner(b, b.fmul(w, w), STIRLING))
    s, e = _two_sum(b, p, b.fneg(xs))
    e = b.fadd(e, pe)
    s, e2 = _two_sum(b, s, b.fneg(b.fmul(sh, _c(0.5))))
    e = b.fadd(e, b.fsub(e2, b.fmul(sl, _c(0.5))))
    s, e3 = _two_sum(b, s, _c(HALF_LOG_2PI[0]))
    e = b.fadd(e, b.fadd(e3, b.fadd(_c(HALF_LOG_2PI[1]), series)))
    # Past 2**64: x (log x - 1) - log(x)/2 in plain f32 (no cancellation: log x > 44).
    huge_lg = _call(b, "log", x)
    huge = b.fsub(b.fmul(x, b.fsub(huge_lg, _c(1.0))), b.fmul(huge_lg, _c(0.5)))
    hi = b.select(_lt(b, x, 0.75), small[0], mid)
    lo = b.select(_lt(b, x, 0.75), small[1], zero)
    big = _ge(b, x, 3.75)
    hi = b.select(big, s, hi)
    lo = b.select(big, e, lo)
    vast = b.fcmp_ordered(">", x, _c(2.0**64))
    return b.select(vast, huge, hi), b.select(vast, zero, lo)


def _sinpi_abs(b: ir.IRBuilder, ax: ir.Value) -> ir.Value:
    """|sin(pi x)| for x >= 0: the fraction r = x - floor x is exact, then r or 1 - r
    (exact for r >= 1/2) in [0, 1/2], and sin or cos of pi times its part below 1/4."""
    r = b.fsub(ax, _floor(b, ax))
    r = b.select(_ge(b, r, 0.5), b.fsub(_c(1.0), r), r)
    far = b.fcmp_ordered(">", r, _c(0.25))
    a = b.select(far, b.fsub(_c(0.5), r), r)
    s, c = _sin_cos_pi(b, a)
    return b.select(far, c, s)


def _sin_cos_pi(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sin(pi a), cos(pi a) for |a| <= 1/4 (mathlib's Taylor polynomials)."""
    return _sin_cos_poly(b, b.fmul(a, _c(math.pi)))


@_define("lgamma")
def _lgamma(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # x > 0: _lgamma_positive. -1/4 < x < 0: lgamma(x + 1) - log|x| as for small x > 0.
    # x <= -1/4: log(pi) - log|x sin(pi x)| - lgamma(-x) (reflection; in double-f32).
    ax = fabs(b, x)
    ph, pl = _lgamma_positive(b, ax)
    pos = b.fadd(ph, pl)
    # Small negative x: the Taylor series around 1 at t = x (exact), minus log|x|.
    t = _clamp_range(b, x, -0.25, 0.0)
    l1 = _lgamma_taylor(b, _iconst(32, 0), t)
    lh, ll = _log_double(b, _clamp_range(b, ax, 2.0**-149, 1.0))
    near0 = _add_double(b, [(l1, None), (b.fneg(lh), b.fneg(ll))])
    s = _sinpi_abs(b, ax)
    m, me = _two_prod(b, _clamp_range(b, ax, 0.25, 2.0**64), s)
    mh, ml = _log_double(b, _clamp_range(b, m, 2.0**-149, 3.0e38))
    ml = b.fadd(ml, b.fdiv(me, m))
    refl = _add_double(b, [(_c(LOG_PI[0]), _c(LOG_PI[1])), (b.fneg(mh), b.fneg(ml)),
                           (b.fneg(ph), b.fneg(pl))])
    refl = b.select(b.fcmp_ordered("==", s, _c(0.0)), _c(INF), refl)  # poles
    r = b.select(_lt(b, x, -0.25), refl, near0)
    r = b.select(b.fcmp_ordered(">", x, _c(0.0)), pos, r)
    r = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(INF), r)
    r = b.select(b.fcmp_ordered("==", ax, _c(INF)), _c(INF), r)
    return b.select(_isnan(b, x), x, r)


def _digamma_taylor(b: ir.IRBuilder, seg: ir.Value, t: ir.Value) -> ir.Value:
    table = _rodata_table(b.module, PREFIX + "digamma_taylor", F32, DIGAMMA_TABLE)
    base = b.mul(seg, _iconst(32, DIGAMMA_DEGREE + 2))
    return _poly(b, t, table, base, DIGAMMA_DEGREE)


def _digamma_t(b: ir.IRBuilder, seg: ir.Value, u: ir.Value, shift: float) -> ir.Value:
    """t = (u + shift) - centre of segment seg, exactly as far as f32 allows: u - (hi -
    shift) is exact (Sterbenz), then lo is subtracted."""
    table = _rodata_table(b.module, PREFIX + "digamma_centres", F32, DIGAMMA_CENTRE_TABLE)
    k = b.shl(seg, _iconst(32, 1))
    hi = _load_entry(b, table, k)
    lo = _load_entry(b, table, b.add(k, _iconst(32, 1)))
    return b.fsub(b.fsub(u, b.fsub(hi, _c(shift))), lo)


def _digamma_one_plus(b: ir.IRBuilder, u: ir.Value) -> ir.Value:
    """digamma(1 + u) for 0 <= u < 0.75, with no rounding of 1 + u: the segments around
    1 (u < 1/4) and x0."""
    seg = b.zext(_ge(b, u, 0.25), I32)
    return _digamma_taylor(b, seg, _digamma_t(b, seg, u, 1.0))


def _digamma_positive(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """digamma(x) for x > 0."""
    xm = _clamp_range(b, x, 0.75, 3.74)
    seg = _segment(b, xm)
    mid = _digamma_taylor(b, seg, _digamma_t(b, seg, x, 0.0))
    # (0, 0.75): digamma(x + 1) - 1/x.
    small = b.fsub(_digamma_one_plus(b, _clamp_range(b, x, 0.0, 0.75)),
                   b.fdiv(_c(1.0), x))
    # [3.75, inf): log x - 1/(2x) - sum B_2k / (2k x**2k), log x in double-f32.
    xs = _clamp_range(b, x, 3.75, 3.4028234e38)
    lh, ll = _log_double(b, xs)
    w = b.fdiv(_c(1.0), xs)
    w2 = b.fmul(w, w)
    tail = b.fadd(b.fmul(w, _c(0.5)), b.fmul(w2, _horner(b, w2, PSI_ASYMPTOTIC)))
    big = _add_double(b, [(lh, ll), (b.fneg(tail), None)])
    r = b.select(_lt(b, x, 0.75), small, mid)
    return b.select(_ge(b, x, 3.75), big, r)


def _pi_cot_pi(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """pi cot(pi x) with the exact fraction r = x - round(x): for |r| <= 1/4 cos/sin of
    pi|r| as C(z) / (|r| S(z)) with sin t = t S(t*t), so tiny r keeps 1/r exact; else
    sin/cos of pi (1/2 - |r|)."""
    r = b.fsub(x, _call(b, "round_nearest_afz", x))
    a = fabs(b, r)
    far = b.fcmp_ordered(">", a, _c(0.25))
    a2 = b.select(far, b.fsub(_c(0.5), a), a)
    th = b.fmul(a2, _c(math.pi))
    z = b.fmul(th, th)
    s_over = b.fadd(_c(1.0), b.fmul(z, _horner(b, z, _SIN_TAYLOR)))  # sin(th) / th
    cos = b.fadd(b.fsub(_c(1.0), b.fmul(z, _c(0.5))),
                 b.fmul(b.fmul(z, z), _horner(b, z, _COS_TAYLOR)))
    near = b.fdiv(cos, b.fmul(a2, s_over))
    far_v = b.fmul(b.fdiv(b.fmul(th, s_over), cos), _c(math.pi))
    v = b.select(far, far_v, near)
    return _negate_if(b, _signbit(b, r), v)


@_define("digamma")
def _digamma(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # x < 0: digamma(1 - x) - pi cot(pi x), with 1 - x exact in the series for x > -3/4.
    # NaN at 0, the negative integers and -inf (CHLO's poles).
    pos = _digamma_positive(b, x)
    one_minus = b.fsub(_c(1.0), x)
    refl_psi = b.select(b.fcmp_ordered(">", x, _c(-0.75)),
                        _digamma_one_plus(b, _clamp_range(b, b.fneg(x), 0.0, 0.75)),
                        _digamma_positive(b, one_minus))
    refl = b.fsub(refl_psi, _pi_cot_pi(b, _clamp_range(b, x, -2.0**24, 0.0)))
    r = b.select(b.fcmp_ordered(">", x, _c(0.0)), pos, refl)
    pole = b.and_(b.fcmp_ordered("<=", x, _c(0.0)),
                  b.fcmp_ordered("==", _floor(b, x), x))
    r = b.select(pole, _c(NAN), r)
    r = b.select(b.fcmp_ordered("==", x, _c(INF)), x, r)
    return b.select(_isnan(b, x), x, r)


# ----------------------------------------------------------------- Bessel I1e


@_define("bessel_i1e")
def _bessel_i1e(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    y = b.fmul(b.fmul(ax, ax), _c(0.25))
    e = _call(b, "exponential", b.fneg(ax))
    small = b.fmul(b.fmul(e, b.fmul(ax, _c(0.5))), _horner(b, y, I1_SMALL))
    lo, hi, _ = I1_MID
    u = b.fmul(b.fsub(ax, _c((lo + hi) / 2)), _c(2 / (hi - lo)))
    mid = b.fdiv(_horner(b, u, I1_MID_FIT), sqrt_value(b, _clamp_range(b, ax, lo, hi)))
    small = b.select(_lt(b, ax, lo), small, mid)
    xl = _clamp_range(b, ax, 16.0, INF)
    w = b.fdiv(_c(1.0), xl)
    root = b.fdiv(_c(INV_SQRT_2PI), sqrt_value(b, xl))
    large = b.fmul(root, _horner(b, w, I1_LARGE))
    r = b.select(b.fcmp_ordered("<=", ax, _c(16.0)), small, large)
    r = _negate_if(b, _signbit(b, x), r)
    return b.select(_isnan(b, x), x, r)


# ----------------------------------------------------------------- zeta, polygamma


def _pow_neg(b: ir.IRBuilder, base: ir.Value, s: ir.Value) -> ir.Value:
    return b.call(math_function(b.module, "power"), [base, b.fneg(s)])


def _pow_neg_scaled(b: ir.IRBuilder, x: ir.Value, s: ir.Value, m: ir.Value) -> ir.Value:
    """x**-s * 2**m for finite x > 0 and an i32 m in [0, ZETA_SCALE]: pow's method (t =
    -s log2 x in double-f32, then 2**t = 2**n e**(f ln 2)) with m added to the exponent
    applied last, so a term below the f32 range keeps its precision."""
    hh, hl = _log2_double(b, x)
    ns = b.fneg(s)
    th, tl = _two_prod(b, ns, hh)
    tl = b.fadd(tl, b.fmul(ns, hl))
    n = _round_to_i32(b, th, 500.0)
    f = b.fadd(b.fsub(th, b.sitofp(n, F32)), tl)
    p = b.fadd(_c(1.0), _expm1_poly(b, b.fmul(f, _c(LN2_F32))))
    e = b.add(n, m)
    low = b.icmp_signed("<", e, _iconst(32, -252))
    high = b.icmp_signed(">", e, _iconst(32, 254))
    r = _ldexp(b, p, b.select(b.or_(low, high), _iconst(32, 0), e))
    r = b.select(low, _c(0.0), b.select(high, _c(INF), r))
    # |t| beyond 500 (s huge, or the product overflowed): 0 or inf by its sign.
    huge = b.fcmp_unordered("ugt", fabs(b, th), _c(500.0))
    return b.select(huge, b.select(_lt(b, th, 0.0), _c(0.0), _c(INF)), r)


def _pow_neg_sum(b: ir.IRBuilder, q: ir.Value, k: float, s: ir.Value, m: ir.Value
                 ) -> tuple[ir.Value, ir.Value]:
    """(q + k)**-s * 2**m and q + k, for q + k not exact in f32: with q + k = hi + lo
    (two-sum), hi**-s * (1 - s lo/hi). Rounding q + k alone would cost s * 2**-24
    relative: 12 ulp at s = 12."""
    hi, lo = _two_sum(b, q, _c(k))
    p = _pow_neg_scaled(b, hi, s, m)
    corr = b.fmul(b.fmul(s, b.fdiv(lo, hi)), p)
    return b.select(b.fcmp_ordered("==", lo, _c(0.0)), p, b.fsub(p, corr)), hi


def _zeta_positive(b: ir.IRBuilder, s: ir.Value, q: ir.Value,
                   factor: ir.Value | None = None) -> ir.Value:
    """zeta(s, q) for s > 1, q > 0 (times `factor` when given): the first ZETA_TERMS
    terms summed with two-sum, then Euler-Maclaurin at a = q + ZETA_TERMS. Every term is
    scaled by 2**m, m ~ (s - 1) log2 q (at most ZETA_SCALE), and the sum by 2**-m at the
    end: results near and below the smallest normal f32 are rounded once rather than
    summed from subnormal terms. `factor` (polygamma's n!) multiplies the scaled sum, so a zeta that
    is subnormal before the factor (zeta(12, 3000) = 5e-40, times 11!) keeps its bits."""
    qc = _clamp_range(b, q, 2.0**-149, 3.4028234e38)
    # m ~ (s - 1) log2 q: the Euler-Maclaurin term a**(1-s) / (s-1), which dominates
    # for large q, comes out near 1 (s log2 q would overflow it by a factor of q).
    m = b.fmul(b.fsub(s, _c(1.0)), _log2_double(b, qc)[0])
    m = b.fptosi(_clamp_range(b, m, 0.0, ZETA_SCALE), I32)
    total, err = _c(0.0), _c(0.0)
    for k in range(ZETA_TERMS):
        term, _ = _pow_neg_sum(b, qc, float(k), s, m)
        total, e = _two_sum(b, total, term)
        err = b.fadd(err, e)
    a_s, a = _pow_neg_sum(b, qc, float(ZETA_TERMS), s, m)
    inv_a = b.fdiv(_c(1.0), a)
    w = b.fmul(inv_a, inv_a)
    # Nested Horner over the rising factorial s (s+1) ... (s + 2j - 2).
    acc = _c(ZETA_EM[-1])
    for j in range(len(ZETA_EM) - 1, 0, -1):
        f = b.fmul(b.fadd(s, _c(2.0 * j - 1)), b.fadd(s, _c(2.0 * j)))
        acc = b.fadd(_c(ZETA_EM[j - 1]), b.fmul(b.fmul(w, f), acc))
    em = b.fmul(b.fmul(b.fmul(a_s, inv_a), s), acc)
    em = b.fadd(em, b.fmul(a_s, _c(0.5)))
    em = b.fadd(em, b.fdiv(b.fmul(a_s, a), b.fsub(s, _c(1.0))))
    em = b.select(b.fcmp_ordered("==", a_s, _c(0.0)), _c(0.0), em)  # s huge
    scaled = b.fadd(total, b.fadd(err, em))
    r = _ldexp(b, scaled, b.sub(_iconst(32, 0), m))
    r = b.select(b.fcmp_ordered("==", total, _c(INF)), total, r)  # two-sum of inf: NaN
    if factor is not None:
        # The factor (>= 1) enters as factor * 2**-100, exact and never overflowing the
        # scaled sum; 2**(100 - m) is applied last.
        fs = b.fmul(scaled, b.fmul(factor, _c(2.0**-100)))
        rf = _ldexp(b, fs, b.sub(_iconst(32, 100), m))
        r = b.select(b.fcmp_ordered("==", total, _c(INF)), total, rf)
    return b.select(b.fcmp_ordered("==", q, _c(INF)), _c(0.0), r)


def _zeta_negative_q(b: ir.IRBuilder, s: ir.Value, q: ir.Value) -> tuple[ir.Value, ir.Value]:
    """For q < 0 (not an integer, s an integer): the terms (q + k)**-s while q + k < 0,
    summed in a loop, and the q + m > 0 to continue from. The loop runs ceil(-q) times
    (at most 2**23: past that every f32 is an integer, a pole)."""
    fn = b.function
    entry = b.block
    loop = fn.append_basic_block("zeta_neg")
    done = fn.append_basic_block("zeta_neg_done")
    neg = b.fcmp_ordered("<", q, _c(0.0))
    b.cbranch(neg, loop, done)
    b.position_at_end(loop)
    qk = b.phi(F32)
    acc = b.phi(F32)
    qk.add_incoming(q, entry)
    acc.add_incoming(_c(0.0), entry)
    acc_next = b.fadd(acc, _pow_neg(b, qk, s))
    q_next = b.fadd(qk, _c(1.0))  # exact: |q| < 2**23
    qk.add_incoming(q_next, loop)
    acc.add_incoming(acc_next, loop)
    b.cbranch(b.fcmp_ordered("<", q_next, _c(0.0)), loop, done)
    b.position_at_end(done)
    q_out = b.phi(F32)
    sum_out = b.phi(F32)
    q_out.add_incoming(q, entry)
    sum_out.add_incoming(_c(0.0), entry)
    q_out.add_incoming(q_next, loop)
    sum_out.add_incoming(acc_next, loop)
    return q_out, sum_out


@_define("zeta", nargs=2)
def _zeta(b: ir.IRBuilder, s: ir.Value, q: ir.Value) -> ir.Value:
    # CHLO's domain: s < 1 NaN, s = 1 +inf; q <= 0 needs an integer s (else NaN), and
    # at an integer q <= 0 (a pole) the result is +inf for even s, NaN for odd.
    zero, one = _c(0.0), _c(1.0)
    s_int = b.fcmp_ordered("==", _floor(b, s), s)
    q_le0 = b.fcmp_ordered("<=", q, zero)
    q_int = b.fcmp_ordered("==", _floor(b, q), q)
    pole = b.and_(q_le0, q_int)
    ok = b.and_(b.fcmp_ordered(">", s, one), b.not_(pole))
    ok = b.and_(ok, b.or_(b.not_(q_le0), s_int))
    # Only finite, non-pole q reach the loop (it counts q up to 0).
    q_loop = b.select(b.and_(ok, b.fcmp_ordered(">", q, _c(-2.0**23))), q, one)
    q_pos, neg_sum = _zeta_negative_q(b, s, q_loop)
    r = b.fadd(neg_sum, _zeta_positive(b, s, q_pos))
    r = b.select(ok, r, _c(NAN))
    # s = +inf: q**-inf is 0 past 1, 1 at 1, inf below (and NaN for q <= 0).
    s_inf = b.select(b.fcmp_ordered(">", q, one), _c(0.0), b.select(
        b.fcmp_ordered("==", q, one), one, b.select(b.fcmp_ordered(">", q, _c(0.0)),
                                                      _c(INF), _c(NAN))))
    r = b.select(b.fcmp_ordered("==", s, _c(INF)), s_inf, r)
    half = b.fmul(s, _c(0.5))
    even = b.and_(s_int, b.fcmp_ordered("==", _floor(b, half), half))
    even = b.and_(even, _lt(b, fabs(b, s), INF))  # inf is no even integer (fmod(inf, 2))
    r = b.select(pole, b.select(even, _c(INF), _c(NAN)), r)
    r = b.select(b.fcmp_ordered("==", s, one), _c(INF), r)
    nan = b.or_(_isnan(b, s), _isnan(b, q))
    return b.select(nan, b.fadd(s, q), r)


@_define("polygamma", nargs=2)
def _polygamma(b: ir.IRBuilder, n: ir.Value, x: ir.Value) -> ir.Value:
    # (-1)**(n+1) n! zeta(n + 1, x) for a natural n >= 1, digamma(x) for n = 0, NaN for
    # any other n (as CHLO's decomposition).
    natural = b.and_(_ge(b, n, 0.0), b.fcmp_ordered("==", _floor(b, n), n))
    natural = b.and_(natural, _lt(b, n, INF))
    idx = _round_to_i32(b, _clamp_range(b, n, 0.0, 35.0), 64.0)
    table = _rodata_table(b.module, PREFIX + "factorials", F32, FACTORIALS + [INF])
    fact = _load_entry(b, table, idx)
    s = b.fadd(n, _c(1.0))
    z = b.fmul(fact, _call(b, "zeta", s, x))
    # x > 0: n! applied inside zeta's scaling (n! zeta(n+1, x) may be normal while zeta
    # alone is subnormal); x <= 0 and NaN through zeta's own domain rules.
    xp = _clamp_range(b, x, 2.0**-149, INF)
    zp = _zeta_positive(b, _clamp_range(b, s, 2.0, 1e30), xp, fact)
    # n >= 35: n! overflows f32 (as JAX's exp(lgamma(n + 1))); zeta > 0 makes it inf.
    big_n = b.and_(b.fcmp_ordered("==", fact, _c(INF)), b.fcmp_ordered("<", x, _c(INF)))
    zp = b.select(big_n, _c(INF), zp)
    z = b.select(b.fcmp_ordered(">", x, _c(0.0)), zp, z)
    half = b.fmul(n, _c(0.5))  # the sign from n's parity (idx stops at 35)
    r = _negate_if(b, b.fcmp_ordered("==", _floor(b, half), half), z)
    r = b.select(b.fcmp_ordered("==", n, _c(0.0)), _call(b, "digamma", x), r)
    return b.select(natural, r, _c(NAN))


# ----------------------------------------------------------------- inverse trig / hyperbolic


@_define("atan")
def _atan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, x, _c(1.0))  # CHLO: atan(x) = atan2(x, 1)


def _sqrt_one_minus_sq(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt(1 - x*x) as sqrt((1 - x)(1 + x)): one of the factors is exact."""
    return sqrt_value(b, b.fmul(b.fsub(_c(1.0), x), b.fadd(_c(1.0), x)))


@_define("asin")
def _asin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, x, _sqrt_one_minus_sq(b, x))


@_define("acos")
def _acos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, _sqrt_one_minus_sq(b, x), x)


def _tiny_is_x(b: ir.IRBuilder, x: ir.Value, ax: ir.Value, r: ir.Value) -> ir.Value:
    """r, but x itself below 2**-12 (an odd function f(x) = x + O(x**3) is then x within
    2**-25 relative; -0 keeps its sign) and for NaN."""
    return b.select(b.fcmp_unordered("ult", ax, _c(2.0**-12)), x, r)


def _half_exp(b: ir.IRBuilder, ax: ir.Value) -> ir.Value:
    """exp(ax) / 2 rounded once (finite up to ax = 89.4): exp's reduction with n - 1."""
    n, r = _reduce_ln2(b, ax)
    p = b.fadd(_c(1.0), _expm1_poly(b, r))
    return _ldexp(b, p, b.sub(n, _iconst(32, 1)))


@_define("sinh")
def _sinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # t = expm1|x|: (t + t/(t+1))/2 below 9 (no cancellation), exp|x|/2 above (e**-x is
    # below 2**-25 of it); x itself below 2**-12.
    ax = fabs(b, x)
    t = _call(b, "exponential_minus_one", _clamp_range(b, ax, 0.0, 9.0))
    mid = b.fmul(b.fadd(t, b.fdiv(t, b.fadd(t, _c(1.0)))), _c(0.5))
    r = b.select(_lt(b, ax, 9.0), mid, _half_exp(b, _clamp_range(b, ax, 9.0, 100.0)))
    r = b.select(b.fcmp_ordered(">", ax, _c(90.0)), _c(INF), r)
    return _tiny_is_x(b, x, ax, _negate_if(b, _signbit(b, x), r))


@_define("cosh")
def _cosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # 1 + t*t / (2 (1 + t)) with t = expm1|x| below ln2/2; e/2 + 1/(2e) below 9; exp/2 above.
    ax = fabs(b, x)
    one = _c(1.0)
    t = _call(b, "exponential_minus_one", _clamp_range(b, ax, 0.0, 0.35))
    small = b.fadd(one, b.fdiv(b.fmul(t, t), b.fmul(_c(2.0), b.fadd(one, t))))
    e = _call(b, "exponential", _clamp_range(b, ax, 0.0, 9.0))
    mid = b.fadd(b.fmul(e, _c(0.5)), b.fdiv(_c(0.5), e))
    r = b.select(_lt(b, ax, 0.34657359), small, mid)
    r = b.select(_lt(b, ax, 9.0), r, _half_exp(b, _clamp_range(b, ax, 9.0, 100.0)))
    r = b.select(b.fcmp_ordered(">", ax, _c(90.0)), _c(INF), r)
    return b.select(_isnan(b, x), x, r)


def _log_large(b: ir.IRBuilder, ax: ir.Value) -> ir.Value:
    """log(2 ax) for large ax without overflow: log ax + ln 2."""
    return b.fadd(_call(b, "log", ax), _c(math.log(2)))


@_define("asinh")
def _asinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # |x| <= 2: log1p(a + a*a/(1 + sqrt(1 + a*a))); <= 2**12: log(2a + 1/(a + sqrt(a*a+1)));
    # beyond: log a + ln 2; tiny: x.
    ax = fabs(b, x)
    one = _c(1.0)
    a = _clamp_range(b, ax, 0.0, 2.0**12)
    a2 = b.fmul(a, a)
    root = sqrt_value(b, b.fadd(a2, one))
    small = _call(b, "log_plus_one", b.fadd(a, b.fdiv(a2, b.fadd(one, root))))
    mid = _call(b, "log", b.fadd(b.fmul(a, _c(2.0)), b.fdiv(one, b.fadd(a, root))))
    r = b.select(b.fcmp_ordered("<=", ax, _c(2.0)), small, mid)
    r = b.select(b.fcmp_ordered(">", ax, _c(2.0**12)), _log_large(b, ax), r)
    return _tiny_is_x(b, x, ax, _negate_if(b, _signbit(b, x), r))


@_define("acosh")
def _acosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # x <= 2: log1p(t + sqrt(2t + t*t)), t = x - 1 exact; <= 2**12: log(2x - 1/(x +
    # sqrt(x*x - 1))); beyond: log x + ln 2; x < 1: NaN.
    one = _c(1.0)
    a = _clamp_range(b, x, 1.0, 2.0**12)
    t = b.fsub(a, one)
    small = _call(b, "log_plus_one", b.fadd(t, sqrt_value(b, b.fadd(b.fadd(t, t),
                                                                    b.fmul(t, t)))))
    root = sqrt_value(b, b.fsub(b.fmul(a, a), one))
    mid = _call(b, "log", b.fsub(b.fmul(a, _c(2.0)), b.fdiv(one, b.fadd(a, root))))
    r = b.select(b.fcmp_ordered("<=", x, _c(2.0)), small, mid)
    r = b.select(b.fcmp_ordered(">", x, _c(2.0**12)), _log_large(b, x), r)
    r = b.select(_lt(b, x, 1.0), _c(NAN), r)
    return b.select(_isnan(b, x), x, r)


@_define("atanh")
def _atanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # |x| < 1/2: log1p(2a + 2a*a/(1 - a))/2; else log1p(2a/(1 - a))/2 (1 - a exact);
    # +-1: +-inf; |x| > 1: NaN; tiny: x.
    ax = fabs(b, x)
    one = _c(1.0)
    a = _clamp_range(b, ax, 0.0, 1.0)
    d = b.fsub(one, a)
    two_a = b.fadd(a, a)
    small = b.fadd(two_a, b.fdiv(b.fmul(two_a, a), d))
    arg = b.select(_lt(b, a, 0.5), small, b.fdiv(two_a, d))
    r = b.fmul(_call(b, "log_plus_one", arg), _c(0.5))
    r = b.select(b.fcmp_ordered(">", ax, one), _c(NAN), r)
    return _tiny_is_x(b, x, ax, _negate_if(b, _signbit(b, x), r))


# ----------------------------------------------------------------- next_after

_STEP_FORMATS = {  # storage format -> (to bits, from bits, integer type)
    "f16": (f32_to_f16_bits, f16_bits_to_f32, I16),
    "bf16": (f32_to_bf16_bits, bf16_bits_to_f32, I16),
}


def next_after(b: ir.IRBuilder, x: ir.Value, y: ir.Value, storage: str) -> ir.Value:
    """C's nextafter(x, y) in the storage format `storage` (f16 and bf16 values are
    computed in f32 but step on their own grid: the f32 result is exact). Exact bit
    arithmetic: NaN if either is NaN, y if x == y, the smallest subnormal with y's sign
    from zero, else x's bit pattern one step up or down in magnitude."""
    fmt = _STEP_FORMATS.get(storage)
    if fmt is None:
        it = ir.IntType(_fmt(x.type)[0])
        bits = _bits(b, x)
        from_bits = lambda v: b.bitcast(v, x.type)  # noqa: E731
    else:
        to_bits, from_bits_fn, it = fmt
        bits = to_bits(b, x)
        from_bits = lambda v: from_bits_fn(b, v)  # noqa: E731
    width = it.width
    zero = ir.Constant(x.type, 0.0)
    up = b.icmp_unsigned("==", b.fcmp_ordered(">", y, x), b.fcmp_ordered(">", x, zero))
    one = ir.Constant(it, 1)
    stepped = b.select(up, b.add(bits, one), b.sub(bits, one))
    sign = b.shl(b.zext(_signbit(b, y), it), ir.Constant(it, width - 1))
    stepped = b.select(b.fcmp_ordered("==", x, zero), b.or_(sign, one), stepped)
    r = from_bits(stepped)
    r = b.select(b.fcmp_ordered("==", x, y), y, r)
    return b.select(b.or_(_isnan(b, x), _isnan(b, y)), b.fadd(x, y), r)

