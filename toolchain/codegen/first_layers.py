"""An int8 convolution over 1-4 input channels: each output pixel's window staged once
(im2col), then runtime_c's channel loops over it.

schedule/first_layer_records.py says why and binds the records (per chunk of staged
words the channels' bias, weight pairs and requantization) that the loops of
runtime_c/ukernel/dsp/mrt_im2col_dsp.c read. This file emits the rest, with the layer's
geometry as constants:

- where a window leaves the input (SAME padding) and the input with its padding fits
  PADDED_BYTES, a copy of it on the stack with the padding written out (the rows above
  and below by words, the columns beside each row by bytes), so every window is inside;
  otherwise a border pixel's taps are tested one by one (about 6 instructions a tap,
  against 2 inside: on 19x6 under a 1x7 or dilated window every pixel is at the border);
- a loop over the output pixels that stages the window's K taps as 16-bit values in the
  weights' order (LDRSB + STRH a tap, at constant offsets from the window's first), an
  odd K's last lane 0, written once. The runtime's C is built for size (-Oz), where
  this staging ran 5 instructions a tap in loops; here the taps are unrolled;
- the channel loops: where the window is one chunk (up to 8 words, or 9-20 streamed:
  first_layer_records `FirstLayerPlan.streamed`), a whole output row
  is staged and one call walks its pixels; otherwise one call per chunk and pixel, the
  partial sums in a stack array. A layer whose epilogue looks the requantized value up
  in an activation's table calls the _lut loop of its last (or only) chunk, with the
  table's entry for 0 (in the records, after the channels').

A 1x1 window over one channel reads its records as a table instead: per pixel the row of
its input value is copied to the output (`_i2c_table`).
"""

from __future__ import annotations

from dataclasses import replace

from llvmlite import ir

from toolchain.codegen.errors import EmitError
from toolchain.codegen.pointwise_asm import emit_pointwise_asm
from toolchain.kernel.form import Kernel
from toolchain.schedule.first_layer_plan import X, Y, first_layer_plan
from toolchain.schedule.first_layer_records import lookup_offset

I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
PTR = ir.PointerType()
# mrt_im2col_dsp.c's loops, by kind and words: mrt_i2c_<kind><words>_s8.
KINDS = ("only", "first", "mid", "last")
# A copy of the input with its padding written out, on the stack, up to this many bytes:
# every window is then inside it, staged without tests (a border pixel's taps were
# tested one by one, about 6 instructions a tap: on 19x6 under a 1x7 or dilated window
# every pixel is at the border). Larger inputs (vww_96's 96x96x3) keep the tests.
PADDED_BYTES = 4096
# Rows of at most this many bytes are copied into it by unrolled loads and stores.
UNROLLED_ROW = 64

__all__ = ["Im2colEmitter", "loop_symbol"]


def loop_symbol(index: int, chunks: int, words: int, lookup: bool = False) -> str:
    """The channel loop of chunk `index` of `chunks`, over `words` staged words;
    `lookup`: the loop of the last (or only) chunk that looks its outputs up in a
    table."""
    first, last = index == 0, index == chunks - 1
    kind = KINDS[0] if first and last else KINDS[1] if first else KINDS[3] if last \
        else KINDS[2]
    return f"mrt_i2c_{kind}{words}{'_lut' if lookup and last else ''}_s8"


