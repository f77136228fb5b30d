"""tan, rsqrt, cbrt, expm1, log1p, tanh, logistic, sinh, cosh, atan, atan2, asin, acos,
asinh, acosh and atanh of f64 values at f64 accuracy, in LLVM IR, built on
mathlib_f64.py's exp, log, sqrt and trig reduction.

Before these existed an f64 operand of these functions was rounded to f32 and the f32
function's result widened back: tan(1.57079632) came out as -2.29e7 where 1.47e8 is
right (the f32 argument is on the other side of pi/2), and every result had f32's
precision. Each function here is a short formula over the f64 primitives, chosen so
that no step cancels (the bound in brackets is the one tests/codegen/
test_codegen_mathlib_f64.py asserts, in ulps of numpy's float64 result):

    tan        one reduction x = n pi/2 + r: sin r / cos r, or -cos r / sin r for odd n,
               so the pole side is decided in f64 [4 ulp]; |x| >= 1.6e6 as sine/cosine
    rsqrt      1 / sqrt(x): two roundings [2]
    cbrt       |x| = 8**k m, m in [1, 8): the f32 cbrt of m, two Newton steps in f64
               [2]
    expm1      x = n ln2 + r as exp: 2**n expm1(r) + (2**n - 1), both terms exact but
               for one rounding each, expm1(r) a Taylor series without the leading 1;
               exp(x) above n = 56, -1 below -40 [3]
    log1p      for x in (-0.29, 0.41) 2 atanh(s), s = x / (2 + x), log's series; else
               u = 1 + x, log(u) * (x / (u - 1)): the quotient undoes the rounding of u
               (Goldberg, "What every computer scientist ...", thm 4) [3]
    tanh       e = expm1(2|x|), e / (e + 2); +-1 above |x| = 22 [4]
    logistic   exp(x) / (1 + exp(x)) for x < 0, 1 / (1 + exp(-x)) else [3]
    sinh/cosh  from expm1(|x|) below 1 (sinh) and exp(|x|) above; past 709.78 as
               exp(|x|/2)**2 / 2 so that the result overflows only when it should [3]
    atan       |t| > 1 by pi/2 - atan(1/|t|); then atan(c) + atan((t - c) / (1 + t c))
               with c the nearest multiple of 1/8 (|arg| <= 1/16, Taylor to u**15,
               omitted term < 2**-60 relative) and atan(c) a rounded f64 constant [3]
    atan2      atan(|y| / |x|) placed in its quadrant: pi - a for x < 0 (or -0), the
               sign of y; both infinite gives +-pi/4 or +-3pi/4; NaN in, NaN out [3]
    asin/acos  atan2 of x and sqrt((1 - x)(1 + x)), or of the swap [3]
    asinh      log1p(a + a**2 / (1 + sqrt(1 + a**2))), a = |x|; log(2a) past 2**28 [3]
    acosh      log1p(t + sqrt(2t + t**2)), t = x - 1; log(2x) past 2**28 [3]
    atanh      log1p(2a / (1 - a)) / 2, a = |x|, as 2a + 2a**2 / (1 - a) below 1/2
               (fdlibm's split) [3]
"""

from __future__ import annotations

import math

from llvmlite import ir

from toolchain.codegen.mathlib_f64 import (
    _LOG_TAYLOR,
    BODIES,
    F64,
    I32,
    I64,
    LN2_HI,
    LN2_LO,
    TRIG_LIMIT,
    _c,
    _horner,
    _pow2,
    _round_i32,
    call_f64,
    trig_reduce,
)
from toolchain.codegen.mathlib_ir import F32, fabs
from toolchain.codegen.mathlib_table import math_function

_EXPM1_TAYLOR = [1.0 / math.factorial(k) for k in range(2, 15)]  # r**2/2! .. r**14/14!
_ATAN_TAYLOR = [(-1) ** k / (2 * k + 1) for k in range(1, 8)]  # u**3 .. u**15
_ATAN_CENTRES = [math.atan(k / 8) for k in range(9)]  # atan(c), c = 0, 1/8, .., 1


