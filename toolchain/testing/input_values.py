"""The values a generated graph's inputs and constants are drawn with.

`InputSpec` says how one input is drawn (the type's usual mix, indices, shift counts,
a positive range) and `random_values` draws it: special values, ties and the integer
edges come up often, since they are where the firmware and the reference part ways.
Both the generator (constants) and RandomGraph.inputs (the graph's inputs, from the
seed) draw through here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.types import DType, TensorType, complex_part, round_to_bf16

__all__ = ["InputSpec", "random_values"]


@dataclass
class InputSpec:
    """How a graph input's values are drawn: `data` (the type's usual mix), `index`
    (integers in [lo, hi], a few outside the operand on purpose; in an unsigned type a
    negative one wraps to the largest values, far outside), `shift` (shift counts, some
    past the width), `positive` (floats in [lo, hi])."""

    kind: str = "data"
    lo: float = 0
    hi: float = 0


_SPECIAL = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def random_values(rng: np.random.Generator, ty: TensorType, spec: InputSpec) -> np.ndarray:
    """Values of type `ty` drawn as `spec` says, as the host holds them (bf16 as
    float32 already rounded)."""
    dt, shape = ty.dtype, ty.shape
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        x = rng.random(n) < 0.5
    elif dt.is_complex:
        part = complex_part(dt)
        x = np.empty(n, dt.np_dtype)
        x.real, x.imag = _float_values(rng, part, n, spec), _float_values(rng, part, n, spec)
    elif dt.is_float:
        x = _float_values(rng, dt, n, spec)
    else:
        x = _int_values(rng, dt, n, spec)
    return x.reshape(shape)


def _float_values(rng: np.random.Generator, dt: DType, n: int, spec: InputSpec) -> np.ndarray:
    if spec.kind == "positive":
        x = rng.uniform(spec.lo, spec.hi, n)
    else:
        x = rng.standard_normal(n) * rng.choice([0.5, 1.0, 3.0])
        if rng.random() < 0.35:
            # Multiples of 1/4 (and exact halves): ties for rounding, equal elements for
            # compares and sorts, exact sums.
            x = np.round(x * 4) / 4
        if n and rng.random() < 0.12:
            # Special values: NaN, infinities and signed zeros must flow through exactly.
            k = int(rng.integers(1, min(n, 2) + 1))
            x[rng.choice(n, k, replace=False)] = rng.choice(_SPECIAL, k)
    x = x.astype(dt.np_dtype)
    return round_to_bf16(x) if dt.name == "bf16" else x


def _int_values(rng: np.random.Generator, dt: DType, n: int, spec: InputSpec) -> np.ndarray:
    info = np.iinfo(dt.np_dtype)
    if spec.kind == "index":
        return rng.integers(int(spec.lo), int(spec.hi) + 1, n).astype(dt.np_dtype)
    if spec.kind == "shift":
        width = dt.bits
        x = rng.integers(0, width, n)
        wild = rng.random(n) < 0.2  # past the width, or negative: defined results
        x = np.where(wild, rng.integers(-2, width + 3, n), x)
        return np.clip(x, info.min, info.max).astype(dt.np_dtype)
    mode = rng.random()
    if mode < 0.55:
        x = rng.integers(-9, 10, n)
    elif mode < 0.8:
        # Full range: wrapping sums and products, conversions that saturate.
        return rng.integers(info.min, info.max, n, dtype=dt.np_dtype, endpoint=True)
    else:
        edges = np.array(sorted({info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max}),
                         dtype=object)
        edges = np.array([e for e in edges if info.min <= e <= info.max], dtype=object)
        x = np.where(rng.random(n) < 0.5, rng.choice(edges, n),
                     rng.integers(-9, 10, n).astype(object))
    return np.clip(np.array(x, dtype=object), info.min, info.max).astype(dt.np_dtype)
