"""pow in f32, and the double-f32 arithmetic it carries y * log2|x| in (Dekker's exact
product, Knuth's exact sum, log2 as a pair of f32), which the special functions reuse.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_exp import _expm1_poly, _ldexp
from toolchain.codegen.mathlib_ir import (
    F32,
    I1,
    I32,
    INF,
    NAN,
    PREFIX,
    _fconst,
    _horner,
    _iconst,
    _load_entry,
    _rodata_table,
    _round_to_i32,
    fabs,
)
from toolchain.codegen.mathlib_table import _define, math_function


def _is_odd_integer(b: ir.IRBuilder, y: ir.Value, is_int: ir.Value) -> ir.Value:
    """y is an odd integer (integers >= 2**24 are all even in f32)."""
    ay = fabs(b, y)
    small = b.fcmp_ordered("<", ay, _fconst(F32, 2.0**24))
    yi = b.fptosi(b.select(small, ay, _fconst(F32, 0.0)), I32)
    return b.and_(b.and_(small, is_int), b.trunc(yi, I1))


# pow(x, y) = 2**(y * log2|x|). The product t = y * log2|x| reaches +-150 before the
# result overflows or underflows, and an absolute error d in t is a relative error
# d * ln2 in the result: t must be good to ~2**-27, i.e. log2|x| to ~2**-34 relative.
# f32 alone gives 2**-24 (the error grows with |t| to >100 ulp), so log2|x| and t are
# carried as unevaluated sums hi + lo of two f32 ("double-f32"), with exact products
# (Dekker: operands split into 12-bit halves by masking bits, no FMA needed) and exact
# sums (Knuth's two-sum). Everything stays f32: no f64 helper on any target.
#
# |x| = 2**E * m with m in [1, 2), and c = 1 + k/4 (k = 0..4) the centre nearest m; k = 4
# (c = 2) moves into E + 1 with log2 c = 0, so that x just below 1 cancels nothing.
# log2 m = log2 c + (2/ln2) * atanh(s), s = (m-c)/(m+c), |s| <= 1/17, and
# atanh(s) = s * (1 + z/3 + z**2/5 + z**3/7), z = s*s; the omitted z**4/9 is < 2**-35
# relative. s and s * 2/ln2 are double-f32; the series tail (< 2**-9.7 of the sum) is
# plain f32.
_POW_K = (2.885390043258667, 3.851926067000022e-08)  # 2/ln2 as f32 hi + lo
_POW_LOG2C = (0.0, 0.0, 0.32192808389663696, 1.0990725662907153e-08, 0.5849624872207642,
              1.3500391915499677e-08, 0.8073549270629883, -5.005384107192867e-09, 0.0,
              0.0)  # fmt: skip  (log2(1 + k/4) as hi, lo for k = 0..3; k = 4 folds into E)
_POW_TABLE = PREFIX + "log2_centres"
LN2_F32 = 0.6931471824645996


def _split(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a = hi + lo exactly, hi keeping the top 12 significand bits (a bit mask, not
    Veltkamp's a * 4097, so it never overflows): products of halves are exact."""
    hi = b.bitcast(b.and_(b.bitcast(a, I32), _iconst(32, 0xFFFFF000)), F32)
    return hi, b.fsub(a, hi)


