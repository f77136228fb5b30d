"""exp, log, sqrt, sin, cos and pow of f64 values at f64 accuracy, in LLVM IR.

mathlib.py's transcendental functions work in f32; an f64 operand rounded to f32 loses
both range (exp(700), log(1e300), 1.5**700 and sqrt(1e300) overflow f32) and precision
(sin of 3e15 rounded to f32 is the sine of another number). These are the f64
versions `mathlib.call_math` uses for f64 operands. The same technique as the f32
library: argument reduction, then truncated Taylor series whose first omitted term is
below 2**-60 relative, so every bound can be checked by hand:

    exponential   x = n ln2 + r, |r| <= ln2/2 (ln2 in two parts, n ln2_hi exact for
                  |n| < 2**21), e**r to r**13/13! (omitted term < 4e-18), scaled by 2**n
                  in two exact steps: a few ulp; overflow above 709.78, 0 below -745.13
    log           x = 2**e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with
                  s = (m - 1)/(m + 1), |s| <= 0.172, to s**25 (omitted < 1e-19);
                  subnormals scaled by 2**54 first: a few ulp
    sqrt          instruction with a double-precision FPU; else x = 4**k m, the f32
                  sqrt of m and two Newton steps in f64 (errors 1e-7 -> 1e-14 -> rounding)
    sine, cosine  n = round(x 2/pi), r = x - n pi/2 with pi/2 in three 33-bit parts
                  (exact products for |n| < 2**20, i.e. |x| < 1.6e6) and a fourth, f64
                  part (without it sin(pi) was 7 ulp off), Taylor to r**17 /
                  r**18 (omitted < 1e-19); larger |x| go through the f32 function, exact
                  when x is an f32 value (its Payne-Hanek reduction), else for x rounded
                  to f32
    power         exp(y log|x|) with log|x|, y log|x| and the reduced argument of exp
                  in double-double (Dekker's exact products, Knuth's exact sums): the
                  exponent is within about 2**-60 absolute, so the result is within a
                  little over half an ulp (numpy's correctly rounded pow at 10000**10 =
                  1e40, which a plain f64 exp(y log x) missed by 7 ulp); negative x with
                  integer y takes y's parity,
                  other negative x give NaN, and the special pairs (zeros, infinities,
                  NaN, y = 0, x = 1) take the f32 function's answer, which is exact there

On targets without a double-precision FPU every f64 operation here is a libgcc call
(__aeabi_dmul, __muldf3, ...): slow, but the same numbers as on the FPU targets.
tests/e2e/test_wide_types.py runs them on six boards against numpy in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    F32,
    F64,
    PREFIX,
    SECTION_PREFIX,
    _intrinsic,
    fabs,
    target_features,
)
from toolchain.codegen.mathlib_table import math_function

I64 = ir.IntType(64)
I32 = ir.IntType(32)

LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: n * LN2_HI exact, |n| < 2**21
LN2_LO = 1.90821492927058770002e-10
PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11,  # 33 bits each,
        2.02226624871116645580e-21, 8.47842766036889956997e-32)  # and the rest (fdlibm)
TWO_THIRDS = (2.0 / 3.0, float(Fraction(2, 3) - Fraction(2.0 / 3.0)))  # hi + lo
TRIG_LIMIT = 1.6e6  # |n| < 2**20 below this: n * PIO2[0], n * PIO2[1] are exact


def _c(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def _horner(b: ir.IRBuilder, z: ir.Value, coeffs: list[float]) -> ir.Value:
    acc = _c(coeffs[-1])
    for k in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, z), _c(k))
    return acc


def _round_i32(b: ir.IRBuilder, t: ir.Value, limit: float) -> ir.Value:
    """Nearest integer of t (ties away from zero) clamped to +-limit; NaN gives 0 (the
    clamp first: fptosi of an out-of-range value is poison)."""
    lim = _c(limit)
    t = b.select(b.fcmp_ordered(">", t, lim), lim, t)
    t = b.select(b.fcmp_ordered("<", t, b.fneg(lim)), b.fneg(lim), t)
    t = b.select(b.fcmp_unordered("uno", t, t), _c(0.0), t)
    t = b.fadd(t, b.select(b.fcmp_ordered("<", t, _c(0.0)), _c(-0.5), _c(0.5)))
    return b.fptosi(t, I32)


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2**n as f64 for an i32 n in [-1022, 1023]."""
    e = b.shl(b.zext(b.add(n, ir.Constant(I32, 1023)), I64), ir.Constant(I64, 52))
    return b.bitcast(e, F64)


