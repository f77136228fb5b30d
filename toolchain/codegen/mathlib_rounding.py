"""floor, ceil, round to nearest (even / away from zero) and fmod: exact, for f32 and
f64 alike, with plain float adds and integer long division (never a libm call).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    I1,
    NAN,
    _bits,
    _fconst,
    _fmt,
    _iconst,
    _intrinsic,
    _negate_if,
    fabs,
)
from toolchain.codegen.mathlib_table import _define


def _zero_like(b: ir.IRBuilder, r: ir.Value, x: ir.Value) -> ir.Value:
    """r, except that a zero r takes the sign of x (x * 0.0 is a zero with x's sign for
    finite x; LLVM cannot fold it without fast-math flags).

    We deliberately avoid llvm.copysign: with the sign operand an f16 value widened by
    fpext (f16 kernels on Cortex-M55, +fullfp16), LLVM 22's Arm backend asserts in
    SelectionDAG ("Cannot BITCAST between types of different sizes"), and InstCombine
    turns integer sign-bit manipulation back into llvm.copysign.
    """
    zero = _fconst(r.type, 0.0)
    return b.select(b.fcmp_ordered("==", r, zero), b.fmul(x, zero), r)


def _rint(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round half to even with plain float adds: (|x| + 2**M) - 2**M rounds |x| < 2**M to
    an integer in the current (nearest-even) mode. Larger values, inf and NaN are already
    integral or pass through."""
    big = _fconst(x.type, 2.0 ** _fmt(x.type)[1])
    ax = fabs(b, x)
    r = _negate_if(b, b.fcmp_ordered("<", x, _fconst(x.type, 0.0)), b.fsub(b.fadd(ax, big), big))
    return b.select(b.fcmp_ordered("<", ax, big), _zero_like(b, r, x), x)


