"""sqrt, rsqrt and cbrt in f32: the instruction on FPU targets, Newton's iteration from
a bit-pattern guess elsewhere.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.mathlib_ir import (
    F32,
    I32,
    INF,
    NAN,
    _fconst,
    _iconst,
    _intrinsic,
    _negate_if,
    fabs,
    target_features,
)
from toolchain.codegen.mathlib_table import _define, math_function


def _sqrt_newton(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt for targets without an FPU: first guess halves the exponent field (<= 6 % off),
    three Newton steps y = (y + x/y)/2 (errors 6e-2 -> 2e-3 -> 2e-6 -> rounding): <= 1 ulp."""
    tiny = b.fcmp_ordered("<", x, _fconst(F32, 2.0**-100))
    xs = b.select(tiny, b.fmul(x, _fconst(F32, 2.0**100)), x)  # keep the guess normal
    guess = b.add(b.lshr(b.bitcast(xs, I32), _iconst(32, 1)), _iconst(32, 0x1FC00000))
    y = b.bitcast(guess, F32)
    for _ in range(3):
        y = b.fmul(_fconst(F32, 0.5), b.fadd(y, b.fdiv(xs, y)))
    y = b.select(tiny, b.fmul(y, _fconst(F32, 2.0**-50)), y)
    # 0, inf and NaN return themselves; negatives are NaN.
    keep = b.or_(
        b.fcmp_unordered("ueq", x, _fconst(F32, 0.0)),
        b.fcmp_ordered("==", x, _fconst(F32, INF)),
    )
    y = b.select(keep, x, y)
    return b.select(b.fcmp_ordered("<", x, _fconst(F32, 0.0)), _fconst(F32, NAN), y)


def sqrt_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt of an f32 inline: llvm.sqrt on FPU targets, else a call to the Newton function
    (mathlib.sqrt_value does the same for every width)."""
    if target_features(b.module).hardware_sqrt:
        return b.call(_intrinsic(b.module, "llvm.sqrt.f32", F32, [F32]), [x])
    return b.call(math_function(b.module, "sqrt", F32), [x])


@_define("sqrt")
def _sqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    if target_features(b.module).hardware_sqrt:
        return b.call(_intrinsic(b.module, "llvm.sqrt.f32", F32, [F32]), [x])
    return _sqrt_newton(b, x)


@_define("rsqrt")
def _rsqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # 1/sqrt(x): two roundings after a <= 1 ulp sqrt, <= 2 ulp.
    return b.fdiv(_fconst(F32, 1.0), _sqrt(b, x))


@_define("cbrt")
def _cbrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # Guess: the bit pattern divided by 3 and rebiased (<= 10 % off); four Newton steps
    # y -= (y^3 - a)/(3y^2) square the error each time (1e-1 -> 1e-2 -> 1e-4 -> 1e-8): <= 2 ulp.
    ax = fabs(b, x)
    tiny = b.fcmp_ordered("<", ax, _fconst(F32, 2.0**-100))
    a = b.select(tiny, b.fmul(ax, _fconst(F32, 2.0**102)), ax)
    guess = b.add(b.udiv(b.bitcast(a, I32), _iconst(32, 3)), _iconst(32, 0x2A555555))
    y = b.bitcast(guess, F32)
    third = _fconst(F32, 1.0 / 3.0)
    for _ in range(4):
        y = b.fmul(b.fadd(b.fadd(y, y), b.fdiv(a, b.fmul(y, y))), third)
    y = b.select(tiny, b.fmul(y, _fconst(F32, 2.0**-34)), y)
    keep = b.or_(
        b.fcmp_unordered("ueq", ax, _fconst(F32, 0.0)),
        b.fcmp_ordered("==", ax, _fconst(F32, INF)),
    )
    y = _negate_if(b, b.fcmp_ordered("<", x, _fconst(F32, 0.0)), y)
    return b.select(keep, x, y)