class Im2colEmitter:
    """The im2col dispatch, for NestEmitter (which provides the builder, the buffers
    and the loops)."""

    b: ir.IRBuilder
    k: Kernel

    def _i2c_const(self, v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    def _i2c_padded(self, plan, x_buf: ir.Value, shape: tuple[int, int, int],
                    out: tuple[int, int]):
        """The input copied into a stack buffer with its padding written out (module
        constants), as (buffer, its height, width and row pitch in bytes, output (0, 0)'s
        first tap in it),
        or None where no window leaves the input or the copy would be too large."""
        b = self.b
        c = self._i2c_const
        h_in, w_in, cin = shape
        (sy, sx), (dy, dx), (oy0, ox0) = plan.stride, plan.dilation, plan.origin
        top, left = max(0, -oy0), max(0, -ox0)
        bottom = max(0, (out[0] - 1) * sy + oy0 + (plan.kh - 1) * dy - (h_in - 1))
        right = max(0, (out[1] - 1) * sx + ox0 + (plan.kw - 1) * dx - (w_in - 1))
        hp, wp = h_in + top + bottom, w_in + left + right
        row = w_in * cin
        # The copy moves the largest unit (word, halfword) that both a source row and
        # its place in the copy start on: the copy's rows are padded to it (its pitch).
        unit = next(u for u in (4, 2, 1) if row % u == 0 and left * cin % u == 0)
        pitch = -(-wp * cin // unit) * unit
        size = hp * pitch
        if not (top or left or bottom or right) or size > PADDED_BYTES:
            return None
        words = -(-size // 4)
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        buf = b.alloca(ir.ArrayType(I32, words), name="i2c_padded")
        buf.align = 4
        b.position_at_end(here)
        # The pad bytes as a word of the records: a constant would make LLVM's fill loop
        # a call of memset, one byte per 4 instructions at -Oz.
        fill = b.load(b.bitcast(self.buffers[self.k.records], I32.as_pointer()), typ=I32)
        pad_byte = b.trunc(fill, I8)
        buf32 = b.bitcast(buf, I32.as_pointer())
        # The rows above and below the input, whole words (those reaching into an
        # input row are written again by its copy, which comes after).
        above = -(-top * pitch // 4)
        below = (top + h_in) * pitch // 4
        for name, lo, hi in (("i2c.above", 0, above), ("i2c.below", below, words)):
            if hi > lo:
                self._loop_range(name, lo, hi - lo, 1,
                                 lambda i: b.store(fill, b.gep(buf32, [i])))
        dst = b.bitcast(buf, I8.as_pointer())

        def copy(r: ir.Value) -> None:
            src = b.gep(x_buf, [b.mul(r, c(row))], source_etype=I8)
            to = b.gep(dst, [b.add(b.mul(r, c(pitch)), c(top * pitch))])
            for i in list(range(left * cin)) + list(range((left + w_in) * cin, wp * cin)):
                b.store(pad_byte, b.gep(to, [c(i)]))
            to = b.gep(to, [c(left * cin)])
            if row <= UNROLLED_ROW:
                ty = ir.IntType(8 * unit)
                for i in range(0, row, unit):
                    v = b.load(b.gep(src, [c(i)], source_etype=I8), typ=ty)
                    v.align = unit
                    b.store(v, b.bitcast(b.gep(to, [c(i)]), ty.as_pointer())).align = unit
            else:
                fn = b.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I32])
                b.call(fn, [b.bitcast(to, PTR), src, c(row), ir.Constant(ir.IntType(1), 0)])

        self._loop_range("i2c.copy", 0, h_in, 1, copy)
        return b.bitcast(buf, PTR), (hp, wp, pitch), (oy0 + top, ox0 + left)

    def _i2c_table(self, plan) -> None:
        """A 1x1 convolution over one channel: per output pixel, the records' row of
        its input value (schedule/first_layer_records.py `_table`) copied to the
        output, by words where the rows are whole words."""
        k = self.k
        b = self.b
        c = self._i2c_const
        _, h_in, w_in, _ = k.operands[plan.x.operand].shape
        h_out, w_out, cout = k.domain[Y], k.domain[X], k.domain[3]
        (sy, sx), (oy0, ox0) = plan.stride, plan.origin
        x_buf = self.buffers[plan.x.operand]
        out_buf = self.buffers[len(k.operands)]
        table = b.gep(self.buffers[k.records], [c(4)], source_etype=I8)
        unit, width = (I32, 4) if cout % 4 == 0 else (I8, 1)

        def pixel(oy: ir.Value, ox: ir.Value) -> None:
            at = b.add(b.mul(b.add(b.mul(oy, c(sy)), c(oy0)), c(w_in)),
                       b.add(b.mul(ox, c(sx)), c(ox0)))
            v = b.load(b.gep(x_buf, [at], source_etype=I8), typ=I8)
            row = b.mul(b.add(b.sext(v, I32), c(128)), c(cout))
            src = b.bitcast(b.gep(table, [row], source_etype=I8), unit.as_pointer())
            dst = b.gep(out_buf, [b.mul(b.add(b.mul(oy, c(w_out)), ox), c(cout))],
                        source_etype=I8)
            dst = b.bitcast(dst, unit.as_pointer())
            for i in range(cout // width):
                word = b.load(b.gep(src, [c(i)], source_etype=unit), typ=unit)
                word.align = width
                b.store(word, b.gep(dst, [c(i)], source_etype=unit)).align = width

        self._loop_range("i2c.rows", 0, h_out, 1, lambda oy: self._loop_range(
            "i2c.cols", 0, w_out, 1, lambda ox: pixel(oy, ox)))

    def emit_im2col(self) -> None:
        """The whole nest (module docstring)."""
        k = self.k
        # offered: the plans the tuning database may bind too (a strict one is one).
        plan = first_layer_plan(replace(k, records=-1), offered=True)
        if plan is None or k.records < 0:
            raise EmitError(f"kernel {k.name!r}: its schedule is the im2col kernel's, "
                            f"which it cannot take")
        if plan.taps == 1:
            self._i2c_table(plan)
            return
        if k.record_shifts:  # schedule/pointwise_asm_records.py: the layer's own code
            emit_pointwise_asm(self, plan)
            return
        b = self.b
        c = self._i2c_const
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        scratch = b.alloca(ir.ArrayType(I32, plan.scratch_words(k)), name="i2c_scratch")
        scratch.align = 8
        b.position_at_end(here)
        lanes = b.bitcast(scratch, PTR)
        lanes16 = b.bitcast(scratch, I16.as_pointer())
        sums = b.gep(lanes, [c(4 * ((plan.words + 1) // 2 * 2))], source_etype=I8)
        chunks = plan.chunks()
        single = len(chunks) == 1  # the loop takes a count of pixels, not the sums
        row_calls = plan.row_staged(k)  # one call a row, its windows staged side by side
        slots = k.domain[X] if row_calls else 1
        lanes_per = 2 * plan.words
        if plan.taps % 2:  # each window's last word pairs its last tap with 0
            self._loop_range("i2c.odd", 0, slots, 1, lambda i: b.store(
                ir.Constant(I16, 0), b.gep(lanes16, [b.add(b.mul(i, c(lanes_per)),
                                                          c(plan.taps))])))
        x_buf = self.buffers[plan.x.operand]
        out_buf = self.buffers[len(k.operands)]
        records = self.buffers[k.records]
        _, h_in, w_in, cin = k.operands[plan.x.operand].shape
        h_out, w_out, cout = k.domain[Y], k.domain[X], k.domain[3]
        (sy, sx), (dy, dx), (oy0, ox0) = plan.stride, plan.dilation, plan.origin
        pitch = w_in * cin  # bytes from an input row to the next
        padded = self._i2c_padded(plan, x_buf, (h_in, w_in, cin), (h_out, w_out))
        if padded is not None:
            x_buf, (h_in, w_in, pitch), (oy0, ox0) = padded
        taps = [(ky, kx, ci) for ky in range(plan.kh) for kx in range(plan.kw)
                for ci in range(cin)]
        lookup = plan.table is not None
        # The table's entry for input 0: the loop indexes it by the signed output.
        extra = [b.gep(records, [c(lookup_offset(k, plan) + 128)], source_etype=I8)] \
            if lookup else []
        loops = []
        for j, n in enumerate(chunks):
            name = loop_symbol(j, len(chunks), n, lookup)
            fn = b.module.globals.get(name)
            if fn is None:
                last = j == len(chunks) - 1
                fn = ir.Function(b.module, ir.FunctionType(
                    ir.VoidType(), [PTR, PTR, I32, PTR, I32 if single else PTR]
                    + [PTR] * len(extra if last else [])), name)
            loops.append(fn)
        pad = ir.Constant(I16, plan.pad)

        def stage_inside(base: ir.Value, slot: ir.Value) -> None:
            for t, (ky, kx, ci) in enumerate(taps):
                off = ky * dy * pitch + kx * dx * cin + ci
                v = b.load(b.gep(x_buf, [b.add(base, c(off))], source_etype=I8), typ=I8)
                b.store(b.sext(v, I16), b.gep(lanes16, [b.add(slot, c(t))]))

        def stage_border(base: ir.Value, iy: ir.Value, ix: ir.Value, slot: ir.Value) -> None:
            rows = [b.icmp_unsigned("<", b.add(iy, c(ky * dy)), c(h_in))
                    for ky in range(plan.kh)]
            cols = [b.icmp_unsigned("<", b.add(ix, c(kx * dx)), c(w_in))
                    for kx in range(plan.kw)]
            for t, (ky, kx, ci) in enumerate(taps):
                ok = b.and_(rows[ky], cols[kx])
                off = b.add(base, c(ky * dy * pitch + kx * dx * cin + ci))
                v = b.load(b.gep(x_buf, [b.select(ok, off, c(0))], source_etype=I8), typ=I8)
                b.store(b.select(ok, b.sext(v, I16), pad),
                        b.gep(lanes16, [b.add(slot, c(t))]))

        def pixel(oy: ir.Value, ox: ir.Value, row_in: ir.Value, iy: ir.Value) -> None:
            ix = b.add(b.mul(ox, c(sx)), c(ox0))
            base = b.add(b.mul(iy, c(pitch)), b.mul(ix, c(cin)))
            slot = b.mul(ox, c(lanes_per)) if row_calls else c(0)
            if padded is not None:  # every window inside the padded copy
                stage_inside(base, slot)
            else:
                inside = b.and_(row_in, b.and_(
                    b.icmp_signed(">=", ix, c(0)),
                    b.icmp_signed("<", ix, c(w_in - (plan.kw - 1) * dx))))
                fast = self.fn.append_basic_block("i2c.inside")
                slow = self.fn.append_basic_block("i2c.border")
                join = self.fn.append_basic_block("i2c.staged")
                b.cbranch(inside, fast, slow)
                b.position_at_end(fast)
                stage_inside(base, slot)
                b.branch(join)
                b.position_at_end(slow)
                stage_border(base, iy, ix, slot)
                b.branch(join)
                b.position_at_end(join)
            if row_calls:
                return
            at = b.mul(b.add(b.mul(oy, c(w_out)), ox), c(cout))
            out = b.gep(out_buf, [at], source_etype=I8)
            word, rec = 0, 0
            for j, (fn, n) in enumerate(zip(loops, chunks)):
                last = j == len(chunks) - 1
                dst = out if last else sums
                b.call(fn, [b.gep(lanes, [c(4 * word)], source_etype=I8),
                            b.gep(records, [c(4 + 4 * rec)], source_etype=I8),
                            c(cout), dst, c(1) if single else sums,
                            *(extra if last else [])])
                word += n
                rec += cout * (n + (1 if j == 0 else 0) + (3 if last else 0))

        def row(oy: ir.Value) -> None:
            iy = b.add(b.mul(oy, c(sy)), c(oy0))
            row_in = b.and_(b.icmp_signed(">=", iy, c(0)),
                            b.icmp_signed("<", iy, c(h_in - (plan.kh - 1) * dy)))
            self._loop_range("i2c.cols", 0, w_out, 1, lambda ox: pixel(oy, ox, row_in, iy))
            if row_calls:  # the row's windows, every output channel of each
                out = b.gep(out_buf, [b.mul(oy, c(w_out * cout))], source_etype=I8)
                b.call(loops[0], [lanes, b.gep(records, [c(4)], source_etype=I8), c(cout),
                                  out, c(w_out), *extra])

        self._loop_range("i2c.rows", 0, h_out, 1, row)