def _i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _keep_special(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x itself where x is +-0 or NaN (odd functions keep the zero's sign), else y."""
    return b.select(b.fcmp_unordered("ueq", x, _c(0.0)), x, y)


def _tan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    n, s, c = trig_reduce(b, x)
    odd = b.icmp_unsigned("!=", b.and_(n, _i32(1)), _i32(0))
    y = b.select(odd, b.fdiv(b.fneg(c), s), b.fdiv(s, c))
    far = b.fcmp_unordered("uge", fabs(b, x), _c(TRIG_LIMIT))  # inf and NaN too
    slow = b.fpext(b.call(math_function(b.module, "tan", F32), [b.fptrunc(x, F32)]), F64)
    return _keep_special(b, x, b.select(far, slow, y))


def _rsqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fdiv(_c(1.0), call_f64(b, "sqrt", x))


def _cbrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    tiny = b.fcmp_ordered("<", ax, _c(2.0 ** -1000))
    xs = b.select(tiny, b.fmul(ax, _c(2.0 ** 108)), ax)  # 108 = 3 * 36
    e = b.sub(b.trunc(b.lshr(b.bitcast(xs, I64), ir.Constant(I64, 52)), I32), _i32(1023))
    k = b.sub(b.sdiv(b.add(e, _i32(3 * 400)), _i32(3)), _i32(400))  # floor(e / 3)
    m = b.fmul(b.fmul(xs, _pow2(b, b.neg(k))), b.fmul(_pow2(b, b.neg(k)), _pow2(b, b.neg(k))))
    y = b.fpext(b.call(math_function(b.module, "cbrt", F32), [b.fptrunc(m, F32)]), F64)
    for _ in range(2):  # y -= (y**3 - m) / (3 y**2): 1e-7 -> 1e-14 -> rounding
        y2 = b.fmul(y, y)
        y = b.fsub(y, b.fdiv(b.fsub(b.fmul(y2, y), m), b.fmul(_c(3.0), y2)))
    y = b.fmul(y, _pow2(b, b.select(tiny, b.sub(k, _i32(36)), k)))
    y = b.select(b.fcmp_ordered("==", ax, _c(math.inf)), ax, y)
    y = b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(y), y)
    return _keep_special(b, x, y)


def _expm1(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    n = _round_i32(b, b.fmul(x, _c(1.4426950408889634)), 100.0)
    nf = b.sitofp(n, F64)
    r = b.fsub(b.fsub(x, b.fmul(nf, _c(LN2_HI))), b.fmul(nf, _c(LN2_LO)))
    p = b.fadd(r, b.fmul(b.fmul(r, r), _horner(b, r, _EXPM1_TAYLOR)))  # e**r - 1
    t = _pow2(b, n)
    y = b.fadd(b.fmul(t, p), b.fsub(t, _c(1.0)))
    y = b.select(b.fcmp_ordered(">", x, _c(39.0)), call_f64(b, "exponential", x), y)
    y = b.select(b.fcmp_ordered("<", x, _c(-40.0)), _c(-1.0), y)
    return _keep_special(b, x, y)


def _log1p(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    u = b.fadd(_c(1.0), x)
    y = b.fmul(call_f64(b, "log", u), b.fdiv(x, b.fsub(u, _c(1.0))))
    # Near 0: 2 atanh(s), s = x / (2 + x), |s| <= 0.172 as in log (one rounding in s).
    s = b.fdiv(x, b.fadd(_c(2.0), x))
    z = b.fmul(s, s)
    series = b.fadd(b.fmul(_c(2.0), s), b.fmul(b.fmul(s, z), _horner(b, z, _LOG_TAYLOR)))
    near = b.and_(b.fcmp_ordered(">", x, _c(-0.29)), b.fcmp_ordered("<", x, _c(0.41)))
    y = b.select(near, series, y)
    y = b.select(b.fcmp_ordered("==", u, _c(1.0)), x, y)
    y = b.select(b.fcmp_ordered("==", x, _c(math.inf)), x, y)
    return b.select(b.fcmp_ordered("==", x, _c(-1.0)), _c(-math.inf), y)


def _tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    e = call_f64(b, "exponential_minus_one", b.fmul(_c(2.0), ax))
    t = b.fdiv(e, b.fadd(e, _c(2.0)))
    t = b.select(b.fcmp_ordered(">", ax, _c(22.0)), _c(1.0), t)
    return _keep_special(b, x, b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(t), t))


def _logistic(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    neg = b.fcmp_ordered("<", x, _c(0.0))
    e = call_f64(b, "exponential", b.select(neg, x, b.fneg(x)))  # exp(-|x|) <= 1
    y = b.select(neg, b.fdiv(e, b.fadd(_c(1.0), e)), b.fdiv(_c(1.0), b.fadd(_c(1.0), e)))
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _big_exp_half(b: ir.IRBuilder, ax: ir.Value) -> ir.Value:
    """exp(ax) / 2 without overflowing before the result does: exp(ax/2)**2 / 2."""
    h = call_f64(b, "exponential", b.fmul(_c(0.5), ax))
    return b.fmul(b.fmul(_c(0.5), h), h)


def _sinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    e = call_f64(b, "exponential_minus_one", ax)
    small = b.fmul(_c(0.5), b.fadd(e, b.fdiv(e, b.fadd(e, _c(1.0)))))  # (e**a - e**-a)/2
    big_e = call_f64(b, "exponential", ax)
    mid = b.fmul(_c(0.5), b.fsub(big_e, b.fdiv(_c(1.0), big_e)))
    y = b.select(b.fcmp_ordered("<", ax, _c(1.0)), small, mid)
    y = b.select(b.fcmp_ordered(">", ax, _c(709.0)), _big_exp_half(b, ax), y)
    return _keep_special(b, x, b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(y), y))


def _cosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    e = call_f64(b, "exponential", ax)
    y = b.fmul(_c(0.5), b.fadd(e, b.fdiv(_c(1.0), e)))
    return b.select(b.fcmp_ordered(">", ax, _c(709.0)), _big_exp_half(b, ax), y)


def _atan_01(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """atan(a) for a in [0, 1]: the nearest centre c = k/8, then Taylor in u."""
    k = _round_i32(b, b.fmul(a, _c(8.0)), 8.0)
    c = b.fmul(b.sitofp(k, F64), _c(0.125))
    u = b.fdiv(b.fsub(a, c), b.fadd(_c(1.0), b.fmul(a, c)))
    z = b.fmul(u, u)
    poly = b.fadd(u, b.fmul(b.fmul(u, z), _horner(b, z, _ATAN_TAYLOR)))
    centre = _c(_ATAN_CENTRES[0])
    for i, v in enumerate(_ATAN_CENTRES[1:], 1):  # a select chain: no table in memory
        centre = b.select(b.icmp_signed("==", k, _i32(i)), _c(v), centre)
    return b.fadd(centre, poly)


def _atan_abs(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """atan(a) for a >= 0 (inf included)."""
    inv = b.fcmp_ordered(">", a, _c(1.0))
    t = _atan_01(b, b.select(inv, b.fdiv(_c(1.0), a), a))
    return b.select(inv, b.fsub(_c(math.pi / 2), t), t)


def _atan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    y = _atan_abs(b, fabs(b, x))
    return _keep_special(b, x, b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(y), y))


def _sign_bit(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.icmp_signed("<", b.bitcast(v, I64), ir.Constant(I64, 0))


def _atan2(b: ir.IRBuilder, y: ir.Value, x: ir.Value) -> ir.Value:
    ay, ax = fabs(b, y), fabs(b, x)
    both_inf = b.and_(b.fcmp_ordered("==", ay, _c(math.inf)),
                      b.fcmp_ordered("==", ax, _c(math.inf)))
    q = b.fdiv(ay, ax)  # overflow -> atan(inf) = pi/2; 0/0 -> NaN, fixed below
    q = b.select(b.and_(b.fcmp_ordered("==", ay, _c(0.0)), b.fcmp_ordered("==", ax, _c(0.0))),
                 _c(0.0), q)
    a = b.select(both_inf, _c(math.pi / 4), _atan_abs(b, q))
    a = b.select(_sign_bit(b, x), b.fsub(_c(math.pi), a), a)
    a = b.select(_sign_bit(b, y), b.fneg(a), a)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, b.fadd(x, y), a)


def _asin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, x, call_f64(b, "sqrt", _one_minus_square(b, x)))


def _acos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _atan2(b, call_f64(b, "sqrt", _one_minus_square(b, x)), x)


def _one_minus_square(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """(1 - x)(1 + x): 1 - x is exact near 1, where 1 - x*x would cancel."""
    return b.fmul(b.fsub(_c(1.0), x), b.fadd(_c(1.0), x))


def _log_2x(b: ir.IRBuilder, a: ir.Value) -> ir.Value:
    """log(2a) for a > 2**28, where asinh(a) and acosh(a) equal it to f64 precision."""
    return b.fadd(call_f64(b, "log", a), _c(math.log(2.0)))


def _asinh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    a = fabs(b, x)
    a2 = b.fmul(a, a)  # a + a**2 / (1 + sqrt(1 + a**2)) = a + sqrt(1 + a**2) - 1
    t = b.fadd(a, b.fdiv(a2, b.fadd(_c(1.0), call_f64(b, "sqrt", b.fadd(_c(1.0), a2)))))
    y = b.select(b.fcmp_ordered(">", a, _c(2.0 ** 28)), _log_2x(b, a),
                 call_f64(b, "log_plus_one", t))
    return _keep_special(b, x, b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(y), y))


def _acosh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    t = b.fsub(x, _c(1.0))  # log1p(t + sqrt(2t + t**2)) = log(x + sqrt(x**2 - 1))
    near = call_f64(b, "log_plus_one",
                    b.fadd(t, call_f64(b, "sqrt", b.fadd(b.fmul(_c(2.0), t), b.fmul(t, t)))))
    y = b.select(b.fcmp_ordered(">", x, _c(2.0 ** 28)), _log_2x(b, x), near)
    return b.select(b.fcmp_ordered("<", x, _c(1.0)), _c(math.nan), y)


def _atanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    a = fabs(b, x)  # atanh a = log1p(2a / (1 - a)) / 2; a = 1 gives inf, a > 1 NaN
    t = b.fmul(_c(2.0), a)  # below 1/2: 2a + 2a**2 / (1 - a), the rounded part small
    arg = b.select(b.fcmp_ordered("<", a, _c(0.5)),
                   b.fadd(t, b.fdiv(b.fmul(t, a), b.fsub(_c(1.0), a))),
                   b.fdiv(t, b.fsub(_c(1.0), a)))
    y = b.fmul(_c(0.5), call_f64(b, "log_plus_one", arg))
    y = b.select(b.fcmp_ordered(">", a, _c(1.0)), _c(math.nan), y)
    return _keep_special(b, x, b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(y), y))


BODIES.update({
    "asin": _asin, "acos": _acos, "asinh": _asinh, "acosh": _acosh, "atanh": _atanh,
    "tan": _tan, "rsqrt": _rsqrt, "cbrt": _cbrt, "exponential_minus_one": _expm1,
    "log_plus_one": _log1p, "tanh": _tanh, "logistic": _logistic, "sinh": _sinh,
    "cosh": _cosh, "atan": _atan, "atan2": _atan2,
})

__all__ = ["BODIES"]
