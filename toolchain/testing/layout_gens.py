"""The random generator's builders for ops that move values: layout (broadcast,
reshape, transpose, reverse, concatenate, slice, pad, iota, constant) and indexing
(gather, dynamic_slice, dynamic_update_slice).

The attributes span what the StableHLO spec allows, not only the common cases:
unsorted broadcast dimensions, negative and interior padding, gathers with batching
dimensions, and start indices that fall outside the operand (drawn on purpose).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Tensor
from toolchain.testing.gen_context import DTYPE_WEIGHTS, Gen, source
from toolchain.testing.input_values import InputSpec
from toolchain.types import DTYPES, TensorType

__all__ = ["broadcast_in_dim", "reshape", "transpose", "reverse", "concatenate", "slice_",
           "pad", "iota", "constant", "gather", "dynamic_slice", "dynamic_update_slice"]


def broadcast_in_dim(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), max_rank=3)
    src = x.type.shape
    rank = g.rng.randint(len(src), min(4, len(src) + 2))
    positions = sorted(g.rng.sample(range(rank), len(src)))
    if g.chance(0.2):
        g.rng.shuffle(positions)  # the spec allows broadcast dims in any order
    out = [0] * rank
    for i, p in enumerate(positions):
        out[p] = src[i] if src[i] != 1 or g.chance(0.5) else g.rng.randint(1, 4)
    room = max(1, g.max_elements // max(1, int(np.prod([d for d in out if d], dtype=np.int64))))
    for p in range(rank):
        if out[p] == 0:
            out[p] = g.rng.randint(1, max(1, min(4, room)))
            room = max(1, room // out[p])
    if int(np.prod(out, dtype=np.int64)) > g.max_elements:
        return False
    g.op("broadcast_in_dim", [x], dims=tuple(positions), shape=tuple(out))
    return True


def _factor_shape(g: Gen, n: int) -> tuple[int, ...]:
    """A random shape of n elements (rank 0 to 4)."""
    dims: list[int] = []
    rest = n
    for _ in range(g.rng.randint(0, 3)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = g.rng.choice(divisors)
        dims.append(d)
        rest //= d
    if rest > 1 or not dims and n != 1:
        dims.append(rest)
    g.rng.shuffle(dims)
    return tuple(dims)


def reshape(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS))
    shape = _factor_shape(g, x.type.num_elements)
    if shape == x.type.shape:
        shape = (x.type.num_elements,) if x.type.rank != 1 else (1, x.type.num_elements)
    g.op("reshape", [x], shape=shape)
    return True


def transpose(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=2)
    perm = list(range(x.type.rank))
    while perm == sorted(perm):
        g.rng.shuffle(perm)
    g.op("transpose", [x], permutation=tuple(perm))
    return True


def reverse(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    dims = g.rng.sample(range(x.type.rank), g.rng.randint(1, x.type.rank))
    g.op("reverse", [x], dims=tuple(dims))
    return True


def concatenate(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    d = g.rng.randrange(x.type.rank)
    parts = [x]
    total = x.type.num_elements
    for _ in range(g.rng.randint(1, 3)):
        shape = list(x.type.shape)
        shape[d] = g.rng.randint(1, 3)
        ty = TensorType(tuple(shape), x.type.dtype)
        if total + ty.num_elements > g.max_elements:
            break
        total += ty.num_elements
        parts.append(g.operand(ty))
    if len(parts) == 1 and g.chance(0.7):
        return False
    g.rng.shuffle(parts)
    g.op("concatenate", parts, dimension=d)
    return True


def slice_(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    starts, limits, strides = [], [], []
    for d in x.type.shape:
        s = g.rng.randint(0, d - 1)
        lim = g.rng.randint(s + 1, d)
        starts.append(s)
        limits.append(lim)
        strides.append(g.rng.choice([1, 1, 2, 3]))
    g.op("slice", [x], start=tuple(starts), limit=tuple(limits), strides=tuple(strides))
    return True


def pad(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    value = g.operand(TensorType((), x.type.dtype))
    low, high, interior = [], [], []
    size = 1
    for d in x.type.shape:
        it = g.rng.choice([0, 0, 0, 1, 2])
        full = d + (d - 1) * it
        lo = g.rng.randint(-1, 2)
        hi = g.rng.randint(-1, 2)
        while full + lo + hi < 1:  # negative padding crops, but keep something
            lo, hi = lo + 1, hi + 1
        low.append(lo)
        high.append(hi)
        interior.append(it)
        size *= full + lo + hi
    if size > g.max_elements:
        return False
    g.op("pad", [x, value], low=tuple(low), high=tuple(high), interior=tuple(interior))
    return True


def iota(g: Gen) -> bool:
    shape = g.shape(g.rng.randint(1, 3))
    dt = g.dtype("fiu")
    g.op("iota", [], dimension=g.rng.randrange(len(shape)), shape=shape, dtype=dt.name)
    return True


def constant(g: Gen) -> bool:
    g.pool.append(g.const(TensorType(g.shape(), g.dtype())))
    return True


INDEX_TYPES = ("i32", "i64", "i8", "i16", "ui8", "ui32")


def gather(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1, max_rank=3)
    shape = x.type.shape
    rank = len(shape)
    dims = list(range(rank))
    g.rng.shuffle(dims)
    batching = [dims.pop()] if rank > 1 and g.chance(0.2) else []
    k = g.rng.randint(1, min(2, len(dims))) if dims else 0
    if k == 0:
        return False
    start_map = dims[:k]
    sizes = [g.rng.randint(1, d) for d in shape]
    collapsed = sorted(d for d in range(rank) if d not in batching and g.chance(0.4))
    for d in collapsed + batching:
        sizes[d] = 1
    n_batch = g.rng.randint(0, 2)
    batch_shape = [g.rng.randint(1, 3) for _ in range(n_batch)]
    idx_batching: list[int] = []
    if batching:
        # An operand batching dim pairs with an indices batch dim of the same size.
        if not batch_shape:
            batch_shape.append(1)
        j = g.rng.randrange(len(batch_shape))
        batch_shape[j] = shape[batching[0]]
        idx_batching = [j]
    implicit = k == 1 and g.chance(0.3)
    ivd = len(batch_shape) if implicit else g.rng.randint(0, len(batch_shape))
    idx_shape = list(batch_shape)
    if not implicit:
        idx_shape.insert(ivd, k)
    # Batch dims of the indices are numbered in the indices' own dims (ivd skipped).
    idx_batching = [j if j < ivd or implicit else j + 1 for j in idx_batching]
    offsets = [d for d in range(rank) if d not in collapsed and d not in batching]
    out_rank = len(batch_shape) + len(offsets)
    offset_dims = sorted(g.rng.sample(range(out_rank), len(offsets)))
    n_out = int(np.prod(batch_shape, dtype=np.int64)) * int(
        np.prod([sizes[d] for d in offsets], dtype=np.int64))
    if n_out > g.max_elements:
        return False
    it = DTYPES[g.rng.choice(INDEX_TYPES)]
    hi = max(shape) + 1
    idx = g.operand(TensorType(tuple(idx_shape), it), spec=InputSpec("index", -1, hi))
    g.op("gather", [x, idx], offset_dims=tuple(offset_dims),
         collapsed_slice_dims=tuple(collapsed), operand_batching_dims=tuple(batching),
         start_indices_batching_dims=tuple(idx_batching), start_index_map=tuple(start_map),
         index_vector_dim=ivd, slice_sizes=tuple(sizes))
    return True


def _starts(g: Gen, shape: tuple[int, ...], sizes: tuple[int, ...]) -> list[Tensor]:
    it = DTYPES[g.rng.choice(INDEX_TYPES)]
    return [g.operand(TensorType((), it), spec=InputSpec("index", -2, d - s + 2))
            for d, s in zip(shape, sizes)]


def dynamic_slice(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    sizes = tuple(g.rng.randint(1, d) for d in x.type.shape)
    g.op("dynamic_slice", [x, *_starts(g, x.type.shape, sizes)], slice_sizes=sizes)
    return True


def dynamic_update_slice(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    sizes = tuple(g.rng.randint(1, d) for d in x.type.shape)
    update = g.operand(TensorType(sizes, x.type.dtype))
    g.op("dynamic_update_slice", [x, update, *_starts(g, x.type.shape, sizes)])
    return True
