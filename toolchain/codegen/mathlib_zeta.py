"""zeta(s, q) (Hurwitz) and polygamma(n, x) in f32.

zeta: nine terms of the sum, then Euler-Maclaurin with eight Bernoulli terms, every
term scaled by a power of two so that results near the bottom of the f32 range are
rounded once; polygamma(n, x) = (-1)**(n+1) n! zeta(n+1, x) (n! from a table), digamma
for n = 0.
"""

from __future__ import annotations

import math

from llvmlite import ir

from toolchain.codegen.mathlib_exp import _expm1_poly, _ldexp
from toolchain.codegen.mathlib_ir import (
    F32,
    I32,
    INF,
    NAN,
    PREFIX,
    _iconst,
    _load_entry,
    _negate_if,
    _rodata_table,
    _round_to_i32,
    fabs,
)
from toolchain.codegen.mathlib_pow import LN2_F32, _log2_double, _two_prod, _two_sum
from toolchain.codegen.mathlib_rounding import _floor
from toolchain.codegen.mathlib_special_ir import (
    BERNOULLI,
    _c,
    _call,
    _clamp_range,
    _f32,
    _ge,
    _isnan,
    _lt,
)
from toolchain.codegen.mathlib_table import _define, math_function

# zeta(s, q): ZETA_TERMS terms of the sum, then Euler-Maclaurin at a = q + ZETA_TERMS:
# a**(1-s)/(s-1) + a**-s/2 + a**-s/a * s * (B2/2! + w (s+1)(s+2) (B4/4! + w (s+3)(s+4) ...)),
# w = 1/a**2.
ZETA_TERMS = 9
# The largest power of two the terms are scaled by: 2**-m stays within _ldexp's range.
ZETA_SCALE = 240.0
ZETA_EM = [BERNOULLI[j - 1] / math.factorial(2 * j) for j in range(1, 9)]
# n! for polygamma, rounded to f32; 35! overflows f32 (JAX's exp(lgamma(n + 1)) too).
FACTORIALS = [_f32(float(math.factorial(n))) for n in range(35)]


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
