"""Reduction loops that read int8 operands a word or a vector at a time.

Where the schedule names a `dot` kind, the innermost reduced dim of an int8 dot product
is read WIDTH (4) elements at a time for Arm's DSP steps (codegen/dot.py) or its
microkernel calls (codegen/dot_ukernel.py), or 16 at a time for the vector kinds
(codegen/dot_vector.py); the elements a whole step does not cover stay one at a time.
This file decides whether a region's loads can be read so (`_packable`), builds their
words' addresses and checks, and runs the packed loop; the steps themselves are the
dot files'. Apart from the loop nest (codegen/nest.py) because it is the one part of
it that only int8 dot products take.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.addresses import flat_offset, row_strides
from toolchain.codegen.dot import I32 as W32
from toolchain.codegen.dot import WIDTH
from toolchain.kernel.form import Const, Load
from toolchain.loops.affine import affine_of
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import VECTOR_DOT_KINDS, dot_width, packed_written_out
from toolchain.loops.tables import INT16_DOT_KINDS, dot_align

INT16_PAIR = 2  # int16 elements per aligned word: one SMLAD operand

I1 = ir.IntType(1)
I32 = ir.IntType(32)


class PackedLoopEmitter:
    """The packed reduction loop for NestEmitter (which provides the point, the caches,
    the addresses and `_reduce_body`)."""

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
        align = dot_align(self.nest.dot)  # vector loads: any; int16 words: 2 elements
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
        if self.nest.dot in VECTOR_DOT_KINDS or self.nest.dot in INT16_DOT_KINDS:
            # A vector step reads whole vectors, an int16 step pairs as stored: never
            # gathered elements.
            return False
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
        flat = flat_offset(*split[:2], range(len(split[0])))
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
        return forms, row_strides(shape), unproven

    def packed_pointer(self, ld: Load) -> tuple[ir.Value | None, ir.Value]:
        """The address of `ld`'s elements from the current point on along the packed dim,
        and the test that its unproven indices are in bounds (None when every index is
        proven in this region). Where the test fails the address is the operand's
        start, which is always readable, and the caller selects the pad instead."""
        b = self.b
        forms, strides, unproven = self._packed_split(ld)
        proven = flat_offset(forms, strides, [i for i in range(len(forms)) if i not in unproven])
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
            ok, self._affine_offset(flat_offset(forms, strides, unproven)), ir.Constant(I32, 0)))
        return ok, self._gep_from(ld.operand, self._affine_address(ld.operand, proven), safe)

    def packed_word(self, ld: Load) -> ir.Value:
        """The 4 int8 elements of `ld` from the current point on along the packed dim, as
        one aligned 32-bit load (or the pad value in all four bytes where the region's
        check fails)."""
        ok, ptr = self.packed_pointer(ld)
        if ok is None:
            return self._cached(("w", id(ptr)), lambda: self._word_at(ptr))
        pad = int(ld.pad.value) & 0xFF
        return self.b.select(ok, self._word_at(ptr), ir.Constant(W32, pad * 0x01010101))

    def _word_at(self, ptr: ir.Value) -> ir.Value:
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
        with self._scope():  # tiny_dense.py, dense_rows.py, dot_ukernel.py
            done = self.tiny_dense_loop(d, points, slots, full) or \
                self.dense_rows_loop(d, points, slots, full) or \
                self.ukernel_packed_loop(d, points, slots, full)
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
        if self.nest.dot in INT16_DOT_KINDS and rest >= INT16_PAIR:
            # A pair of int16 elements is one aligned word of each operand: one SMLAD
            # (start is a whole number of steps of 4, so the word is aligned).
            self.base[d] = start
            self.ranges[d] = (start, start)
            with self._scope():
                self._reduce_body(points, slots, packed=True, step=self.pair_step)
            start, rest = start + INT16_PAIR, rest - INT16_PAIR
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
