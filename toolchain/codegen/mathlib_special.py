"""The math library's special functions (CHLO's ops): which graph ops they are, and
next_after.

The functions themselves live one family a file and register into mathlib_table like
the elementary ones (internal IR functions in `.text.mrt_math_*` sections, f32, no libm;
f64 operands go through f32): mathlib_erf (erf, erfc, erf_inv), mathlib_gamma (lgamma,
digamma), mathlib_bessel (bessel_i1e), mathlib_zeta (zeta, polygamma) and
mathlib_hyperbolic (atan, asin, acos, sinh, cosh, asinh, acosh, atanh). They follow the
same rules as the elementary functions: only basic float arithmetic and integer
operations, special values as C99 and numpy give them, or as CHLO's decompositions
define them where C has no function. docs/mathlib.md has the measured accuracy of each
(ulps over sweeps of the whole f32 range, tests/codegen/test_codegen_mathlib_special.py).

Where the elementary functions use truncated Taylor series with exact coefficients,
these do too when a series converges fast enough on a reduced argument; each family's
file says how it reduces and which coefficients are fitted.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_f16 import (
    bf16_bits_to_f32,
    f16_bits_to_f32,
    f32_to_bf16_bits,
    f32_to_f16_bits,
)
from toolchain.codegen.mathlib_ir import I16, _bits, _fmt, _signbit
from toolchain.codegen.mathlib_special_ir import _isnan

# Graph ops computed by these functions: unary, binary (emit.py calls them by name).
SPECIAL_UNARY = frozenset({
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh"})  # fmt: skip
SPECIAL_BINARY = frozenset({"zeta", "polygamma"})

__all__ = ["SPECIAL_BINARY", "SPECIAL_UNARY", "next_after"]


_STEP_FORMATS = {  # storage format -> (to bits, from bits, integer type)
    "f16": (f32_to_f16_bits, f16_bits_to_f32, I16),
    "bf16": (f32_to_bf16_bits, bf16_bits_to_f32, I16),
}


def next_after(b: ir.IRBuilder, x: ir.Value, y: ir.Value, storage: str) -> ir.Value:
    """C's nextafter(x, y) in the storage format `storage` (f16 and bf16 values are
    computed in f32 but step on their own grid: the f32 result is exact). Exact bit
    arithmetic: NaN if either is NaN, y if x == y, the smallest subnormal with y's sign
    from zero, else x's bit pattern one step up or down in magnitude."""
    fmt = _STEP_FORMATS.get(storage)
    if fmt is None:
        it = ir.IntType(_fmt(x.type)[0])
        bits = _bits(b, x)
        from_bits = lambda v: b.bitcast(v, x.type)  # noqa: E731
    else:
        to_bits, from_bits_fn, it = fmt
        bits = to_bits(b, x)
        from_bits = lambda v: from_bits_fn(b, v)  # noqa: E731
    width = it.width
    zero = ir.Constant(x.type, 0.0)
    up = b.icmp_unsigned("==", b.fcmp_ordered(">", y, x), b.fcmp_ordered(">", x, zero))
    one = ir.Constant(it, 1)
    stepped = b.select(up, b.add(bits, one), b.sub(bits, one))
    sign = b.shl(b.zext(_signbit(b, y), it), ir.Constant(it, width - 1))
    stepped = b.select(b.fcmp_ordered("==", x, zero), b.or_(sign, one), stepped)
    r = from_bits(stepped)
    r = b.select(b.fcmp_ordered("==", x, y), y, r)
    return b.select(b.or_(_isnan(b, x), _isnan(b, y)), b.fadd(x, y), r)
