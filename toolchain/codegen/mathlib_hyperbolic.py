"""CHLO's inverse trigonometric functions (atan, asin, acos: atan2 of the right pair)
and the hyperbolic functions and their inverses (sinh, cosh, asinh, acosh, atanh: expm1,
exp, log and log1p on arguments arranged so that nothing cancels), in f32.
"""

from __future__ import annotations

import math

from llvmlite import ir

from toolchain.codegen.mathlib_exp import _expm1_poly, _ldexp, _reduce_ln2
from toolchain.codegen.mathlib_ir import INF, NAN, _iconst, _negate_if, _signbit, fabs
from toolchain.codegen.mathlib_roots import sqrt_f32
from toolchain.codegen.mathlib_special_ir import _c, _call, _clamp_range, _isnan, _lt
from toolchain.codegen.mathlib_table import _define
from toolchain.codegen.mathlib_trig import _atan2


@_define("atan")
def _atan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, x, _c(1.0))  # CHLO: atan(x) = atan2(x, 1)


def _sqrt_one_minus_sq(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt(1 - x*x) as sqrt((1 - x)(1 + x)): one of the factors is exact."""
    return sqrt_f32(b, b.fmul(b.fsub(_c(1.0), x), b.fadd(_c(1.0), x)))


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
    root = sqrt_f32(b, b.fadd(a2, one))
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
    small = _call(b, "log_plus_one", b.fadd(t, sqrt_f32(b, b.fadd(b.fadd(t, t),
                                                                    b.fmul(t, t)))))
    root = sqrt_f32(b, b.fsub(b.fmul(a, a), one))
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
