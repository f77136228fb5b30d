"""How far below its dying operand a dispatch's result may start, derived from its loop
schedule and checked byte by byte.

A convolution whose loops write outputs in about the order they consume the input (rows
then columns then channels, a pointwise or a stride-1 window) can put its result in the
same memory as that input, starting `d` bytes lower: every store then lands on input
bytes that no later load reads any more. `d` is not assumed from the op's kind; it is
found by walking the order the code generator runs the schedule in (codegen/nest.py:
the loop order, the register tiles and their remainders, the border / interior split,
every tap of the window with its padding and stride) and timing every access:

- a tile's loads of the reduction (body and init) happen before any of its stores (the
  nest folds every output of the tile, then runs each output's epilogue and store);
- an output's epilogue loads and its store follow the tile's other outputs in the
  tile's order (row-major over the blocked dims, in the nest's order); so do an
  element-wise body's loads and stores;
- a load whose index is outside the operand (padding) reads nothing that matters: the
  code selects the pad value (its clamped address is read, and thrown away).

An access the code makes earlier than this model says (a value cached from an outer
loop, an invariant hoisted before the loops, a vector load of several outputs' inputs)
only reads the byte earlier, which is safe; stores are never earlier than the model
(LLVM keeps a store after a load it may alias, and operands' buffers are pointers it
cannot tell apart). The result at offset `base - d` is safe iff for every output byte
b, the input byte `b - d` is read by no access timed after b's store; `overlap_distance`
returns the least such d (a multiple of the arena's alignment) below the result's size,
or None when the schedule is not one it can walk (several nests, a gathered index) or
no d below the result's size is safe (then the pair saves nothing).
"""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load, postorder
from toolchain.kernel.interpret import _eval
from toolchain.loops.schedule import LoopSchedule, Nest

__all__ = ["overlap_distance", "tile_order"]

_NEVER = -1  # the read time of an input byte nothing reads


def _runs(nest: Nest, d: int) -> list[tuple[int, int]]:
    """Dim d's tiles, (start, size), in the order codegen/nest.py runs them: in
    increasing order, a blocked range in tiles of the factor and then one smaller tile;
    a dim with an unchecked interior has its low border before it and its high border
    after it, one value at a time."""
    n = nest.domain[d]

    def segment(start: int, stop: int, factor: int) -> list[tuple[int, int]]:
        full, rest = divmod(stop - start, factor)
        out = [(start + i * factor, factor) for i in range(full)]
        return out + ([(start + full * factor, rest)] if rest else [])

    inner = nest.interior_of(d)
    if inner is None:
        return segment(0, n, nest.block(d))
    lo, hi = inner
    return [(v, 1) for v in range(lo)] + segment(lo, hi, nest.block(d)) + [
        (v, 1) for v in range(hi, n)]


def tile_order(nest: Nest) -> tuple[np.ndarray, np.ndarray, int]:
    """(tile, point, k): per output element of the nest's parallel domain, the rank of its
    tile in the run order and its rank within that tile; k is the most points a tile has.
    Tiles run row-major over the dims' runs in the nest's order, and the points of a
    tile row-major over its dims in that order (nest.py's _points)."""
    shape = nest.domain[:nest.n_parallel]
    tile: np.ndarray = np.zeros((), dtype=np.int64)
    point: np.ndarray = np.zeros((), dtype=np.int64)
    most = 1
    for d in nest.order:
        runs = _runs(nest, d)
        rank, offset, size = (np.zeros(shape[d], dtype=np.int64) for _ in range(3))
        for r, (start, n) in enumerate(runs):
            rank[start:start + n] = r
            offset[start:start + n] = np.arange(n)
            size[start:start + n] = n
        along = [shape[d] if a == d else 1 for a in range(len(shape))]
        tile = tile * len(runs) + rank.reshape(along)
        point = point * size.reshape(along) + offset.reshape(along)
        most *= max(n for _, n in runs)
    return np.broadcast_to(tile, shape), np.broadcast_to(point, shape), most


