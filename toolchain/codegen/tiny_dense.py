"""A tiny dense layer's packed reduction written out row by row, no call (issue 21).

loops/tiny_dense.py gives a dense layer of a few packed steps and a few outputs on a
DSP target (one pixel, paired weights whose rows follow one another) the dot kind
TINY_DENSE_KIND: tiles of up to 16 rows. Here a tile's packed dim is generated code, step
by step:

- the input's word of the step (read two at a time, one LDRD), the last one's bytes
  past a padded input's real ones cleared first (the mask made here; the pad is 0,
  loops/dense_rows.py padded_tail), paired by SXTB16 of the word and of the word
  rotated by 8;
- then each row's two paired weight words of the step and two SMLAD into the row's
  sum. The sums stay in registers from their start to the tile's epilogues: no stack
  array, no call's frame and arguments.

LLVM alone did badly with the same code in the order the nest emits (codegen/packed.py):
its pre-allocation load/store pass gathers loads off one base register to pair them
into LDRD and its scheduler hoisted later rows' and steps' loads above earlier ones, so
the values spilled (16 -> 4 with per-channel scales, 161 instructions against the 1x4
kernel's 131). The weight and input pointers therefore pass through an empty inline-asm
statement that also takes the last sum computed: the next loads can start only when it
is complete, each at an immediate offset from the held-back pointer. The statement has
no text, so LLVM emits nothing for it (it needs no assembly parser). The sums are
SMLAD's exact 32-bit wrap-around sums of the int8 products, the reference's integers,
in another order (tests/codegen/test_tiny_dense.py).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.dot import WIDTH
from toolchain.codegen.errors import EmitError
from toolchain.codegen.mathlib_ir import _intrinsic
from toolchain.loops.tiny_dense import TINY_DENSE_KIND

I32 = ir.IntType(32)
PTR = ir.PointerType()
# A pointer held back until the last sum computed is done (see above).
_AFTER = ir.InlineAsm(ir.FunctionType(PTR, [PTR, I32]), "", "=r,0,r")
# Rows up to which the sums' starts are read together before the input's first words
# (cortex-m4: 16 -> 4 per-channel 105 -> 103 instructions; 16 -> 8 one more).
STARTS_TOGETHER = 6


class TinyDenseEmitter:
    """The written-out rows for NestEmitter (which provides the builder, the addresses
    and, from codegen/dot_ukernel.py and dense_rows.py, the word addresses)."""

    def tiny_dense_loop(self, d: int, points: list[dict[int, int]], slots: list[ir.Value],
                        steps: int) -> bool:
        """Emits packed dim d (`steps` steps of 4 from 0) of the tile's points row by
        row and returns True where the nest is a tiny dense one; False otherwise."""
        if self.nest.dot != TINY_DENSE_KIND:
            return False
        real, xs, rows = self._dense_tile_words(d, points, "a tiny dense tile")
        if len(xs) != 1:
            raise EmitError(f"kernel {self.k.name!r}: a tiny dense tile's rows read more "
                            "than one input")
        b = self.b
        smlad = _intrinsic(b.module, "llvm.arm.smlad", I32, [I32, I32, I32])
        sxtb16 = _intrinsic(b.module, "llvm.arm.sxtb16", I32, [I32])
        ror = _intrinsic(b.module, "llvm.fshr.i32", I32, [I32, I32, I32])
        order = sorted(range(len(points)), key=lambda j: rows[j][2])
        accs = [b.load(slots[j]) for j in order]
        x_ptr = self._ukernel_pointer(*xs.pop())
        w_ptr = self._ukernel_pointer(*rows[order[0]])
        done: ir.Value | None = None

        def after(ptr: ir.Value) -> ir.Value:
            return ptr if done is None else b.call(_AFTER, [ptr, done])

        def word(ptr: ir.Value, i: int) -> ir.Value:
            v = b.load(b.gep(ptr, [ir.Constant(I32, i)], inbounds=True, source_etype=I32),
                       typ=I32)
            v.align = WIDTH
            return v

        stride = 2 * steps  # a row's paired words
        n = len(accs)
        if n <= STARTS_TOGETHER:
            # Every sum's start read before the input: LLVM then reads them together
            # (LDRD), where it read each just before its row's first SMLAD.
            starts = ir.InlineAsm(ir.FunctionType(PTR, [PTR] + [I32] * n), "",
                                  "=r,0" + ",r" * n)
            x_ptr = b.call(starts, [x_ptr, *accs])
        xws: list[ir.Value] = []
        for s in range(steps):
            if s % 2 == 0:  # the input's words two at a time (one LDRD)
                x_ptr = after(x_ptr)
                xws = [word(x_ptr, t) for t in range(s, min(steps, s + 2))]
            xw = xws.pop(0)
            if s == steps - 1 and real < steps * WIDTH:
                xw = b.and_(xw, ir.Constant(I32, (1 << 8 * (real % WIDTH)) - 1))
            lo = b.call(sxtb16, [xw])
            hi = b.call(sxtb16, [b.call(ror, [xw, xw, ir.Constant(I32, 8)])])
            for i in range(len(order)):
                w_ptr = after(w_ptr)
                acc = b.call(smlad, [lo, word(w_ptr, i * stride + 2 * s), accs[i]])
                accs[i] = done = b.call(smlad, [hi, word(w_ptr, i * stride + 2 * s + 1), acc])
        for i, j in enumerate(order):
            b.store(accs[i], slots[j])
        return True
