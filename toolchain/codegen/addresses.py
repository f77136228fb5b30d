"""Addresses, loads and stores of the loop nest (codegen/nest.py) at the current point.

An element's address is a loop-invariant base pointer plus a constant offset per tap
and output, which becomes the load's immediate offset; a load is bounds-checked only in
the indices the current region cannot prove inside the operand, and a checked load reads
from a clamped address, never out of bounds. Operands in the paired layout
(kernel/paired.py) are read here too, element by element or as their two words, and
so are bit-packed sub-byte constants (kernel/sub_byte.py), a byte and a shift.

A file of its own because it is the nest's second idea: the loops decide where the
current point is, these methods what memory it touches. The packed steps
(codegen/packed.py, dot.py, dot_ukernel.py, dot_vector.py) build on the same addresses.
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.dot import I32 as W32
from toolchain.codegen.dot import WIDTH
from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Load, expr_dtype
from toolchain.kernel.paired import paired_position
from toolchain.kernel.sub_byte import per_byte
from toolchain.loops.affine import Affine, affine_of, interval_of

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)


class AddressEmitter:
    """Addresses, loads and stores for NestEmitter (which provides the point, the
    caches and the builder; emit.py's half the element loads and conversions)."""

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
        self.b.store(self._to_storage(value, self.k.result.dtype), self.output_pointer())

    def output_pointer(self) -> ir.Value:
        """The address of the output at the current point."""
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
        return self._affine_address(buf, Affine.of(coeffs, const))

    def load_expr(self, e: Load) -> ir.Value:
        """A load at the current point, with bounds checks only where unproven."""
        b = self.b
        k = self.k
        t = k.operands[e.operand]
        shape = t.shape or ()
        forms = self.affine.get(id(e)) or tuple(affine_of(i) for i in e.index)
        if e.operand in k.paired:
            return self._paired_load(e, forms, shape)
        if e.operand in k.bit_packed:
            return self._bit_packed_load(e, forms, shape)
        ranges = {d: self._interval(d) for d in range(len(k.domain))}
        unproven = []
        if e.pad is not None and id(e) not in getattr(self, "tested_in_bounds", ()):
            for i, (comp, form, size) in enumerate(zip(e.index, forms, shape, strict=True)):
                iv = form.interval(ranges) if form is not None else \
                    interval_of(comp, ranges, k.operands)
                if iv is None or iv[0] < 0 or iv[1] > size - 1:
                    unproven.append(i)
        strides = row_strides(shape)
        affine = all(f is not None for f in forms)
        if not unproven and e.valid is None:
            if affine:
                ptr = self._affine_address(e.operand,
                                           flat_offset(forms, strides, range(len(shape))))
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
        checked = flat_offset(forms, strides, unproven)
        proven = flat_offset(forms, strides, [i for i in range(len(shape)) if i not in unproven])
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
            raise EmitError(f"kernel {self.k.name!r}: a load of paired operand {e.operand} "
                            "is bounds-checked (the layout is made for weights only)")
        strides = row_strides(shape)
        if all(f is not None for f in forms):
            flat = flat_offset(forms, strides, range(len(shape)))
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

    def _bit_packed_load(self, e: Load, forms: tuple[Affine | None, ...],
                         shape: tuple[int, ...]) -> ir.Value:
        """One element of a bit-packed sub-byte operand (kernel/sub_byte.py): element f
        is bits (f % n) * bits.. of byte f // n, n = 8 // bits. The byte is loaded and
        shifted down, then truncated to the compute type (i4 / i2), whose widening
        sign- or zero-extends it.

        Where the element's position in its byte is known at build time the shift is a
        constant and the byte a base plus an immediate, as for any load: the offset is
        a loop-invariant dynamic part (each loop variable times its coefficient) plus a
        constant, and the dynamic part's residue modulo n is known when every loop
        variable's step (self.congruence) times its coefficient is a multiple of n (an
        int4 weight read in tiles of an even number of output channels, rows of an
        even length). Otherwise the shift is computed from the offset at run time."""
        b = self.b
        k = self.k
        dt = k.operands[e.operand].dtype
        n = per_byte(dt)
        log_n = n.bit_length() - 1
        strides = row_strides(shape)
        ok = self._bit_packed_in_bounds(e, shape)
        if ok is None and all(f is not None for f in forms):
            flat = flat_offset(forms, strides, range(len(shape)))
            const, dynamic, residue = flat.const, [], 0
            for d, c in flat.terms:
                const += c * self.point[d]
                base = self.base[d]
                if isinstance(base, int):
                    const += c * base
                    continue
                step, start = self.congruence.get(id(base), (1, 0))
                if (c * step) % n:
                    residue = None
                    break
                dynamic.append((d, c))
                residue += c * start
            if residue is not None:
                # flat = dyn + const, dyn = r (mod n): byte (dyn - r) / n (exact) plus
                # (const + r) // n, and element (const + r) % n of that byte.
                r = residue % n
                lead = const + r
                key = tuple(dynamic)

                def base_byte() -> ir.Value:
                    dyn: ir.Value | None = None
                    for d, c in key:
                        term = self.base[d]
                        if c != 1:
                            term = b.mul(term, ir.Constant(I32, c), flags=["nsw"])
                        dyn = term if dyn is None else b.add(dyn, term, flags=["nsw"])
                    if r:
                        dyn = b.sub(dyn, ir.Constant(I32, r), flags=["nsw"])
                    return self._gep(e.operand, b.ashr(dyn, ir.Constant(I32, log_n)))

                ptr = self._cached(("bp", e.operand, key), base_byte) if key \
                    else self.buffers[e.operand]
                if lead // n:
                    at = ptr
                    ptr = self._cached(("bpa", e.operand, key, lead // n),
                                       lambda: self._gep_from(e.operand, at,
                                                              ir.Constant(I32, lead // n)))
                byte = ptr
                raw = self._cached(("bl", id(byte)), lambda: b.load(byte, typ=I8))
                shift = (lead % n) * dt.bits
                bits = b.lshr(raw, ir.Constant(I8, shift)) if shift else raw
                return b.trunc(bits, ir.IntType(dt.bits))
        offset = self._affine_offset(flat_offset(forms, strides, range(len(shape)))) \
            if all(f is not None for f in forms) else self._row_major(e, shape)
        if ok is not None:  # out of bounds: read element 0 instead, then take the pad
            offset = b.select(ok, offset, ir.Constant(I32, 0))
        byte = self._gep(e.operand, b.lshr(offset, ir.Constant(I32, log_n)))
        raw = b.zext(b.load(byte, typ=I8), I32)
        shift = b.shl(b.and_(offset, ir.Constant(I32, n - 1)),
                      ir.Constant(I32, dt.bits.bit_length() - 1))
        value = b.trunc(b.lshr(raw, shift), ir.IntType(dt.bits))
        if ok is None:
            return value
        pad = self._cast(self.value(e.pad), expr_dtype(e.pad, k.operands), dt) \
            if e.pad is not None else value
        return b.select(ok, value, pad)

    def _bit_packed_in_bounds(self, e: Load, shape: tuple[int, ...]) -> ir.Value | None:
        """For a bounds-checked load of a bit-packed operand, the i1 that says it is in
        bounds (every index the current region cannot prove, and `valid`); else None."""
        if e.pad is None and e.valid is None:
            return None
        b = self.b
        ranges = {d: self._interval(d) for d in range(len(self.k.domain))}
        ok: ir.Value = ir.Constant(I1, 1)
        for comp, size in zip(e.index, shape, strict=True):
            form = affine_of(comp)
            iv = form.interval(ranges) if form is not None else \
                interval_of(comp, ranges, self.k.operands)
            if iv is None or iv[0] < 0 or iv[1] > size - 1:
                ok = b.and_(ok, b.icmp_unsigned("<", self._as_index(comp),
                                                ir.Constant(I32, size)))
        if e.valid is not None:
            ok = b.and_(ok, self.value(e.valid))
        return ok

    def _not_interleaved(self, ld: Load) -> None:
        """Generated code reads a paired operand row by row: one whose rows are
        interleaved is for the 2x4 microkernel alone (loops/rules.py two_pixel_dim)."""
        if ld.operand in self.k.interleaved:
            raise EmitError(f"kernel {self.k.name!r}: operand {ld.operand}'s rows are "
                            "interleaved, for the 2x4 microkernel only")

    def paired_words(self, ld: Load) -> tuple[ir.Value, ir.Value]:
        """The two words of 16-bit pairs of the 4 elements of `ld` from the current point
        on along the packed dim, stored in the paired layout: what SXTB16 makes of the
        int8 word and of it rotated by 8. Two adjacent aligned loads (one LDRD)."""
        self._not_interleaved(ld)
        forms, strides, unproven = self._packed_split(ld)
        if unproven:
            raise EmitError(f"kernel {self.k.name!r}: a load of paired operand "
                            f"{ld.operand} is bounds-checked")
        ptr = self._affine_address(ld.operand, flat_offset(forms, strides, range(len(forms))))

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


def row_strides(shape: tuple[int, ...]) -> list[int]:
    """Elements between consecutive values of each index of a row-major array."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def flat_offset(forms: tuple[Affine | None, ...], strides: list[int], which) -> Affine:
    """The row-major element offset of the index components `which`."""
    out = Affine((), 0)
    for i in which:
        out = out.plus(forms[i].times(strides[i]))
    return out