def _ldexp(b: ir.IRBuilder, p: ir.Value, n: ir.Value) -> ir.Value:
    """p * 2**n for n in [-2044, 2046]: two exact power-of-two factors, one rounding."""
    n1 = b.ashr(n, ir.Constant(I32, 1))
    return b.fmul(b.fmul(p, _pow2(b, n1)), _pow2(b, b.sub(n, n1)))


_EXP_TAYLOR = [1.0 / math.factorial(k) for k in range(2, 14)]


def _exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    n = _round_i32(b, b.fmul(x, _c(1.4426950408889634)), 1100.0)
    nf = b.sitofp(n, F64)
    r = b.fsub(b.fsub(x, b.fmul(nf, _c(LN2_HI))), b.fmul(nf, _c(LN2_LO)))
    p = b.fadd(_c(1.0), b.fadd(r, b.fmul(b.fmul(r, r), _horner(b, r, _EXP_TAYLOR))))
    y = _ldexp(b, p, n)
    y = b.select(b.fcmp_ordered(">", x, _c(709.782712893384)), _c(math.inf), y)
    y = b.select(b.fcmp_ordered("<", x, _c(-745.1332191019412)), _c(0.0), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


_LOG_TAYLOR = [2.0 / (2 * k + 1) for k in range(1, 13)]


def _log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    tiny = b.fcmp_ordered("<", x, _c(2.0 ** -1022))
    xs = b.select(tiny, b.fmul(x, _c(2.0 ** 54)), x)
    bits = b.bitcast(xs, I64)
    e = b.sub(b.trunc(b.lshr(bits, ir.Constant(I64, 52)), I32), ir.Constant(I32, 1023))
    e = b.select(tiny, b.sub(e, ir.Constant(I32, 54)), e)
    mant = b.or_(b.and_(bits, ir.Constant(I64, (1 << 52) - 1)),
                 ir.Constant(I64, 1023 << 52))
    mv = b.bitcast(mant, F64)  # [1, 2)
    big = b.fcmp_ordered(">", mv, _c(math.sqrt(2.0)))
    mv = b.select(big, b.fmul(mv, _c(0.5)), mv)
    e = b.select(big, b.add(e, ir.Constant(I32, 1)), e)
    s = b.fdiv(b.fsub(mv, _c(1.0)), b.fadd(mv, _c(1.0)))
    z = b.fmul(s, s)
    log_m = b.fadd(b.fmul(_c(2.0), s), b.fmul(b.fmul(s, z), _horner(b, z, _LOG_TAYLOR)))
    ef = b.sitofp(e, F64)
    y = b.fadd(b.fmul(ef, _c(LN2_HI)), b.fadd(b.fmul(ef, _c(LN2_LO)), log_m))
    # 0 -> -inf, negatives -> NaN, +inf and NaN themselves.
    y = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(-math.inf), y)
    y = b.select(b.fcmp_ordered("<", x, _c(0.0)), _c(math.nan), y)
    return b.select(b.fcmp_unordered("ueq", x, _c(math.inf)), x, y)


