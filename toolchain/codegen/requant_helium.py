"""TFLite's int8 requantization four outputs at a time on Helium (cortex-m55).

An int8 layer's epilogue is TFLite's two rounding steps, a zero point and the clamp:

    y = clamp(lo, rounding_divide_by_pot(srdhm(acc + bias[c], M[c]), s[c]) + zp, hi)

Elsewhere kernel/requant.py folds the two steps into one 64-bit multiply-add and shift
per output (~10 instructions on Armv7-M and Armv8.1-M alike, with the loads of its
per-channel record). Helium has both steps as vector instructions over 4 int32 lanes,
so where a depthwise layer's outputs are already the lanes of vector accumulators
(codegen/dot_vector.py `dot lanes`) the unfolded steps run 4 channels at a time:

- srdhm(x, M) is VQRDMULH.S32: (2 x M + 2**31) >> 32, saturated. For every x and M it
  is floor((x M + 2**30) / 2**31), which is gemmlowp's (x M + nudge) / 2**31 truncated
  toward zero with the nudge 2**30 or 1 - 2**30 by sign (kernel/requant.py and
  codegen/emit.py's _srdhm show the identity); both saturate x = M = INT32_MIN alone.
- rounding_divide_by_pot(q, s) rounds half away from zero; VRSHL.S32 by -s rounds half
  up: floor((q + 2**(s-1)) / 2**s), exactly (the sum is formed wider than 32 bits).
  For q < 0 and s >= 1, half away from zero is floor((q - 1 + 2**(s-1)) / 2**s), so
  q - 1 is shifted instead: VAND of q with -s (whose sign bit is set iff s > 0),
  VSHR #31 gives -1 or 0, VQADD adds it (saturating: q - 1 only saturates for
  q = INT32_MIN, and there floor((INT32_MIN + 2**(s-1)) / 2**s) is the same value).
- the zero point is a VADD of a scalar, the clamp VMAX / VMIN against splats.

Per 8 channels (the even and the odd 4, VMULLB's and VMULLT's lanes) that is a VLD20 /
VLD21 pair per per-channel table, 2 x 8 vector instructions, and VMOVNT + VSTRB.16 to
store the 8 int8 results in channel order: ~3.5 instructions an output against ~14 for
the folded scalar form with its lane extraction (kws's depthwise layers).

The fold is exact for every value; this form is exact where s is in [0, 31], which the
scheduler checks on the constants before it keeps a layer unfolded
(loops/requant_lanes.py `keeps_vector_requant`, from schedule/program.py) and records
as the exponent load's `bounds`. The reference is the graph's own two steps (quant/fixedpoint.py).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.loops.requant_lanes import Requant

__all__ = ["requant_vectors"]

I32 = ir.IntType(32)
V4I32 = ir.VectorType(I32, 4)


def requant_vectors(b: ir.IRBuilder, x: ir.Value, m: ir.Value, s: ir.Value,
                    zp: ir.Value, q: Requant) -> ir.Value:
    """The requantized int32 values (clamped, zero point added) of 4 lanes: x the sums
    with their per-channel terms, m, s and zp the lanes' multipliers, exponents and
    zero points (module docstring)."""
    module = b.module
    vqrdmulh = mathlib._intrinsic(module, "llvm.arm.mve.vqrdmulh.v4i32", V4I32,
                                  [V4I32, V4I32])
    # llvm.arm.mve.vshl.vector(value, shifts, saturate, round, unsigned): VRSHL.S32.
    vrshl = mathlib._intrinsic(module, "llvm.arm.mve.vshl.vector.v4i32.v4i32", V4I32,
                               [V4I32, V4I32, I32, I32, I32])
    sadd_sat = mathlib._intrinsic(module, "llvm.sadd.sat.v4i32", V4I32, [V4I32, V4I32])

    def splat(v: int) -> ir.Constant:
        return ir.Constant(V4I32, [v] * 4)

    hi = b.call(vqrdmulh, [x, m])
    neg = b.sub(splat(0), s)
    fix = b.ashr(b.and_(hi, neg), splat(31))  # -1 where hi < 0 and s > 0
    shifted = b.call(vrshl, [b.call(sadd_sat, [hi, fix]), neg, ir.Constant(I32, 0),
                             ir.Constant(I32, 1), ir.Constant(I32, 0)])
    y = b.add(shifted, zp)
    y = b.select(b.icmp_signed("<", y, splat(q.low)), splat(q.low), y)
    return b.select(b.icmp_signed(">", y, splat(q.high)), splat(q.high), y)
