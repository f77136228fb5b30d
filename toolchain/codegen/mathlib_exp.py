"""exp, expm1, log, log1p, tanh and logistic in f32: the exponential and logarithm
family, with the reduction x = n ln2 + r that pow and the special functions reuse.
"""

from __future__ import annotations

import math

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    F32,
    I32,
    INF,
    NAN,
    _fconst,
    _horner,
    _iconst,
    _negate_if,
    _pow2,
    _round_to_i32,
    fabs,
)
from toolchain.codegen.mathlib_table import _define, math_function

LOG2E = 1.4426950408889634
LN2_HI = 0.693145751953125  # 15 significant bits: n * LN2_HI is exact for |n| < 512
LN2_LO = 1.428606765330187e-06


def _reduce_ln2(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = n*ln2 + r with |r| <= ln2/2 (n clamped to +-160): returns (n as i32, r)."""
    n = _round_to_i32(b, b.fmul(x, _fconst(F32, LOG2E)), 160.0)
    nf = b.sitofp(n, F32)
    r = b.fsub(x, b.fmul(nf, _fconst(F32, LN2_HI)))  # exact: n*LN2_HI is exact, Sterbenz
    r = b.fsub(r, b.fmul(nf, _fconst(F32, LN2_LO)))
    return n, r


# e**r - 1 for |r| <= ln2/2: Taylor to r**8/8!; the omitted r**9/9! is < 1e-9 * |r|.
_EXPM1_TAYLOR = [1.0 / math.factorial(k) for k in range(2, 9)]


def _expm1_poly(b: ir.IRBuilder, r: ir.Value) -> ir.Value:
    # r + r*r*(1/2 + r/6 + ...): the leading r is added last so tiny r stays exact.
    return b.fadd(r, b.fmul(b.fmul(r, r), _horner(b, r, _EXPM1_TAYLOR)))


def _ldexp(b: ir.IRBuilder, p: ir.Value, n: ir.Value) -> ir.Value:
    """p * 2**n for n in [-252, 254]: two exact power-of-two factors, one final rounding."""
    n1 = b.ashr(n, _iconst(32, 1))
    n2 = b.sub(n, n1)
    return b.fmul(b.fmul(p, _pow2(b, n1)), _pow2(b, n2))


@_define("exponential")
def _exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # exp(x) = 2**n * e**r; e**r = 1 + expm1(r) (Taylor, error < 0.1 ulp), <= 2 ulp overall.
    n, r = _reduce_ln2(b, x)
    y = _ldexp(b, b.fadd(_fconst(F32, 1.0), _expm1_poly(b, r)), n)
    y = b.select(b.fcmp_ordered(">", x, _fconst(F32, 88.72284)), _fconst(F32, INF), y)
    y = b.select(b.fcmp_ordered("<", x, _fconst(F32, -103.97208)), _fconst(F32, 0.0), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


@_define("exponential_minus_one")
def _expm1(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # |x| <= ln2/2: the series directly. Else 2**n*(1+q) - 1 = 2**n*q + (2**n - 1), where
    # 2**n - 1 is exact for n in [-24, 24] and one rounding remains: <= 3 ulp.
    # For n > 64 the -1 is below half an ulp and 2**n may not be a normal f32: use exp's
    # two-step scaling instead.
    n, r = _reduce_ln2(b, x)
    q = _expm1_poly(b, r)
    ns = b.select(b.icmp_signed("<", n, _iconst(32, -30)), _iconst(32, -30), n)
    ns = b.select(b.icmp_signed(">", ns, _iconst(32, 64)), _iconst(32, 64), ns)
    s = _pow2(b, ns)
    big = b.fadd(b.fmul(s, q), b.fsub(s, _fconst(F32, 1.0)))
    huge = _ldexp(b, b.fadd(_fconst(F32, 1.0), q), n)
    big = b.select(b.icmp_signed(">", n, _iconst(32, 64)), huge, big)
    small = b.fcmp_ordered("<=", fabs(b, x), _fconst(F32, 0.34657359))
    y = b.select(small, _expm1_poly(b, x), big)
    y = b.select(b.fcmp_ordered(">", x, _fconst(F32, 88.72284)), _fconst(F32, INF), y)
    # Below -17.5, e**x < 2**-25 is under half an ulp of 1: the result rounds to -1 (the
    # reduction above clamps n at -160 and is meaningless from x < -111 on).
    y = b.select(b.fcmp_ordered("<", x, _fconst(F32, -17.5)), _fconst(F32, -1.0), y)
    # NaN, and +-0 with its sign (the polynomial's -0 + +0 would give +0).
    return b.select(b.fcmp_unordered("ueq", x, _fconst(F32, 0.0)), x, y)


# 2*atanh(s) = 2s + s*z*(2/3 + 2z/5 + ...), z = s*s <= 0.0295 for m in [sqrt(1/2), sqrt(2));
# the omitted 2 s**11/11 is < 2e-9 * 2|s|.
_LOG_TAYLOR = [2.0 / (2 * k + 1) for k in range(1, 5)]


def _log_parts(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = 2**e * m with m in [sqrt(1/2), sqrt(2)) for finite x > 0: returns (e as f32,
    log(m))."""
    sub = b.fcmp_ordered("<", x, _fconst(F32, 2.0**-126))
    x = b.select(sub, b.fmul(x, _fconst(F32, 2.0**23)), x)  # subnormals: normalise first
    bits = b.bitcast(x, I32)
    e = b.sub(b.lshr(bits, _iconst(32, 23)), _iconst(32, 127))
    e = b.select(sub, b.sub(e, _iconst(32, 23)), e)
    mbits = b.or_(b.and_(bits, _iconst(32, 0x7FFFFF)), _iconst(32, 0x3F800000))
    high = b.icmp_unsigned(">", mbits, _iconst(32, 0x3FB504F3))  # m > sqrt(2)
    mbits = b.select(high, b.sub(mbits, _iconst(32, 0x00800000)), mbits)
    e = b.select(high, b.add(e, _iconst(32, 1)), e)
    m = b.bitcast(mbits, F32)
    f = b.fsub(m, _fconst(F32, 1.0))  # exact (Sterbenz)
    s = b.fdiv(f, b.fadd(m, _fconst(F32, 1.0)))
    z = b.fmul(s, s)
    logm = b.fadd(b.fadd(s, s), b.fmul(b.fmul(s, z), _horner(b, z, _LOG_TAYLOR)))
    return b.sitofp(e, F32), logm


def _log_special(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, 0.0)), _fconst(F32, -INF), y)
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, INF)), x, y)
    return b.select(b.fcmp_unordered("ult", x, _fconst(F32, 0.0)), _fconst(F32, NAN), y)


