"""Packed int8 reduction loops handed to a runtime_c microkernel.

codegen/dot.py writes the packed steps as ACLE intrinsics and leaves registers and order
to LLVM. For a tile of one input word against four weight rows (an int8 dense layer, a
convolution tap, four output channels at a time) that costs 40% on Cortex-M4: LLVM's
pre-allocation load/store pass pulls the four rows' loads together to pair them into
LDRDs, the four accumulators no longer fit beside them and one lives on the stack, and
its loop strength reduction addresses the rows by a scaled index instead of stepping
their pointers (28 instructions per 16 MACs on ad01's dense layers). No LLVM option
fixes it for every model (-arm-prera-ldst-opt-reorder-limit=0 helps ad01 and costs
pretrainedResnet 1.6%), and llvmlite's LLVM has no Arm assembly parser, so inline
assembly cannot be emitted. The loop therefore goes to an assembly microkernel compiled
with the runtime for the target's SIMD instruction set (runtime_c/ukernel/<simd>/,
IREE's ukernel idea): 16 instructions per 16 MACs, plus about 28 per call for the
arguments and the accumulators' trip through memory, so a call pays from the table's
`min_steps` packed steps on, or `min_tap_steps` per tap of a window (loops/rules.py
`UKERNELS`, which the tile costs read).

A tile is handed over when every MAC of its packed step belongs to a group of four
points that read the same input word and four weight rows in the paired layout
(kernel/paired.py) at a constant distance from one another, none of them
bounds-checked. Each group (per unrolled tap) is one call covering all steps of the
packed dim; the tile's remaining elements (the reduction's length mod 4) stay with the
generated code. Integer sums in another order are the same sums, so the result is the
reference's bit for bit (tests/codegen/test_dot_ukernel.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from llvmlite import ir

from toolchain.codegen.dot import WIDTH
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import UKERNELS, Ukernel

I32 = ir.IntType(32)
PTR = ir.PointerType()


@dataclass(frozen=True)
class _Call:
    """One microkernel call: the tile points it accumulates (row order), its input
    word and its first weight row (buffer, base-pointer key, element offset), and the
    distance between rows in elements."""

    points: tuple[int, ...]
    x: tuple[int, tuple, int]
    w: tuple[int, tuple, int]
    row_elems: int


class UkernelDotEmitter:
    """The microkernel call for NestEmitter (which provides the builder, the addresses
    and the tile)."""

    def ukernel_packed_loop(self, d: int, points: list[dict[int, int]],
                            slots: list[ir.Value], steps: int) -> bool:
        """Emits packed dim d (`steps` steps of 4 from 0) of the tile's points as
        microkernel calls and returns True; False, emitting nothing, where they do not
        apply."""
        kernel = UKERNELS.get(self.nest.dot)
        if kernel is None:
            return False
        least = kernel.min_tap_steps if self.nest.unroll else kernel.min_steps
        if steps < least or self.gathered:
            return False
        calls = self._ukernel_calls(kernel, points)
        if calls is None:
            return False
        b = self.b
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        accs = b.alloca(ir.ArrayType(I32, kernel.rows), name="ukernel_acc")
        b.position_at_end(here)
        fn = self._ukernel_function(kernel)
        for call in calls:
            cells = [b.gep(accs, [ir.Constant(I32, 0), ir.Constant(I32, r)], inbounds=True)
                     for r in range(kernel.rows)]
            for j, cell in zip(call.points, cells, strict=True):
                b.store(b.load(slots[j]), cell)
            x = self._ukernel_pointer(*call.x)
            w = self._ukernel_pointer(*call.w)
            row_bytes = call.row_elems * 2  # paired: one i16 per int8 weight
            b.call(fn, [cells[0], x, w, ir.Constant(I32, row_bytes), ir.Constant(I32, steps)])
            for j, cell in zip(call.points, cells, strict=True):
                b.store(b.load(cell), slots[j])
        return True

    def _ukernel_function(self, kernel: Ukernel) -> ir.Function:
        module = self.b.module
        fn = module.globals.get(kernel.symbol)
        if fn is None:
            fty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I32, I32])
            fn = ir.Function(module, fty, kernel.symbol)
        return fn

    def _ukernel_pointer(self, buf: int, key: tuple, const: int) -> ir.Value:
        ptr = self._ukernel_bases[(buf, key)]
        return ptr if const == 0 else self._gep_from(buf, ptr, ir.Constant(I32, const))

    def _ukernel_calls(self, kernel: Ukernel, points: list[dict[int, int]]) -> list[_Call] | None:
        """The calls covering every MAC of the tile's packed step, or None."""
        operands = dot_operands(self.k)
        paired = self.k.paired
        if operands is None:
            return None
        x, w = operands if operands[1].operand in paired else operands[::-1]
        if w.operand not in paired or x.operand in paired:
            return None
        self._ukernel_bases: dict[tuple, ir.Value] = {}
        unroll = self.nest.unroll
        groups: dict[tuple, list[tuple[int, tuple[int, tuple, int]]]] = {}
        for tap in itertools.product(*[range(self.k.domain[u]) for u in unroll]):
            self.point.update(zip(unroll, tap))
            for j, p in enumerate(points):
                self.point.update(p)
                xw, ww = self._ukernel_word(x), self._ukernel_word(w)
                if xw is None or ww is None:
                    return None
                groups.setdefault((tap, xw, ww[:2]), []).append((j, ww))
        for u in unroll:
            self.point[u] = 0
        calls = []
        for (_, xw, _), members in groups.items():
            members.sort(key=lambda m: m[1][2])
            if len(members) % kernel.rows:
                return None
            for i in range(0, len(members), kernel.rows):
                chunk = members[i:i + kernel.rows]
                offsets = [m[1][2] for m in chunk]
                gap = offsets[1] - offsets[0]
                if gap <= 0 or gap % WIDTH or \
                        any(b - a != gap for a, b in itertools.pairwise(offsets)):
                    return None
                calls.append(_Call(tuple(m[0] for m in chunk), xw, chunk[0][1], gap))
        return calls

    def _ukernel_word(self, ld) -> tuple[int, tuple, int] | None:
        """(buffer, base key, element offset) of `ld`'s word at the current point at the
        packed dim's start, with its base pointer noted; None where it is bounds-checked
        or not word-aligned."""
        from toolchain.codegen.nest import _flat

        split = self._packed_split(ld)
        if split is None or split[2]:
            return None
        forms, strides, _ = split
        ptr, const, key = self._affine_parts(ld.operand, _flat(forms, strides, range(len(forms))))
        if const % WIDTH:
            return None
        self._ukernel_bases[(ld.operand, key)] = ptr
        return ld.operand, key, const
