"""The math library's shared IR-building blocks: the IR types, what the target's FPU
can do (TargetFeatures, recorded per module), the special constants and the small
helpers every family of functions uses (Horner's rule, bit casts, powers of two,
rounding to an integer, read-only tables in `.rodata`).

It exists so that the imports of the math library run one way: the families of
functions (mathlib_exp, mathlib_trig, ..., mathlib_f64, the special functions) and the
dispatcher (mathlib.py) all build on this file, and it imports none of them.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

from llvmlite import ir

F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

SECTION_PREFIX = ".text."
PREFIX = "mrt_math_"


@dataclass(frozen=True)
class TargetFeatures:
    """What the IR emitters may assume about the target's floating-point hardware."""

    hardware_sqrt: bool = False  # llvm.sqrt.f32 is one instruction, never a sqrtf call
    hardware_f16: bool = False  # fpext/fptrunc half <-> float are instructions
    hardware_f64: bool = False  # double-precision FPU (llvm.sqrt.f64 is an instruction)
    simd: str = ""  # the target's SIMD kind (its runtime_c/ukernel/<simd> calls exist)


_FEATURES: weakref.WeakKeyDictionary[ir.Module, TargetFeatures] = weakref.WeakKeyDictionary()


def set_target_features(module: ir.Module, features: TargetFeatures) -> None:
    """Records what the module's target can do; emitters consult it per module."""
    _FEATURES[module] = features


def target_features(module: ir.Module) -> TargetFeatures:
    """The module's features; the conservative default (no FPU tricks) if never set."""
    return _FEATURES.get(module, TargetFeatures())


INF = math.inf
NAN = math.nan

# --------------------------------------------------------------------------- helpers


def _fconst(t: ir.Type, v: float) -> ir.Constant:
    return ir.Constant(t, v)


def _iconst(bits: int, v: int) -> ir.Constant:
    return ir.Constant(ir.IntType(bits), v & ((1 << bits) - 1))


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


def fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """|x| (llvm.fabs: a sign-bit clear on every target, never a call)."""
    return b.call(_intrinsic(b.module, f"llvm.fabs.{_suffix(x.type)}", x.type, [x.type]), [x])


def _negate_if(b: ir.IRBuilder, cond: ir.Value, v: ir.Value) -> ir.Value:
    return b.select(cond, b.fneg(v), v)


def _signbit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """x's sign bit is set (true for -0.0 too)."""
    return b.icmp_signed("<", _bits(b, x), _iconst(_fmt(x.type)[0], 0))


def _suffix(t: ir.Type) -> str:
    return {F32: "f32", F64: "f64", F16: "f16"}[t]


def _fmt(t: ir.Type) -> tuple[int, int, int]:
    """(total bits, mantissa bits, exponent bias) of an IEEE format."""
    return (32, 23, 127) if t == F32 else (64, 52, 1023)


def _bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.bitcast(x, ir.IntType(_fmt(x.type)[0]))


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2**n as f32 for an i32 n in [-126, 127], built from its exponent field."""
    e = b.shl(b.add(n, _iconst(32, 127)), _iconst(32, 23))
    return b.bitcast(e, F32)


def _horner(b: ir.IRBuilder, z: ir.Value, coeffs: list[float]) -> ir.Value:
    """c0 + z*(c1 + z*(c2 + ...)) in f32."""
    acc = _fconst(F32, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, z), _fconst(F32, c))
    return acc


def _round_to_i32(b: ir.IRBuilder, t: ir.Value, limit: float) -> ir.Value:
    """Nearest integer (ties away from zero) of t clamped to +-limit; NaN gives 0.

    The clamp comes first because fptosi of an out-of-range value is poison.
    """
    lim = _fconst(F32, limit)
    t = b.select(b.fcmp_ordered(">", t, lim), lim, t)
    t = b.select(b.fcmp_ordered("<", t, b.fneg(lim)), b.fneg(lim), t)
    t = b.select(b.fcmp_unordered("uno", t, t), _fconst(F32, 0.0), t)
    half = _fconst(F32, 0.5)
    t = b.fadd(t, b.select(b.fcmp_ordered("<", t, _fconst(F32, 0.0)), b.fneg(half), half))
    return b.fptosi(t, I32)


def _rodata_table(module: ir.Module, name: str, t: ir.Type, values: list) -> ir.GlobalVariable:
    """An internal constant array in its own `.rodata.<name>` section, emitted once."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    ty = ir.ArrayType(t, len(values))
    g = ir.GlobalVariable(module, ty, name)
    g.initializer = ir.Constant(ty, [ir.Constant(t, v) for v in values])
    g.global_constant = True
    g.linkage = "internal"
    g.section = ".rodata." + name
    g.align = 4
    return g


def _load_entry(b: ir.IRBuilder, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
    ptr = b.gep(table, [_iconst(32, 0), index], inbounds=True, source_etype=table.value_type)
    return b.load(ptr, typ=table.value_type.element)
