"""What the old `stablehlo.rng` op computes in minirt: a fixed, documented function.

The spec leaves rng's numbers implementation-defined. minirt makes them deterministic
and the same on every board and on the reference: the k-th rng op the importer meets (in
source order, calls inlined; k = 1, 2, ...) takes the bits of
`rng_bit_generator(THREE_FRY, state = [k, 0])` shaped like its result, and turns them
into numbers as XLA's distributions do (xla/hlo/builder/lib/prng.cc):

- UNIFORM, floats: the bits' top mantissa-width bits as an integer m, u = m * 2^-p
  (p = the mantissa width: 23 for f32), result u * (b - a) + a, in [a, b).
- UNIFORM, integers: with the range r = b - a as an unsigned number of the type's width,
  d = bits mod r, result a + d / 2 + (d - d / 2) (XLA's way of adding without overflow).
- NORMAL (floats): two uniform draws u0, u1 in [0, 1) per element (the bits of shape
  [2, *shape]), Box-Muller: a + b * sqrt(-2 log max(u0, 1e-7)) * cos(2 pi u1).

The op has no hidden state: the same rng op gives the same numbers on every run (and on
every iteration of a loop it sits in).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.types import DType, dtype


def random_bits(b: GraphBuilder, key: int, bits: DType, shape: tuple[int, ...]) -> Tensor:
    """rng_bit_generator(THREE_FRY, [key, 0]) output of element type `bits`."""
    state = b.const(np.array([key, 0], np.uint64), dtype("ui64"))
    attrs = {"algorithm": "THREE_FRY", "dtype": bits.name, "shape": tuple(shape)}
    probe = Node("rng_bit_generator", [state], [], attrs, b.loc)
    types = OPS["rng_bit_generator"].infer(probe)
    return b.graph.add("rng_bit_generator", [state], types, attrs, b.loc).outputs[1]


def _unsigned(dt: DType) -> DType:
    return dtype(f"ui{dt.bits}") if dt.bits > 1 else dt


def _uniform01(b: GraphBuilder, dt: DType, shape: tuple[int, ...], key: int) -> Tensor:
    """Floats in [0, 1): the top mantissa-width bits of the random bits, scaled."""
    mantissa = int(np.finfo(np.float16 if dt.name == "f16" else dt.np_dtype).nmant)
    if dt.name == "bf16":
        mantissa = 7
    bits_t = _unsigned(dtype(f"i{dt.bits}"))
    bits = random_bits(b, key, bits_t, shape)
    top = b.op("shift_right_logical", [bits, b.splat(dt.bits - mantissa, bits_t, shape)])
    return b.op("multiply", [b.op("convert", [top], dtype=dt.name),
                             b.splat(2.0 ** -mantissa, dt, shape)])


def expand_rng(b: GraphBuilder, inputs: list[Tensor], attrs: dict, key: int) -> list[Tensor]:
    """The graph nodes computing `rng(a, b)` (attrs: distribution, dtype, shape)."""
    lo, hi = inputs
    dt, shape = dtype(attrs["dtype"]), tuple(attrs["shape"])
    a = b.op("broadcast_in_dim", [lo], dims=(), shape=shape)
    s = b.op("broadcast_in_dim", [hi], dims=(), shape=shape)
    if attrs["distribution"] == "NORMAL":
        u = _uniform01(b, dt, (2,) + shape, key)
        rank = len(shape)
        u0, u1 = (b.op("reshape", [b.op("slice", [u], start=(k,) + (0,) * rank,
                                        limit=(k + 1,) + shape, strides=(1,) * (rank + 1))],
                       shape=shape) for k in (0, 1))
        u0 = b.op("maximum", [u0, b.splat(1e-7, dt, shape)])
        radius = b.op("sqrt", [b.op("multiply", [b.splat(-2.0, dt, shape),
                                                 b.op("log", [u0])])])
        angle = b.op("multiply", [b.splat(2 * np.pi, dt, shape), u1])
        z = b.op("multiply", [radius, b.op("cosine", [angle])])
        return [b.op("add", [a, b.op("multiply", [s, z])])]
    if dt.is_float:
        u = _uniform01(b, dt, shape, key)
        return [b.op("add", [b.op("multiply", [u, b.op("subtract", [s, a])]), a])]
    ut = _unsigned(dt)
    bits = random_bits(b, key, ut, shape)
    span = b.op("subtract", [_as(b, s, ut), _as(b, a, ut)])
    d = b.op("remainder", [bits, span])
    half = b.op("shift_right_logical", [d, b.splat(1, ut, shape)])
    total = b.op("add", [b.op("add", [a, _as(b, half, dt)]),
                         _as(b, b.op("subtract", [d, half]), dt)])
    return [total]


def _as(b: GraphBuilder, x: Tensor, dt: DType) -> Tensor:
    """x's bits as the integer type dt of the same width."""
    if x.type.dtype == dt:
        return x
    return b.op("bitcast_convert", [x], dtype=dt.name, shape=tuple(x.type.shape))


__all__ = ["expand_rng", "random_bits"]

