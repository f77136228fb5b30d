"""lgamma and digamma in f32.

On [0.75, 3.75): Taylor series (degree 14 and 16) around 1, 1.5 (for digamma its
positive root x0, carried in two f32 parts so that relative accuracy holds where
digamma crosses 0), 2, 2.5, 3 and 3.5, from a 360- and a 408-byte table; their
coefficients are Hurwitz zeta values computed at import. Above, the asymptotic
(Stirling) series with log x in double-f32 (mathlib_pow's log2 pair); below, Gamma's
recurrence (x -> x + 1); for x < 0 the reflection formulas.
"""

from __future__ import annotations

import math
from decimal import Decimal

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    F32,
    I32,
    INF,
    NAN,
    PREFIX,
    _horner,
    _iconst,
    _load_entry,
    _negate_if,
    _rodata_table,
    _signbit,
    fabs,
)
from toolchain.codegen.mathlib_pow import _two_prod, _two_sum
from toolchain.codegen.mathlib_rounding import _floor
from toolchain.codegen.mathlib_special_ir import (
    BERNOULLI,
    _add_double,
    _c,
    _call,
    _clamp_range,
    _f32,
    _ge,
    _hi_lo,
    _isnan,
    _log_double,
    _lt,
)
from toolchain.codegen.mathlib_table import _define
from toolchain.codegen.mathlib_trig import _COS_TAYLOR, _SIN_TAYLOR, _sin_cos_poly


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
HALF_LOG_2PI = _hi_lo(0.5 * math.log(2 * math.pi))
LOG_PI = _hi_lo(math.log(math.pi))
EULER_GAMMA = 0.5772156649015329

# Taylor tables on [0.75, 3.75): segment i covers x in [0.75 + i/2, 1.25 + i/2) around
# its centre; lgamma's centres are 1, 1.5, ..., 3.5, digamma's the same with x0 for 1.5.
LGAMMA_DEGREE, DIGAMMA_DEGREE = 14, 16
_CENTRES = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5)


def _lgamma_coeffs(c: float) -> list[float]:
    """lgamma(c + t) = lgamma(c) + psi(c) t + sum_k>=2 (-1)**k zeta(k, c)/k t**k."""
    return [math.lgamma(c), digamma64(c)] + [
        (-1) ** k * hurwitz64(k, c) / k for k in range(2, LGAMMA_DEGREE + 1)]


def _digamma_coeffs(c: float) -> list[float]:
    """psi(c + t) = psi(c) + sum_k>=1 (-1)**(k+1) zeta(k+1, c) t**k (psi(x0) = 0)."""
    return [0.0 if c == DIGAMMA_ROOT else digamma64(c)] + [
        (-1) ** (k + 1) * hurwitz64(k + 1, c) for k in range(1, DIGAMMA_DEGREE + 1)]


LGAMMA_TABLE = [v for c in _CENTRES for v in _row(_lgamma_coeffs(c))]
DIGAMMA_CENTRES = [DIGAMMA_ROOT if c == 1.5 else c for c in _CENTRES]
DIGAMMA_TABLE = [v for c in DIGAMMA_CENTRES for v in _row(_digamma_coeffs(c))]
# Per segment: the centre as hi, lo (x - hi is exact in every segment: Sterbenz).
DIGAMMA_CENTRE_TABLE = [v for c in DIGAMMA_CENTRES
                        for v in (ROOT if c == DIGAMMA_ROOT else _hi_lo(c))]

# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum B_2k / (2k (2k-1) x**(2k-1));
# from x = 3.75 the seventh term is below 2.1e-10 of the result.
STIRLING = [BERNOULLI[k - 1] / (2 * k * (2 * k - 1)) for k in range(1, 7)]
# digamma(x) = log x - 1/(2x) - sum B_2k / (2k x**2k); from 3.75 the eighth term < 8e-10.
PSI_ASYMPTOTIC = [BERNOULLI[k - 1] / (2 * k) for k in range(1, 8)]


def _segment(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The Taylor segment of x in [0.75, 3.75): floor(2x + 1/2) - 2, clamped to 0..5."""
    i = b.fptosi(b.fadd(b.fmul(x, _c(2.0)), _c(0.5)), I32)
    i = b.sub(i, _iconst(32, 2))
    i = b.select(b.icmp_signed("<", i, _iconst(32, 0)), _iconst(32, 0), i)
    return b.select(b.icmp_signed(">", i, _iconst(32, 5)), _iconst(32, 5), i)


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
    """sin(pi a), cos(pi a) for |a| <= 1/4 (mathlib_trig's Taylor polynomials)."""
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