def _sqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    if target_features(b.module).hardware_f64:
        return b.call(_intrinsic(b.module, "llvm.sqrt.f64", F64, [F64]), [x])
    tiny = b.fcmp_ordered("<", x, _c(2.0 ** -1000))
    xs = b.select(tiny, b.fmul(x, _c(2.0 ** 108)), x)
    e = b.sub(b.trunc(b.lshr(b.bitcast(xs, I64), ir.Constant(I64, 52)), I32),
              ir.Constant(I32, 1023))
    k = b.ashr(e, ir.Constant(I32, 1))  # xs = 4**k * m, m in [1, 4)
    mv = b.fmul(b.fmul(xs, _pow2(b, b.neg(k))), _pow2(b, b.neg(k)))
    y = b.fpext(b.call(math_function(b.module, "sqrt", F32), [b.fptrunc(mv, F32)]), F64)
    for _ in range(2):
        y = b.fmul(_c(0.5), b.fadd(y, b.fdiv(mv, y)))
    y = b.fmul(y, _pow2(b, b.select(tiny, b.sub(k, ir.Constant(I32, 54)), k)))
    keep = b.or_(b.fcmp_unordered("ueq", x, _c(0.0)), b.fcmp_ordered("==", x, _c(math.inf)))
    y = b.select(keep, x, y)
    return b.select(b.fcmp_ordered("<", x, _c(0.0)), _c(math.nan), y)


_SIN_TAYLOR = [(-1) ** k / math.factorial(2 * k + 1) for k in range(1, 9)]
_COS_TAYLOR = [(-1) ** k / math.factorial(2 * k) for k in range(1, 10)]