@_define("log")
def _log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # e*ln2 + log(m): e*LN2_HI is exact, log(m) <= 1.5 ulp and |log m| <= ln2/2: <= 2 ulp.
    e, logm = _log_parts(b, x)
    y = b.fadd(b.fmul(e, _fconst(F32, LN2_HI)), b.fadd(b.fmul(e, _fconst(F32, LN2_LO)), logm))
    return _log_special(b, x, y)


@_define("log_plus_one")
def _log1p(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # log(u) with u = fl(1+x), plus the first-order correction (x - (u-1))/u for the
    # rounding of u: <= 3 ulp. Tiny x (u == 1) returns x itself.
    u = b.fadd(_fconst(F32, 1.0), x)
    log_u = _log(b, u)
    corr = b.fdiv(b.fsub(x, b.fsub(u, _fconst(F32, 1.0))), u)
    y = b.fadd(log_u, corr)
    y = b.select(b.fcmp_ordered("==", u, _fconst(F32, 1.0)), x, y)
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, INF)), x, y)
    # x = -1 is the pole (u = 0; the correction would be 0/0).
    return b.select(b.fcmp_ordered("==", u, _fconst(F32, 0.0)), _fconst(F32, -INF), y)


@_define("tanh")
def _tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # tanh|x| = e/(e+2) with e = expm1(2|x|): no cancellation anywhere, <= 4 ulp.
    ax = fabs(b, x)
    e = b.call(math_function(b.module, "exponential_minus_one"), [b.fadd(ax, ax)])
    t = b.fdiv(e, b.fadd(e, _fconst(F32, 2.0)))
    t = b.select(b.fcmp_ordered(">", ax, _fconst(F32, 9.1)), _fconst(F32, 1.0), t)
    t = _negate_if(b, b.fcmp_ordered("<", x, _fconst(F32, 0.0)), t)
    # |x| < 2**-12: tanh x = x within 2**-25 relative; this also keeps -0.0 and NaN.
    return b.select(b.fcmp_unordered(">=", ax, _fconst(F32, 2.0**-12)), t, x)


@_define("logistic")
def _logistic(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # With e = exp(-|x|) <= 1: 1/(1+e) for x >= 0 and e/(1+e) for x < 0, so the small
    # side keeps its relative accuracy: <= 3 ulp.
    e = b.call(math_function(b.module, "exponential"), [b.fneg(fabs(b, x))])
    p = b.fdiv(_fconst(F32, 1.0), b.fadd(_fconst(F32, 1.0), e))
    return b.select(b.fcmp_ordered(">=", x, _fconst(F32, 0.0)), p, b.fmul(e, p))
