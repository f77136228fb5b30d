"""Loop nests from a LoopSchedule (toolchain/loops): the control structure of a dispatch.

`NestEmitter` is the half of the kernel emitter (codegen/emit.py) that builds loops,
tiles, addresses and stores; emit.py's half turns scalar expressions into instructions.
The addresses, loads and stores are codegen/addresses.py's, the reduction loops that
read int8 words or vectors codegen/packed.py's (and their steps the dot files'); this
file holds the loops, the tiles and the values' caches. For each nest of the schedule:

- parallel dims are loops in the nest's order; a dim with an unchecked interior runs its
  border (the rest of the dim, one loop over both sides) and its interior separately; a
  blocked dim advances a whole tile per iteration and ends with a smaller tile for the
  remainder; a dim with one iteration is no loop at all;
- a tile evaluates the body for each of its outputs (and each unrolled tap) in straight
  code. Values are cached by the loop dims they depend on, so a weight that the tile's
  outputs share is loaded once per pass over the reduction, and loads from the same
  address (the overlapping taps of a window) once;
- a load is bounds-checked only in the indices the current region cannot prove inside
  the operand (interval arithmetic over each loop's range, toolchain/loops/affine.py);
  affine addresses are a loop-invariant base plus a constant offset per tap and output,
  which become the load's immediate offset (codegen/addresses.py);
- float sums of products are fused multiply-adds (`llvm.fma`) when the schedule says
  `fma` (the target has them).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.addresses import AddressEmitter
from toolchain.codegen.dense_rows import DenseRowsEmitter
from toolchain.codegen.depthwise5 import Depthwise5Emitter
from toolchain.codegen.depthwise16 import Depthwise16Emitter
from toolchain.codegen.depthwise_pairs import RowPairEmitter
from toolchain.codegen.depthwise_s2 import StrideTwoEmitter
from toolchain.codegen.dot import DotEmitter
from toolchain.codegen.dot_ukernel import LateSum, UkernelDotEmitter
from toolchain.codegen.dot_vector import LANES_STORED, VectorDotEmitter
from toolchain.codegen.element_types import compute_type, const_value
from toolchain.codegen.errors import EmitError
from toolchain.codegen.fewout import FewoutEmitter
from toolchain.codegen.first_layers import Im2colEmitter
from toolchain.codegen.float_lanes import FloatLaneEmitter
from toolchain.codegen.packed import PackedLoopEmitter
from toolchain.codegen.rows_helium import FourRowEmitter
from toolchain.codegen.tiny_dense import TinyDenseEmitter
from toolchain.kernel.form import (
    Acc,
    Apply,
    Expr,
    Index,
    Kernel,
    Load,
    children,
    expr_dtype,
    postorder,
)
from toolchain.loops.affine import Affine, Interval, affine_of
from toolchain.loops.paired_column import PairedColumn, paired_column
from toolchain.loops.patterns import dot_operands
from toolchain.loops.phases import nest_kernel
from toolchain.loops.rules import LANE_KIND
from toolchain.loops.schedule import LoopSchedule, Nest

I1 = ir.IntType(1)
I32 = ir.IntType(32)
NSW = ["nuw", "nsw"]


class NestEmitter(AddressEmitter, PackedLoopEmitter, DotEmitter, DenseRowsEmitter,
                  UkernelDotEmitter, VectorDotEmitter, RowPairEmitter, StrideTwoEmitter,
                  FourRowEmitter, FloatLaneEmitter, Im2colEmitter, Depthwise5Emitter,
                  FewoutEmitter, TinyDenseEmitter, Depthwise16Emitter):
    """Loop structure for `_KernelEmitter` (emit.py), which provides `b`, `fn`,
    `buffers`, `_load`, `_store_value`, `_cast`, `_binary`, `_value` and `_tensor`."""

    b: ir.IRBuilder
    fn: ir.Function
    k: Kernel
    buffers: list[ir.Value]

    # ----------------------------------------------------------- state

    def _start_nest(self, nest: Nest, schedule: LoopSchedule) -> None:
        self.nest = nest
        self.fma = schedule.fma
        n = len(self.k.domain)
        self.base: dict[int, ir.Value | int] = dict.fromkeys(range(n), 0)
        self.point: dict[int, int] = dict.fromkeys(range(n), 0)
        self.ranges: dict[int, Interval] = dict.fromkeys(range(n), (0, 0))
        self.tile: dict[int, int] = dict.fromkeys(range(n), 1)
        # A loop variable's (step, start % step) from _loop_range: every value it takes
        # is that residue modulo the step (addresses.py reads it for bit-packed loads).
        self.congruence: dict[int, tuple[int, int]] = {}
        self.varying: frozenset[int] = frozenset()
        # Operands the current packed loop reads element by element (_packable).
        self.gathered: frozenset[int] = frozenset()
        self.staged: dict = {}  # Nest.stage: the current pixel's paired input
        # loops/paired_column.py: the lone last pixels of the two-pixel dim, emitted
        # after the outer dim's loop in pairs along it; `column` says which part of the
        # nest is being emitted ("" elsewhere; "rows": the rows without their last
        # pixel; "column": the column itself, paired along the outer dim).
        self.paired_column = paired_column(nest)
        self.column = ""
        # Loads (by id) a region has tested at run time as inside their operand (the
        # staged window's rows, dot_ukernel.py _stage_gathered): read without tests.
        self.tested_in_bounds: frozenset[int] = frozenset()
        self.scopes: list[dict] = [{}]
        self.out_map = {p.dim: (p.factor, p.residue) for p in nest.phases}
        self.deps: dict[int, frozenset[int]] = {}
        self.affine: dict[int, tuple[Affine | None, ...]] = {}
        every = frozenset(range(self.k.n_parallel))
        for root in self.k.roots:
            for e in postorder(root):
                if isinstance(e, Index):
                    d = frozenset((e.dim,))
                elif isinstance(e, Acc):
                    d = every  # the folded value differs for every output
                else:
                    d = frozenset().union(*(self.deps[id(c)] for c in children(e)))
                self.deps[id(e)] = d
                if isinstance(e, Load):
                    self.affine[id(e)] = tuple(affine_of(i) for i in e.index)

    @contextmanager
    def _scope(self) -> Iterator[None]:
        """Values computed inside stay inside: a loop body or a region of its own."""
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def _cached(self, key: tuple, make: Callable[[], ir.Value]) -> ir.Value:
        for scope in reversed(self.scopes):
            hit = scope.get(key)
            if hit is not None:
                return hit[1]
        v = make()
        self.scopes[-1][key] = (None, v)
        return v

    def _point_key(self, e: Expr) -> tuple[int, ...]:
        return tuple(self.point[d] for d in sorted(self.deps.get(id(e), ()) & self.varying))

    def value(self, e: Expr) -> ir.Value:
        """The value of `e` at the current point, computed once per point that differs in
        a dim it depends on (shared subexpressions and shared loads are reused)."""
        key = ("v", id(e), self._point_key(e))
        for scope in reversed(self.scopes):
            hit = scope.get(key)
            if hit is not None and hit[0] is e:
                return hit[1]
        v = self._value(e)
        self.scopes[-1][key] = (e, v)  # keeps e alive, so its id stays unique
        return v

    def index_value(self, dim: int) -> ir.Value:
        base, pt = self.base[dim], self.point[dim]
        if isinstance(base, int):
            return ir.Constant(I32, base + pt)
        if pt == 0:
            return base
        return self._cached(("i", dim, pt),
                            lambda: self.b.add(base, ir.Constant(I32, pt), flags=NSW))

    def _interval(self, dim: int) -> Interval:
        lo, hi = self.ranges[dim]
        pt = self.point[dim]
        return lo + pt, hi + pt

    # ----------------------------------------------------------- the nest

    def emit_schedule(self, kernel: Kernel, schedule: LoopSchedule) -> None:
        """Every nest of `schedule` over `kernel`, one after the other."""
        self.out_extents = kernel.domain[:kernel.n_parallel]
        for nest in schedule.nests:
            self.k = nest_kernel(kernel, nest.phases)
            if self.k.domain != nest.domain or self.k.n_parallel != nest.n_parallel:
                raise EmitError(f"kernel {kernel.name!r}: schedule domain {nest.domain} does "
                                f"not match the kernel's {self.k.domain}")
            self._start_nest(nest, schedule)
            if 0 in self.k.domain[:self.k.n_parallel]:
                continue
            if nest.row_pairs:  # depthwise_pairs.py (_s2.py): calls of a row-pair microkernel
                if not self.emit_stride2():
                    self.emit_row_pairs()
                continue
            if nest.im2col:  # first_layers.py: one call of the im2col microkernel
                self.emit_im2col()
                continue
            if nest.depthwise5:  # depthwise5.py: calls of the 5x5 row-pair microkernel
                self.emit_depthwise5()
                continue
            if nest.depthwise16:  # depthwise16.py: one call of the 16x8 depthwise kernel
                self.emit_depthwise16()
                continue
            if nest.fewout:  # fewout.py: one call of the few-output pixel-tile kernel
                self.emit_fewout()
                continue
            self._hoist_invariants()
            self._parallel(0)
        self.k = kernel

    def _hoist_invariants(self) -> None:
        """Computes, before any loop, every value that depends on no loop index (a
        scalar chain fused from a reduction's result, a broadcast operand): once per
        nest instead of once per iteration. The loads are reads of the dispatch's
        operands, safe anywhere (bounds-checked ones are clamped)."""
        with_acc: set[int] = set()
        for root in self.k.roots:
            for e in postorder(root):
                if isinstance(e, Acc) or any(id(c) in with_acc for c in children(e)):
                    with_acc.add(id(e))
                    continue
                if isinstance(e, Load | Apply) and not self.deps[id(e)]:
                    self.value(e)

    def _parallel(self, level: int) -> None:
        order = self.nest.order
        if level == len(order):
            self._tile()
            return
        d = order[level]
        n = self.k.domain[d]
        if self.nest.stage and d == self.k.n_parallel - 1:
            self.stage_input()  # dot_ukernel.py: the pixel's input, paired once
        col = self.paired_column
        if col is not None and d == col.p and self.column:
            if self.column == "column":  # the last pixel alone along p
                self._counted(level, d, col.last, 1, 1, 1)
            else:  # the pairs before it; its border (or odd tile) is the column's
                self._segment(level, d, 0, col.last, 2)
            return
        inner = self.nest.interior_of(d)
        if inner is None:
            self._segment(level, d, 0, n, self.nest.block(d))
            return
        lo, hi = inner
        if lo == 0:  # a border on the high side only: it comes after the interior
            if self.nest.reverse:
                self._border(level, d, lo, hi, n)
                self._segment(level, d, lo, hi, self.nest.block(d))
                return
            self._segment(level, d, lo, hi, self.nest.block(d))
            self._border(level, d, lo, hi, n)
            return
        self._border(level, d, lo, hi, n,
                     lambda: self._segment(level, d, lo, hi, self.nest.block(d)))

    def _segment(self, level: int, d: int, start: int, stop: int, factor: int) -> None:
        """[start, stop) of dim d in tiles of `factor`, then one smaller tile (in reverse:
        the smaller tile, then the others from the last down)."""
        col = self.paired_column
        if col is not None and d == col.q and not self.column \
                and (start, stop) == (col.lo, col.hi):
            self._paired_column(level, col)
            return
        full, rest = divmod(stop - start, factor)
        if rest and self.nest.reverse:
            self._counted(level, d, start + full * factor, 1, factor, rest)
        if full:
            self._counted(level, d, start, full, factor, factor)
        if rest and not self.nest.reverse:
            self._counted(level, d, start + full * factor, 1, factor, rest)

    def _paired_column(self, level: int, col: PairedColumn) -> None:
        """q's values [lo, hi) with p's pixels but the last, then p's last pixel for
        those values of q two at a time along q (loops/paired_column.py): pixels at
        (q, last) and (q + 1, last) staged together for the 2x4 microkernel, where each
        row's last pixel took a one-pixel call."""
        self.column = "rows"
        self._counted(level, col.q, col.lo, col.hi - col.lo, 1, 1)
        self.column = "column"
        full, rest = divmod(col.hi - col.lo, 2)
        self._counted(level, col.q, col.lo, full, 2, 2)
        if rest:
            self._counted(level, col.q, col.hi - 1, 1, 2, 1)
        self.column = ""

    def _counted(self, level: int, d: int, start: int, count: int, step: int,
                 tile: int) -> None:
        """`count` tiles of `tile` values of dim d, the first at `start`, `step` apart
        (the last first when the nest runs in reverse)."""
        self.tile[d] = tile
        self.ranges[d] = (start, start + (count - 1) * step)
        if count == 1:
            self.base[d] = start
            with self._scope():
                self._parallel(level + 1)
            return

        def body(i: ir.Value) -> None:
            self.base[d] = i
            with self._scope():
                self._parallel(level + 1)

        if self.nest.reverse:
            self._loop_range(f"d{d}", start + (count - 1) * step, count, -step, body)
        else:
            self._loop_range(f"d{d}", start, count, step, body)

    def _border(self, level: int, d: int, lo: int, hi: int, n: int,
                interior: Callable[[], None] | None = None) -> None:
        """Dim d's values outside the interior [lo, hi), one at a time and checked: one
        loop over both sides (the index jumps over the interior), so the border's code
        exists once. `interior` (the interior's loops) runs inside that loop, once,
        between the last value of the low side and the first of the high side: the dim's
        values then run in increasing order (decreasing when the nest runs in reverse:
        the high side, the interior, the low side), which a result written over its own
        operand's memory relies on (schedule/overlap.py)."""
        left, right = lo, n - hi
        rev = self.nest.reverse
        if left == 0 and right == 0:
            if interior is not None:
                interior()
            return
        if right == 0 or left == 0:
            start = 0 if right == 0 else hi
            # The interior is above a low side and below a high side.
            interior_first = (right == 0) == rev
            if interior is not None and interior_first:
                interior()
            self._counted(level, d, start, left + right, 1, 1)
            if interior is not None and not interior_first:
                interior()
            return
        self.tile[d] = 1
        self.ranges[d] = (0, n - 1)

        def body(i: ir.Value) -> None:
            b = self.b
            jump = b.select(b.icmp_signed(">=", i, ir.Constant(I32, lo)),
                            ir.Constant(I32, hi - lo), ir.Constant(I32, 0))
            self.base[d] = b.add(i, jump, flags=NSW)
            with self._scope():
                self._parallel(level + 1)

        if interior is None:
            if rev:
                self._loop_range(f"d{d}.border", left + right - 1, left + right, -1, body)
            else:
                self._loop_range(f"d{d}.border", 0, left + right, 1, body)
            return
        # for (i = 0; i != left + right; i++) { body(i); if (i + 1 == left) interior(); }
        # with the index after the interior a constant, so nothing stays live across it;
        # in reverse for (i = left + right - 1; i >= 0; i--) { body(i);
        # if (i - 1 == left - 1) interior(); }.
        b = self.b
        first, step = (left + right - 1, -1) if rev else (0, 1)
        after_high = left - 1 if rev else left  # the index the interior is entered before
        pre = b.block
        head = self.fn.append_basic_block(f"d{d}.border")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I32, name=f"d{d}_border")
        i.add_incoming(ir.Constant(I32, first), pre)
        body(i)
        # In reverse the index ends at -1: no `nuw`.
        nxt = b.add(i, ir.Constant(I32, step), flags=["nsw"] if rev else NSW)
        done = b.block
        inner = self.fn.append_basic_block(f"d{d}.interior")
        latch = self.fn.append_basic_block(f"d{d}.border.latch")
        b.cbranch(b.icmp_signed("==", nxt, ir.Constant(I32, after_high)), inner, latch)
        b.position_at_end(inner)
        interior()
        after = b.block
        b.branch(latch)
        b.position_at_end(latch)
        j = b.phi(I32, name=f"d{d}_border_next")
        j.add_incoming(nxt, done)
        j.add_incoming(ir.Constant(I32, after_high), after)
        i.add_incoming(j, latch)
        exit_ = self.fn.append_basic_block(f"d{d}.border.end")
        more = (b.icmp_signed(">=", j, ir.Constant(I32, 0)) if rev
                else b.icmp_signed("<", j, ir.Constant(I32, left + right)))
        b.cbranch(more, head, exit_)
        b.position_at_end(exit_)

    def _loop_range(self, name: str, start: int, count: int, step: int,
                    body: Callable[[ir.Value], None]) -> None:
        """for (i = start; i != start + count*step; i += step) body(i); count >= 1. A
        negative step counts down (the index ends below `start`: no `nuw`)."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(name)
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I32, name=name.replace(".", "_"))
        i.add_incoming(ir.Constant(I32, start), pre)
        self.congruence[id(i)] = (abs(step), start % abs(step))
        body(i)
        nxt = b.add(i, ir.Constant(I32, step), flags=NSW if step > 0 else ["nsw"])
        i.add_incoming(nxt, b.block)
        exit_ = self.fn.append_basic_block(f"{name}.end")
        end = ir.Constant(I32, start + count * step)
        b.cbranch(b.icmp_signed("<" if step > 0 else ">", nxt, end), head, exit_)
        b.position_at_end(exit_)

    # ----------------------------------------------------------- tiles

    def _points(self, dims: list[int]) -> list[dict[int, int]]:
        return [dict(zip(dims, p)) for p in itertools.product(
            *[range(self.tile[d]) for d in dims])]

    def _tile(self) -> None:
        k = self.k
        blocked = [d for d in self.nest.order if self.tile[d] > 1]
        points = self._points(blocked)
        self.varying = frozenset(blocked) | frozenset(self.nest.unroll)
        with self._scope():
            if k.combine is None:
                for p in points:
                    self.point.update(p)
                    self._store_point(self.value(k.body))
            elif not self.float_lane_tile(points):  # float_lanes.py: stores its vectors
                accs = self._reduction(points)
                if accs is not None and self._helium_requant_tile(points, accs):
                    accs = None  # codegen/dot_vector.py stored them
                # None: the outputs are stored (Helium's vector requantization)
                pairs = list(zip(points, accs or (), strict=accs is not None))
                if self.nest.stage == 2:
                    # Channel by channel, both pixels: the channel's requantization
                    # values are read once and die (overlap.py tile_order times it so).
                    c = k.n_parallel - 1
                    pairs.sort(key=lambda pa: pa[0].get(c, 0))
                for p, acc in pairs:
                    self.point.update(p)
                    self.acc = self.b.load(acc.cell) if isinstance(acc, LateSum) else acc
                    if k.epilogue is None:
                        v = self._cast(self.acc, k.acc_dtype, k.result.dtype)
                    else:
                        v = self.value(k.epilogue)
                    self._store_point(v)
            for d in blocked:
                self.point[d] = 0
        self.varying = frozenset()

    def _reduction(self, points: list[dict[int, int]]) -> list[ir.Value] | None:
        """The folded value of each point of the tile. With `partials` P, each point
        folds into P partial sums (the innermost reduction loop's values modulo P), added
        at the end: a float sum's rounding error grows with the length of each chain."""
        if self.nest.dot == LANE_KIND and 0 not in self.k.domain[self.k.n_parallel:]:
            lanes = self._lane_reduction(points)  # codegen/dot_vector.py
            if lanes == LANES_STORED:
                return None
            if lanes is not None:
                return lanes
        k = self.k
        acc_dt = k.acc_dtype
        inits = []
        for p in points:
            self.point.update(p)
            inits.append(self._cast(self.value(k.init), expr_dtype(k.init, k.operands), acc_dt))
        if 0 in k.domain[k.n_parallel:]:
            return inits
        b = self.b
        parts = self.nest.partials if self.nest.reduction else 1
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        slots = [[b.alloca(compute_type(acc_dt), name="acc") for _ in points]
                 for _ in range(parts)]
        b.position_at_end(here)
        # -0.0 is the identity of a float sum (+0.0 would turn a sum of -0.0 into +0.0).
        neutral = const_value(b, -0.0 if acc_dt.is_float else 0, acc_dt)
        for u, row in enumerate(slots):
            for slot, v in zip(row, inits, strict=True):
                b.store(v if u == 0 else neutral, slot)
        self._reduce_level(0, points, slots)
        # A slot a microkernel call replaced by its array's cell (dot_ukernel.py,
        # `late`) is read where its output's epilogue starts (_tile).
        out = [b.load(s) if isinstance(s, ir.AllocaInstr) or len(slots) > 1 else LateSum(s)
               for s in slots[0]]
        for row in slots[1:]:
            out = [self._binary(k.combine, x, b.load(s), acc_dt, acc_dt)
                   for x, s in zip(out, row, strict=True)]
        return out

    def _reduce_level(self, level: int, points: list[dict[int, int]],
                      slots: list[list[ir.Value]]) -> None:
        loops = self.nest.reduction
        if level == len(loops):
            self._reduce_body(points, slots[0])
            return
        d = loops[level]
        n = self.k.domain[d]
        parts = len(slots) if level == len(loops) - 1 else 1
        if level == len(loops) - 1 and self.nest.dot not in ("", LANE_KIND) \
                and self._packable(d):
            self._packed_loop(d, points, slots[0])
        elif level == len(loops) - 2 and self.nest.dot == "mve4" and parts == 1 and \
                self._packable(loops[-1]) and \
                self._four_row_loop(d, loops[-1], points, slots[0]):  # rows_helium.py
            pass
        elif parts == 1:
            self.ranges[d] = (0, n - 1)

            def body(i: ir.Value) -> None:
                self.base[d] = i
                with self._scope():
                    self._reduce_level(level + 1, points, slots)

            self._loop_range(f"r{d}", 0, n, 1, body)
        else:
            full, rest = divmod(n, parts)
            self.varying |= {d}

            def steps(count: int) -> None:
                for u in range(count):
                    self.point[d] = u
                    self._reduce_body(points, slots[u])
                self.point[d] = 0

            if full:
                self.ranges[d] = (0, (full - 1) * parts)

                def body(i: ir.Value) -> None:
                    self.base[d] = i
                    with self._scope():
                        steps(parts)

                if full == 1:
                    self.base[d] = 0
                    with self._scope():
                        steps(parts)
                else:
                    self._loop_range(f"r{d}", 0, full, parts, body)
            if rest:
                self.base[d] = full * parts
                self.ranges[d] = (full * parts, full * parts)
                with self._scope():
                    steps(rest)
            self.varying -= {d}
        self.base[d] = 0
        self.ranges[d] = (0, 0)

    def _reduce_body(self, points: list[dict[int, int]], slots: list[ir.Value],
                     packed: bool = False,
                     step: Callable[[ir.Value], ir.Value] | None = None) -> None:
        k = self.k
        b = self.b
        accs = [b.load(s) for s in slots]
        unroll = self.nest.unroll
        taps = itertools.product(*[range(k.domain[d]) for d in unroll])
        order = self._packed_order(points) if packed else list(enumerate(points))
        for tap in taps:
            self.point.update(zip(unroll, tap))
            for j, p in order:
                self.point.update(p)
                accs[j] = (step or self.dot_step)(accs[j]) if packed \
                    else self._combine(accs[j])
        for d in unroll:
            self.point[d] = 0
        for slot, v in zip(slots, accs, strict=True):
            b.store(v, slot)

    def _packed_order(self, points: list[dict[int, int]]) -> list[tuple[int, dict[int, int]]]:
        """The order a packed step visits its tile's points (with their slot index). A
        tile of pixels x output channels reading paired weights visits them channel by
        channel when its pixels are rows (a pixel dim other than the innermost one),
        else pixel by pixel: an order LLVM's register allocation answers to, measured on
        cortex-m4 (kws's 2-row pointwise tile 25 -> 21 instructions per 16 MACs, 1.82 ->
        1.58 per MAC; the same order over 2 columns costs vww_96's pointwise layers 4 to
        14%). docs/architecture.md, "Where the int8 instructions go (Cortex-M4)"."""
        order = list(enumerate(points))
        k = self.k
        dims = sorted(points[0]) if points else []
        operands = dot_operands(k)
        if len(dims) != 2 or operands is None or not k.paired:
            return order
        x, w = (operands if operands[1].operand in k.paired else operands[::-1])
        xdeps, wdeps = self.deps[id(x)], self.deps[id(w)]
        pixels = [d for d in range(k.n_parallel)
                  if k.domain[d] > 1 and d in xdeps and d not in wdeps]
        pixel = [d for d in dims if d in pixels]
        channel = [d for d in dims if d in wdeps and d not in xdeps]
        if len(pixel) != 1 or len(channel) != 1 or pixel[0] == pixels[-1]:
            return order
        return sorted(order, key=lambda jp: (jp[1][channel[0]], jp[1][pixel[0]]))

    def _combine(self, acc: ir.Value) -> ir.Value:
        if self.lane_tile is not None:
            return self.lane_fma(acc)  # float_lanes.py: a vector tile's step
        k = self.k
        acc_dt = k.acc_dtype
        body = k.body
        if (self.fma and k.combine == "add" and isinstance(body, Apply)
                and body.op == "multiply" and body.dtype == acc_dt
                and acc_dt.name in ("f32", "f64")):
            x, y = (self._cast(self.value(a), expr_dtype(a, k.operands), acc_dt)
                    for a in body.args)
            # llvm.fma, not llvm.fmuladd: the schedule asks for FMA only where the target
            # has it, and LLVM's Arm backend turns fmuladd into VMUL + VADD on cores whose
            # VFMA it deems slow (Cortex-M4/M7/M33), which costs an instruction per MAC.
            fn = mathlib._intrinsic(self.b.module, f"llvm.fma.{acc_dt.name}", acc.type,
                                    [acc.type] * 3)
            return self.b.call(fn, [x, y, acc])
        v = self._cast(self.value(body), expr_dtype(body, k.operands), acc_dt)
        return self._binary(k.combine, acc, v, acc_dt, acc_dt)
