"""Loop nests from a LoopSchedule (toolchain/loops): the control structure of a dispatch.

`NestEmitter` is the half of the kernel emitter (codegen/emit.py) that builds loops,
tiles, addresses and stores; emit.py's half turns scalar expressions into instructions.
For each nest of the schedule:

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
  which become the load's immediate offset;
- float sums of products are fused multiply-adds (`llvm.fma`) when the schedule says
  `fma` (the target has them).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.dot import WIDTH, DotEmitter
from toolchain.codegen.dot_ukernel import UkernelDotEmitter
from toolchain.codegen.dot_vector import VectorDotEmitter
from toolchain.kernel.form import (
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    children,
    expr_dtype,
    postorder,
)
from toolchain.kernel.paired import paired_position
from toolchain.loops.affine import Affine, Interval, affine_of, interval_of
from toolchain.loops.patterns import dot_operands
from toolchain.loops.phases import nest_kernel
from toolchain.loops.rules import LANE_KIND, VECTOR_DOT_KINDS, dot_width, packed_written_out
from toolchain.loops.schedule import LoopSchedule, Nest

I1 = ir.IntType(1)
I32 = ir.IntType(32)
NSW = ["nuw", "nsw"]


class NestEmitter(DotEmitter, UkernelDotEmitter, VectorDotEmitter):
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
        self.varying: frozenset[int] = frozenset()
        # Operands the current packed loop reads element by element (_packable).
        self.gathered: frozenset[int] = frozenset()
        self.staged: dict = {}  # Nest.stage: the current pixel's paired input
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
                from toolchain.codegen.emit import EmitError

                raise EmitError(f"kernel {kernel.name!r}: schedule domain {nest.domain} does "
                                f"not match the kernel's {self.k.domain}")
            self._start_nest(nest, schedule)
            if 0 in self.k.domain[:self.k.n_parallel]:
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
        full, rest = divmod(stop - start, factor)
        if rest and self.nest.reverse:
            self._counted(level, d, start + full * factor, 1, factor, rest)
        if full:
            self._counted(level, d, start, full, factor, factor)
        if rest and not self.nest.reverse:
            self._counted(level, d, start + full * factor, 1, factor, rest)

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
            else:
                accs = self._reduction(points)
                for p, acc in zip(points, accs, strict=True):
                    self.point.update(p)
                    self.acc = acc
                    if k.epilogue is None:
                        v = self._cast(acc, k.acc_dtype, k.result.dtype)
                    else:
                        v = self.value(k.epilogue)
                    self._store_point(v)
            for d in blocked:
                self.point[d] = 0
        self.varying = frozenset()

    def _reduction(self, points: list[dict[int, int]]) -> list[ir.Value]:
        """The folded value of each point of the tile. With `partials` P, each point
        folds into P partial sums (the innermost reduction loop's values modulo P), added
        at the end: a float sum's rounding error grows with the length of each chain."""
        from toolchain.codegen.emit import _const_value, compute_type

        if self.nest.dot == LANE_KIND and 0 not in self.k.domain[self.k.n_parallel:]:
            lanes = self._lane_reduction(points)  # codegen/dot_vector.py
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
        neutral = _const_value(b, -0.0 if acc_dt.is_float else 0, acc_dt)
        for u, row in enumerate(slots):
            for slot, v in zip(row, inits, strict=True):
                b.store(v if u == 0 else neutral, slot)
        self._reduce_level(0, points, slots)
        out = [b.load(s) for s in slots[0]]
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

    def _packable(self, d: int) -> bool:
        """Whether both int8 operands can be read 4 elements at a time along reduced dim
        d in this region: stride 1 along d, every index that depends on d proven in
        bounds (one that does not may still be checked: then the whole word is padding
        or not), a constant pad, and every address a multiple of 4 (each other index
        steps by multiples of 4 bytes, and bindings start at multiples of 8:
        docs/module-format.md). A vector kind reads 16 at a time from any address."""
        operands = dot_operands(self.k)
        n = self.k.domain[d]
        self.gathered = frozenset()
        if operands is None or n < dot_width(self.nest.dot):
            return False
        align = 1 if self.nest.dot in VECTOR_DOT_KINDS else WIDTH  # vector loads: any
        saved = {u: self.ranges[u] for u in (d, *self.nest.unroll)}
        self.ranges[d] = (0, n - 1)
        for u in self.nest.unroll:  # every tap the packed loop's body covers
            self.ranges[u] = (0, self.k.domain[u] - 1)
        try:
            words = [self._word_packable(ld, d, align) for ld in operands]
        finally:
            self.ranges.update(saved)
        if all(words):
            return True
        if self.nest.dot in VECTOR_DOT_KINDS:
            return False  # a vector step reads whole vectors, never gathered elements
        # One operand read element by element into the pairs (codegen/dot.py): its
        # loads keep their own bounds checks, so any affine index will do.
        rest = [ld for ld, w in zip(operands, words, strict=True) if not w]
        if len(rest) != 1 or rest[0].operand in self.k.paired or \
                any(affine_of(i) is None for i in rest[0].index):
            return False
        self.gathered = frozenset({rest[0].operand})
        return True

    def _word_packable(self, ld: Load, d: int, align: int = WIDTH) -> bool:
        """Whether int8 load `ld` reads contiguous elements along reduced dim d here,
        from addresses that are multiples of `align` bytes."""
        split = self._packed_split(ld, d)
        if split is None:
            return False
        flat = _flat(*split[:2], range(len(split[0])))
        if flat.coeff(d) != 1 or flat.const % align:
            return False
        # A dim of extent 1 (the one input channel of a 10x4 window) is always 0.
        return not any(c % align for dim, c in flat.terms
                       if dim != d and self.k.domain[dim] > 1)

    def _packed_split(self, ld: Load, d: int | None = None):
        """(affine forms, strides, unproven indices) of an int8 operand at the current
        point, or None when it cannot be read a word at a time: a non-affine index, a
        `valid` test, an unproven index that depends on the packed dim d, or a pad that
        is no constant."""
        k = self.k
        shape = k.operands[ld.operand].shape
        forms = tuple(affine_of(i) for i in ld.index)
        if ld.valid is not None or any(f is None for f in forms):
            return None
        unproven = []
        if ld.pad is not None:
            ranges = {x: self._interval(x) for x in range(len(k.domain))}
            for i, (f, size) in enumerate(zip(forms, shape, strict=True)):
                lo, hi = f.interval(ranges)
                if lo < 0 or hi > size - 1:
                    unproven.append(i)
            if unproven and not (isinstance(ld.pad, Const) and ld.pad.dtype.is_integer):
                return None
            if d is not None and any(forms[i].coeff(d) for i in unproven):
                return None
        return forms, _strides(shape), unproven

    def packed_pointer(self, ld: Load) -> tuple[ir.Value | None, ir.Value]:
        """The address of `ld`'s elements from the current point on along the packed dim,
        and the test that its unproven indices are in bounds (None when every index is
        proven in this region). Where the test fails the address is the operand's
        start, which is always readable, and the caller selects the pad instead."""
        b = self.b
        forms, strides, unproven = self._packed_split(ld)
        proven = _flat(forms, strides, [i for i in range(len(forms)) if i not in unproven])
        if not unproven:
            return None, self._affine_address(ld.operand, proven)
        shape = self.k.operands[ld.operand].shape
        deps = frozenset().union(*(self.deps.get(id(ld.index[i]), frozenset())
                                   for i in unproven))
        key = (id(ld), tuple(unproven), tuple(self.point[x] for x in sorted(deps & self.varying)))

        def test() -> ir.Value:
            ok: ir.Value = ir.Constant(I1, 1)
            for i in unproven:
                idx = self._as_index(ld.index[i])
                ok = b.and_(ok, b.icmp_unsigned("<", idx, ir.Constant(I32, shape[i])))
            return ok

        ok = self._cached(("chk",) + key, test)
        safe = self._cached(("safe",) + key, lambda: b.select(
            ok, self._affine_offset(_flat(forms, strides, unproven)), ir.Constant(I32, 0)))
        return ok, self._gep_from(ld.operand, self._affine_address(ld.operand, proven), safe)

    def packed_word(self, ld: Load) -> ir.Value:
        """The 4 int8 elements of `ld` from the current point on along the packed dim, as
        one aligned 32-bit load (or the pad value in all four bytes where the region's
        check fails)."""
        from toolchain.codegen.dot import I32 as W32

        ok, ptr = self.packed_pointer(ld)
        if ok is None:
            return self._cached(("w", id(ptr)), lambda: self._word_at(ptr))
        pad = int(ld.pad.value) & 0xFF
        return self.b.select(ok, self._word_at(ptr), ir.Constant(W32, pad * 0x01010101))

    def _word_at(self, ptr: ir.Value) -> ir.Value:
        from toolchain.codegen.dot import I32 as W32

        word = self.b.load(ptr, typ=W32)
        word.align = WIDTH
        return word

    def _packed_loop(self, d: int, points: list[dict[int, int]], slots: list[ir.Value]) -> None:
        """Reduced dim d four at a time with the target's int8 dot step, then the rest
        one at a time."""
        if self.nest.dot in VECTOR_DOT_KINDS:
            self._vector_packed_loop(d, points, slots)
            return
        n = self.k.domain[d]
        full, rest = divmod(n, WIDTH)
        self.ranges[d] = (0, (full - 1) * WIDTH)

        def body(i: ir.Value) -> None:
            self.base[d] = i
            with self._scope():
                self._reduce_body(points, slots, packed=True)

        self.base[d] = 0
        with self._scope():
            done = self.ukernel_packed_loop(d, points, slots, full)  # dot_ukernel.py
        if not done and packed_written_out(full, self._paired_rows(points)):
            for i in range(full):
                self.base[d] = i * WIDTH
                self.ranges[d] = (i * WIDTH, i * WIDTH)
                with self._scope():
                    self._reduce_body(points, slots, packed=True)
        elif not done:
            self._loop_range(f"r{d}", 0, full, WIDTH, body)
        self._packed_remainder(d, full * WIDTH, rest, points, slots)

    def _paired_rows(self, points: list[dict[int, int]]) -> int:
        """Rows of a paired operand (distinct weight rows) the tile's packed step reads."""
        operands = dot_operands(self.k)
        if operands is None:
            return 0
        rows = 0
        for ld in operands:
            if ld.operand in self.k.paired:
                deps = self.deps[id(ld)]
                rows = max(rows, len({tuple(p.get(d, 0) for d in sorted(deps)) for p in points}))
        return rows

    def _packed_remainder(self, d: int, start: int, rest: int,
                          points: list[dict[int, int]], slots: list[ir.Value]) -> None:
        """The last `rest` elements of packed dim d, from `start` on, one at a time: the
        part of the reduction a whole packed step (a word, a vector) does not cover."""
        if not rest:
            return
        self.varying |= {d}
        self.base[d] = start
        self.ranges[d] = (start, start)
        with self._scope():
            for u in range(rest):
                self.point[d] = u
                self._reduce_body(points, slots)
        self.point[d] = 0
        self.varying -= {d}

    def _reduce_body(self, points: list[dict[int, int]], slots: list[ir.Value],
                     packed: bool = False) -> None:
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
                accs[j] = self.dot_step(accs[j]) if packed else self._combine(accs[j])
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

    # ----------------------------------------------------------- addresses

    def _affine_address(self, buf: int, form: Affine) -> ir.Value:
        """&buf[form] at the current point: a base from the loop variables (outer loops
        first, so a loop-invariant part can be hoisted) and a constant offset."""
        ptr, const, key = self._affine_parts(buf, form)
        if const == 0:
            return ptr
        return self._cached(("a", buf, key, const),
                            lambda: self._gep_from(buf, ptr, ir.Constant(I32, const)))

    def _affine_parts(self, buf: int, form: Affine) -> tuple[ir.Value, int, tuple]:
        """&buf[form] at the current point as a base pointer (_affine_address), the
        constant element offset from it, and the base's cache key."""
        const = form.const
        dynamic = []
        for d, c in form.terms:
            base = self.base[d]
            const += c * self.point[d]
            if isinstance(base, int):
                const += c * base
            else:
                dynamic.append((d, c))
        rank = {d: i for i, d in enumerate(self._loop_order())}
        dynamic.sort(key=lambda t: rank.get(t[0], len(rank)))
        key = tuple(dynamic)

        def base_ptr() -> ir.Value:
            b = self.b
            off: ir.Value | None = None
            for d, c in dynamic:
                term = self.base[d]
                if c != 1:
                    term = b.mul(term, ir.Constant(I32, c), flags=["nsw"])
                off = term if off is None else b.add(off, term, flags=["nsw"])
            return self._gep(buf, off) if off is not None else self.buffers[buf]

        ptr = self._cached(("p", buf, key), base_ptr) if dynamic else self.buffers[buf]
        return ptr, const, key

    def _loop_order(self) -> tuple[int, ...]:
        return (*self.nest.order, *self.nest.reduction)

    def _store_point(self, value: ir.Value) -> None:
        k = self.k
        coeffs: dict[int, int] = {}
        const = 0
        stride = 1
        # Row-major over the parallel domain of the whole kernel (a phase's nest covers
        # every factor-th output of a dim, from its residue).
        for d in reversed(range(k.n_parallel)):
            scale, offset = self.out_map.get(d, (1, 0))
            coeffs[d] = stride * scale
            const += stride * offset
            stride *= self.out_extents[d]
        buf = len(k.operands)
        ptr = self._affine_address(buf, Affine.of(coeffs, const))
        self.b.store(self._to_storage(value, k.result.dtype), ptr)

    def load_expr(self, e: Load) -> ir.Value:
        """A load at the current point, with bounds checks only where unproven."""
        b = self.b
        k = self.k
        t = k.operands[e.operand]
        shape = t.shape or ()
        forms = self.affine.get(id(e)) or tuple(affine_of(i) for i in e.index)
        if e.operand in k.paired:
            return self._paired_load(e, forms, shape)
        ranges = {d: self._interval(d) for d in range(len(k.domain))}
        unproven = []
        if e.pad is not None:
            for i, (comp, form, size) in enumerate(zip(e.index, forms, shape, strict=True)):
                iv = form.interval(ranges) if form is not None else \
                    interval_of(comp, ranges, k.operands)
                if iv is None or iv[0] < 0 or iv[1] > size - 1:
                    unproven.append(i)
        strides = _strides(shape)
        affine = all(f is not None for f in forms)
        if not unproven and e.valid is None:
            if affine:
                ptr = self._affine_address(e.operand, _flat(forms, strides, range(len(shape))))
                v = self._cached(("l", id(ptr)), lambda: self._load_at(e.operand, ptr))
                if e.bounds is not None and isinstance(v, ir.LoadInstr) \
                        and isinstance(v.type, ir.IntType):
                    lo, hi = e.bounds
                    v.set_metadata("range", b.module.add_metadata(
                        [ir.Constant(v.type, lo), ir.Constant(v.type, hi + 1)]))
                return v
            return self._load(e.operand, self._row_major(e, shape))
        pad = self._cast(self.value(e.pad), expr_dtype(e.pad, k.operands), t.dtype)
        if t.num_elements == 0:
            return pad
        # The tests (and the clamped offset) depend on the unproven indices only: made
        # once for all the points of a tile that agree on those.
        deps = frozenset().union(*(self.deps.get(id(e.index[i]), frozenset()) for i in unproven),
                                 self.deps.get(id(e.valid), frozenset()) if e.valid is not None
                                 else frozenset())
        key = ("chk", id(e), tuple(unproven),
               tuple(self.point[d] for d in sorted(deps & self.varying)))

        def test() -> ir.Value:
            ok: ir.Value = ir.Constant(I1, 1)
            for i in unproven:
                # One unsigned compare covers both i < 0 and i >= size.
                idx = self._as_index(e.index[i])
                ok = b.and_(ok, b.icmp_unsigned("<", idx, ir.Constant(I32, shape[i])))
            if e.valid is not None:
                ok = b.and_(ok, self.value(e.valid))
            return ok

        ok = self._cached(key, test)
        if not affine:
            safe = b.select(ok, self._row_major(e, shape), ir.Constant(I32, 0))
            return b.select(ok, self._load(e.operand, safe), pad)
        # The unproven indices' share of the offset, or 0 where the load is out of
        # bounds: then the address is the proven indices' share alone, inside the
        # operand. The proven share (the tile's own outputs, say) stays a base plus a
        # constant, and the select is made once for all the outputs that share it.
        checked = _flat(forms, strides, unproven)
        proven = _flat(forms, strides, [i for i in range(len(shape)) if i not in unproven])
        safe = self._cached(("safe",) + key[1:], lambda: b.select(
            ok, self._affine_offset(checked), ir.Constant(I32, 0)))
        base, const, bkey = self._affine_parts(e.operand, proven)
        ptr = self._cached(("safe_ptr", e.operand, bkey) + key[1:],
                           lambda: self._gep_from(e.operand, base, safe))
        if const:
            ptr = self._gep_from(e.operand, ptr, ir.Constant(I32, const))
        return b.select(ok, self._load_at(e.operand, ptr), pad)

    def _paired_load(self, e: Load, forms: tuple[Affine | None, ...],
                     shape: tuple[int, ...]) -> ir.Value:
        """One element of an operand in the paired layout (kernel/paired.py), outside the
        packed steps (a reduction's last elements, a region that is not packed): the
        element at row-major offset f sits at f with bits 0 and 1 swapped."""
        self._not_interleaved(e)
        if e.pad is not None or e.valid is not None:
            from toolchain.codegen.emit import EmitError

            raise EmitError(f"kernel {self.k.name!r}: a load of paired operand {e.operand} "
                            "is bounds-checked (the layout is made for weights only)")
        strides = _strides(shape)
        if all(f is not None for f in forms):
            flat = _flat(forms, strides, range(len(shape)))
            # Terms whose coefficient is a multiple of 4 move by whole groups; a term
            # with a known value (a constant loop base) joins the constant. Then the
            # position within the group is the constant's, swapped at build time.
            const, dynamic = flat.const, []
            for d, c in flat.terms:
                if c % WIDTH and isinstance(self.base[d], int):
                    const += c * (self.base[d] + self.point[d])
                else:
                    dynamic.append((d, c))
            if all(c % WIDTH == 0 for _, c in dynamic):
                moved = Affine(tuple(dynamic), (const & ~3) + paired_position(const & 3))
                ptr = self._affine_address(e.operand, moved)
                return self._cached(("l", id(ptr)), lambda: self._load_at(e.operand, ptr))
            offset = self._affine_offset(flat)
        else:
            offset = self._row_major(e, shape)
        b = self.b
        one = ir.Constant(I32, 1)
        differ = b.and_(b.xor(offset, b.lshr(offset, one)), one)  # bit 0 != bit 1
        swapped = b.xor(offset, b.mul(differ, ir.Constant(I32, 3)))
        return self._load(e.operand, swapped)

    def _not_interleaved(self, ld: Load) -> None:
        """Generated code reads a paired operand row by row: one whose rows are
        interleaved is for the 2x4 microkernel alone (loops/rules.py two_pixel_dim)."""
        if ld.operand in self.k.interleaved:
            from toolchain.codegen.emit import EmitError

            raise EmitError(f"kernel {self.k.name!r}: operand {ld.operand}'s rows are "
                            "interleaved, for the 2x4 microkernel only")

    def paired_words(self, ld: Load) -> tuple[ir.Value, ir.Value]:
        """The two words of 16-bit pairs of the 4 elements of `ld` from the current point
        on along the packed dim, stored in the paired layout: what SXTB16 makes of the
        int8 word and of it rotated by 8. Two adjacent aligned loads (one LDRD)."""
        from toolchain.codegen.dot import I32 as W32

        self._not_interleaved(ld)
        forms, strides, unproven = self._packed_split(ld)
        if unproven:
            from toolchain.codegen.emit import EmitError

            raise EmitError(f"kernel {self.k.name!r}: a load of paired operand "
                            f"{ld.operand} is bounds-checked")
        ptr = self._affine_address(ld.operand, _flat(forms, strides, range(len(forms))))

        def words() -> tuple[ir.Value, ir.Value]:
            high = self.b.gep(ptr, [ir.Constant(I32, 1)], inbounds=True, source_etype=W32)
            return self._word_at(ptr), self._word_at(high)

        return self._cached(("pw", id(ptr)), words)

    def _affine_offset(self, form: Affine) -> ir.Value:
        """The element offset `form` as an i32 value at the current point."""
        b = self.b
        const = form.const
        out: ir.Value | None = None
        for d, c in form.terms:
            v = self.index_value(d)
            term = v if c == 1 else b.mul(v, ir.Constant(I32, c), flags=["nsw"])
            out = term if out is None else b.add(out, term, flags=["nsw"])
        if out is None:
            return ir.Constant(I32, const)
        return out if const == 0 else b.add(out, ir.Constant(I32, const), flags=["nsw"])

    def _row_major(self, e: Load, shape: tuple[int, ...]) -> ir.Value:
        b = self.b
        offset: ir.Value = ir.Constant(I32, 0)
        for comp, d in zip(e.index, shape, strict=True):
            offset = b.add(b.mul(offset, ir.Constant(I32, d)), self._as_index(comp))
        return offset


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _flat(forms: tuple[Affine | None, ...], strides: list[int], which) -> Affine:
    """The row-major element offset of the index components `which`."""
    out = Affine((), 0)
    for i in which:
        out = out.plus(forms[i].times(strides[i]))
    return out