def trig_reduce(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(n, sin r, cos r) with x = n pi/2 + r, |r| <= pi/4 (accurate for |x| < TRIG_LIMIT)."""
    n = _round_i32(b, b.fmul(x, _c(2.0 / math.pi)), 2.0 ** 21)
    nf = b.sitofp(n, F64)
    r = x
    for part in PIO2:  # the first three products exact; the fourth is a correction
        r = b.fsub(r, b.fmul(nf, _c(part)))
    z = b.fmul(r, r)
    s = b.fadd(r, b.fmul(b.fmul(r, z), _horner(b, z, _SIN_TAYLOR)))
    c = b.fadd(_c(1.0), b.fmul(z, _horner(b, z, _COS_TAYLOR)))
    return n, s, c


def _trig(b: ir.IRBuilder, x: ir.Value, name: str) -> ir.Value:
    n, s, c = trig_reduce(b, x)
    q = b.and_(b.add(n, ir.Constant(I32, 1 if name == "cosine" else 0)), ir.Constant(I32, 3))
    # sin(r + q pi/2) for q = 0..3: s, c, -s, -c (cos(x) = sin(x + pi/2)).
    odd = b.icmp_unsigned("!=", b.and_(q, ir.Constant(I32, 1)), ir.Constant(I32, 0))
    neg = b.icmp_unsigned(">=", q, ir.Constant(I32, 2))
    y = b.select(odd, c, s)
    y = b.select(neg, b.fneg(y), y)
    far = b.fcmp_unordered("uge", fabs(b, x), _c(TRIG_LIMIT))  # inf and NaN too
    slow = b.fpext(b.call(math_function(b.module, name, F32), [b.fptrunc(x, F32)]), F64)
    return b.select(far, slow, y)


def _floor(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """floor(v): the exact rounding function, emitted for f64 (mathlib_rounding.py)."""
    return b.call(math_function(b.module, "floor", F64), [v])


# pow carries y * log|x| in double-double (hi + lo, about 2**-100 relative): the exact
# products and sums below (Dekker, Knuth) keep the exponent t = y log|x| within about
# 2**-60 absolute, so e**t, one final rounding, is within a little over half an ulp.

def _split(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a = hi + lo exactly, hi the top 26 significand bits (a mask: never overflows, so
    huge y is safe); hi * hi and hi * lo are exact, lo * lo nearly (2**-104 relative)."""
    hi = b.bitcast(b.and_(b.bitcast(a, I64), ir.Constant(I64, -(1 << 27))), F64)
    return hi, b.fsub(a, hi)


def _two_prod(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """p + e = a * c (Dekker), exact to 2**-104 relative away from over/underflow."""
    p = b.fmul(a, c)
    ah, al = _split(b, a)
    ch, cl = _split(b, c)
    e = b.fadd(b.fadd(b.fsub(b.fmul(ah, ch), p), b.fmul(ah, cl)), b.fmul(al, ch))
    return p, b.fadd(e, b.fmul(al, cl))


def _two_sum(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """s + e = a + c exactly (Knuth), whatever the magnitudes."""
    s = b.fadd(a, c)
    cc = b.fsub(s, a)
    return s, b.fadd(b.fsub(a, b.fsub(s, cc)), b.fsub(c, cc))


def _log_double(b: ir.IRBuilder, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log(ax) = hi + lo for finite ax > 0: ax = 2**e m, m in [sqrt(1/2), sqrt(2)),
    f = m - 1 (exact), s = f / (2 + f) in two parts (the division's remainder by exact
    products), log m = 2s + 2s**3/3 + ... with its first two terms in double-double;
    then e ln2 (e * LN2_HI exact) added exactly."""
    tiny = b.fcmp_ordered("<", ax, _c(2.0 ** -1022))
    xs = b.select(tiny, b.fmul(ax, _c(2.0 ** 54)), ax)
    bits = b.bitcast(xs, I64)
    e = b.sub(b.trunc(b.lshr(bits, ir.Constant(I64, 52)), I32), ir.Constant(I32, 1023))
    e = b.select(tiny, b.sub(e, ir.Constant(I32, 54)), e)
    mant = b.or_(b.and_(bits, ir.Constant(I64, (1 << 52) - 1)),
                 ir.Constant(I64, 1023 << 52))
    mv = b.bitcast(mant, F64)
    big = b.fcmp_ordered(">", mv, _c(math.sqrt(2.0)))
    mv = b.select(big, b.fmul(mv, _c(0.5)), mv)
    e = b.select(big, b.add(e, ir.Constant(I32, 1)), e)
    f = b.fsub(mv, _c(1.0))
    d_hi, d_lo = _two_sum(b, _c(2.0), f)
    s_hi = b.fdiv(f, d_hi)
    p, pe = _two_prod(b, s_hi, d_hi)
    rem = b.fsub(b.fsub(b.fsub(f, p), pe), b.fmul(s_hi, d_lo))
    s_lo = b.fdiv(rem, d_hi)
    # 2s + (2/3)s**3 in double-double; the rest, s**5 (2/5 + ...), is below 2**-12 of
    # log m and f64 does for it. s_lo's share of the cube term is 2 s**2 s_lo.
    z, z_e = _two_prod(b, s_hi, s_hi)
    c, c_e = _two_prod(b, z, s_hi)
    c_e = b.fadd(c_e, b.fmul(z_e, s_hi))
    third, third_e = _two_prod(b, c, _c(TWO_THIRDS[0]))
    third_e = b.fadd(third_e, b.fadd(b.fmul(c, _c(TWO_THIRDS[1])),
                                     b.fmul(c_e, _c(TWO_THIRDS[0]))))
    tail = b.fmul(b.fmul(c, z), _horner(b, z, _LOG_TAYLOR[1:]))
    m_hi, m_e = _two_sum(b, b.fmul(_c(2.0), s_hi), third)
    m_lo = b.fadd(b.fadd(m_e, third_e),
                  b.fadd(b.fmul(b.fmul(_c(2.0), s_lo), b.fadd(_c(1.0), z)), tail))
    ef = b.sitofp(e, F64)
    h, hl = _two_sum(b, b.fmul(ef, _c(LN2_HI)), m_hi)
    lo = b.fadd(hl, b.fadd(m_lo, b.fmul(ef, _c(LN2_LO))))
    return _two_sum(b, h, lo)


def _exp_double(b: ir.IRBuilder, t_hi: ir.Value, t_lo: ir.Value) -> ir.Value:
    """e**(t_hi + t_lo): t = n ln2 + r with r kept in two parts, e**r = (1 + r_hi +
    r_hi**2/2, summed exactly in parts) + (r_lo (1 + r_hi) + r_hi**3 (1/6 + ...)), so
    that only the last addition rounds; scaled by 2**n in two exact steps."""
    n = _round_i32(b, b.fmul(t_hi, _c(1.4426950408889634)), 1100.0)
    nf = b.sitofp(n, F64)
    r_hi = b.fsub(t_hi, b.fmul(nf, _c(LN2_HI)))  # exact (|n| < 2**21, Sterbenz)
    a, ae = _two_prod(b, nf, _c(LN2_LO))
    r1, r1e = _two_sum(b, r_hi, b.fneg(a))
    r_lo = b.fadd(b.fsub(r1e, ae), t_lo)
    r_hi, r_lo = _two_sum(b, r1, r_lo)
    # 1 + r_hi + r_hi**2/2 exactly in parts; the rest, r**3 (1/6 + ...), below 2**-7.
    sq, sq_e = _two_prod(b, r_hi, r_hi)
    one, one_e = _two_sum(b, _c(1.0), r_hi)
    one, half_e = _two_sum(b, one, b.fmul(_c(0.5), sq))
    q = b.fadd(b.fmul(r_lo, b.fadd(_c(1.0), r_hi)),
               b.fmul(b.fmul(sq, r_hi), _horner(b, r_hi, _EXP_TAYLOR[1:])))
    one_e = b.fadd(b.fadd(one_e, half_e), b.fmul(_c(0.5), sq_e))
    y = _ldexp(b, b.fadd(one, b.fadd(one_e, q)), n)
    y = b.select(b.fcmp_ordered(">", t_hi, _c(709.782712893384)), _c(math.inf), y)
    return b.select(b.fcmp_ordered("<", t_hi, _c(-745.1332191019412)), _c(0.0), y)


def _pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    l_hi, l_lo = _log_double(b, ax)
    p, p_e = _two_prod(b, y, l_hi)
    t_hi, t_lo = _two_sum(b, p, b.fadd(p_e, b.fmul(y, l_lo)))
    # |y log x| past 1e300 (or infinite) over- or underflows whatever its low part; the
    # exact-product terms would be inf - inf there, so the plain product decides
    wide = b.fcmp_ordered("<", fabs(b, p), _c(1e300))
    t_hi, t_lo = b.select(wide, t_hi, p), b.select(wide, t_lo, _c(0.0))
    r = _exp_double(b, t_hi, t_lo)
    integer = b.fcmp_ordered("==", _floor(b, y), y)
    half = b.fmul(y, _c(0.5))
    odd = b.and_(integer, b.fcmp_ordered("!=", _floor(b, half), half))
    negative = b.fcmp_ordered("<", x, _c(0.0))
    r = b.select(b.and_(negative, odd), b.fneg(r), r)
    r = b.select(b.and_(negative, b.not_(integer)), _c(math.nan), r)
    special = b.or_(
        b.or_(b.fcmp_unordered("ueq", ax, _c(0.0)), b.fcmp_ordered("==", ax, _c(math.inf))),
        b.or_(b.fcmp_unordered("ueq", fabs(b, y), _c(math.inf)),
              b.or_(b.fcmp_ordered("==", y, _c(0.0)), b.fcmp_ordered("==", x, _c(1.0)))))
    exact = b.fpext(b.call(math_function(b.module, "power", F32),
                           [b.fptrunc(x, F32), b.fptrunc(y, F32)]), F64)
    return b.select(special, exact, r)


BODIES: dict[str, Callable[..., ir.Value]] = {
    "exponential": _exp, "log": _log, "sqrt": _sqrt, "power": _pow,
    "sine": lambda b, x: _trig(b, x, "sine"), "cosine": lambda b, x: _trig(b, x, "cosine"),
}


def call_f64(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Calls the f64 function `name` (one of BODIES), emitted once per module."""
    fname = f"{PREFIX}{name}_f64"
    fn = b.module.globals.get(fname)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(F64, [F64] * len(args)), fname)
        fn.linkage = "internal"
        fn.section = SECTION_PREFIX + fname
        fn.attributes.add("nounwind")
        body = ir.IRBuilder(fn.append_basic_block("entry"))
        body.ret(BODIES[name](body, *fn.args))
    return b.call(fn, list(args))


__all__ = ["BODIES", "call_f64"]
