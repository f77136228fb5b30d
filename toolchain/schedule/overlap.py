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

A nest that runs its tiles in reverse (Nest.reverse) stores its last outputs first, so
its result may start `d` bytes *above* the operand instead: output byte b lands on input
byte b + d, safe iff no access timed after b's store reads it. A chain of overlapped
layers that alternates the two directions stays within about one distance of where it
started, where one direction only drifts by the sum of the distances
(schedule/program.py chooses).
"""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load, postorder
from toolchain.kernel.interpret import _eval
from toolchain.loops.paired_column import PairedColumn, paired_column
from toolchain.loops.schedule import LoopSchedule, Nest

__all__ = ["OverlapWalk", "overlap_distance", "tile_order"]

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
    Tiles run row-major over the dims' runs in the nest's order (in the reverse of that
    order when the nest says `reverse`), and the points of a tile row-major over its
    dims in that order (nest.py's _points; a two-pixel staged tile's with its channel
    dim first)."""
    shape = nest.domain[:nest.n_parallel]
    tile: np.ndarray = np.zeros((), dtype=np.int64)
    point: np.ndarray = np.zeros((), dtype=np.int64)
    most = tiles = 1
    # A two-pixel staged tile stores channel by channel, both pixels each (nest.py _tile).
    c = nest.n_parallel - 1
    in_tile = (c, *(d for d in nest.order if d != c)) if nest.stage == 2 and \
        c in nest.order else nest.order
    for d in nest.order:
        runs = _runs(nest, d)
        rank = np.zeros(shape[d], dtype=np.int64)
        for r, (start, n) in enumerate(runs):
            rank[start:start + n] = r
        along = [shape[d] if a == d else 1 for a in range(len(shape))]
        tile = tile * len(runs) + rank.reshape(along)
        most *= max(n for _, n in runs)
        tiles *= len(runs)
    for d in in_tile:
        offset, size = (np.zeros(shape[d], dtype=np.int64) for _ in range(2))
        for start, n in _runs(nest, d):
            offset[start:start + n] = np.arange(n)
            size[start:start + n] = n
        along = [shape[d] if a == d else 1 for a in range(len(shape))]
        point = point * size.reshape(along) + offset.reshape(along)
    if nest.reverse:
        tile = tiles - 1 - tile
    tile, point = np.broadcast_to(tile, shape), np.broadcast_to(point, shape)
    col = paired_column(nest)
    if col is not None:
        tile, point = _column_order(nest, col, tile, point)
    return tile, point, most


