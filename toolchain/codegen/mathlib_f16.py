"""f16 and bf16 <-> f32 conversions on the bit patterns, with integer operations: for
targets whose FPU has no half-precision conversion instructions (and for bf16, which
none has). Exact widening, narrowing rounded to nearest even.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_ir import F32, I16, I32, _fconst, _iconst


def f16_bits_to_f32(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """IEEE half bits (i16) -> f32, exact, with integer operations only."""
    u = b.zext(h, I32)
    sign = b.shl(b.and_(u, _iconst(32, 0x8000)), _iconst(32, 16))
    exp = b.and_(b.lshr(u, _iconst(32, 10)), _iconst(32, 0x1F))
    mant = b.and_(u, _iconst(32, 0x3FF))
    normal = b.or_(
        b.shl(b.add(exp, _iconst(32, 112)), _iconst(32, 23)), b.shl(mant, _iconst(32, 13))
    )
    special = b.or_(_iconst(32, 0x7F800000), b.shl(mant, _iconst(32, 13)))
    # Subnormal: mant * 2**-24 = (1.mant * 2**-14) - 2**-14 with the implicit bit forced,
    # an exact float subtraction.
    sub_f = b.fsub(
        b.bitcast(b.or_(_iconst(32, 113 << 23), b.shl(mant, _iconst(32, 13))), F32),
        _fconst(F32, 2.0**-14),
    )
    bits = b.select(b.icmp_unsigned("==", exp, _iconst(32, 31)), special, normal)
    bits = b.select(b.icmp_unsigned("==", exp, _iconst(32, 0)), b.bitcast(sub_f, I32), bits)
    return b.bitcast(b.or_(bits, sign), F32)


def f32_to_f16_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """f32 -> IEEE half bits (i16), rounding to nearest even, with integer operations
    (plus one float add for results that are half subnormals)."""
    u = b.bitcast(x, I32)
    sign = b.trunc(b.lshr(b.and_(u, _iconst(32, 0x80000000)), _iconst(32, 16)), I16)
    a = b.and_(u, _iconst(32, 0x7FFFFFFF))
    # Normal halves: rebias the exponent and round at bit 13 (ties to even).
    odd = b.and_(b.lshr(a, _iconst(32, 13)), _iconst(32, 1))
    rounded = b.add(b.add(a, _iconst(32, 0xFFF - (112 << 23))), odd)
    normal = b.lshr(rounded, _iconst(32, 13))
    # Half subnormals: adding 0.5 makes the f32 ulp 2**-24, the half subnormal step, so
    # the float add rounds to nearest even and the low bits are the half significand.
    sub = b.sub(
        b.bitcast(b.fadd(b.bitcast(a, F32), _fconst(F32, 0.5)), I32), _iconst(32, 0x3F000000)
    )
    r = b.select(b.icmp_unsigned("<", a, _iconst(32, 0x38800000)), sub, normal)
    r = b.select(b.icmp_unsigned(">=", a, _iconst(32, 0x477FF000)), _iconst(32, 0x7C00), r)
    nan = b.or_(_iconst(32, 0x7E00), b.lshr(b.and_(a, _iconst(32, 0x7FFFFF)), _iconst(32, 13)))
    r = b.select(b.icmp_unsigned(">", a, _iconst(32, 0x7F800000)), nan, r)
    return b.or_(b.trunc(r, I16), sign)


def bf16_bits_to_f32(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """bfloat16 bits -> f32: the top half of the f32 pattern, exact."""
    return b.bitcast(b.shl(b.zext(h, I32), _iconst(32, 16)), F32)


def f32_to_bf16_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """f32 -> bfloat16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    u = b.bitcast(x, I32)
    odd = b.and_(b.lshr(u, _iconst(32, 16)), _iconst(32, 1))
    r = b.lshr(b.add(b.add(u, _iconst(32, 0x7FFF)), odd), _iconst(32, 16))
    qnan = b.or_(b.lshr(u, _iconst(32, 16)), _iconst(32, 0x40))
    r = b.select(b.fcmp_unordered("uno", x, x), qnan, r)
    return b.trunc(r, I16)
