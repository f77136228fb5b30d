"""The small floats (f8E4M3FN, f8E5M2, f4E2M1FN, ...; toolchain/small_floats.py) <-> f32
on the bit patterns, with integer operations and no table: one code a byte in memory,
computed in f32 (codegen/emit.py widens on load and rounds on store, as for bf16).

Widening is exact. Narrowing rounds to nearest even at the format's precision, which
below its smallest normal is the subnormal step, and maps what the format cannot hold
as its kind says: a finite value past the largest becomes inf ("ieee"), NaN ("fn",
"fnuz", "e8m0") or the largest ("finite"). These are StableHLO's convert and ml_dtypes'
conversions; ONNX's saturating Cast clamps before it (frontend/onnx/elementwise.py).
tests/codegen/test_codegen_small_floats.py checks both directions against ml_dtypes
over every code and a sweep of f32 values (ties, subnormals, overflow, NaN).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_ir import F32, I32, _fconst, _iconst
from toolchain.small_floats import SmallFloat

I8 = ir.IntType(8)


def _c(v: int) -> ir.Constant:
    return _iconst(32, v)


def small_float_bits_to_f32(b: ir.IRBuilder, raw: ir.Value, fmt: SmallFloat) -> ir.Value:
    """A code of `fmt` (i8, the high bits beyond fmt.bits ignored) -> its f32 value."""
    u = b.and_(b.zext(raw, I32), _c((1 << fmt.bits) - 1))
    if fmt.kind == "e8m0":  # 2**(code - 127): the f32 exponent field, but code 0 is subnormal
        bits = b.select(b.icmp_unsigned("==", u, _c(0)), _c(0x00400000), b.shl(u, _c(23)))
        nan = b.icmp_unsigned("==", u, _c(0xFF))
        return b.bitcast(b.select(nan, _c(0x7FC00000), bits), F32)
    m, top = fmt.mantissa_bits, fmt.exponent_bits + fmt.mantissa_bits
    mag = b.and_(u, _c((1 << top) - 1))
    sign = b.shl(b.lshr(u, _c(top)), _c(31))
    # Normal: the code's exponent and mantissa moved into place, the bias changed.
    normal = b.add(b.shl(mag, _c(23 - m)), _c((127 - fmt.bias) << 23))
    # Subnormal (exponent field 0): 0.M * 2**emin is 1.M * 2**emin - 2**emin, an exact
    # float subtraction (0 for M = 0).
    emin = 1 - fmt.bias
    one_m = b.or_(_c((emin + 127) << 23), b.shl(mag, _c(23 - m)))
    sub = b.bitcast(b.fsub(b.bitcast(one_m, F32), _fconst(F32, 2.0**emin)), I32)
    bits = b.select(b.icmp_unsigned("<", mag, _c(1 << m)), sub, normal)
    all_ones = (1 << top) - 1
    if fmt.kind == "ieee":  # the all-ones exponent: inf (mantissa 0) or NaN
        special = b.select(b.icmp_unsigned("==", mag, _c(all_ones - (1 << m) + 1)),
                           _c(0x7F800000), _c(0x7FC00000))
        bits = b.select(b.icmp_unsigned(">", mag, _c(fmt.max_code)), special, bits)
    elif fmt.kind == "fn":
        bits = b.select(b.icmp_unsigned("==", mag, _c(all_ones)), _c(0x7FC00000), bits)
    bits = b.or_(bits, sign)
    if fmt.kind == "fnuz":  # 0x80, "negative zero", is the NaN (negative, as ml_dtypes)
        bits = b.select(b.icmp_unsigned("==", u, _c(1 << top)), _c(0xFFC00000), bits)
    return b.bitcast(bits, F32)


def f32_to_small_float_bits(b: ir.IRBuilder, x: ir.Value, fmt: SmallFloat) -> ir.Value:
    """f32 -> the code of `fmt` (i8; the 6- and 4-bit codes in its low bits), rounded to
    nearest even, overflow and NaN as the module docstring says."""
    u = b.bitcast(x, I32)
    sign = b.lshr(u, _c(31))
    a = b.and_(u, _c(0x7FFFFFFF))
    e32 = b.lshr(a, _c(23))
    mant = b.and_(a, _c(0x7FFFFF))
    nan = b.icmp_unsigned(">", a, _c(0x7F800000))
    if fmt.kind == "e8m0":
        return b.trunc(_e8m0(b, sign, a, e32, mant, nan), I8)
    m, top = fmt.mantissa_bits, fmt.exponent_bits + fmt.mantissa_bits
    # The significand as an integer (f32 subnormals: exponent field 1, no implicit bit)
    # and the f32 exponent field of the format's smallest normal.
    f32_sub = b.icmp_unsigned("==", e32, _c(0))
    exp = b.select(f32_sub, _c(1), e32)
    sig = b.select(f32_sub, mant, b.or_(mant, _c(0x800000)))
    emin = 128 - fmt.bias
    # Right shift onto the format's grid: 23 - m bits, and one more per binade below its
    # smallest normal (the subnormal step); past 31 the result is 0 anyway.
    below = b.sub(_c(emin), exp)
    below = b.select(b.icmp_signed(">", below, _c(0)), below, _c(0))
    shift = b.add(below, _c(23 - m))
    shift = b.select(b.icmp_unsigned(">", shift, _c(31)), _c(31), shift)
    # Round to nearest even: add half a step less one, plus the kept part's last bit.
    odd = b.and_(b.lshr(sig, shift), _c(1))
    half = b.sub(b.shl(_c(1), b.sub(shift, _c(1))), _c(1))
    n = b.lshr(b.add(b.add(sig, half), odd), shift)
    # The code: exponent steps above the smallest normal, then n (its implicit bit
    # carries into the exponent field, and so does a rounding up to the next binade).
    steps = b.sub(b.select(b.icmp_unsigned(">", exp, _c(emin)), exp, _c(emin)), _c(emin))
    mag = b.add(b.shl(steps, _c(m)), n)
    over = b.icmp_unsigned(">", mag, _c(fmt.max_code))
    all_ones = (1 << top) - 1
    signed = b.shl(sign, _c(top))
    if fmt.kind == "ieee":
        inf = all_ones - (1 << m) + 1
        r = b.select(over, _c(inf), mag)
        r = b.or_(b.select(nan, _c(inf | (1 << (m - 1))), r), signed)
    elif fmt.kind == "fn":
        r = b.or_(b.select(b.or_(over, nan), _c(all_ones), mag), signed)
    elif fmt.kind == "fnuz":  # no negative zero; NaN and overflow are 0x80
        r = b.select(b.icmp_unsigned("==", mag, _c(0)), _c(0), b.or_(mag, signed))
        r = b.select(b.or_(over, nan), _c(1 << top), r)
    else:  # "finite": saturate; NaN, which it cannot hold, is zero of the other sign
        r = b.or_(b.select(over, _c(fmt.max_code), mag), signed)
        r = b.select(nan, b.shl(b.xor(sign, _c(1)), _c(top)), r)
    return b.trunc(r, I8)


def _e8m0(b: ir.IRBuilder, sign: ir.Value, a: ir.Value, e32: ir.Value, mant: ir.Value,
          nan: ir.Value) -> ir.Value:
    """f32 -> e8m0 (i32 code): the nearest power of two, a tie (1.5 * 2**k) up; below
    2**-127 the smallest; 0, negatives, NaN and overflow NaN (0xFF)."""
    # Normal f32: 2**(e32 - 127) * 1.mant rounds up from mantissa 0.5 on. Subnormal f32
    # (e32 = 0): 2**-127 from below, up to 2**-126 from 1.5 * 2**-127 (mantissa 0x600000).
    threshold = b.select(b.icmp_unsigned("==", e32, _c(0)), _c(0x600000), _c(0x400000))
    up = b.zext(b.icmp_unsigned(">=", mant, threshold), I32)
    code = b.add(e32, up)
    bad = b.or_(b.or_(nan, b.icmp_unsigned("!=", sign, _c(0))),
                b.or_(b.icmp_unsigned("==", a, _c(0)), b.icmp_unsigned(">", code, _c(254))))
    return b.select(bad, _c(0xFF), code)