@_define("round_nearest_even", generic=True)
def _round_even(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _rint(b, x)


@_define("floor", generic=True)
def _floor(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r = _rint(b, x)
    r = b.select(b.fcmp_ordered(">", r, x), b.fsub(r, _fconst(x.type, 1.0)), r)
    return _zero_like(b, r, x)  # floor(-0.0) = -0.0


@_define("ceil", generic=True)
def _ceil(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r = _rint(b, x)
    r = b.select(b.fcmp_ordered("<", r, x), b.fadd(r, _fconst(x.type, 1.0)), r)
    return _zero_like(b, r, x)  # ceil(-0.5) = -0.0


@_define("round_nearest_afz", generic=True)
def _round_afz(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    fl = _floor(b, ax)
    frac = b.fsub(ax, fl)  # exact
    up = b.fcmp_ordered(">=", frac, _fconst(x.type, 0.5))
    r = b.select(up, b.fadd(fl, _fconst(x.type, 1.0)), fl)
    r = _negate_if(b, b.fcmp_ordered("<", x, _fconst(x.type, 0.0)), r)
    return b.select(
        b.fcmp_ordered("<", ax, _fconst(x.type, 2.0 ** _fmt(x.type)[1])), _zero_like(b, r, x), x
    )


@_define("remainder", nargs=2, generic=True)
def _fmod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """C fmod, exact: long division of the integer significands (frem would call fmodf).

    With |x| = mx * 2**ex and |y| = my * 2**ey (significands as integers, subnormals with
    exponent 1 and no implicit bit), reduce mx modulo my one exponent step at a time; mx
    stays below 2*my < 2**(M+2), which fits the float's integer width.
    """
    total, mbits, _ = _fmt(x.type)
    it = ir.IntType(total)
    fn = b.function
    absmask = _iconst(total, (1 << (total - 1)) - 1)
    expmask = _iconst(total, ((1 << (total - 1 - mbits)) - 1) << mbits)
    implicit = _iconst(total, 1 << mbits)
    mantmask = _iconst(total, (1 << mbits) - 1)
    one, zero = _iconst(total, 1), _iconst(total, 0)

    bx, by = _bits(b, x), _bits(b, y)
    ux, uy = b.and_(bx, absmask), b.and_(by, absmask)
    sign = b.and_(bx, b.not_(absmask))
    invalid = b.or_(
        b.or_(b.icmp_unsigned(">=", ux, expmask), b.icmp_unsigned(">", uy, expmask)),
        b.icmp_unsigned("==", uy, zero),
    )
    nan = _fconst(x.type, NAN)
    signed_zero = b.bitcast(sign, x.type)

    early_val = b.select(invalid, nan, b.select(b.icmp_unsigned("==", ux, uy), signed_zero, x))
    entry = b.block
    done = fn.append_basic_block("done")
    work = fn.append_basic_block("work")
    early = b.or_(invalid, b.icmp_unsigned("<=", ux, uy))
    b.cbranch(early, done, work)

    b.position_at_end(work)

    def split(u: ir.Value) -> tuple[ir.Value, ir.Value]:
        e = b.lshr(u, _iconst(total, mbits))
        m = b.and_(u, mantmask)
        normal = b.icmp_unsigned("!=", e, zero)
        return b.select(normal, e, one), b.select(normal, b.or_(m, implicit), m)

    ctlz = _intrinsic(b.module, f"llvm.ctlz.i{total}", it, [it, I1])
    top = _iconst(total, total - 1 - mbits)  # ctlz of a significand with its top bit at M

    def normalise_shift(m: ir.Value) -> ir.Value:
        return b.sub(b.call(ctlz, [m, ir.Constant(I1, 1)]), top)

    ex, mx = split(ux)
    ey, my = split(uy)
    # A subnormal y is normalised (its exponent may go below 1, hence signed compares)
    # so that mx < 2*my holds from the start.
    ny = normalise_shift(my)
    my = b.shl(my, ny)
    ey = b.sub(ey, ny)
    loop = fn.append_basic_block("loop")
    tail = fn.append_basic_block("tail")
    b.branch(loop)
    b.position_at_end(loop)
    e_phi = b.phi(it)
    m_phi = b.phi(it)
    e_phi.add_incoming(ex, work)
    m_phi.add_incoming(mx, work)
    more = b.icmp_signed(">", e_phi, ey)
    m_red = b.select(b.icmp_unsigned(">=", m_phi, my), b.sub(m_phi, my), m_phi)
    e_phi.add_incoming(b.sub(e_phi, one), loop)
    m_phi.add_incoming(b.shl(m_red, one), loop)
    b.cbranch(more, loop, tail)

    b.position_at_end(tail)
    # Here e == ey: one last reduction, then renormalise the (exact) remainder m * 2**ey.
    m = b.select(b.icmp_unsigned(">=", m_phi, my), b.sub(m_phi, my), m_phi)
    s = normalise_shift(b.select(b.icmp_unsigned("==", m, zero), one, m))
    en = b.sub(ey, s)
    normal_bits = b.or_(b.shl(en, _iconst(total, mbits)), b.and_(b.shl(m, s), mantmask))
    # Subnormal results have exponent field 0 and scale 2**1: shift m from 2**ey to 2**1.
    k = b.sub(ey, one)
    k_neg = b.icmp_signed("<", k, zero)
    sub_bits = b.select(
        k_neg, b.lshr(m, b.select(k_neg, b.neg(k), zero)), b.shl(m, b.select(k_neg, zero, k))
    )
    rbits = b.select(b.icmp_signed(">=", en, one), normal_bits, sub_bits)
    rbits = b.select(b.icmp_unsigned("==", m, zero), zero, rbits)
    res_tail = b.bitcast(b.or_(rbits, sign), x.type)
    tail_end = b.block
    b.branch(done)

    b.position_at_end(done)
    out = b.phi(x.type)
    out.add_incoming(early_val, entry)
    out.add_incoming(res_tail, tail_end)
    return out
