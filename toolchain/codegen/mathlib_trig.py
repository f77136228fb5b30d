"""sin, cos, tan and atan2 in f32, with the Payne-Hanek argument reduction that keeps
sin, cos and tan right for every finite f32.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    F32,
    I1,
    I32,
    I64,
    INF,
    NAN,
    PREFIX,
    _fconst,
    _horner,
    _iconst,
    _intrinsic,
    _load_entry,
    _negate_if,
    _rodata_table,
    _signbit,
    fabs,
)
from toolchain.codegen.mathlib_table import _define

# Argument reduction for sin, cos and tan: Payne-Hanek in 32-bit integer arithmetic.
#
# A finite |x| >= pi/4 is m * 2**E with a 24-bit integer m. x * 2/pi mod 4 (the quadrant
# and the fraction of a quadrant) only needs the bits of 2/pi from weight 2**(1-E) on:
# earlier ones multiply m into a multiple of 4. We take 96 of them, P, from the table
# below (one leading zero word covers the small exponents) and keep the low 96 bits of
# the exact product m * P: a fixed-point number whose top 2 bits are the quadrant and
# whose other 94 the fraction. The 2/pi bits left out weigh less than 2**-70 quadrant.
# An exhaustive search over every f32 (the test module names the worst cases) finds the
# fraction never closer to an integer than 2**-29.9 quadrant, so at least 34 of its 64
# bits we use are significant; with the truncations of the normalised fraction, of
# pi/2 and of their product, the reduced argument is within 2**-29 relative before its
# one rounding to f32. Why this rather than a longer Cody-Waite split: the work is four
# 32x32->64 integer multiplies (one instruction each on Armv7-M, two on RV32IM, a libgcc
# helper on Armv6-M) and a few shifts whatever the target's float hardware, while a
# Cody-Waite split of pi/2 reaching 2**128 needs a dozen exact f32 pieces, as many
# multiply-subtracts (soft-float calls on half our targets) and a quadrant number too
# large for any integer type; in f64 it would be software on most of our targets.
#
# 2/pi = 0.A2F9836E 4E441529 ... in hex; 224 bits reach the last one a finite f32 needs.
TWO_OVER_PI_WORDS = (0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599,
                     0x3C439041, 0xFE5163AB)  # fmt: skip
PIO2_Q31 = 0xC90FDAA2  # pi/2 * 2**31, rounded (2**-34 relative)
PIO4_BITS = 0x3F490FDB  # f32 pi/4 (rounded up): below it the argument is its own reduction
_TRIG_TABLE = PREFIX + "two_over_pi"

# sin r = r + r*z*(-1/6 + z/120 - ...), z = r*r <= (pi/4)**2; omitted r**11/11! < 3e-9 |r|.
_SIN_TAYLOR = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 5)]
# cos r = 1 - z/2 + z*z*(1/24 - z/720 + ...); the omitted z**6/12! is < 2e-10.
_COS_TAYLOR = [(-1.0) ** k / math.factorial(2 * k) for k in range(2, 6)]


def _fshl(b: ir.IRBuilder, hi: ir.Value, lo: ir.Value, s: ir.Value) -> ir.Value:
    """The top 32 bits of (hi:lo) << s for s in [0, 31] (llvm.fshl: no shift by 32)."""
    fn = _intrinsic(b.module, "llvm.fshl.i32", I32, [I32, I32, I32])
    return b.call(fn, [hi, lo, s])


def _mul_wide(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The exact 64-bit product of two unsigned i32."""
    return b.mul(b.zext(x, I64), b.zext(y, I64))


