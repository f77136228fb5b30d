"""Which int8 epilogues Helium requantizes in vector lanes, and their parts.

codegen/requant_helium.py computes TFLite's two rounding steps 4 channels at a time
(VQRDMULH, VRSHL) for a depthwise layer whose outputs are the lanes of vector
accumulators (`dot lanes`). It needs the epilogue unfolded, so the scheduler asks
`keeps_vector_requant` before kernel/requant.py folds it into the scalar 64-bit form:
on a SIMD row with `lane_requant`, a kernel with a lane dim of at least one vector
whose epilogue is exactly

    convert_i8(clamp(lo, rounding_divide_by_pot(srdhm(acc [+ bias[c]], M[c]), s[c]) + zp, hi))

with every s in [0, 31] (VRSHL's range; recorded as the exponent load's `bounds`,
which `match_requant` then requires) stays unfolded. The tables are read along the
lane dim, contiguous, so 8 channels are one pair of deinterleaving loads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from toolchain.kernel.form import (
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.loops.access import _flat_index, lane_dim
from toolchain.loops.cold import cold_kernel
from toolchain.loops.patterns import dot_operands, int16_dot
from toolchain.loops.tables import SIMD
from toolchain.target.descriptors import Target
from toolchain.types import dtype

__all__ = ["LANE_REQUANT_WIDTH", "MAX_EXPONENT", "REQUANT_GROUP", "VECTOR_REQUANT_OPS",
           "Requant", "keeps_vector_requant", "match_requant", "requant_dim"]

SRDHM, RDBP = "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot"
_I32, _I8 = dtype("i32"), dtype("i8")
LANE_REQUANT_WIDTH = 16  # the lanes of a depthwise tile (the row's int8_lanes)
REQUANT_GROUP = 4  # int32 lanes of a Helium register: output channels per vector
# Instructions per output of the vector requantization (4 at a time: the sums moved
# into a register, VQRDMULH, the rounding shift's 4, zero point, clamp, the store;
# the tables' loads shared by the tile's pixels), for the tile costs (loops/rules.py).
VECTOR_REQUANT_OPS = 4
MAX_EXPONENT = 31  # VRSHL by -s equals rounding_divide_by_pot only for s in [0, 31]


@dataclass(frozen=True)
class Requant:
    """The parts of a matched epilogue: the per-channel terms added to the sum (a bias,
    an input zero point's correction; none: acc alone), the multiplier, exponent and
    zero point (each a Load contiguous along the channels or a Const) and the clamp
    bounds."""

    terms: tuple[Load | Const, ...]
    multiplier: Load | Const
    exponent: Load | Const
    zero_point: Load | Const
    low: int
    high: int


def _i32(e: Expr) -> bool:
    return isinstance(e, Apply) and e.dtype == _I32


def _per_channel(e: Expr, k: Kernel, c: int) -> bool:
    """An int32 constant, or an unpadded load of an int32 table whose elements are
    contiguous along dim c (indexed by the channel alone, or at the whole output index),
    so 4 or 8 channels are one vector load."""
    if isinstance(e, Const):
        return e.dtype == _I32
    if not (isinstance(e, Load) and e.pad is None and e.valid is None
            and k.operands[e.operand].dtype == _I32):
        return False
    flat = _flat_index(k, e)
    return flat is not None and flat.coeff(c) == 1 and \
        all(x < k.n_parallel for x, _ in flat.terms)


def _sum_terms(e: Expr) -> list[Expr]:
    """The leaves of a tree of i32 adds."""
    if _i32(e) and e.op == "add":
        return [t for a in e.args for t in _sum_terms(a)]
    return [e]


def requant_dim(k: Kernel) -> int | None:
    """The dim along which k's outputs are requantized 4 at a time on Helium: its lane
    dim (a depthwise layer), else for an int8 dot (a convolution, a dense layer) its
    innermost parallel dim, the output channels, where the tile blocks them in fours
    (the scalar sums gathered into a vector) and an operand is shared by them; None for
    other kernels."""
    c = lane_dim(k)
    if c is not None:
        return c
    operands = dot_operands(k)
    if not k.is_reduction or operands is None or int16_dot(k):
        return None
    c = k.n_parallel - 1
    # Blocking the channels in fours must share a load between them (the input of a
    # convolution or dense layer). A depthwise layer with a channel multiplier reads
    # other inputs per channel: there the tiles lost 10-20% (bench/shapes.py).
    if all(any(isinstance(e, Index) and e.dim == c for i in ld.index for e in postorder(i))
           for ld in operands):
        return None
    return c


def match_requant(k: Kernel) -> Requant | None:
    """The requantization of k's epilogue when it is exactly convert_i8(clamp(lo,
    rdbp(srdhm(acc [+ t1[c] + ...], M[c]), s[c]) + zp[c], hi)) with every value per
    channel along its requant_dim c (_per_channel), else None."""
    c = requant_dim(k)
    e = k.epilogue
    if c is None or not (isinstance(e, Apply) and e.op == "convert" and e.dtype == _I8):
        return None
    (clamp,) = e.args
    if not (_i32(clamp) and clamp.op == "clamp"):
        return None
    lo, body, hi = clamp.args
    if not (isinstance(lo, Const) and isinstance(hi, Const)
            and -128 <= int(lo.value) <= int(hi.value) <= 127):
        return None
    if not (_i32(body) and body.op == "add"):
        return None
    rdbp, zp = body.args
    if _i32(zp) and zp.op == RDBP:
        rdbp, zp = zp, rdbp
    if not (_per_channel(zp, k, c) and _i32(rdbp) and rdbp.op == RDBP):
        return None
    srdhm, s = rdbp.args
    if not (_i32(srdhm) and srdhm.op == SRDHM):
        return None
    x, m = srdhm.args
    leaves = _sum_terms(x)
    accs = [t for t in leaves if isinstance(t, Acc)]
    terms = tuple(t for t in leaves if not isinstance(t, Acc))
    if len(accs) != 1 or not all(_per_channel(t, k, c) for t in terms):
        return None
    if not (_per_channel(m, k, c) and _per_channel(s, k, c)):
        return None
    bounded = (0 <= int(s.value) <= MAX_EXPONENT) if isinstance(s, Const) else \
        (s.bounds is not None and s.bounds[0] >= 0 and s.bounds[1] <= MAX_EXPONENT)
    if not bounded:
        return None
    return Requant(terms, m, s, zp, int(lo.value), int(hi.value))


def keeps_vector_requant(k: Kernel, target: Target | None,
                         constant_of: Callable[[int], np.ndarray | None]) -> Kernel | None:
    """On a SIMD row with `lane_requant` (Helium): k with its exponent load's bounds
    set from the constant (every value in [0, 31]) when its epilogue is the
    requantization codegen/requant_helium.py computes in vectors and its lane dim spans
    at least one vector; the scheduler then leaves the epilogue unfolded (kernel/
    requant.py). None otherwise: fold as usual."""
    if target is None or not SIMD[target.capabilities.simd].lane_requant:
        return None
    c = requant_dim(k) if k.is_reduction else None
    if c is None or not (isinstance(k.init, Const) and k.init.value == 0):
        return None
    # A cold kernel keeps its plain loops (loops/rules.py choose_schedule's test, with
    # loops/tables.py Budget.cold_points): no tile, no vectors, so the unfolded steps
    # would run scalar (dense layers of 3 to 27
    # inputs to 32 outputs lost 20-45% on bench/shapes.py).
    if cold_kernel(k, target):
        return None
    if lane_dim(k) is None:  # output channels blocked in fours, none left over
        if k.domain[c] % REQUANT_GROUP:
            return None
    elif k.domain[c] < LANE_REQUANT_WIDTH:
        return None
    bounded = _bounded_exponent(k, constant_of)
    if bounded is None or match_requant(bounded) is None:
        return None
    return bounded


def _bounded_exponent(k: Kernel,
                      constant_of: Callable[[int], np.ndarray | None]) -> Kernel | None:
    """k with its rounding shift's exponent load bounded to [0, 31], when every value
    of the constant is in that range."""
    ok = [True]

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        e = with_children(e, kids)
        if isinstance(e, Apply) and e.op == RDBP and isinstance(e.args[1], Load):
            s = e.args[1]
            values = constant_of(s.operand)
            if values is None:
                ok[0] = False
                return e
            values = np.asarray(values)
            if values.size == 0 or values.min() < 0 or values.max() > MAX_EXPONENT:
                ok[0] = False
                return e
            # The range VRSHL needs, not the constant's own: identical layers with other
            # exponents keep identical code (codegen/image.py shares it).
            bounded = replace(s, bounds=(0, MAX_EXPONENT))
            return Apply(e.op, (e.args[0], bounded), e.dtype)
        return e

    if k.epilogue is None:
        return None
    out = replace(k, epilogue=rewrite(k.epilogue, fn))
    return out if ok[0] else None