def _two_prod(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """p + e = a * c exactly (Dekker), for products far from overflow and underflow."""
    p = b.fmul(a, c)
    ah, al = _split(b, a)
    ch, cl = _split(b, c)
    e = b.fadd(b.fadd(b.fsub(b.fmul(ah, ch), p), b.fmul(ah, cl)), b.fmul(al, ch))
    return p, b.fadd(e, b.fmul(al, cl))


def _two_sum(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """s + e = a + c exactly (Knuth), whatever the magnitudes."""
    s = b.fadd(a, c)
    cc = b.fsub(s, a)
    e = b.fadd(b.fsub(a, b.fsub(s, cc)), b.fsub(c, cc))
    return s, e


def _log2_double(b: ir.IRBuilder, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log2(ax) as hi + lo, ~2**-40 relative, for finite ax > 0 (see above)."""
    sub = b.fcmp_ordered("<", ax, _fconst(F32, 2.0**-126))
    bits = b.bitcast(b.select(sub, b.fmul(ax, _fconst(F32, 2.0**23)), ax), I32)
    e = b.sub(b.lshr(bits, _iconst(32, 23)), _iconst(32, 127))
    e = b.select(sub, b.sub(e, _iconst(32, 23)), e)
    frac = b.and_(bits, _iconst(32, 0x7FFFFF))
    k = b.lshr(b.add(b.lshr(frac, _iconst(32, 20)), _iconst(32, 1)), _iconst(32, 1))
    e = b.add(e, b.zext(b.icmp_unsigned("==", k, _iconst(32, 4)), I32))
    m = b.bitcast(b.or_(frac, _iconst(32, 0x3F800000)), F32)
    c = b.fadd(b.fmul(b.sitofp(k, F32), _fconst(F32, 0.25)), _fconst(F32, 1.0))
    num = b.fsub(m, c)  # exact (Sterbenz)
    dh, dl = _two_sum(b, m, c)
    sh = b.fdiv(num, dh)
    p, pe = _two_prod(b, sh, dh)
    sl = b.fdiv(b.fsub(b.fsub(b.fsub(num, p), pe), b.fmul(sh, dl)), dh)
    z = b.fmul(sh, sh)
    tail = _horner(b, z, [1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0])
    k_hi, k_lo = _fconst(F32, _POW_K[0]), _fconst(F32, _POW_K[1])
    mp, me = _two_prod(b, k_hi, sh)
    lo = b.fadd(b.fadd(me, b.fadd(b.fmul(k_hi, sl), b.fmul(k_lo, sh))), b.fmul(b.fmul(mp, z), tail))
    table = _rodata_table(b.module, _POW_TABLE, F32, list(_POW_LOG2C))
    k2 = b.shl(k, _iconst(32, 1))
    c_hi, c_lo = _load_entry(b, table, k2), _load_entry(b, table, b.add(k2, _iconst(32, 1)))
    lh, ll = _two_sum(b, c_hi, mp)
    ll = b.fadd(ll, b.fadd(lo, c_lo))
    # E + lh is exact as hi + lo: E = 0 or |E| >= 1 > |lh| (Fast2Sum's condition).
    ef = b.sitofp(e, F32)
    hh = b.fadd(ef, lh)
    hl = b.fsub(lh, b.fsub(hh, ef))
    return hh, b.fadd(hl, ll)


@_define("power", nargs=2)
def _pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    # t = y * log2|x| as th + tl (error ~2**-36 * |t|), then 2**t = 2**n * e**(f ln2)
    # with n = round(th), f = (th - n) + tl: <= 3 ulp. Signs and special cases follow
    # C99 Annex F / numpy.
    ax = fabs(b, x)
    hh, hl = _log2_double(b, ax)
    th, tl = _two_prod(b, y, hh)
    tl = b.fadd(tl, b.fmul(y, hl))
    n = _round_to_i32(b, th, 160.0)
    f = b.fadd(b.fsub(th, b.sitofp(n, F32)), tl)
    r = _ldexp(b, b.fadd(_fconst(F32, 1.0), _expm1_poly(b, b.fmul(f, _fconst(F32, LN2_F32)))), n)
    zero, inf = _fconst(F32, 0.0), _fconst(F32, INF)
    # |t| > 160 (y huge, or the product overflowed): inf or 0 by its sign.
    r = b.select(b.fcmp_ordered(">", fabs(b, th), _fconst(F32, 160.0)),
                 b.select(b.fcmp_ordered(">", th, zero), inf, zero), r)  # fmt: skip
    y_neg = b.fcmp_ordered("<", y, zero)
    r = b.select(b.fcmp_ordered("==", ax, zero), b.select(y_neg, inf, zero), r)
    r = b.select(b.fcmp_ordered("==", ax, inf), b.select(y_neg, zero, inf), r)
    is_int = b.fcmp_ordered("==", b.call(math_function(b.module, "floor"), [y]), y)
    odd = _is_odd_integer(b, y, is_int)
    x_neg = b.icmp_signed("<", b.bitcast(x, I32), _iconst(32, 0))
    r = b.select(b.and_(x_neg, odd), b.fneg(r), r)
    # A finite negative base needs an integer exponent; (-inf)**y is +-0 or +-inf.
    neg_base = b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered(">", x, b.fneg(inf)))
    nan = b.or_(b.and_(neg_base, b.not_(is_int)), b.fcmp_unordered("uno", x, y))
    r = b.select(nan, _fconst(F32, NAN), r)
    one = _fconst(F32, 1.0)
    r = b.select(b.fcmp_ordered("==", x, one), one, r)  # even 1**NaN
    y_inf = b.fcmp_ordered("==", fabs(b, y), inf)
    r = b.select(b.and_(y_inf, b.fcmp_ordered("==", ax, one)), one, r)  # (-1)**inf = 1
    return b.select(b.fcmp_ordered("==", y, zero), one, r)  # even NaN**0