def _index_only(e: Expr) -> bool:
    """Whether an index expression depends on loop indices and constants only."""
    return all(isinstance(x, Index | Const | Apply) for x in postorder(e))


def _flat(index: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Row-major element number of an index tuple (broadcastable arrays)."""
    flat: np.ndarray = np.zeros((), dtype=np.int64)
    for i, n in zip(index, shape, strict=True):
        flat = flat * n + i
    return flat


def _reads(k: Kernel, root: Expr, slots: set[int], grids: list[np.ndarray]
           ) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(operand element, output element) of every in-bounds load of an operand in
    `slots` under `root`, over the (sparse) `grids` of the domain or its parallel part;
    None when an index is data-dependent."""
    out = []
    dest = _flat(grids[:k.n_parallel], k.domain[:k.n_parallel])
    for e in postorder(root):
        if not isinstance(e, Load) or e.operand not in slots:
            continue
        if not all(_index_only(i) for i in e.index):
            return None
        shape = k.operands[e.operand].shape
        idx = [np.asarray(_eval(i, k, grids, []), dtype=np.int64) for i in e.index]
        *idx, at = np.broadcast_arrays(*idx, dest)
        ok = np.ones(at.shape, dtype=bool)
        for size, i in zip(shape, idx, strict=True):
            ok &= (i >= 0) & (i < size)
        elem = _flat(idx, shape) if idx else np.zeros(at.shape, dtype=np.int64)
        out.append((elem[ok], at[ok]))
    return out


def overlap_distance(k: Kernel, schedule: LoopSchedule, slots: set[int],
                     align: int = 16) -> int | None:
    """The least d (a multiple of `align`, below the result's size in bytes) such that
    `k`'s result may start d bytes below the buffer that `k`'s operands `slots` (one
    tensor, maybe bound more than once) are read from, in the same memory, when `k` runs
    with `schedule` (module docstring); None when there is none or the schedule cannot
    be walked."""
    if len(schedule.nests) != 1 or not isinstance(k, Kernel):
        return None
    nest = schedule.nests[0]
    if nest.phases or nest.domain != k.domain or nest.n_parallel != k.n_parallel:
        return None
    src, dst = k.operands[min(slots)], k.result
    out_size = dst.num_elements * dst.dtype.itemsize
    tile, point, most = tile_order(nest)
    stride = 2 * most + 1
    # Times: a tile's reduction loads at its start, then per point its epilogue (or
    # element-wise body) loads, then its store.
    start = (tile * stride).ravel()
    point_read = start + 1 + 2 * point.ravel()
    point_write = start + 2 + 2 * point.ravel()
    grids = list(np.indices(k.domain, sparse=True)) if k.domain else []
    par_grids = grids[:k.n_parallel]
    last = np.full(src.num_elements, _NEVER, dtype=np.int64)
    parts: list[tuple[Expr | None, list[np.ndarray], np.ndarray]] = []
    if k.combine is None:
        parts.append((k.body, grids, point_read))
    else:
        parts += [(k.body, grids, start), (k.init, grids, start),
                  (k.epilogue, par_grids, point_read)]
    for root, g, times in parts:
        if root is None:
            continue
        found = _reads(k, root, slots, g)
        if found is None:
            return None
        for elems, dests in found:
            np.maximum.at(last, elems, times[dests])
    # Per byte: the last read of each input byte, the store time of each output byte.
    last_b = np.repeat(last, src.dtype.itemsize)
    write_b = np.repeat(point_write, dst.dtype.itemsize)
    for d in range(0, out_size, align):
        lo = d  # output bytes b >= d land on input byte b - d >= 0
        hi = min(out_size, d + last_b.size)
        if hi <= lo or not np.any(last_b[lo - d:hi - d] > write_b[lo:hi]):
            return d
    return None