def _column_order(nest: Nest, col: PairedColumn, tile: np.ndarray, point: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """tile_order's ranks with p's last pixel for q in [lo, hi) moved where
    codegen/nest.py runs it (loops/paired_column.py): after row hi - 1's other tiles, in
    tiles of two pixels along q (the last one alone where hi - lo is odd), each pair's
    tiles of the dims inside p in their order. Row hi - 1's own last-pixel tiles held
    ranks [first, first + n) (per context of the dims outside q): the column's tiles go
    between first - 1 and first + n, so every rank is scaled by `m` first."""
    q, p, lo, hi = col.q, col.p, col.lo, col.hi
    tile, point = np.array(tile, dtype=np.int64), np.array(point, dtype=np.int64)
    inner_axes = tuple(nest.order[nest.order.index(p) + 1:])
    row = np.take(np.take(tile, [hi - 1], axis=q), [col.last], axis=p)
    first = row.min(axis=inner_axes, keepdims=True) if inner_axes else row
    inner = row - first  # a tile's rank among one pixel's tiles
    n = int(inner.max()) + 1
    m = -(-(hi - lo) // 2) * n + 2
    along_q = [hi - lo if a == q else 1 for a in range(tile.ndim)]
    rel = np.arange(hi - lo).reshape(along_q)
    j, off = rel // 2, rel % 2
    size = np.where(rel - off + 1 < hi - lo, 2, 1)  # the odd rest is a tile of one
    index = tuple(slice(lo, hi) if a == q else slice(col.last, col.last + 1) if a == p
                  else slice(None) for a in range(tile.ndim))
    lone_point = point[index]
    new_tile = tile * m
    new_tile[index] = np.broadcast_to(first * m + 1 + j * n + inner, lone_point.shape)
    point[index] = lone_point * size + off
    return new_tile, point


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
    None when an index is data-dependent.

    Element numbers and bounds are computed on the sparse index arrays and broadcast to
    the whole iteration space once, at the end: a convolution's space is up to a
    million points, and bounds need checking only for an index that leaves its
    dimension (a padded window), which the sparse arrays' extremes tell. This was half
    of vww_96_int8's scheduling time when every step ran over the whole space."""
    out = []
    dest = _flat(grids[:k.n_parallel], k.domain[:k.n_parallel])
    for e in postorder(root):
        if not isinstance(e, Load) or e.operand not in slots:
            continue
        if not all(_index_only(i) for i in e.index):
            return None
        shape = k.operands[e.operand].shape
        idx = [np.asarray(_eval(i, k, grids, []), dtype=np.int64) for i in e.index]
        full = np.broadcast_shapes(*(i.shape for i in idx), dest.shape)
        elem = np.broadcast_to(_flat(idx, shape) if idx else np.zeros((), dtype=np.int64),
                               full)
        at = np.broadcast_to(dest, full)
        ok = None
        for size, i in zip(shape, idx, strict=True):
            if i.size and (i.min() < 0 or i.max() >= size):
                inside = (i >= 0) & (i < size)
                ok = inside if ok is None else ok & inside
        if ok is None:  # every load in bounds: all of them, in row-major order
            out.append((elem.ravel(), at.ravel()))
        else:
            ok = np.broadcast_to(ok, full)
            out.append((elem[ok], at[ok]))
    return out


def overlap_distance(k: Kernel, schedule: LoopSchedule, slots: set[int],
                     align: int = 16) -> int | None:
    """The least d (a multiple of `align`, below the result's size in bytes) such that
    `k`'s result may start d bytes below the buffer that `k`'s operands `slots` (one
    tensor, maybe bound more than once) are read from, in the same memory, when `k` runs
    with `schedule` (module docstring); d bytes *above* it when the schedule's nest runs
    in reverse (Nest.reverse). None when there is none or the schedule cannot be
    walked."""
    return OverlapWalk(k, slots, align).distance(schedule)


class OverlapWalk:
    """overlap_distance for one kernel and operand under several schedules: which input
    element each access reads, for which output, does not depend on the schedule, so
    it is found once (the schedules only time the accesses)."""

    def __init__(self, k: Kernel, slots: set[int], align: int = 16) -> None:
        self.k, self.slots, self.align = k, slots, align
        self._found: list | None = None

    def _accesses(self) -> list | None:
        """Per part (0: reduction body, 1: init, 2: epilogue or element-wise body), the
        (operand element, output element) pairs of its loads; None when an index is
        data-dependent."""
        if self._found is None:
            k = self.k
            grids = list(np.indices(k.domain, sparse=True)) if k.domain else []
            parts = ([(2, k.body, grids)] if k.combine is None else
                     [(0, k.body, grids), (1, k.init, grids),
                      (2, k.epilogue, grids[:k.n_parallel])])
            found: list = []
            for kind, root, g in parts:
                if root is None:
                    continue
                reads = _reads(k, root, self.slots, g)
                if reads is None:
                    self._found = [None]
                    return None
                found += [(kind, elems, dests) for elems, dests in reads]
            self._found = [found]
        return self._found[0]

    def _staged_start(self, nest: Nest, start: np.ndarray) -> np.ndarray | None:
        """The time of the reduction's loads of the slots' operand when the nest stages
        it for two pixels (Nest.stage 2, the 2x4 microkernel): once per pixel pair,
        before the loop over the output-channel tiles (codegen/nest.py), so at the start
        of the first tile of the pair, not of each tile; None otherwise. Every read of the
        input then goes through the staged copy (loops/rules.py two_pixel_dim: whole
        tiles of channels, a whole number of packed steps). `start`: per output, its
        tile's start time."""
        c = self.k.n_parallel - 1
        if nest.stage != 2 or c not in nest.order:
            return None
        # The reduction of a staged nest is a dot product (loops/rules.py two_pixel_dim)
        # whose other operand, its weights, is a constant: a read of the slots in it is
        # a read of the staged input. The channel dim's loop and every loop inside it
        # run under one staging.
        inner = tuple(nest.order[nest.order.index(c):])
        return np.broadcast_to(start.min(axis=inner, keepdims=True), start.shape).ravel()

    def distance(self, schedule: LoopSchedule) -> int | None:
        """overlap_distance(k, schedule, slots, align)."""
        times = self._times(schedule)
        if times is None:
            return None
        last_b, write_b = times
        first = _least_candidate(last_b, write_b, schedule.nests[0].reverse)
        for d in range(first - first % self.align, write_b.size, self.align):
            if _safe(last_b, write_b, d, schedule.nests[0].reverse):
                return d
        return None

    def shared_distance(self, a: LoopSchedule, b: LoopSchedule) -> int | None:
        """The least distance safe for both schedules, which run their nests in the
        same direction (a 16x8 layer's schedule before and after its weights are
        widened, schedule/widen16_kernels.py), or None."""
        times = [self._times(a), self._times(b)]
        if times[0] is None or times[1] is None:
            return None
        rev = a.nests[0].reverse
        first = max(_least_candidate(*t, rev) for t in times)  # type: ignore[misc]
        for d in range(first - first % self.align, times[0][1].size, self.align):
            if all(_safe(*t, d, rev) for t in times):  # type: ignore[misc]
                return d
        return None

    def _times(self, schedule: LoopSchedule) -> tuple[np.ndarray, np.ndarray] | None:
        """Per input byte the time of its last read, per output byte the time of its
        store (_NEVER: not read); None when the schedule cannot be walked."""
        k = self.k
        if len(schedule.nests) != 1 or not isinstance(k, Kernel):
            return None
        nest = schedule.nests[0]
        if nest.phases or nest.domain != k.domain or nest.n_parallel != k.n_parallel:
            return None
        found = self._accesses()
        if found is None:
            return None
        src, dst = k.operands[min(self.slots)], k.result
        tile, point, most = tile_order(nest)
        stride = 2 * most + 1
        # Times: a tile's reduction loads at its start, then per point its epilogue (or
        # element-wise body) loads, then its store.
        start = (tile * stride).ravel()
        point_read = start + 1 + 2 * point.ravel()
        point_write = start + 2 + 2 * point.ravel()
        staged = self._staged_start(nest, tile * stride)
        last = np.full(src.num_elements, _NEVER, dtype=np.int64)
        for kind, elems, dests in found:
            at = point_read if kind == 2 else staged if kind == 0 and staged is not None \
                else start
            np.maximum.at(last, elems, at[dests])
        # Per byte: the last read of each input byte, the store time of each output byte.
        return (np.repeat(last, src.dtype.itemsize),
                np.repeat(point_write, dst.dtype.itemsize))

    def safe_at(self, schedule: LoopSchedule, d: int) -> bool:
        """Whether the result may start exactly d bytes below the operand (above it
        for a reversed nest). Not implied by d >= distance(schedule): a tile of two
        rows stores the second row's outputs early, so they may land on input the
        next tiles still read at a larger d and not at the least."""
        times = self._times(schedule)
        return times is not None and _safe(*times, d, schedule.nests[0].reverse)


def _least_candidate(last_b: np.ndarray, write_b: np.ndarray, reverse: bool) -> int:
    """A lower bound on the safe distance, from a necessary condition, so the exact check
    starts near the answer instead of at 0 (a large map has thousands of candidates).
    Below (forward), input byte i takes the store of output byte i + d, which must come
    no earlier than i's last read: so some output byte up to i + d is stored at or after
    that read, which puts d at least at the first such byte minus i, unless i + d is
    past the result (then i takes no store). Above (reverse), byte i takes the store of
    i - d: some output byte from i - d on is stored at or after the read, so d is at
    least i minus the last such byte, unless i - d < 0; only bytes i below the result's
    size count there (a byte further up also takes no store when d <= i - size, so it
    bounds nothing)."""
    read = np.nonzero(last_b != _NEVER)[0]
    if reverse:
        read = read[read < write_b.size]
    if read.size == 0 or write_b.size == 0:
        return 0
    if not reverse:
        latest = np.maximum.accumulate(write_b)  # the latest store up to each byte
        first = np.searchsorted(latest, last_b[read])  # first byte stored at or after
        need = np.minimum(first - read, write_b.size - read)
    else:
        latest = np.maximum.accumulate(write_b[::-1])[::-1]  # from each byte on
        # The last byte b with latest[b] >= the read time (-1: none); latest falls.
        last = np.searchsorted(-latest, -last_b[read], side="right") - 1
        need = np.minimum(read - last, read + 1)
    return max(int(need.max()), 0)


def _safe(last_b: np.ndarray, write_b: np.ndarray, d: int, reverse: bool) -> bool:
    """Whether no input byte is read after the store of the output byte landing on it,
    the result d bytes below the operand (above it when `reverse`)."""
    out_size = write_b.size
    if reverse:  # output bytes b < size - d land on input byte b + d
        hi = min(out_size, last_b.size - d)
        return hi <= 0 or not np.any(last_b[d:d + hi] > write_b[:hi])
    lo = d  # output bytes b >= d land on input byte b - d >= 0
    hi = min(out_size, d + last_b.size)
    return hi <= lo or not np.any(last_b[lo - d:hi - d] > write_b[lo:hi])
