"""A depthwise 5x5 int8 window two output rows at a time: runtime_c's mrt_dw5_pair_s8.

loops/depthwise5.py says which layers; runtime_c/ukernel/dsp/mrt_dw5_dsp.c how a call
computes two output rows. The dispatch (Nest.depthwise5) is a loop of calls, for each
group of input channels (loops/depthwise5.py `channel_group`: one group unless the staged
rows would pass the stack budget):

- the staged rows: pair m = input rows (2m + a, 2m + a + 1) as 16-bit pairs, a word per
  column and channel, in slot m mod 3 of a (column, channel, slot) stack buffer, so that
  output rows 2t and 2t + 1 read pairs t, t + 1, t + 2 from slots (t, t + 1, t + 2) mod 3
  and each pair is staged once. The two columns left and right of the input hold the
  pad value's pair, written once a group; a row outside the input is read from a run of
  pad values. The staging is the 3x3 kernel's (mrt_dw_stage_pairs3_s8), a row a call
  where the group holds every channel, a column's run of the group's channels a call
  otherwise (called from the dispatch, so the profile charges it to the layer).
- per tile of two output rows, one call (both rows, every column, the group's channels,
  requantized and stored); an odd last row is a tile whose second row is stored under
  the first (a row distance of 0).
- a stride of 2: output rows 2t and 2t + 1 read pairs 2t .. 2t + 3, so the layout has 4
  slots (pair m in slot m mod 4, staged by mrt_dw5_stage_pairs4_s8, two pairs a tile)
  and the calls are of mrt_dw5_s2_s8, the output columns two staged columns apart.

The records (schedule/depthwise5_records.py) are a constant bound with the schedule. The
sums are exact int32 sums in another order, so the results are the reference's bit for
bit (tests/codegen/test_depthwise5.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Kernel
from toolchain.loops.depthwise import DOUBLED_FLAG, C, X, Y
from toolchain.loops.depthwise5 import (
    PAD_COLUMNS,
    channel_group,
    depthwise5_plan,
    record_words,
    slots,
)

I8 = ir.IntType(8)
I32 = ir.IntType(32)
PTR = ir.PointerType()
STAGE_SYMBOL = "mrt_dw_stage_pairs3_s8"  # runtime_c/ukernel/dsp/mrt_dw_dsp.c
STAGE4_SYMBOL = "mrt_dw5_stage_pairs4_s8"  # a stride of 2: 4 slots
KERNEL_SYMBOL = "mrt_dw5_pair_s8"
KERNEL_X2_SYMBOL = "mrt_dw5_pair_x2_s8"  # a depth multiplier of 2
S2_SYMBOL = "mrt_dw5_s2_s8"  # a stride of 2
S2_X2_SYMBOL = "mrt_dw5_s2_x2_s8"
SYMBOLS = {(1, 1): KERNEL_SYMBOL, (1, 2): KERNEL_X2_SYMBOL, (2, 1): S2_SYMBOL,
           (2, 2): S2_X2_SYMBOL}  # by (stride, depth multiplier)
# struct mrt_dw5_pair: out, stage, records, channels, width, row2, flags, column bytes,
# output skip, staged column skip.
_ARGS = ir.LiteralStructType([PTR, PTR, PTR, I32, I32, I32, I32, I32, I32, I32])
DOUBLED = 4  # the flags' bit for doubled records
ONE_ROW = 8  # mrt_dw5_s2_s8: row y alone (an odd last row; its pair 2t + 3 not staged)

__all__ = ["KERNEL_SYMBOL", "KERNEL_X2_SYMBOL", "S2_SYMBOL", "S2_X2_SYMBOL", "STAGE_SYMBOL",
           "SYMBOLS", "Depthwise5Emitter"]


class Depthwise5Emitter:
    """The 5x5 dispatch, for NestEmitter (which provides the builder and the loops, and
    RowPairEmitter's stack and function helpers)."""

    b: ir.IRBuilder
    k: Kernel

    def emit_depthwise5(self) -> None:
        """The whole nest (module docstring)."""
        k = self.k
        plan = depthwise5_plan(k)
        if plan is None or k.records < 0:
            raise EmitError(f"kernel {k.name!r}: its schedule is the depthwise 5x5 "
                            "microkernel's, which it cannot take")
        b = self.b

        def const(v: int) -> ir.Value:
            return ir.Constant(I32, v)

        _, h_in, w_in, channels = k.operands[plan.x.operand].shape  # input channels
        h_out, w_out, outs = k.domain[Y], k.domain[X], k.domain[C]
        mult, stride = plan.depth_multiplier, plan.stride
        n_slots = slots(stride)
        group = channel_group(w_in, channels, n_slots)
        if group is None:
            raise EmitError(f"kernel {k.name!r}: its staged rows do not fit the stack")
        groups = -(-channels // group)
        last_group = channels - (groups - 1) * group
        whole_rows = groups == 1  # a row staged in one call
        row_bytes, out_row = w_in * channels, w_out * outs
        columns = w_in + 2 * PAD_COLUMNS

        records = self.buffers[k.records]
        words = record_words(plan.stride)  # a channel's record

        def tail_word(j: int) -> ir.Value:  # the words after the records (flags, pads)
            return b.load(b.gep(records, [const(words * outs + j)], inbounds=True,
                                source_etype=I32), typ=I32)

        flags, pair, pad_bytes = tail_word(0), tail_word(1), tail_word(2)
        doubled = b.select(b.icmp_unsigned("!=", b.and_(flags, const(DOUBLED_FLAG)),
                                           const(0)), const(DOUBLED), const(0))
        staged = self._dw_stack(ir.ArrayType(I32, n_slots * group * columns), 8,
                                "dw5_staged")
        # Two output rows a call, which stages one pair of input rows (two at a stride
        # of 2: pairs 2t + 2 and 2t + 3; pairs 0 and 1 before the first call).
        tiles = -(-h_out // 2)
        new_pairs = stride
        # The input rows the staged pairs read, the staged columns the kernel reads (left
        # and right of the input: the pad columns it needs).
        last_pair = new_pairs * (tiles - 1) + 1 + new_pairs
        rows_read = (plan.row, 2 * last_pair + plan.row + 1)
        pad_rows = rows_read[0] < 0 or rows_read[1] >= h_in
        left = (PAD_COLUMNS + plan.col, PAD_COLUMNS)
        last = stride * (w_out - 1) + plan.col + 4
        right = (w_in + PAD_COLUMNS, last + 1 + PAD_COLUMNS)
        pad_values = row_bytes if whole_rows else group
        pad_run = self._dw_stack(ir.ArrayType(I32, -(-pad_values // 4)), 4, "dw5_pad")
        args = self._dw_stack(_ARGS, 4, "dw5_args")
        if pad_rows:
            self._loop_range("dw5.pad", 0, -(-pad_values // 4), 1, lambda i: b.store(
                pad_bytes, self._dw_word(pad_run, i)))

        x_buf = self.buffers[plan.x.operand]
        out_buf = self.buffers[len(k.operands)]
        stage_fn = self._dw_function(STAGE_SYMBOL if stride == 1 else STAGE4_SYMBOL,
                                     [PTR, PTR, PTR, I32])
        kernel_fn = self._dw_function(SYMBOLS[stride, mult], [PTR])

        def field(j: int) -> ir.Value:
            return b.gep(args, [const(0), const(j)], inbounds=True)

        def one_group(g: ir.Value) -> None:
            first = b.mul(g, const(group))  # the group's first input channel
            n = b.select(b.icmp_unsigned("==", g, const(groups - 1)), const(last_group),
                         const(group)) if groups > 1 else const(group)
            column_words = b.mul(n, const(n_slots))
            side = b.mul(column_words, const(PAD_COLUMNS))
            # The pad columns the kernel reads (every slot).
            for lo, hi in (left, right):
                if hi > lo:
                    start = b.mul(column_words, const(lo))
                    self._loop_while("dw5.pad_cols", b.mul(column_words, const(hi - lo)),
                                     lambda i, at=start: b.store(
                                         pair, self._dw_word(staged, b.add(i, at))))
            column_bytes = b.mul(column_words, const(4))
            b.store(b.bitcast(self._dw_word(staged, b.mul(
                column_words, const(plan.col + PAD_COLUMNS))), PTR), field(1))
            b.store(b.bitcast(b.gep(records, [b.mul(first, const(mult * words))],
                                    inbounds=True, source_etype=I32), PTR), field(2))
            b.store(b.mul(n, const(mult)), field(3))
            b.store(const(w_out), field(4))
            b.store(column_bytes, field(7))
            b.store(b.sub(const(outs), b.mul(n, const(mult))), field(8))
            b.store(b.mul(column_bytes, const(stride - 1)), field(9))
            x_at = b.gep(x_buf, [first], source_etype=I8)

            def stage(m: ir.Value) -> None:
                """Pair m's rows into slot m mod the slots."""
                top = b.add(b.mul(m, const(2)), const(plan.row))
                rows, strides = [], []
                for r in (top, b.add(top, const(1))):
                    inside = b.icmp_unsigned("<", r, const(h_in))
                    at = b.gep(x_at, [b.mul(r, const(row_bytes))], source_etype=I8)
                    rows.append(b.select(inside, at, b.bitcast(pad_run, PTR)))
                    strides.append(b.select(inside, const(channels), const(0)))
                slot = b.urem(m, const(n_slots))
                dst = self._dw_word(staged, b.add(slot, side))
                if whole_rows:
                    b.call(stage_fn, [b.bitcast(dst, PTR), *rows, const(row_bytes)])
                    return

                def run(x: ir.Value) -> None:  # column x's run of the group's channels
                    at = [b.gep(r, [b.mul(x, s)], source_etype=I8)
                          for r, s in zip(rows, strides, strict=True)]
                    to = b.gep(b.bitcast(dst, PTR), [b.mul(x, column_bytes)], source_etype=I8)
                    b.call(stage_fn, [to, *at, n])

                self._loop_range("dw5.stage", 0, w_in, 1, run)

            def tile(t: ir.Value) -> None:
                """Output rows 2t and 2t + 1 (an odd last row alone)."""
                first_pair = b.mul(t, const(new_pairs))  # in slot (its rotation)
                y = b.mul(t, const(2))
                alone = b.icmp_signed(">=", b.add(y, const(1)), const(h_out))
                stage(b.add(first_pair, const(2)))
                if stride == 2:  # pair 2t + 3 is read by row 2t + 1 only
                    with b.if_then(b.not_(alone)):
                        stage(b.add(first_pair, const(3)))
                at = b.add(b.mul(y, const(out_row)), b.mul(first, const(mult)))
                b.store(b.gep(out_buf, [at], source_etype=I8), field(0))
                below = const(out_row)
                mode = doubled
                if h_out % 2:
                    below = b.select(alone, const(0), below)
                    if stride == 2:
                        mode = b.or_(mode, b.select(alone, const(ONE_ROW), const(0)))
                b.store(below, field(5))
                b.store(b.or_(b.urem(first_pair, const(n_slots)), mode), field(6))
                b.call(kernel_fn, [b.bitcast(args, PTR)])

            stage(const(0))
            stage(const(1))
            self._loop_range("dw5.rows", 0, tiles, 1, tile)

        self._loop_range("dw5.groups", 0, groups, 1, one_group)

    def _loop_while(self, name: str, count: ir.Value,
                    body: Callable[[ir.Value], None]) -> None:
        """for (i = 0; i < count; i++) body(i), a count known at run time (>= 1)."""
        b = self.b
        pre = b.block
        head = self.fn.append_basic_block(name)
        done = self.fn.append_basic_block(name + ".end")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I32, name=name.replace(".", "_"))
        i.add_incoming(ir.Constant(I32, 0), pre)
        body(i)
        nxt = b.add(i, ir.Constant(I32, 1), flags=["nuw", "nsw"])
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_unsigned("<", nxt, count), head, done)
        b.position_at_end(done)
