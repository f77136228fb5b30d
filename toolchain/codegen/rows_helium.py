"""Four window rows per Helium step: a 10x4 window over one input channel (kws's first
layer) in 16-lane VMLADAVA.S8 steps instead of one 4-lane step per row.

Under `dot mve4` (codegen/dot_vector.py) each output costs one VMLADAVA.S32 per window
row, with a weight and an input load per row shared only by the tile. The rows are 4
contiguous bytes each; in the weights the rows follow one another (a row of 4 taps,
then the next), in the input they are a row of the map apart. So 4 rows are one
16-byte weight vector and one gather of the input (VLDRB.U8 Qd, [Rn, Qm]: the 16 byte
offsets, row * stride + tap, a constant vector held in a register), and VMLADAVA.S8
adds their 16 products: 3 steps an output over 10 rows (2 of 4 rows, then the last 2
rows one 4-lane step each) instead of 10. Integer sums in another order are the same
sums, so the outputs are the reference's bit for bit.

Where the window is inside the input (the nest's interior region) no lane needs a
bounds test; at the border, where rows may be padding lane by lane, the loop stays one
4-lane step per row (whose whole row is padding or not).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.addresses import flat_offset
from toolchain.kernel.form import Load
from toolchain.loops.patterns import dot_operands

I1, I8, I32 = ir.IntType(1), ir.IntType(8), ir.IntType(32)
V16I8 = ir.VectorType(I8, 16)
ROWS = 4  # window rows per 16-lane step (4 rows of 4 taps)
ROW = 4  # taps per row: the 4-lane kind's width
MAX_OFFSET = 255  # VLDRB.U8's gather offsets are bytes


class FourRowEmitter:
    """For NestEmitter: `_four_row_loop`, called by `_reduce_level` for the loop just
    outside an `mve4` packed loop."""

    def _four_row_plan(self, d: int, p: int) -> tuple[Load, Load, int] | None:
        """(the contiguous operand, the gathered one, the gathered one's row stride in
        elements) when reduced dim d's rows can be read 4 at a time over packed dim p in
        the current region, else None."""
        k = self.k
        operands = dot_operands(k)
        if operands is None or k.domain[p] != ROW or k.domain[d] < ROWS or \
                self.nest.partials != 1:
            return None
        saved = {u: self.ranges[u] for u in (d, p)}
        self.ranges[d], self.ranges[p] = (0, k.domain[d] - 1), (0, ROW - 1)
        try:
            splits = [self._packed_split(ld) for ld in operands]
        finally:
            self.ranges.update(saved)
        if any(s is None or s[2] for s in splits):  # unreadable or bounds-checked here
            return None
        strides = []
        for forms, row_strides, _ in splits:
            flat = flat_offset(forms, row_strides, range(len(forms)))
            if flat.coeff(p) != 1:
                return None
            strides.append(flat.coeff(d))
        (x, w), (sx, sw) = operands, strides
        if sw != ROW:  # the weights' rows must run on: swap roles if the input's do
            (x, w), (sx, sw) = (w, x), (sw, sx)
        if sw != ROW or sx <= 0 or (ROWS - 1) * sx + ROW - 1 > MAX_OFFSET:
            return None
        return w, x, sx

    def _four_row_loop(self, d: int, p: int, points: list[dict[int, int]],
                       slots: list[ir.Value]) -> bool:
        """Reduced dim d (window rows) 4 rows a step over packed dim p, the rest of the
        rows one 4-lane step each (the `mve4` packed loop). False where the plan does
        not apply (nothing emitted)."""
        plan = self._four_row_plan(d, p)
        if plan is None:
            return False
        contiguous, gathered, stride = plan
        b = self.b
        n = self.k.domain[d]
        full = n // ROWS
        offsets = ir.Constant(ir.VectorType(I32, 16),
                              [r * stride + t for r in range(ROWS) for t in range(ROW)])
        vmladava = mathlib._intrinsic(b.module, "llvm.arm.mve.vmldava.v16i8", I32,
                                      [I32, I32, I32, I32, V16I8, V16I8])
        vptr = ir.VectorType(ir.PointerType(), 16)
        gather = mathlib._intrinsic(b.module, "llvm.masked.gather.v16i8.v16p0", V16I8,
                                    [vptr, I32, ir.VectorType(I1, 16), V16I8])
        every = ir.Constant(ir.VectorType(I1, 16), [1] * 16)
        zero = ir.Constant(I32, 0)
        self.ranges[p] = (0, 0)
        self.point[p] = 0
        self.base[p] = 0

        def step(i: ir.Value | int) -> None:
            self.base[d] = i
            with self._scope():
                accs = [b.load(s) for s in slots]
                for j, pt in enumerate(points):
                    self.point.update(pt)
                    _, wptr = self.packed_pointer(contiguous)
                    wv = b.load(wptr, typ=V16I8)
                    wv.align = 1
                    _, xptr = self.packed_pointer(gathered)
                    xs = b.gep(xptr, [offsets], source_etype=I8)
                    xs.type = vptr  # a vector of addresses (llvmlite types it scalar)
                    xv = b.call(gather, [xs, ir.Constant(I32, 1), every,
                                         ir.Constant(V16I8, None)])
                    accs[j] = b.call(vmladava, [zero, zero, zero, accs[j], xv, wv])
                for s, v in zip(slots, accs, strict=True):
                    b.store(v, s)

        self.ranges[d] = (0, (full - 1) * ROWS)
        if full == 1:
            step(0)
        else:
            self._loop_range(f"r{d}", 0, full, ROWS, step)
        for r in range(full * ROWS, n):  # the last rows: the 4-lane packed loop
            self.base[d] = r
            self.ranges[d] = (r, r)
            with self._scope():
                self._packed_loop(p, points, slots)
        return True
