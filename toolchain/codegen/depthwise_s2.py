"""A depthwise 3x3 int8 window of stride 2, two output rows a call: runtime_c's
mrt_dw3_s2_s8 (runtime_c/ukernel/dsp/mrt_dw_s2_dsp.c).

Output row y of a stride-2 window reads input rows 2y+a .. 2y+a+2, so the row pairs of
the stride-1 kernels (codegen/depthwise_pairs.py) serve it unchanged: pair m = input
rows (2m+a, 2m+a+1) staged as 16-bit halves, row y's sum SMLAD(pair y, (w0, w1)) +
SMLABT(pair y+1, (w1, w2)) per window column, with the same per-channel records
(schedule/row_pair_records.py). A call computes output rows 2t and 2t+1 from pairs 2t,
2t+1 and 2t+2, the middle pair serving both rows and the weights and requantization
loaded once for the two; the staged buffer has 3 slots, odd pairs in slot 1 and even
pair 2t in slot 0 or 2 by the parity of t (a call's pairs 2t, 2t+1, 2t+2 in slots 0, 1, 2
or 2, 1, 0: flags bit 0), so that a call's last pair is the next call's first, every
pair is staged once, and a call's two new pairs are in adjacent slots, staged together by
mrt_dw_stage_two_pairs3_s8 (one STRD a value: 40 instructions for 16 staged words where
two calls of the 3-slot stager took 46, 42 against 50 for rows not word-aligned), 2 input
rows per 2 output rows. An odd last row is a call of one row whose pairs a phase on the
parity puts in slots 0 and 1. Records that are not doubled (a bias past +-2**29, rare)
take the kernel's other
requantization, whose code reads pairs from fixed slots 0-2: each call stages its three.

A row whose staged columns would pass loops/depthwise.py's STACK_BYTES (3 slots of 4
bytes a column and channel: vww_96_int8's 24x24x32 takes 10.4 KB with its pad row) is cut
into bands of output columns (`RowPairPlan.band`), each staging only its 2n + 1 input
columns (the columns left and right of the input as pad pairs). The rows still run in
order, every band of two output rows before the next two (the nest's order (N, Y, X, C)
for the overlap walk: all bands' rows first would keep a result from starting over its
operand, vww_96's 24x24x32 fell back to tiles one column wide), so a band's call stages
its three pairs (the one it shares with the band's next call staged twice) into fixed
slots: 3 staged pairs a call where one band stages 2.

A layer whose records are doubled and whose shifts are SSAT immediates
(`Kernel.record_shifts`, schedule/row_pair_records.py, loops/depthwise.py asm_s2_tiles)
calls functions of its own instead of mrt_dw3_s2_s8 (codegen/depthwise_s2_asm.py), one
per call kind and band, its arguments in registers; the staging is the same. The
two-row calls run two a pass, so each call's slot order, and its function, is a
constant (with the shared kernel one a pass, the smaller code).

Calls run bottom-up where the nest says `reverse` (schedule/overlap.py): a call stages
its input rows before its first store, no later than the overlap walk's 2-row tiles
assume. The sums are exact int32 sums in another order, so the results are the
reference's bit for bit (tests/codegen/test_depthwise_s2.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen import asm_kernels, depthwise_s2_asm
from toolchain.codegen.depthwise_pairs import STAGE3_SYMBOL, STAGE_TWO_SYMBOL, TWO_BEHIND
from toolchain.kernel.form import Kernel
from toolchain.loops.depthwise import (
    DOUBLED_FLAG,
    QUAD_SLOTS,
    RECORD_WORDS,
    C,
    X,
    Y,
    asm_s2_bands,
    asm_s2_folds,
    band_major,
    row_pair_plan,
)

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
PTR = ir.PointerType()
KERNEL_S2_SYMBOL = "mrt_dw3_s2_s8"
FILL_SLOT_SYMBOL = "mrt_dw_s2_fill_slot"  # a slot's words, 8 STR a pass
FILL_WORDS_SYMBOL = "mrt_dw_fill_words"  # the pad row: one destination, 8 words an STM
_ARGS = ir.LiteralStructType([PTR, PTR, PTR, I32, I32, I32, I32, I32])  # struct mrt_dw_s2
DOUBLED = DOUBLED_FLAG << 1  # flags: doubled records (bit 2 of the kernel's flags)
ONE_ROW = 8  # flags: row y alone, its pairs in slots 0 and 1
ODD_CHANNELS = 16  # flags: an odd channel count (the channel loop's entry, two a pass)
BY_FOUR = 32  # flags: four channels a pass (3 or more channels, doubled records)
TWO_CHANNELS = 64  # flags: the channel count's bit 1 (with BY_FOUR: the pass's entry)

# The layer's own calls by the kernel's flags bits 0 and 3 (codegen/depthwise_s2_asm.py).
_KIND = {0: "order0", 1: "order1", ONE_ROW: "one"}

__all__ = ["KERNEL_S2_SYMBOL", "StrideTwoEmitter"]


class StrideTwoEmitter:
    """The stride-2 dispatch, for NestEmitter (module docstring), which provides the
    builder, the loops and RowPairEmitter's stack buffers and records."""

    b: ir.IRBuilder
    k: Kernel

    def _s2_asm(self, out_row: int) -> Callable[[str, int, bool, bool], ir.Function] | None:
        """The layer's own assembly calls by kind, band width and edges (codegen/
        depthwise_s2_asm.py), declared on first use, where its records' shifts are known
        (`Kernel.record_shifts`: schedule/row_pair_records.py, loops/depthwise.py
        asm_s2_tiles), else None."""
        shifts = self.k.record_shifts
        if not shifts:
            return None
        module = self.b.module

        def kind(name: str, width: int, left: bool, right: bool) -> ir.Function:
            body = depthwise_s2_asm.call_body(name, shifts, out_row, width, left, right)
            return asm_kernels.declare(module, depthwise_s2_asm.STEM, body, [PTR] * 4)
        return kind

    def emit_stride2(self) -> bool:
        """The whole nest when it is a stride-2 row-pair kernel (module docstring), and
        whether it was (else the stride-1 row-pair code emits it)."""
        k = self.k
        b = self.b
        plan = row_pair_plan(k)
        if plan is None or plan.stride != 2:
            return False

        def const(v: int, ty: ir.Type = I32) -> ir.Value:
            return ir.Constant(ty, v)

        _, h_in, w_in, channels = k.operands[plan.x.operand].shape
        h_out, w_out, outs = k.domain[Y], k.domain[X], k.domain[C]
        row_bytes, out_row = w_in * channels, w_out * outs
        if k.record_shifts:  # the layer's own calls' records: doubled, in their order
            records = self.buffers[k.records]
            flags = const(DOUBLED_FLAG)
        elif k.records >= 0:  # made at build time (schedule/row_pair_records.py)
            records = self.buffers[k.records]
            flags = b.load(b.gep(records, [const(RECORD_WORDS * outs)], inbounds=True,
                                 source_etype=I32), typ=I32)
        else:
            doubled = self._dw_doubling(plan, outs)
            records = self._dw_records(plan, outs, doubled)
            flags = b.shl(b.zext(doubled, I32), const(1))
        flags = b.shl(flags, const(1))  # DOUBLED_FLAG -> DOUBLED
        column_words = QUAD_SLOTS * channels
        width = plan.band(k)  # output columns per band, the last band the rest
        bands = [(x0, min(width, w_out - x0)) for x0 in range(0, w_out, width)]
        columns = 2 * width + 1  # staged input columns of a band
        staged = self._dw_stack(ir.ArrayType(I32, column_words * columns), 8, "dw_staged")
        pad_words = -(-columns * channels // 4)
        pad_row = self._dw_stack(ir.ArrayType(I32, pad_words), 4, "dw_pad_row")
        args = self._dw_stack(_ARGS, 4, "dw_args")
        pad = plan.pad
        # The pad row and the pad columns by runtime_c's word fill, 8 words an STM: as
        # loops of stores here LLVM made the pad row (and a zero pair's columns) a call
        # of the byte-wise memset, 6 instructions a byte (20x20x32: 4,032 of 72,756).
        fill = self._dw_function(FILL_WORDS_SYMBOL, [PTR, I32, I32])
        b.call(fill, [b.bitcast(pad_row, PTR), const((pad & 0xFF) * 0x01010101),
                      const(pad_words)])
        pair = const(((pad & 0xFFFF) | (pad << 16)) & 0xFFFFFFFF)

        x_buf = self.buffers[plan.x.operand]
        out_buf = self.buffers[len(k.operands)]
        stage_fn = self._dw_function(STAGE3_SYMBOL, [PTR, PTR, PTR, I32])
        stage_two_fn = self._dw_function(STAGE_TWO_SYMBOL, [PTR] * 5 + [I32])
        fill_slot_fn = self._dw_function(FILL_SLOT_SYMBOL, [PTR, I32, I32])
        kernel_fn = self._dw_function(KERNEL_S2_SYMBOL, [PTR])
        tiles, rest = divmod(h_out, 2)
        # The channel loop's kind and entry (runtime_c's flags bits 4-6): the count's low
        # bits, four channels a pass from 3 on (one or two keep two a pass: the four's
        # entry costs a call 3 instructions and a column 1).
        odd_channels = (ODD_CHANNELS if outs % 2 else 0) | \
            ((BY_FOUR | (TWO_CHANNELS if outs & 2 else 0)) if outs >= 3 else 0)
        # Odd pairs in slot 1, even pair 2t in slot 0 where t + phase is even, else in slot
        # 2: a call's two new pairs are in adjacent slots (one STRD a value), and the phase
        # puts an odd last row's pairs (2 tiles, 2 tiles + 1) in slots 0 and 1.
        phase = tiles % 2 if rest else 0

        def field(j: int) -> ir.Value:
            return b.gep(args, [const(0), const(j)], inbounds=True)

        asm = self._s2_asm(out_row)
        # the bands' pad columns the own calls fold into their records
        edges = asm_s2_bands(k, plan, asm_s2_folds(k, plan))
        edge_words = depthwise_s2_asm.EDGE_RECORD_WORDS * outs if any(e[2] for e in edges) else 0
        if asm is None:  # the layer's own calls take their arguments in registers
            # struct mrt_dw_s2's fields (in the order the kernel's LDM takes them)
            b.store(b.bitcast(staged, PTR), field(0))
            b.store(b.bitcast(records, PTR), field(1))
            b.store(const(out_row), field(3))
            b.store(const(outs), field(5))
            b.store(const(4 * column_words), field(7))

        def band(x0: int, n: int) -> tuple[Callable[..., None], ...]:
            """Output columns [x0, x0 + n): their 2n + 1 input columns from 2 x0 + b are
            staged (those outside the input hold the pad value's pair, in every slot:
            written here), the kernel's width set; returns the band's (stage, stage_two,
            stage_pad, call)."""
            first = 2 * x0 + plan.col
            lo, hi = max(0, -first), min(2 * n + 1, w_in - first)  # inside the input
            for j in [*range(lo), *range(hi, 2 * n + 1)]:
                b.call(fill, [b.bitcast(self._dw_word(staged, const(j * column_words)), PTR),
                              pair, const(column_words)])
            if asm is None:
                b.store(const(n), field(4))
            span = (hi - lo) * channels  # bytes of each staged row

            def rows(m: ir.Value) -> list[ir.Value]:
                """Pair m's rows (2m + a, 2m + a + 1) from the band's first input column:
                the pad row where a row is outside the input."""
                top = b.add(b.mul(m, const(2)), const(plan.row))
                found = []
                for r in (top, b.add(top, const(1))):
                    inside = b.icmp_unsigned("<", r, const(h_in))  # a negative row too
                    at = b.gep(x_buf, [b.add(b.mul(r, const(row_bytes)),
                                             const((first + lo) * channels))],
                               source_etype=I8)
                    found.append(b.select(inside, at, b.bitcast(pad_row, PTR)))
                return found

            def slot_at(slot: ir.Value) -> ir.Value:
                return b.bitcast(self._dw_word(staged, b.add(slot, const(lo * column_words))),
                                 PTR)

            def stage(m: ir.Value, slot: ir.Value) -> None:
                """Pair m into `slot`."""
                b.call(stage_fn, [slot_at(slot), *rows(m), const(span)])

            def stage_two(m: ir.Value, n: ir.Value, slot: ir.Value) -> None:
                """Pair m into `slot` and pair n into the next slot, a STRD a value (the
                stager takes its destination TWO_BEHIND words early)."""
                dst = self._dw_word(staged, b.add(slot, const(lo * column_words - TWO_BEHIND)))
                b.call(stage_two_fn, [b.bitcast(dst, PTR), *rows(m), *rows(n), const(span)])

            def stage_pad(slot: ir.Value) -> None:
                """A pair of two rows below the input into `slot`: the pad pair."""
                b.call(fill_slot_fn, [slot_at(slot), pair, const(span)])

            def call(t: ir.Value, mode: ir.Value) -> None:
                """The kernel on output rows 2t (and 2t + 1) with flags bits `mode` (a
                constant for the layer's own calls: `tiles_by_two`)."""
                at = b.add(b.mul(b.mul(t, const(2)), const(out_row)), const(x0 * outs))
                if asm is not None:  # the staged words, r1 free, the records, the output
                    _, _, left, right = next(e for e in edges if e[0] == x0)
                    # past the left edge's records where this band has no left edge
                    skip = 0 if left else edge_words
                    operands = [b.bitcast(staged, PTR), ir.Constant(PTR, ir.Undefined),
                                b.gep(records, [const(skip)], inbounds=True, source_etype=I32),
                                b.gep(out_buf, [at], source_etype=I8)]
                    assert isinstance(mode, ir.Constant)  # `tiles_by_two`
                    b.call(asm(_KIND[mode.constant], n, left, right), operands)
                    return
                b.store(b.gep(out_buf, [at], source_etype=I8), field(2))
                b.store(b.or_(b.or_(flags, mode), const(odd_channels)), field(6))
                b.call(kernel_fn, [args])

            return stage, stage_two, stage_pad, call

        last = const(tiles)
        # The last pair (2T, or 2T + 1 after an odd last row) is two rows below the input
        # on SAME maps of 4q or 4q + 2 rows (odd ones with a pad row above): its slot is
        # filled with the pad pair, 8 STR a pass, not staged from the pad row (10x10x64:
        # 1,840 -> 810 instructions).
        below = 2 * (2 * tiles + rest) + plan.row >= h_in
        peel = below and not rest and tiles > 0  # the last two rows' call on its own
        reverse = self.nest.reverse
        if len(bands) > 1 and not band_major(self.nest):
            # Several bands in row order (loops/depthwise.py `banded_row_order`, where
            # the result starts over its operand): per 2 output rows each band stages its
            # 3 pairs (2: the odd last row) into slots 0-2, the last two together, and is
            # called, so that rows run in order (the overlap walk's); the pairs two calls
            # of a band share are staged twice.
            def rows_of(t: ir.Value, pairs: int, pad_last: bool = False) -> None:
                """Every band's call on rows 2t (and 2t + 1); `pad_last`: the last of its
                pairs is below the input, the pad pair (the others staged together)."""
                for x0, n in bands[::-1] if reverse else bands:
                    stage, stage_two, stage_pad, call = band(x0, n)
                    m = b.mul(t, const(2))
                    if pad_last:
                        if pairs == 3:
                            stage_two(m, b.add(m, const(1)), const(0))
                        else:
                            stage(m, const(0))
                        stage_pad(const(pairs - 1))
                    else:
                        if pairs == 3:  # pair 2t alone, 2t + 1 and 2t + 2 together
                            stage(m, const(0))
                        stage_two(b.add(m, const(pairs - 2)), b.add(m, const(pairs - 1)),
                                  const(pairs - 2))
                    call(t, const(0 if pairs == 3 else ONE_ROW))

            if rest and reverse:
                rows_of(last, 2, below)
            if peel and reverse:
                rows_of(const(tiles - 1), 3, True)
            if tiles - peel:
                self._loop_range("dw.s2", tiles - 1 - peel if reverse else 0, tiles - peel,
                                 -1 if reverse else 1, lambda t: rows_of(t, 3))
            if peel and not reverse:
                rows_of(const(tiles - 1), 3, True)
            if rest and not reverse:
                rows_of(last, 2, below)
            return True

        def tiles_by_two(first: int, count: int, step: int,
                         tile: Callable[[ir.Value, int | None], None]) -> None:
            """tile(t, (t + phase) % 2) for `count` calls t from `first` by `step`: for
            the layer's own calls two a pass, so that each call's slot order, and its
            function, is a constant (no selects of its pairs' slots); for the shared
            kernel one a pass, the order found at run time (its flags: the smaller code,
            which --optimize size keeps)."""
            if asm is None:
                self._loop_range("dw.s2", first, count, step, lambda t: tile(t, None))
                return
            pairs, odd_last = divmod(count, 2)
            if pairs:
                self._loop_range("dw.s2", first, pairs, 2 * step, lambda t: [
                    tile(t, (first + phase) % 2),
                    tile(b.add(t, const(step)), (first + step + phase) % 2)])
            if odd_last:
                t = first + 2 * pairs * step
                tile(const(t), (t + phase) % 2)

        def whole(x0: int, n: int) -> None:
            """Output columns [x0, x0 + n) over every row, each call staging its 2 new
            pairs (one band, or each of several in turn: `band_major`)."""
            stage, stage_two, stage_pad, call = band(x0, n)
            doubled = const(1, I1) if asm is not None else \
                b.icmp_unsigned("!=", b.and_(flags, const(DOUBLED)), const(0))
            with b.if_else(doubled) as (fast, slow):
                with fast:
                    def fast_tile(t: ir.Value, parity: int | None) -> None:
                        """Call t, `parity` that of t + phase (None: found at run time):
                        1 where pair 2t is in slot 2 (the call's pairs in slots 2, 1,
                        0)."""
                        m = b.mul(t, const(2))
                        flip = const(parity, I1) if parity is not None else b.icmp_unsigned(
                            "!=", b.and_(b.add(t, const(phase)), const(1)), const(0))
                        one, mine = b.add(m, const(1)), m
                        if not reverse:  # pairs 2t + 1 (slot 1) and 2t + 2 (slot 2 or 0)
                            mine = b.add(m, const(2))
                            stage_two(b.select(flip, mine, one), b.select(flip, one, mine),
                                      b.select(flip, const(0), const(1)))
                        else:  # pairs 2t (slot 0 or 2) and 2t + 1 (slot 1)
                            stage_two(b.select(flip, one, mine), b.select(flip, mine, one),
                                      b.select(flip, const(1), const(0)))
                        call(t, const(parity) if parity is not None else b.zext(flip, I32))

                    if not reverse:
                        stage(const(0), const(2 * phase))
                        if tiles - peel:
                            tiles_by_two(0, tiles - peel, 1, fast_tile)
                        if peel:  # t = T - 1: pair 2T - 1 staged, pair 2T the pad pair
                            flip = (tiles - 1 + phase) % 2
                            stage(const(2 * tiles - 1), const(1))
                            stage_pad(const(0 if flip else 2))
                            call(const(tiles - 1), const(flip))
                        if rest:
                            if below:
                                stage_pad(const(1))
                            else:
                                stage(b.add(b.mul(last, const(2)), const(1)), const(1))
                            call(last, const(ONE_ROW))
                    else:
                        m = b.mul(last, const(2))
                        if rest:  # pairs 2T, 2T + 1 in slots 0, 1
                            if below:
                                stage(m, const(0))
                                stage_pad(const(1))
                            else:
                                stage_two(m, b.add(m, const(1)), const(0))
                            call(last, const(ONE_ROW))
                        elif below:  # pair 2T: slot 0 where T + phase (phase 0) is even
                            stage_pad(const(2 * (tiles % 2)))
                        else:
                            stage(m, const(2 * (tiles % 2)))
                        if tiles:
                            tiles_by_two(tiles - 1, tiles, -1, fast_tile)
                with slow:  # every call stages its pairs into slots 0-2 (0-1: one row)
                    def slow_tile(t: ir.Value) -> None:
                        m = b.mul(t, const(2))
                        for j in range(3):
                            stage(b.add(m, const(j)), const(j))
                        call(t, const(0))

                    def slow_rest() -> None:
                        m = b.mul(last, const(2))
                        for j in range(2):
                            stage(b.add(m, const(j)), const(j))
                        call(last, const(ONE_ROW))

                    if rest and reverse:
                        slow_rest()
                    if tiles:
                        self._loop_range("dw.s2", tiles - 1 if reverse else 0, tiles,
                                         -1 if reverse else 1, slow_tile)
                    if rest and not reverse:
                        slow_rest()

        for x0, n in bands[::-1] if reverse else bands:
            whole(x0, n)
        return True
