"""How an element type is held in LLVM IR: in memory (its storage type), in registers
(its compute type), and as a constant.

The generic kernel's emitter (codegen/emit.py), the loop nest (codegen/nest.py), the
vector steps (codegen/dot_vector.py) and the other kinds' slots (codegen/slots.py) all
need the same answer; it lives below them so that none of them imports another for it.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from toolchain.codegen.mathlib import F32, F64, I1, I16
from toolchain.types import SMALL_FLOATS, DType, to_dtype


def storage_type(dt: DType) -> ir.Type:
    """How one element sits in memory."""
    if dt.name in SMALL_FLOATS:
        return ir.IntType(8)  # its code, the 6- and 4-bit ones in the low bits
    if dt.is_float:
        return {"f32": F32, "f64": F64, "f16": I16, "bf16": I16}[dt.name]
    if dt.kind == "b":
        return ir.IntType(8)
    return ir.IntType(dt.np_dtype.itemsize * 8)


def compute_type(dt: DType) -> ir.Type:
    """The LLVM type values of dt are computed in."""
    if dt.is_float:
        return F64 if dt.name == "f64" else F32
    if dt.kind == "b":
        return I1
    return ir.IntType(dt.bits)  # i2 / i4 / ui2 / ui4 too: LLVM wraps at their width


def is_unsigned(dt: DType) -> bool:
    """Whether dt's values take LLVM's unsigned instructions (unsigned ints and i1)."""
    return dt.kind in "ub"


def zero_of(t: ir.Type) -> ir.Constant:
    """The zero of an integer or float LLVM type."""
    return ir.Constant(t, 0.0 if isinstance(t, ir.types._BaseFloatType) else 0)


def const_value(b: ir.IRBuilder, value: float | int | bool, dt: DType) -> ir.Value:
    """`value` as a constant of dt's compute type."""
    t = compute_type(dt)
    if dt.is_float:
        # f16 constants are rounded to f16 like a loaded value (bf16 ones arrive rounded).
        v = float(dt.np_dtype.type(value)) if dt.name == "f16" else float(value)
        if dt.name in SMALL_FLOATS:  # likewise rounded to the format
            v = float(to_dtype(np.float64(value), dt))
        return ir.Constant(t, v)
    if dt.kind == "b":
        return ir.Constant(I1, int(bool(value)))
    return ir.Constant(t, int(value) & ((1 << t.width) - 1))
