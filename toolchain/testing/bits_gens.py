"""The random generator's builders for ops on raw bits: bitcast_convert and the
random number generators (rng_bit_generator, rng).

Their results are bit for bit defined, so the floats they read must have known bits
too, and their tensors stay small (the generators' rounds are slow to compile).
"""

from __future__ import annotations

from toolchain.graph.ir import Tensor
from toolchain.graph.ops import RNG_ALGORITHMS
from toolchain.testing.gen_context import DTYPE_WEIGHTS, Gen, source
from toolchain.types import DTYPES, TensorType

__all__ = ["bitcast_convert", "rng_bit_generator", "rng"]


BITS_TYPES = tuple(n for n in DTYPE_WEIGHTS if n != "i1")


def _raw_float(t: Tensor) -> bool:
    """A float whose NaNs have known bits: a graph input or a constant. Computed NaNs
    (0 / 0, a NaN through convert) have the hardware's sign and payload, which
    bitcast_convert would expose to an exact comparison."""
    return t.producer is None or t.producer.op == "constant"


def bitcast_convert(g: Gen) -> bool:
    """The operand's bits as another type: of the same width (same shape), narrower (one
    more trailing dim of the width ratio) or wider (the trailing dim of that ratio
    consumed). Floats it reads are inputs or constants (_raw_float)."""
    x = source(g, BITS_TYPES, exact=True, max_rank=3)
    if x.type.dtype.is_float and not _raw_float(x):
        x = g.fresh(x.type)
    a = x.type.dtype.bits
    options = []
    for n in BITS_TYPES:
        b = DTYPES[n].bits
        if n == x.type.dtype.name:
            continue
        if b == a:
            options.append((n, x.type.shape))
        elif b < a and x.type.num_elements * (a // b) <= g.max_elements:
            options.append((n, (*x.type.shape, a // b)))
        elif b > a and x.type.rank >= 1 and x.type.shape[-1] * a == b:
            options.append((n, x.type.shape[:-1]))
    if not options:
        return False
    name, shape = g.rng.choice(options)
    g.op("bitcast_convert", [x], dtype=name, shape=tuple(shape))
    return True


# Result types of rng_bit_generator (the spec's integer and float types of 8 to 64 bits).
RNG_BITS_TYPES = tuple(n for n in BITS_TYPES if n != "bf16")


def rng_bit_generator(g: Gen) -> bool:
    """THREE_FRY or PHILOX (DEFAULT is PHILOX) from a ui64 state of 2 or 3 values (an
    input, full range, or a constant); the bits are small tensors: the algorithms'
    rounds make a big fused expression per element, slow to compile."""
    algo = g.rng.choice(RNG_ALGORITHMS)
    n = 2 if algo == "THREE_FRY" else g.rng.choice([2, 3])
    state = g.fresh(TensorType((n,), DTYPES["ui64"]))
    name = g.rng.choice(RNG_BITS_TYPES)
    shape = g.shape(g.rng.randint(0, 2), max_elements=16)
    g.node("rng_bit_generator", [state], {"algorithm": algo, "dtype": name, "shape": shape})
    return True


def rng(g: Gen) -> bool:
    """The old rng op: UNIFORM in [a, b) of any integer or float type, or NORMAL (mean
    a, deviation b) of floats; its numbers are rng_bit_generator's through XLA's
    distributions (frontend/stablehlo_random.py, keyed by the op's place in the source:
    top-level graphs only, where node order is source order)."""
    if g.parent is not None:
        return False
    dist = g.rng.choice(["UNIFORM", "NORMAL"])
    dt = g.dtype("f" if dist == "NORMAL" else "fiu")
    scalar = TensorType((), dt)
    a, b = g.operand(scalar, exact=True), g.operand(scalar, exact=True)
    shape = g.shape(g.rng.randint(1, 2), max_elements=16)
    g.op("rng", [a, b], distribution=dist, dtype=dt.name, shape=shape)
    return True