def _hi32(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.trunc(b.lshr(v, _iconst(64, 32)), I32)


def _trig_reduce(b: ir.IRBuilder, abits: ir.Value) -> tuple[ir.Value, ir.Value]:
    """|x| = q*pi/2 + r with |r| <= pi/4 for |x| given by its bits (sign clear): returns
    (q as i32, only its low 2 bits meaningful; r as f32). See the comment above.

    Arguments up to pi/4 are their own reduction and branch around it: on an FPU target
    the reduction costs about as much again as the polynomials."""
    small = b.icmp_unsigned("<=", abits, _iconst(32, PIO4_BITS))
    r_small = b.bitcast(abits, F32)
    entry = b.block
    reduce = b.function.append_basic_block("trig_reduce")
    join = b.function.append_basic_block("trig_reduced")
    b.cbranch(small, join, reduce)
    b.position_at_end(reduce)
    ef = b.lshr(abits, _iconst(32, 23))  # >= 126 here (|x| > pi/4); 255 for inf / NaN
    m = b.or_(b.and_(abits, _iconst(32, 0x7FFFFF)), _iconst(32, 0x800000))
    j = b.sub(ef, _iconst(32, 120))  # first 2/pi bit needed, counted in the table
    w, s = b.lshr(j, _iconst(32, 5)), b.and_(j, _iconst(32, 31))
    table = _rodata_table(b.module, _TRIG_TABLE, I32, list(TWO_OVER_PI_WORDS))
    words = [_load_entry(b, table, b.add(w, _iconst(32, i))) for i in range(4)]
    p2, p1, p0 = (_fshl(b, words[i], words[i + 1], s) for i in range(3))
    # Low 96 bits of m * (p2:p1:p0) as three words r2:r1:r0.
    a0, a1 = _mul_wide(b, m, p0), _mul_wide(b, m, p1)
    t = b.add(b.lshr(a0, _iconst(64, 32)), b.and_(a1, _iconst(64, 0xFFFFFFFF)))
    r0, r1 = b.trunc(a0, I32), b.trunc(t, I32)
    r2 = b.add(b.add(_hi32(b, a1), b.mul(m, p2)), _hi32(b, t))
    # The fraction as a signed 64-bit value f * 2**64, f in [-1/2, 1/2): rounding the
    # quadrant to nearest. Then |f| normalised to 32 bits (its top word is never 0).
    s_hi, s_lo = _fshl(b, r2, r1, _iconst(32, 2)), _fshl(b, r1, r0, _iconst(32, 2))
    neg = b.icmp_signed("<", s_hi, _iconst(32, 0))
    q = b.add(b.lshr(r2, _iconst(32, 30)), b.zext(neg, I32))
    s64 = b.or_(b.shl(b.zext(s_hi, I64), _iconst(64, 32)), b.zext(s_lo, I64))
    s64 = b.select(neg, b.sub(_iconst(64, 0), s64), s64)
    hi, lo = _hi32(b, s64), b.trunc(s64, I32)
    ctlz = _intrinsic(b.module, "llvm.ctlz.i32", I32, [I32, I1])
    c = b.call(ctlz, [hi, ir.Constant(I1, 0)])
    norm = _fshl(b, hi, lo, c)  # |f| = norm * 2**(-32 - c), norm in [2**31, 2**32)
    # r = |f| * pi/2 = (norm * PIO2_Q31 >> 32) * 2**(-31 - c): the integer product keeps
    # 31 bits, uitofp rounds it once, and the power of two goes into the exponent field.
    prod = _hi32(b, _mul_wide(b, norm, _iconst(32, PIO2_Q31)))
    rbits = b.bitcast(b.uitofp(prod, F32), I32)
    rbits = b.sub(rbits, b.shl(b.add(c, _iconst(32, 31)), _iconst(32, 23)))
    rbits = b.or_(rbits, b.shl(b.zext(neg, I32), _iconst(32, 31)))
    r_big, reduce_end = b.bitcast(rbits, F32), b.block
    b.branch(join)
    b.position_at_end(join)
    q_phi, r_phi = b.phi(I32), b.phi(F32)
    q_phi.add_incoming(_iconst(32, 0), entry)
    q_phi.add_incoming(q, reduce_end)
    r_phi.add_incoming(r_small, entry)
    r_phi.add_incoming(r_big, reduce_end)
    return q_phi, r_phi


def _sin_cos_poly(b: ir.IRBuilder, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    z = b.fmul(r, r)
    s = b.fadd(r, b.fmul(b.fmul(r, z), _horner(b, z, _SIN_TAYLOR)))
    c = b.fadd(
        b.fsub(_fconst(F32, 1.0), b.fmul(z, _fconst(F32, 0.5))),
        b.fmul(b.fmul(z, z), _horner(b, z, _COS_TAYLOR)),
    )
    return s, c


def _trig(b: ir.IRBuilder, x: ir.Value, odd: bool, body: Callable[..., ir.Value]) -> ir.Value:
    """body(q, r) evaluated on |x| = q*pi/2 + r; an odd function's result takes x's sign
    (so sin(-0) = -0). inf and NaN give NaN."""
    bits = b.bitcast(x, I32)
    abits = b.and_(bits, _iconst(32, 0x7FFFFFFF))
    q, r = _trig_reduce(b, abits)
    y = body(q, r)
    if odd:
        y = _negate_if(b, b.icmp_signed("<", bits, _iconst(32, 0)), y)
    nonfinite = b.icmp_unsigned(">=", abits, _iconst(32, 0x7F800000))
    return b.select(nonfinite, _fconst(F32, NAN), y)


def _sin_quadrant(b: ir.IRBuilder, q: ir.Value, r: ir.Value) -> ir.Value:
    s, c = _sin_cos_poly(b, r)
    odd = b.trunc(q, I1)
    y = b.select(odd, c, s)
    neg = b.icmp_unsigned("!=", b.and_(q, _iconst(32, 2)), _iconst(32, 0))
    return b.select(neg, b.fneg(y), y)


@_define("sine")
def _sin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig(b, x, True, lambda q, r: _sin_quadrant(b, q, r))


@_define("cosine")
def _cos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # cos x = cos |x| = sin(|x| + pi/2): the same polynomials one quadrant on.
    return _trig(b, x, False, lambda q, r: _sin_quadrant(b, b.add(q, _iconst(32, 1)), r))


def _tan_quadrant(b: ir.IRBuilder, q: ir.Value, r: ir.Value) -> ir.Value:
    s, c = _sin_cos_poly(b, r)
    return b.select(b.trunc(q, I1), b.fdiv(b.fneg(c), s), b.fdiv(s, c))


@_define("tan")
def _tan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig(b, x, True, lambda q, r: _tan_quadrant(b, q, r))


# atan t = t - t*z*(1/3 - z/5 + ...) for |t| <= tan(pi/8), z <= 0.1716; the omitted
# z**9/19 is < 7e-9.
_ATAN_TAYLOR = [(-1.0) ** k / (2 * k + 1) for k in range(1, 9)]
TAN_PI_8 = 0.41421356237309503


@_define("atan2", nargs=2)
def _atan2(b: ir.IRBuilder, y: ir.Value, x: ir.Value) -> ir.Value:
    # a = min/max of |y|, |x| in [0, 1]; a > tan(pi/8) uses atan a = pi/4 + atan((a-1)/(a+1));
    # then the octant is restored from |y| > |x|, the sign bit of x and the sign of y.
    ax, ay = fabs(b, x), fabs(b, y)
    swap = b.fcmp_ordered(">", ay, ax)
    mx = b.select(swap, ay, ax)
    mn = b.select(swap, ax, ay)
    a = b.fdiv(mn, mx)
    both_inf = b.and_(
        b.fcmp_ordered("==", ax, _fconst(F32, INF)), b.fcmp_ordered("==", ay, _fconst(F32, INF))
    )
    a = b.select(both_inf, _fconst(F32, 1.0), a)
    a = b.select(b.fcmp_ordered("==", mx, _fconst(F32, 0.0)), _fconst(F32, 0.0), a)
    hi = b.fcmp_ordered(">", a, _fconst(F32, TAN_PI_8))
    t = b.select(hi, b.fdiv(b.fsub(a, _fconst(F32, 1.0)), b.fadd(a, _fconst(F32, 1.0))), a)
    z = b.fmul(t, t)
    at = b.fadd(t, b.fmul(b.fmul(t, z), _horner(b, z, _ATAN_TAYLOR)))
    at = b.select(hi, b.fadd(_fconst(F32, math.pi / 4), at), at)
    at = b.select(swap, b.fsub(_fconst(F32, math.pi / 2), at), at)
    x_neg = b.icmp_signed("<", b.bitcast(x, I32), _iconst(32, 0))
    at = b.select(x_neg, b.fsub(_fconst(F32, math.pi), at), at)
    at = _negate_if(b, _signbit(b, y), at)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, b.fadd(x, y), at)
