"""A depthwise 3x3 int8 window two output rows at a time: runtime_c's row-pair microkernel.

loops/depthwise.py says why rows pair up in SMLAD. The nest of such a kernel (Nest.
row_pairs) is not tiles of generated code: LLVM, given the row-pair tile as intrinsics
(six weight words per channel, the packed input words of three window columns, the
requantization's per-channel values), spilled about a third of its instructions, and
the tile ran slower than the scalar one it replaced (0.27-0.30 MAC per instruction
against 0.31 on 19x6 over 64 channels, with every arrangement tried). So the dispatch
is a loop of calls to assembly (runtime_c/ukernel/dsp/mrt_dw_dsp.c), and this file
emits what they read, on the stack:

- the records: per channel the sum's init (the bias), the weight words (w0, w1) and
  (w1, w2) of each window column, and the folded requantization's M, K_hi and s - 1
  (kernel/requant.py). They are a constant operand made at build time
  (schedule/row_pair_records.py, `Kernel.records`); a kernel without it (a program
  that did not go through that pass) makes them once per dispatch on the stack from
  the kernel's own expressions, doubled where a loop over the channels finds it safe;
- the staged rows: per row pair m, input rows (2m + a, 2m + a + 1) as 16-bit pairs, a
  word per column and channel, in slot m mod 2 of a (column, channel, slot) buffer, so
  a row pair's second pair of rows is the next row pair's first (each staged once).
  The columns left and right of the input hold the pad value's pair, written once; a
  row outside the input is staged from that pair (the stage call's null row).

Each row pair is then one call of mrt_dw3_rowpair_s8 (both rows, every column and
channel, requantized and stored); an odd last row is a call that computes that row
alone (flags bit 2).

Where the nest's rows are blocked by 4 (loops/depthwise.py `quad_rows`: the staged rows
in 3 slots fit the stack budget) the calls are of mrt_dw3_quad_s8 instead, 4 output rows
each, the rows' remainder a tile of 1-3 rows: the staged buffer has 3 slots, odd pairs
in slot 1 and even ones in slots 0 and 2 by turns, so a tile's last pair is the next
tile's first, its two new pairs are adjacent words (staged by one call of
mrt_dw_stage_two_pairs3_s8, a STRD a value), and the call says which slot holds its
first pair (the remainder's code reads fixed slots, from 0, where the turns put its
first pair). A map of 4q + 2 rows (q even) runs its first two rows first, then the
tiles, so that every pair stages two at a time (`_dw_top_pair_plan`). Layers whose
records are not doubled (known at run time from the records' flags) run as pairs of
rows in the same layout.
Row pairs run bottom-up where the nest says `reverse` (a result placed above its
operand, schedule/overlap.py). The sums are exact int32 sums in another order, so the
results are the reference's bit for bit (tests/codegen/test_depthwise_pairs.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen import asm_kernels, depthwise_asm
from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Apply, Expr, Kernel, expr_dtype
from toolchain.loops.depthwise import (
    CI,
    DOUBLED_FLAG,
    KX,
    KY,
    LAST_CHANNEL,
    QUAD_ROWS,
    QUAD_SLOTS,
    RECORD_WORDS,
    TAILS_FLAG,
    C,
    RowPairPlan,
    X,
    Y,
    live_columns,
    quad_rows,
    record_words,
    records_over_row,
    row_pair_plan,
)
from toolchain.types import dtype

I8 = ir.IntType(8)
I32 = ir.IntType(32)
PTR = ir.PointerType()
STAGE_SYMBOL = "mrt_dw_stage_pairs_s8"
KERNEL_SYMBOL = "mrt_dw3_rowpair_s8"
KERNEL_X2_SYMBOL = "mrt_dw3_rowpair_x2_s8"  # a depth multiplier of 2
STAGE3_SYMBOL = "mrt_dw_stage_pairs3_s8"  # 4-row tiles: their staged rows' 3 slots
STAGE_TWO_SYMBOL = "mrt_dw_stage_two_pairs3_s8"  # a 4-row tile's two new pairs, adjacent
# The same with row a (the first pair's first row) or row d (the second pair's second) a
# pad row: 8 bytes of the pad value read in place (a map's top and bottom, TOP_PAIR below).
STAGE_TWO_PAD = {"a": "mrt_dw_stage_two_pairs3_pad_a_s8", "d": "mrt_dw_stage_two_pairs3_pad_d_s8",
                 # rows c and d both pad rows: a SAME map of 4q + 3 rows, its last pair
                 "cd": "mrt_dw_stage_two_pairs3_pad_cd_s8"}
# The two-pair stagers take their destination a value (3 words) before the first (their
# pre-indexed stores' base), which the address the dispatch computes anyway folds in.
TWO_BEHIND = 3
QUAD_SYMBOL = "mrt_dw3_quad_s8"
QUAD_X2_SYMBOL = "mrt_dw3_quad_x2_s8"
QUAD_TAILS_SYMBOL = "mrt_dw3_quad_tails_s8"  # 4-row tiles, the shift an SSAT immediate
QUAD_TAILS_X2_SYMBOL = "mrt_dw3_quad_tails_x2_s8"
FILL_SYMBOL = "mrt_dw_fill_two_words"  # the two pad columns, by one call
FILL_SMALL_SYMBOL = "mrt_dw_fill_two_words_small"  # the same for under FILL_SMALL words
FILL_SMALL = 16
FILL_INLINE = 9  # pad columns of up to this many words stored by the dispatch itself
# The 3-row remainder's two new pairs by one call up to rows of this many bytes
# (`_dw_stage_rest_two`): 19x6 over 4 channels gains 10 instructions, over 7 loses 5.
REST_TWO_BYTES = 24
# mrt_dw3_quad_s8's flags: doubled records (DOUBLED_FLAG << 1), two rows (one at a row
# distance of 0), one row, three rows; else four.
TWO_ROWS = 8
ONE_ROW = 16
THREE_ROWS = 32
TOP_PAIR = 64  # two rows from slots 1 and 2: a map of 4q + 2 rows, its first two rows
_ARGS = ir.LiteralStructType([PTR, PTR, PTR, I32, I32, I32, I32, I32])  # mrt_dw_rowpair
# Its fields in runtime_c's order: struct mrt_dw_rowpair's, and struct mrt_dw_quad's (the
# 4-row kernels': the tails kernel's LDM puts each in its register).
FIELDS = ("out", "stage", "records", "channels", "width", "row2", "flags", "column_bytes")
QUAD_FIELDS = ("stage", "records", "out", "row2", "width", "channels", "flags",
               "column_bytes")
_I32 = dtype("i32")
ROW_ALONE = 4  # mrt_dw_rowpair's flags: row y alone (an odd last row)
# mrt_dw3_quad_tails_s8's call kinds (flags bits 12-14) of the remainder's modes: its
# table's entries after the three rotations.
TAIL_KIND = {TWO_ROWS: 3, ONE_ROW: 4, THREE_ROWS: 5, TOP_PAIR: 6}
KIND_SHIFT = 12
UNROLL_TILES = 8  # 4-row tiles of a layer with records over the row emitted one by one
# Each call kind's rows and the registers of slots P0-P2 (r5-r7 hold slots 0-2).
_ASM_KINDS = {(0, 0): (4, ("r5", "r6", "r7")), (0, 2): (4, ("r7", "r6", "r5")),
              (TWO_ROWS, 0): (2, ("r5", "r6", "r7")), (ONE_ROW, 0): (1, ("r5", "r6", "r7")),
              (THREE_ROWS, 0): (3, ("r5", "r6", "r7")), (TOP_PAIR, 0): (2, ("r6", "r7", "r5"))}

__all__ = ["KERNEL_SYMBOL", "KERNEL_X2_SYMBOL", "QUAD_SYMBOL", "QUAD_X2_SYMBOL", "STAGE_SYMBOL",
           "STAGE_TWO_SYMBOL", "RowPairEmitter"]


class RowPairEmitter:
    """The row-pair dispatch, for NestEmitter (which provides the builder, the points,
    the values and the loops)."""

    b: ir.IRBuilder
    k: Kernel

    def _dw_function(self, name: str, args: list[ir.Type]) -> ir.Function:
        fn = self.b.module.globals.get(name)
        return fn if fn is not None else ir.Function(
            self.b.module, ir.FunctionType(ir.VoidType(), args), name)

    def _dw_asm(self, plan: RowPairPlan, quad_over_row: bool, out_row: int, w_in: int
                ) -> Callable[[int, int], ir.Function] | None:
        """The layer's own assembly tiles by call kind (mode, rotation), declared on first
        use, where its records are theirs (`Kernel.record_shifts`: loops/depthwise.py
        asm_tiles, schedule/row_pair_records.py); `quad_over_row`: 4-row tiles whose
        records run over the row, which such records must be."""
        k = self.k
        shifts = k.record_shifts
        if not shifts:
            return None
        if not quad_over_row or len(shifts) != k.domain[C]:
            raise EmitError(f"kernel {k.name!r}: records of assembly tiles where the nest "
                            "has no 4-row tiles over records repeated over the row")
        live = [live_columns(x, plan.col, w_in) for x in range(k.domain[X])]
        module = self.b.module

        def kind(mode: int, rotation: int) -> ir.Function:
            rows, pairs = _ASM_KINDS[(mode, rotation)]
            body = depthwise_asm.tile_body(rows, pairs, shifts, out_row, live,
                                           plan.depth_multiplier)
            return asm_kernels.declare(module, depthwise_asm.STEM, body, [PTR] * 4)
        return kind

    def _dw_i32(self, e: Expr) -> ir.Value:
        return self._cast(self.value(e), expr_dtype(e, self.k.operands), _I32)

    def _dw_stack(self, ty: ir.Type, align: int, name: str) -> ir.Value:
        b = self.b
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        v = b.alloca(ty, name=name)
        v.align = align
        b.position_at_end(here)
        return v

    def _dw_word(self, base: ir.Value, index: ir.Value | int) -> ir.Value:
        i = index if isinstance(index, ir.Value) else ir.Constant(I32, index)
        return self.b.gep(base, [ir.Constant(I32, 0), i], inbounds=True)

    def _dw_pack(self, lo: ir.Value, hi: ir.Value) -> ir.Value:
        """lo's low half and hi's in the high half of a word (PKHBT)."""
        b = self.b
        return b.or_(b.and_(lo, ir.Constant(I32, 0xFFFF)), b.shl(hi, ir.Constant(I32, 16)))

    def _dw_doubling(self, plan: RowPairPlan, channels: int) -> ir.Value:
        """Whether every channel's bias and K_hi are within +-2**29 (an i1, made by a loop
        over the channels): then every sum is within +-2**30 (9 products of at most
        2**14 besides the bias), so twice the sum is an int32 and the records may hold
        the doubled weights and bias for the kernel's shorter requantization."""
        k = self.k
        b = self.b
        ok = self._dw_stack(ir.IntType(8), 1, "dw_doubling")
        b.store(ir.Constant(ir.IntType(8), 1), ok)
        bound = ir.Constant(I32, 1 << 29)

        def body(i: ir.Value) -> None:
            self.base[C] = i
            with self._scope():
                inside = ir.Constant(ir.IntType(1), 1)
                for e in (k.init, plan.k_high):
                    v = self._dw_i32(e)
                    if e is k.init:
                        v = b.add(v, ir.Constant(I32, plan.bias))
                    inside = b.and_(inside, b.icmp_unsigned("<", b.add(v, bound),
                                                            ir.Constant(I32, 1 << 30)))
                b.store(b.and_(b.load(ok), b.zext(inside, ir.IntType(8))), ok)

        self.ranges[C] = (0, channels - 1)
        self._loop_range("dw.doubling", 0, channels, 1, body)
        self.base[C] = 0
        self.ranges[C] = (0, 0)
        return b.icmp_unsigned("!=", b.load(ok), ir.Constant(ir.IntType(8), 0))

    def _dw_records(self, plan: RowPairPlan, channels: int, doubled: ir.Value,
                    words: int = RECORD_WORDS) -> ir.Value:
        """The per-channel records (mrt_dw_rowpair's layout), filled by a loop over the
        channels from the kernel's expressions at each channel; the doubled form (2 x
        bias, 2 x weights, M, 2 x K_hi, s) where `doubled`. `words` a channel: the
        4-row kernels' two more are zeros (these records never take the tails kernel)."""
        k = self.k
        b = self.b
        records = self._dw_stack(ir.ArrayType(I32, words * channels), 8, "dw_records")
        conv = next(a for a in k.body.args if isinstance(a, Apply) and a.args[0] is plan.w)
        one = ir.Constant(I32, 1)

        def twice(v: ir.Value) -> ir.Value:
            return b.select(doubled, b.shl(v, one), v)

        def body(i: ir.Value) -> None:
            self.base[C] = i
            with self._scope():
                bias = twice(b.add(self._dw_i32(k.init), ir.Constant(I32, plan.bias)))
                fields = []
                saved = self.varying
                self.varying = saved | {KY, KX, CI}
                for kx in range(3):
                    taps = []
                    for ky in range(3):
                        self.point.update({KY: ky, KX: kx, CI: 0})
                        taps.append(twice(self._cast(self.value(conv),
                                                     expr_dtype(conv, k.operands), _I32)))
                    fields += [self._dw_pack(taps[0], taps[1]), self._dw_pack(taps[1], taps[2])]
                    if kx == 0:
                        fields.append(bias)
                self.point.update({KY: 0, KX: 0, CI: 0})
                self.varying = saved
                multiplier, k_high, shift = (self._dw_i32(e) for e in (
                    plan.multiplier, plan.k_high, plan.shift))
                last = b.select(b.icmp_unsigned("==", i, ir.Constant(I32, channels - 1)),
                                ir.Constant(I32, LAST_CHANNEL), ir.Constant(I32, 0))
                fields += [multiplier, twice(k_high),
                           b.add(b.add(shift, b.zext(doubled, I32)), last)]
                fields += [ir.Constant(I32, 0)] * (words - RECORD_WORDS)
                first = b.mul(i, ir.Constant(I32, words), flags=["nuw", "nsw"])
                for j, v in enumerate(fields):
                    at = b.add(first, ir.Constant(I32, j), flags=["nuw", "nsw"])
                    b.store(v, self._dw_word(records, at))

        self.ranges[C] = (0, channels - 1)
        self._loop_range("dw.records", 0, channels, 1, body)
        self.base[C] = 0
        self.ranges[C] = (0, 0)
        return records

    @staticmethod
    def _dw_top_pair_plan(quads_n: int, rest: int, row: int, h_in: int) -> list[str] | None:
        """A map of 4q + 2 rows (q even, >= 2) computed top-down as its first two rows,
        then q 4-row tiles: its 2q + 2 pairs then stage two at a time, (2j, 2j + 1) before
        the call of rows 4j - 2 .. 4j + 1, where the usual order (4-row tiles, then the two
        rows) stages its first and last pair alone, each with a row outside the input.
        Even pairs are in slot 1 and odd ones in slots 2 and 0 by turns (pair 2j + 1 in
        slot 2 for even j): the first call reads slots 1 and 2 (TOP_PAIR), a tile's first
        pair is in slot 2 or 0 and its two new pairs are adjacent. Per batch j the stager
        that takes it: "" (every row inside), "a" or "d" (that row a pad row, the pair in
        the lower slot giving rows a and b); None where the map is not such a one or a
        batch has other rows outside (the usual order then)."""
        if rest != 2 or quads_n < 2 or quads_n % 2:
            return None
        kinds = []
        for j in range(quads_n + 1):
            even = [4 * j + row, 4 * j + row + 1]
            odd = [4 * j + row + 2, 4 * j + row + 3]
            rows = (even + odd) if j % 2 == 0 else (odd + even)  # (a, b, c, d)
            outside = "".join(n for n, r in zip("abcd", rows) if not 0 <= r < h_in)
            if outside not in ("", "a", "d"):
                return None
            kinds.append(outside)
        return kinds

    def _dw_tiles(self, start: int, count: int, step: int,
                  body: Callable[[ir.Value], None], unroll: bool) -> None:
        """The 4-row tiles' loop (NestEmitter._loop_range's arguments), or each tile's code
        in turn where `unroll` (a layer of few channels, records over the row, whose
        tiles are few: each then stages from constant slots, where the loop's slot
        selects and counter took about 10 instructions a tile)."""
        if unroll and count <= UNROLL_TILES:
            for i in range(count):
                body(ir.Constant(I32, start + i * step))
        else:
            self._loop_range("dw.quads", start, count, step, body)

    def _dw_emit_top_pair(self, kinds: list[str], quads_n: int, pair_rows, stage, call,
                          staged: ir.Value, column_words: int, first_slot: ir.Value,
                          x_buf: ir.Value, pad: int, out_row: int, row_bytes: int,
                          unroll: bool) -> None:
        """The two-rows-first order of `_dw_top_pair_plan` (`kinds` its stagers; `unroll`
        as `_dw_tiles`)."""
        b = self.b

        def const(v: int) -> ir.Value:
            return ir.Constant(I32, v)

        pad_row = self._dw_pad_row(pad)
        fns = {k: self._dw_function(STAGE_TWO_PAD[k] if k else STAGE_TWO_SYMBOL,
                                    [PTR] * 5 + [I32]) for k in set(kinds)}

        def batch(j: ir.Value, kind: str, odd_low: ir.Value) -> None:
            """Pairs 2j (slot 1) and 2j + 1 (slot 0 where `odd_low`, else 2)."""
            even = b.mul(j, const(2))
            ev, od = pair_rows(even, True), pair_rows(b.add(even, const(1)), True)
            rows = [b.select(odd_low, o, e) for e, o in zip(ev, od)] + \
                [b.select(odd_low, e, o) for e, o in zip(ev, od)]
            if kind:  # a batch of a pad row is one of known j (unrolled)
                rows["abcd".index(kind)] = pad_row
            into = b.select(odd_low, const(0), const(1))
            dst = self._dw_word(staged, b.add(into, const(column_words - TWO_BEHIND)))
            b.call(fns[kind], [b.bitcast(dst, PTR), *rows, const(row_bytes)])

        batch(const(0), kinds[0], ir.Constant(ir.IntType(1), 0))
        call(const(0), TOP_PAIR, out_row, const(0))
        b.store(const(2), first_slot)  # tile 0's first pair, pair 1

        def tile(t: ir.Value, kind: str) -> None:
            """Output rows 4t + 2 .. 4t + 5: pairs 2t + 1 (slot s0), 2t + 2 (slot 1) and
            2t + 3 (slot 2 - s0), the last two staged by this call."""
            s0 = b.load(first_slot, typ=I32)
            s2 = b.sub(const(2), s0)
            batch(b.add(t, const(1)), kind, b.icmp_unsigned("==", s2, const(0)))
            call(b.add(b.mul(t, const(QUAD_ROWS)), const(2)), 0, out_row, s0)
            b.store(s2, first_slot)

        middle = kinds[1:-1]
        if set(middle) <= {""}:
            if quads_n > 1:
                self._dw_tiles(0, quads_n - 1, 1, lambda t: tile(t, ""), unroll)
        else:
            for t, kind in enumerate(middle):
                tile(const(t), kind)
        tile(const(quads_n - 1), kinds[-1])

    def _dw_pad_row(self, pad: int) -> ir.Value:
        """8 bytes of the pad value on the stack: the pad rows the _pad_* two-pair stagers
        read in place."""
        b = self.b
        pad_words = self._dw_stack(ir.ArrayType(I32, 2), 8, "dw_pad_bytes")
        word = ((pad & 0xFF) * 0x01010101) & 0xFFFFFFFF
        for i in range(2):
            b.store(ir.Constant(I32, word), self._dw_word(pad_words, i))
        return b.bitcast(pad_words, PTR)

    def _dw_stage_rest_two(self, odd: int, pair_rows, staged: ir.Value, column_words: int,
                           pad: int, h_in: int, row: int, row_bytes: int) -> bool:
        """The 3-row remainder's two new pairs, `odd` (slot 1) and `odd` + 1 (slot 2,
        where `slot_of` puts it), by one call of a two-pair stager where their rows
        allow one (every row inside, or row d, or rows c and d, outside: a map of 4q + 3
        rows, VALID or SAME) and the rows are short, where two calls of the one-pair
        stager each paid their entry and exit (19x6 over 1-3 channels: 25-27 instructions
        a layer). Longer rows keep the two calls: a pair of two pad rows there is 4
        stores a pass, cheaper than the two-pair stager's 8 words a pass (19x6 over 7-67
        channels: 5-275 instructions more). False (nothing emitted) otherwise."""
        rows = [2 * odd + row + i for i in range(4)]  # (a, b) pair odd, (c, d) odd + 1
        outside = "".join(n for n, r in zip("abcd", rows) if not 0 <= r < h_in)
        if outside not in ("", "d", "cd") or row_bytes > REST_TWO_BYTES:
            return False
        b = self.b
        args = [*pair_rows(ir.Constant(I32, odd), True),
                *pair_rows(ir.Constant(I32, odd + 1), True)]
        if outside:
            pad_row = self._dw_pad_row(pad)
            for n in outside:
                args["abcd".index(n)] = pad_row
        fn = self._dw_function(STAGE_TWO_PAD[outside] if outside else STAGE_TWO_SYMBOL,
                               [PTR] * 5 + [I32])
        dst = self._dw_word(staged, 1 + column_words - TWO_BEHIND)
        b.call(fn, [b.bitcast(dst, PTR), *args, ir.Constant(I32, row_bytes)])
        return True

    def emit_row_pairs(self) -> None:
        """The whole nest (module docstring)."""
        k = self.k
        plan = row_pair_plan(k)
        if plan is None:
            raise EmitError(f"kernel {k.name!r}: its schedule pairs rows, which it cannot")
        b = self.b
        quads = quad_rows(self.nest)
        slots = QUAD_SLOTS if quads else 2
        words = record_words(quads)
        _, h_in, w_in, channels = k.operands[plan.x.operand].shape  # input channels
        h_out, w_out, outs = k.domain[Y], k.domain[X], k.domain[C]
        row_bytes, out_row = w_in * channels, w_out * outs
        pad = plan.pad
        # Records repeated over the row (few channels, schedule/row_pair_records.py) are
        # doubled and the tails kernel's: known here, no flags read and no other kernel.
        over_row = False
        if k.records >= 0:  # made at build time (schedule/row_pair_records.py)
            records = self.buffers[k.records]
            n_words = k.operands[k.records].shape[0]
            over_row = records_over_row(n_words, outs, quads)
            flags = ir.Constant(I32, DOUBLED_FLAG | TAILS_FLAG) if over_row else b.load(
                b.gep(records, [ir.Constant(I32, n_words - 1)], inbounds=True,
                      source_etype=I32), typ=I32)
        else:
            doubled = self._dw_doubling(plan, outs)
            records = self._dw_records(plan, outs, doubled, words)
            flags = b.shl(b.zext(doubled, I32), ir.Constant(I32, 1))
        tails = b.icmp_unsigned("!=", b.and_(flags, ir.Constant(I32, TAILS_FLAG)),
                                ir.Constant(I32, 0))
        flags = b.and_(flags, ir.Constant(I32, DOUBLED_FLAG))
        if quads:  # the doubled records' flag is bit 2 there
            flags = b.shl(flags, ir.Constant(I32, 1))
        column_words = slots * channels
        staged = self._dw_stack(ir.ArrayType(I32, column_words * (w_in + 2)), 8, "dw_staged")
        args = self._dw_stack(_ARGS, 4, "dw_args")

        # The pad columns (every slot) of the staged buffer, by runtime_c's word fill (a
        # loop of stores here became a byte-wise memset). A row outside the input is
        # staged from the right pad column's pair (a null row pointer), so no row of pad
        # values is needed.
        pair = ((pad & 0xFFFF) | (pad << 16)) & 0xFFFFFFFF
        if column_words <= FILL_INLINE:
            # 1-3 channels' 3 slots: the stores themselves (volatile, so that LLVM keeps
            # them as word stores and makes no memset of them), where the call's entry,
            # copies of the word and exit took 20-24 instructions for 6-18 words.
            for column in (0, w_in + 1):
                for i in range(column_words):
                    b.store(ir.Constant(I32, pair),
                            self._dw_word(staged, column * column_words + i)).volatile = True
        else:
            fill = self._dw_function(FILL_SMALL_SYMBOL if column_words < FILL_SMALL
                                     else FILL_SYMBOL, [PTR, PTR, I32, I32])
            b.call(fill, [*(b.bitcast(self._dw_word(staged, column * column_words), PTR)
                            for column in (0, w_in + 1)),
                          ir.Constant(I32, pair), ir.Constant(I32, column_words)])

        x_buf = self.buffers[plan.x.operand]
        out_buf = self.buffers[len(k.operands)]
        stage_fn = self._dw_function(STAGE3_SYMBOL if quads else STAGE_SYMBOL,
                                     [PTR, PTR, PTR, I32])
        x2 = plan.depth_multiplier == 2
        kernel_fn = self._dw_function(
            (QUAD_X2_SYMBOL if x2 else QUAD_SYMBOL) if quads else
            (KERNEL_X2_SYMBOL if x2 else KERNEL_SYMBOL), [PTR])
        # The tails kernel where the records allow it (TAILS_FLAG).
        tails_fn = self._dw_function(QUAD_TAILS_X2_SYMBOL if x2 else QUAD_TAILS_SYMBOL,
                                     [PTR]) if quads else kernel_fn

        # 4-row tiles: odd pairs in slot 1, even ones in slots 0 and 2 by turns, so that
        # a tile's two new pairs are adjacent words (one call of the two-pair stager, a
        # STRD a value), the first pair after the tiles in slot 0, where the remainder's
        # code reads it (below).
        quads_n, rest = divmod(h_out, QUAD_ROWS)

        def slot_of(m: int) -> int:
            """Pair m's slot in the 4-row layout."""
            return 1 if m % 2 else 2 * ((quads_n - m // 2) % 2)

        def pair_rows(m: ir.Value, inside_only: bool = False) -> list[ir.Value]:
            """Pointers to pair m's rows (2m + a, 2m + a + 1), null where a row is outside
            the input (not asked where `inside_only`)."""
            first = b.add(b.mul(m, ir.Constant(I32, 2)), ir.Constant(I32, plan.row))
            rows = []
            for r in (first, b.add(first, ir.Constant(I32, 1))):
                at = b.gep(x_buf, [b.mul(r, ir.Constant(I32, row_bytes))], source_etype=I8)
                if not inside_only:
                    inside = b.icmp_unsigned("<", r, ir.Constant(I32, h_in))
                    at = b.select(inside, at, ir.Constant(PTR, None))
                rows.append(at)
            return rows

        def stage(m: ir.Value, into: ir.Value | None = None) -> None:
            """Pair m's rows into slot `into` (default: m mod 2, or `slot_of(m)` of a
            constant m in the 4-row layout)."""
            if into is None:
                into = ir.Constant(I32, slot_of(m.constant)) if quads else \
                    b.urem(m, ir.Constant(I32, slots))
            dst = self._dw_word(staged, b.add(into, ir.Constant(I32, column_words)))
            b.call(stage_fn, [b.bitcast(dst, PTR), *pair_rows(m), ir.Constant(I32, row_bytes)])

        stage_two_fn = self._dw_function(STAGE_TWO_SYMBOL, [PTR] * 5 + [I32])

        def stage_two(even: ir.Value, even_slot: ir.Value, odd: ir.Value) -> None:
            """An even pair (in slot 0 or 2) and an odd one (slot 1), adjacent words, by one
            call: the lower slot's pair first. Every row inside the input."""
            low = b.icmp_unsigned("==", even_slot, ir.Constant(I32, 0))
            ev, od = pair_rows(even, True), pair_rows(odd, True)
            rows = [b.select(low, e, o) for e, o in zip(ev, od)] + \
                [b.select(low, o, e) for e, o in zip(ev, od)]
            into = b.select(low, ir.Constant(I32, 0), ir.Constant(I32, 1))
            dst = self._dw_word(staged, b.add(into, ir.Constant(I32, column_words - TWO_BEHIND)))
            b.call(stage_two_fn, [b.bitcast(dst, PTR), *rows, ir.Constant(I32, row_bytes)])

        order = QUAD_FIELDS if quads else FIELDS
        asm = self._dw_asm(plan, quads and over_row, out_row, w_in)
        first_word = b.bitcast(self._dw_word(staged, (plan.col + 1) * column_words), PTR)

        def field(name: str) -> ir.Value:
            j = order.index(name)
            return b.gep(args, [ir.Constant(I32, 0), ir.Constant(I32, j)], inbounds=True)

        if asm is None:  # the layer's own tiles take their arguments in registers
            b.store(first_word, field("stage"))
            b.store(b.bitcast(records, PTR), field("records"))
            b.store(ir.Constant(I32, outs), field("channels"))
            b.store(ir.Constant(I32, w_out), field("width"))
            b.store(ir.Constant(I32, 4 * column_words), field("column_bytes"))
        # The kernels only read the fields, so a row distance every call of the layer
        # shares is stored once (the calls' own stores: 1 instruction a call).
        rest_rows = h_out % QUAD_ROWS if quads else 0
        shared_below = out_row if quads and rest_rows != 1 else None
        if shared_below is not None and asm is None:
            b.store(ir.Constant(I32, shared_below), field("row2"))

        def call(y: ir.Value, mode: int, below: int | ir.Value, rotation: ir.Value) -> None:
            """The kernel on output row y (its first pair in slot `rotation`: 0 or 2 for a
            4-row call, the remainder's code reads fixed slots) in `mode` (flags bits 3
            and up), the next row `below` bytes on: the tails kernel where the records
            allow it."""
            out = b.gep(out_buf, [b.mul(y, ir.Constant(I32, out_row))], source_etype=I8)
            if asm is not None:
                # the staged words, r1 free, the records and the output (depthwise_asm)
                operands = [first_word, ir.Constant(PTR, ir.Undefined),
                            b.bitcast(records, PTR), out]
                if mode or isinstance(rotation, ir.Constant):
                    b.call(asm(mode, rotation.constant if not mode else 0), operands)
                    return
                with b.if_else(b.icmp_unsigned("==", rotation, const(0))) as (r0, r2):
                    with r0:
                        b.call(asm(0, 0), operands)
                    with r2:
                        b.call(asm(0, 2), operands)
                return
            b.store(out, field("out"))
            if isinstance(below, ir.Value) or below != shared_below:
                b.store(below if isinstance(below, ir.Value) else ir.Constant(I32, below),
                        field("row2"))
            # bits 12-14 for the tails kernel (its LSR #8 the entry's offset): the
            # rotation of a 4-row call, else the remainder's kind (mrt_dw3_quad_s8 reads
            # bits 0-6)
            kind = b.shl(rotation, ir.Constant(I32, KIND_SHIFT)) if mode == 0 else \
                ir.Constant(I32, TAIL_KIND[mode] << KIND_SHIFT)
            b.store(b.or_(b.or_(b.or_(rotation, flags), ir.Constant(I32, mode)), kind),
                    field("flags"))
            if over_row:
                b.call(tails_fn, [args])
                return
            with b.if_else(tails) as (fast, other):
                with fast:
                    b.call(tails_fn, [args])
                with other:
                    b.call(kernel_fn, [args])

        def const(v: int) -> ir.Value:
            return ir.Constant(I32, v)

        if not quads:
            def row_pair(kk: ir.Value) -> None:
                """Output rows 2k and 2k + 1 (an odd last row alone)."""
                y = b.mul(kk, const(2))
                mode = const(0)
                if h_out % 2:
                    alone = b.icmp_signed(">=", b.add(y, const(1)), const(h_out))
                    mode = b.select(alone, const(ROW_ALONE), const(0))
                b.store(b.gep(out_buf, [b.mul(y, const(out_row))], source_etype=I8),
                        field("out"))
                b.store(const(out_row), field("row2"))
                b.store(b.or_(b.or_(b.and_(kk, const(1)), flags), mode), field("flags"))
                b.call(kernel_fn, [args])

            pairs = -(-h_out // 2)
            if self.nest.reverse:
                stage(const(pairs))

                def body(kk: ir.Value) -> None:
                    stage(kk)
                    row_pair(kk)

                self._loop_range("dw.rows", pairs - 1, pairs, -1, body)
            else:
                stage(const(0))

                def body(kk: ir.Value) -> None:
                    stage(b.add(kk, const(1)))
                    row_pair(kk)

                self._loop_range("dw.rows", 0, pairs, 1, body)
            return

        # Doubled records (the common case): 4-row tiles, then the remainder's tile of
        # 1-3 rows; otherwise pairs of rows (the kernel's other requantization has
        # no 4-row code). A call's first pair is the last of the call before it, staged
        # already (the one below, bottom-up). The remainder's code reads fixed slots (from
        # 0), where `slot_of` puts its pairs.
        # (first row, mode, row distance, pairs after its first)
        tail = {0: [], 1: [(h_out - 1, ONE_ROW, 0, 1)],
                2: [(h_out - 2, TWO_ROWS, out_row, 1)],
                3: [(h_out - 3, THREE_ROWS, out_row, 2)]}[rest]
        doubled = b.icmp_unsigned("!=", b.and_(flags, const(2 * DOUBLED_FLAG)), const(0))

        # The slot of tile t's first pair (2t: 0 or 2), carried from tile to tile.
        first_slot = self._dw_stack(I32, 4, "dw_first_slot")

        def tiles_inside(up: bool) -> tuple[int, int]:
            """The tiles [lo, hi] whose two new pairs (2t + 1 and 2t + 2, or 2t and
            2t + 1 bottom-up) have every row inside the input: those take the two-pair
            stager."""
            first = 2 * (0 if up else 1) + plan.row  # tile t's first new row, less 4t
            good = [t for t in range(quads_n) if 4 * t + first >= 0
                    and 4 * t + first + 3 < h_in]
            return (good[0], good[-1]) if good else (1, 0)

        def quad_body(up: bool) -> Callable[[ir.Value], None]:
            lo, hi = tiles_inside(up)

            def body(t: ir.Value) -> None:
                m = b.mul(t, const(2))
                s0 = b.load(first_slot, typ=I32)
                s2 = b.sub(const(2), s0)
                # the new pairs: 2t + 1 (slot 1) and 2t + 2 (s2), or 2t (s0) bottom-up
                even, even_slot = (m, s0) if up else (b.add(m, const(2)), s2)
                odd = b.add(m, const(1))
                inside = b.and_(b.icmp_signed(">=", t, const(lo)),
                                b.icmp_signed("<=", t, const(hi)))
                if lo == 0 and hi == quads_n - 1:
                    stage_two(even, even_slot, odd)
                else:
                    with b.if_else(inside) as (two, one):
                        with two:
                            stage_two(even, even_slot, odd)
                        with one:
                            stage(odd, const(1))
                            stage(even, even_slot)
                call(b.mul(t, const(QUAD_ROWS)), 0, out_row, s0)
                # the next tile's first pair: 2t + 2, or 2t - 2 bottom-up: slot s2 both
                b.store(s2, first_slot)
            return body

        def four_rows() -> None:
            """4-row tiles and the remainder's tile (doubled records)."""
            plan_top = self._dw_top_pair_plan(quads_n, rest, plan.row, h_in)
            if plan_top is not None and not self.nest.reverse:
                self._dw_emit_top_pair(plan_top, quads_n, pair_rows, stage, call,
                                       staged, column_words, first_slot, x_buf, pad,
                                       out_row, row_bytes, over_row)
            elif not self.nest.reverse:
                stage(const(0))
                b.store(const(slot_of(0)), first_slot)
                self._dw_tiles(0, quads_n, 1, quad_body(False), over_row)
                for y, mode, below, more in tail:
                    if not (more == 2 and self._dw_stage_rest_two(
                            y // 2 + 1, pair_rows, staged, column_words, pad, h_in,
                            plan.row, row_bytes)):
                        for j in range(1, more + 1):
                            stage(const(y // 2 + j))
                    call(const(y), mode, below, const(0))
            else:
                for y, mode, below, more in tail:
                    for j in range(more, -1, -1):
                        stage(const(y // 2 + j))
                    call(const(y), mode, below, const(0))
                if not tail:
                    stage(const(2 * quads_n))
                b.store(const(slot_of(2 * (quads_n - 1))), first_slot)
                self._dw_tiles(quads_n - 1, quads_n, -1, quad_body(True), over_row)

        if over_row:  # doubled: the 4-row tiles alone
            four_rows()
            return
        with b.if_else(doubled) as (fast, slow):
            with fast:
                four_rows()
            with slow:  # pairs of rows, each staging its two pairs into slots 0 and 1
                pairs = -(-h_out // 2)

                def pair(kk: ir.Value) -> None:
                    y = b.mul(kk, const(2))
                    below: ir.Value = const(out_row)
                    if h_out % 2:  # the odd last row: its partner stored first under it
                        alone = b.icmp_signed(">=", b.add(y, const(1)), const(h_out))
                        below = b.select(alone, const(0), below)
                    stage(kk, const(0))
                    stage(b.add(kk, const(1)), const(1))
                    call(y, TWO_ROWS, below, const(0))

                if self.nest.reverse:
                    self._loop_range("dw.pairs", pairs - 1, pairs, -1, pair)
                else:
                    self._loop_range("dw.pairs", 0, pairs, 1, pair)
