"""int8 dot products four at a time with the target's packed-integer instructions.

An int8 convolution or dense layer sums `int32(x) * int32(w)` over a reduced dim along
which both operands are contiguous (the input channels, a row of the weights). On Arm's
DSP extension (Cortex-M4, M7, M33) one 32-bit load takes four of them, SXTB16 sign-
extends bytes 0 and 2 (and, rotated by 8, bytes 1 and 3) into two 16-bit halves, and
SMLAD multiplies both halves and adds them to the accumulator: 4 MACs in 2 loads, 4
SXTB16 and 2 SMLAD, where the scalar loop takes 4 x (2 loads + 1 multiply-add). The
byte order differs between the two pairs, but equally for x and w, so the sum is the
same: integer arithmetic, exactly the reference's. An operand stored in the paired
layout (kernel/paired.py: a constant's words already as SXTB16 would make them) is
read as its two words, one LDRD, and not unpacked.

A 16x8 layer (int16 activations, int8 weights widened to int16 at build time by
schedule/widen16.py) has both operands int16 as stored: the 4 elements of a step are
two words that already hold the 16-bit pairs (elements 0 and 1, then 2 and 3) in both
operands, so the step is 2 loads per operand (one LDRD) and 2 SMLADs, with no unpacking
(`dsp16`). Each product |x * w| <= 2**15 * 2**7 and the layer accumulates in int32
only where no sum can leave it (quant/build16.py's bound on the constant weights), so
SMLAD's 32-bit sums are the reference's integers; a layer beyond that bound keeps its
int64 sums and the step is SMLALD, both products added to a 64-bit accumulator.

The instructions are LLVM's ACLE intrinsics (`llvm.arm.sxtb16`, `llvm.arm.smlad`),
emitted inline by the loop nest (codegen/nest.py) where the schedule says `dot dsp`:
LLVM schedules and allocates registers across the whole tile, which a C microkernel
called per tile could not share with the epilogue. `DOT_KINDS` is the table of kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.kernel.form import Load
from toolchain.loops.patterns import dot_operands

I32 = ir.IntType(32)
I64 = ir.IntType(64)
WIDTH = 4  # int8 elements per 32-bit word


@dataclass(frozen=True)
class DotKind:
    """How a target sums 4 products into an int32: the intrinsic that unpacks an int8
    word into 16-bit halves ("" for int16 operands, whose words are the halves) and the
    one that multiplies and adds both halves."""

    unpack: str
    mac: str
    mac64: str = ""  # the same into an int64 sum (int16 operands' layers that need one)


DOT_KINDS: dict[str, DotKind] = {
    "dsp": DotKind(unpack="llvm.arm.sxtb16", mac="llvm.arm.smlad"),
    "dsp16": DotKind(unpack="", mac="llvm.arm.smlad", mac64="llvm.arm.smlald"),
}


class DotEmitter:
    """The packed steps, for NestEmitter (which provides the builder, the caches and the
    addresses)."""

    def _unpack(self, word: ir.Value, high: bool) -> ir.Value:
        kind = DOT_KINDS[self.nest.dot]
        b = self.b
        if high:  # bytes 1 and 3: the word rotated right by 8 (folds into SXTB16's ROR)
            fshr = mathlib._intrinsic(b.module, "llvm.fshr.i32", I32, [I32, I32, I32])
            word = b.call(fshr, [word, word, ir.Constant(I32, 8)])
        fn = mathlib._intrinsic(b.module, kind.unpack, I32, [I32])
        return b.call(fn, [word])

    def _pairs(self, ld: Load) -> tuple[ir.Value, ir.Value]:
        """The 16-bit pairs of the 4 elements of `ld` from the current point on (along
        the packed dim): one word, unpacked twice, once per word the tile reads; for an
        operand in the paired layout (kernel/paired.py) the two words as stored."""
        if ld.operand in self.k.paired:
            return self.paired_words(ld)
        if ld.operand in self.gathered:
            return self._gathered_pairs(ld)
        word = self.packed_word(ld)
        key = ("pairs", id(word))
        for scope in reversed(self.scopes):
            hit = scope.get(key)
            if hit is not None:
                return hit[1]
        v = self._unpack(word, False), self._unpack(word, True)
        self.scopes[-1][key] = (word, v)  # keeps word alive, so its id stays unique
        return v

    def _gathered_pairs(self, ld: Load) -> tuple[ir.Value, ir.Value]:
        """The pairs of an operand whose 4 elements are no aligned word (the input of a
        10x4 window, starting at odd bytes; Cortex-M4 builds with +strict-align): each
        element loaded on its own (with its own bounds check, as outside the packed
        steps) and sign-extended, then elements 0 and 2, and 1 and 3, packed into the
        16-bit halves SXTB16 would have made of a word (LLVM selects PKHBT). Made once
        for the tile's points that share the elements."""
        b = self.b
        d = self.nest.reduction[-1]
        key = ("gathered", id(ld), self._point_key(ld))
        for scope in reversed(self.scopes):
            hit = scope.get(key)
            if hit is not None and hit[0] is ld:
                return hit[1]
        was_varying = d in self.varying
        saved = self.point[d]
        self.varying |= {d}
        elems = []
        for u in range(WIDTH):
            self.point[d] = saved + u
            elems.append(b.sext(self.value(ld), I32))
        self.point[d] = saved
        if not was_varying:
            self.varying -= {d}
        mask = ir.Constant(I32, 0xFFFF)

        def pack(lo: ir.Value, hi: ir.Value) -> ir.Value:
            return b.or_(b.and_(lo, mask), b.shl(hi, ir.Constant(I32, 16)))

        v = pack(elems[0], elems[2]), pack(elems[1], elems[3])
        self.scopes[-1][key] = (ld, v)  # keeps ld alive, so its id stays unique
        return v

    def _mac(self, a: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
        kind = DOT_KINDS[self.nest.dot]
        if acc.type == I64:  # SMLALD: the int64 sum of a 16x8 layer beyond int32
            fn = mathlib._intrinsic(self.b.module, kind.mac64, I64, [I32, I32, I64])
        else:
            fn = mathlib._intrinsic(self.b.module, kind.mac, I32, [I32, I32, I32])
        return self.b.call(fn, [a, w, acc])

    def _int16_words(self, ld: Load) -> tuple[ir.Value, ir.Value]:
        """The 4 int16 elements of `ld` from the current point on along the packed dim
        as two words (elements 0 and 1, 2 and 3): two aligned loads, or the pad value in
        both halves where the region's check fails."""
        ok, ptr = self.packed_pointer(ld)

        def words() -> tuple[ir.Value, ir.Value]:
            high = self.b.gep(ptr, [ir.Constant(I32, 1)], inbounds=True, source_etype=I32)
            return self._word_at(ptr), self._word_at(high)

        pair = self._cached(("w16", id(ptr)), words)
        if ok is None:
            return pair
        pad = ir.Constant(I32, (int(ld.pad.value) & 0xFFFF) * 0x00010001)
        return self.b.select(ok, pair[0], pad), self.b.select(ok, pair[1], pad)

    def pair_step(self, acc: ir.Value) -> ir.Value:
        """acc + the 2 products from the current point on along the packed dim of an
        int16 kind (the last pair of a channel count that is even but no multiple of 4,
        schedule/pad_channels16.py): one aligned word per operand and one SMLAD."""
        x, w = dot_operands(self.k)
        return self._mac(self._int16_pair(x), self._int16_pair(w), acc)

    def _int16_pair(self, ld: Load) -> ir.Value:
        """The 2 int16 elements of `ld` from the current point on along the packed dim as
        one aligned word, or the pad value in both halves where the region's check
        fails."""
        ok, ptr = self.packed_pointer(ld)
        word = self._cached(("w", id(ptr)), lambda: self._word_at(ptr))
        if ok is None:
            return word
        pad = ir.Constant(I32, (int(ld.pad.value) & 0xFFFF) * 0x00010001)
        return self.b.select(ok, word, pad)

    def dot_step(self, acc: ir.Value) -> ir.Value:
        """acc + the 4 products from the current point on along the packed dim."""
        x, w = dot_operands(self.k)
        if not DOT_KINDS[self.nest.dot].unpack:  # int16 operands: pairs as stored
            (x0, x1), (w0, w1) = self._int16_words(x), self._int16_words(w)
        else:
            (x0, x1), (w0, w1) = self._pairs(x), self._pairs(w)
        return self._mac(x1, w1, self._mac(x0, w0, acc))
