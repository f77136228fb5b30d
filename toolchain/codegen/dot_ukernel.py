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
`min_steps` packed steps on, or `min_tap_steps` per tap of a window; a window's taps
go to one call of the runs variant (a run per window row) from `min_run_tap_steps` per
tap on (loops/rules.py `UKERNELS`, which the tile costs read).

A tile is handed over when every MAC of its packed step belongs to a group of four
points that read the same input word and four weight rows in the paired layout
(kernel/paired.py) at a constant distance from one another, none of them
bounds-checked. Each group (per unrolled tap) is one call covering all steps of the
packed dim, and a group's calls over a window's taps become one where the weights run
on from tap to tap and the inputs do in runs of equal length with equal jumps (_runs);
the tile's remaining elements (the reduction's length mod 4) stay with the generated
code. Integer sums in another order are the same sums, so the result is the
reference's bit for bit (tests/codegen/test_dot_ukernel.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from math import prod

from llvmlite import ir

from toolchain.codegen.addresses import flat_offset, row_strides
from toolchain.codegen.dot import WIDTH
from toolchain.codegen.errors import EmitError
from toolchain.loops.affine import affine_of
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import UKERNELS, Ukernel
from toolchain.schedule.tap_rest import tap_rest_steps

I32 = ir.IntType(32)
PTR = ir.PointerType()


@dataclass(frozen=True)
class LateSum:
    """A point's sum left in a microkernel's accumulator array (`cell`), read when its
    epilogue is emitted (_accumulating_call, `late`)."""

    cell: ir.Value


@dataclass(frozen=True)
class _Call:
    """One microkernel call: the tile points it accumulates (row order), its input
    word and its first weight row (buffer, base-pointer key, element offset), and the
    distance between rows in elements."""

    points: tuple[int, ...]
    x: tuple[int, tuple, int]
    w: tuple[int, tuple, int]
    row_elems: int
    steps: int = 0  # packed steps per run
    runs: int = 1  # runs of contiguous input (a window's rows), weights contiguous
    jump: int = 0  # input elements skipped between runs


def _runs(calls: list[_Call], length: int) -> list[_Call]:
    """The per-tap calls of each group of points as one call where it can be: the
    weights of consecutive taps follow one another (a convolution's rows run over
    ky, kx and the channels), and the inputs do in runs of equal length with equal jumps
    between them (a window's columns follow one another along the channels, its rows do
    not). `length`: the elements one tap's call covers."""
    groups: dict[tuple, list[_Call]] = {}
    for c in calls:  # in tap order
        groups.setdefault((c.points, c.row_elems, c.x[:2], c.w[:2]), []).append(c)
    out = []
    for group in groups.values():
        ws = [c.w[2] for c in group]
        xs = [c.x[2] for c in group]
        breaks = [i for i in range(1, len(xs)) if xs[i] != xs[i - 1] + length]
        starts = [0, *breaks]
        sizes = {b - a for a, b in itertools.pairwise([*starts, len(xs)])}
        jumps = {xs[i] - xs[i - 1] - length for i in breaks}
        if len(group) == 1 or len(sizes) != 1 or len(jumps) > 1 or \
                any(b != a + length for a, b in itertools.pairwise(ws)):
            out += group
            continue
        first = group[0]
        out.append(replace(first, steps=first.steps * sizes.pop(), runs=len(starts),
                           jump=jumps.pop() if jumps else 0))
    return out


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
        if self.nest.stage == 2:
            return self._two_pixel_call(kernel, points, slots)
        if "window" in self.staged:  # a gathered input too: the staging gathered it
            return self._staged_window_call(kernel, points, slots, steps)
        if self.gathered:
            return False
        calls = self._ukernel_calls(kernel, points, steps)
        if calls is None:
            return False
        taps = prod(self.k.domain[u] for u in self.nest.unroll)
        for call in calls:
            if taps == 1:
                least = kernel.min_steps
            elif call.runs * call.steps == steps:  # a call per tap
                least = kernel.min_tap_steps
            else:  # a call for several taps: `steps` each
                least = kernel.min_run_tap_steps
            if steps < least:
                return False
        accs = self._ukernel_accs(kernel)
        for call in calls:
            staged = self._staged_pointer(call) if call.runs == 1 else None
            x = staged if staged is not None else self._ukernel_pointer(*call.x)
            w = self._ukernel_pointer(*call.w)
            row_bytes = call.row_elems * 2  # paired: one i16 per int8 weight
            if staged is not None:
                symbol, extra = kernel.staged_symbol, []
            elif call.runs == 1:
                symbol, extra = kernel.symbol, []
            else:
                symbol = kernel.runs_symbol
                extra = [ir.Constant(I32, call.runs), ir.Constant(I32, call.jump)]
            self._accumulating_call(accs, symbol, call.points, slots,
                                    [x, w, ir.Constant(I32, row_bytes),
                                     ir.Constant(I32, call.steps), *extra])
        return True

    def _ukernel_accs(self, kernel: Ukernel, pixels: int = 1) -> ir.Value:
        """A stack array of a tile's accumulators (`kernel.rows` a pixel), passed to the
        calls."""
        b = self.b
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        accs = b.alloca(ir.ArrayType(I32, kernel.rows * pixels), name="ukernel_acc")
        b.position_at_end(here)
        return accs

    def _accumulating_call(self, accs: ir.Value, symbol: str, points: tuple[int, ...] | list,
                           slots: list[ir.Value], args: list[ir.Value],
                           late: bool = False, at: list[int] | None = None) -> None:
        """A microkernel call adding onto the accumulators of the tile's `points` (in row
        order), which go through `accs` (its first argument; `args` are the others).
        `late`: the call ends the reduction, so the points' slots become the array's
        cells, each read where its output's epilogue starts (codegen/nest.py _tile)
        instead of all eight sums of a 2x4 tile read back at once, which with the
        requantization's per-channel values outgrew the registers and spilled.
        `at`: each point's cell (default: the first len(points)); the call's other cells
        are sums of zero weight rows, never read."""
        b = self.b
        cells = [b.gep(accs, [ir.Constant(I32, 0), ir.Constant(I32, r)], inbounds=True)
                 for r in (at if at is not None else range(len(points)))]
        for j, cell in zip(points, cells, strict=True):
            b.store(b.load(slots[j]), cell)
        b.call(self._ukernel_function(symbol, 1 + len(args)), [cells[0], *args])
        for j, cell in zip(points, cells, strict=True):
            if late:
                slots[j] = cell
            else:
                b.store(b.load(cell), slots[j])

    def stage_input(self) -> None:
        """Nest.stage: the current pixel's input values along the packed dim (a
        window's taps too), paired into a stack buffer once (runtime_c's mrt_pair_s8)
        before the loop over its output-channel tiles, whose calls then read them there
        (_staged_pointer); for a two-pixel tile both pixels' interleaved (mrt_pair2_s8,
        read by _two_pixel_call), or its dim's last pixel alone."""

        kernel = UKERNELS[self.nest.dot]
        x = next(ld for ld in dot_operands(self.k) if ld.operand not in self.k.paired)
        words = self.k.domain[self.nest.reduction[-1]] // WIDTH
        unroll = self.nest.unroll
        taps = list(itertools.product(*[range(self.k.domain[u]) for u in unroll]))
        b = self.b
        pixels = self._pixel_points()
        # One buffer per function, whatever the regions that stage into it.
        buf = self.staged.get("buffer")
        if buf is None:
            here = b.block
            b.position_at_start(self.fn.entry_basic_block)
            buf = b.alloca(ir.ArrayType(ir.IntType(16),
                                        self.nest.stage * len(taps) * words * WIDTH),
                           name="staged")
            buf.align = 8
            b.position_at_end(here)
        if unroll and self._packable(self.nest.reduction[-1]) and self.gathered:
            self._stage_gathered(x, buf, taps, words, pixels)
            self.staged = {"buffer": buf, "window": (buf, len(taps) * words)}
            return
        n = len(pixels)
        if n == 2:  # two pixels (rules: two_pixel_dim), staged interleaved
            pair = self._ukernel_function(kernel.pair_two_symbol, 4)  # dst, a, b, words
        else:
            fty = ir.FunctionType(ir.VoidType(), [PTR, PTR, I32])
            pair = b.module.globals.get(kernel.pair_symbol) or ir.Function(
                b.module, fty, kernel.pair_symbol)
        if self.nest.tap_rest:  # schedule/tap_rest.py: its weights are in that order
            if n != 2 or not self._stage_window2(kernel, x, buf, taps, words, pixels):
                raise EmitError(f"kernel {self.k.name!r}: its gathered tap rests need "
                                f"a window staged in one call")
            self.staged = {"buffer": buf}
            return
        if n == 2 and self._stage_window2(kernel, x, buf, taps, words, pixels):
            self.staged = {"buffer": buf}  # read whole by _two_pixel_call
            return
        # Each tap's words (a window's taps outside the input: the pad value's), taps
        # whose inputs follow one another (a window row's columns) paired in one call;
        # for two pixels, where both pixels' inputs do.
        run: list = []  # [first tap, src pointers, words, next element offsets, keys]
        # Values (the bounds tests' indices) differ by tap and pixel: cached per tap.
        saved = self.varying
        self.varying = frozenset(unroll) | frozenset(q for p in pixels for q in p)
        for t, tap in enumerate(taps):
            self.point.update(zip(unroll, tap))
            found = []
            for p in pixels:
                self.point.update(p)
                found.append(self._staged_source(x, words))
            srcs = [f[0] for f in found]
            consts = tuple(f[1] for f in found)
            keys = tuple(f[2] for f in found)
            if run and None not in keys and run[4] == keys and run[3] == consts:
                run[2] += words
                run[3] = tuple(c + words * WIDTH for c in run[3])
                continue
            if run:
                self._pair_call(pair, buf, *run[:3])
            run = [t * words * WIDTH * n, srcs, words,
                   tuple(c + words * WIDTH for c in consts), keys]
        self._pair_call(pair, buf, *run[:3])
        for u in unroll:
            self.point[u] = 0
        self.point.update(pixels[0])
        self.varying = saved
        if n == 2:  # read whole by _two_pixel_call
            self.staged = {"buffer": buf}
        elif unroll:
            self.staged = {"buffer": buf, "window": (buf, len(taps) * words)}
        else:
            self.staged = {"buffer": buf, (x.operand, run[4][0]):
                           (buf, run[3][0] - words * WIDTH, words * WIDTH)}

    def _stage_window2(self, kernel: Ukernel, x, buf: ir.Value, taps: list[tuple[int, ...]],
                       words: int, pixels: list[dict[int, int]]) -> bool:
        """Stages two pixels' whole window in one call (mrt_pair2w2_s8) where its taps
        are two words each, all inside the input from one base, at a constant distance
        from tap to tap along a row and from row to row, but not following one another
        (a dilated window over 8 channels, whose taps window_rows.py cannot merge:
        otherwise the runs of stage_input are fewer calls); False, emitting nothing,
        where not."""
        unroll = self.nest.unroll
        # Or, under Nest.tap_rest (schedule/tap_rest.py), taps of 4 words of which the
        # first 3 and the 13th value are staged (mrt_pair2w3r_s8), whatever the jumps.
        rest = self.nest.tap_rest
        symbol = kernel.pair_two_tap_rest_symbol if rest else kernel.pair_two_window2_symbol
        if not symbol or words != (4 if rest else 2) or len(unroll) != 2 \
                or self.k.operands[x.operand].dtype.name != "i8":
            return False
        rows, cols = (self.k.domain[u] for u in unroll)
        # Decided before any code is emitted for a window whose taps follow one another
        # along its rows (every undilated one), so that its staging is emitted as before.
        forms = tuple(affine_of(i) for i in x.index)
        if any(f is None for f in forms) or (not rest and flat_offset(
                forms, row_strides(self.k.operands[x.operand].shape),
                range(len(forms))).coeff(unroll[1]) in (0, words * WIDTH)):
            return False
        saved = self.varying
        self.varying = frozenset(unroll) | frozenset(q for p in pixels for q in p)
        found = []
        for tap in taps:
            self.point.update(zip(unroll, tap))
            here = []
            for p in pixels:
                self.point.update(p)
                here.append(self._staged_source(x, words))
            found.append(here)
        for u in unroll:
            self.point[u] = 0
        self.point.update(pixels[0])
        self.varying = saved
        if any(f[2] is None for here in found for f in here):
            return False  # a tap the region leaves tested
        consts = [tuple(f[1] for f in here) for here in found]
        # the tap's constant offset, the same for both pixels relative to their first tap
        rel = [tuple(c[j] - consts[0][j] for j in range(len(pixels))) for c in consts]
        if any(r[0] != r[1] for r in rel) or any(
                f[2] != found[0][j][2] for here in found for j, f in enumerate(here)):
            return False
        col_jump = rel[1][0] if cols > 1 else 0
        row_jump = rel[cols][0] if rows > 1 else 0
        if (col_jump == words * WIDTH and not rest) or any(
                rel[r * cols + c][0] != r * row_jump + c * col_jump
                for r in range(rows) for c in range(cols)):
            return False  # taps that follow one another: stage_input's runs
        pair = self._ukernel_function(symbol, 7)  # dst, a, b, cols, rows, jumps
        dst = self.b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True,
                         source_etype=buf.allocated_type)
        self.b.call(pair, [dst, *(f[0] for f in found[0]), ir.Constant(I32, cols),
                           ir.Constant(I32, rows), ir.Constant(I32, col_jump),
                           ir.Constant(I32, row_jump - cols * col_jump)])
        return True

    def _pixel_points(self) -> list[dict[int, int]]:
        """The pixels staged together (Nest.stage): the current one, or the tile's two
        along its two-pixel dim (where the dim's last tile has one: that one alone, or
        twice for a kernel table without a one-pixel call)."""
        if self.nest.stage != 2:
            return [{}]
        col = self.paired_column
        if col is not None and self.column == "column":
            p = col.q  # the lone last pixels, paired along the outer dim
        else:
            (p,) = [q for q, f in self.nest.blocks if f == 2 and q != self.k.n_parallel - 1]
        # The last pixel alone (_two_pixel_call), but where the staging has no one-pixel
        # form (Nest.tap_rest): that pixel twice, half of the call's sums dropped.
        if self.tile[p] == 1 and UKERNELS[self.nest.dot].one_pixel_symbol \
                and not self.nest.tap_rest:
            return [{p: 0}]
        return [{p: 0}, {p: self.tile[p] - 1}]

    def _stage_gathered(self, x, buf: ir.Value, taps: list[tuple[int, ...]], words: int,
                        pixels: list[dict[int, int]]) -> None:
        """stage_input for an input the packed steps cannot read in words (a 10x4 window
        over one channel: its rows of 4 taps start at odd bytes): each tap's values
        loaded one by one, with the bounds tests the region leaves (a value outside the
        input is the pad value), and stored as the paired layout's two words a step:
        values 0 and 2, then 1 and 3, as 16-bit halves; for two pixels, each word of
        the first pixel followed by the second's (mrt_pair2_s8's order)."""
        b = self.b
        d = self.nest.reduction[-1]
        outer, inner = self.nest.unroll[0], self.nest.unroll[1:]
        dims = (*inner, d, *(q for p in pixels for q in p))
        saved, self.varying = self.varying, self.varying | frozenset(dims)
        n = len(pixels)
        per_outer = len(taps) // self.k.domain[outer] * words * n * WIDTH  # i16 values

        def body(i: ir.Value) -> None:
            self.base[outer] = i
            start = b.mul(i, ir.Constant(I32, per_outer), flags=["nsw"])
            if inner or x.pad is None:
                with self._scope():
                    stage_row(start)
                return
            # A window row whose every value is inside the input (every row of an
            # interior pixel) is staged without a test per value: its first and last
            # values tested once (the merged column index is monotone in the packed
            # dim), then plain loads. 3x3 over 3 channels on cortex-m4 spent ~26
            # instructions a staged value with the tests.
            with self._scope():
                ok = self._row_in_bounds(x, d, words, pixels)
                with b.if_else(ok) as (inside, border):
                    with inside, self._scope():
                        saved_tested = self.tested_in_bounds
                        self.tested_in_bounds = saved_tested | {id(x)}
                        if not self._stage_row_words(x, buf, start, words, pixels):
                            stage_row(start)
                        self.tested_in_bounds = saved_tested
                    with border, self._scope():
                        stage_row(start)

        def stage_row(start: ir.Value) -> None:
            for t, tap in enumerate(itertools.product(
                    *[range(self.k.domain[u]) for u in inner])):
                self.point.update(zip(inner, tap))
                for step in range(words):
                    for j, pixel in enumerate(pixels):
                        self.point.update(pixel)
                        values = []
                        for e in range(WIDTH):
                            self.point[d] = step * WIDTH + e
                            values.append(b.sext(self.value(x), I32))
                        for half, (lo, hi) in enumerate(((0, 2), (1, 3))):
                            word = b.or_(b.and_(values[lo], ir.Constant(I32, 0xFFFF)),
                                         b.shl(values[hi], ir.Constant(I32, 16)))
                            at = (t * words + step) * n * WIDTH + (half * n + j) * 2
                            dst = b.gep(buf, [ir.Constant(I32, 0), b.add(
                                start, ir.Constant(I32, at), flags=["nsw"])],
                                inbounds=True)
                            b.store(word, b.bitcast(dst, I32.as_pointer()), align=4)

        # A loop over the outermost tap dim: the window's rows, whose bounds tests are
        # made at run time anyway (the nest has no interior: loops/rules.py _nest).
        self.ranges[outer] = (0, self.k.domain[outer] - 1)
        self._loop_range("stage", 0, self.k.domain[outer], 1, body)
        self.base[outer] = 0
        self.ranges[outer] = (0, 0)
        for u in dims:
            self.point[u] = 0
        self.varying = saved

    def _stage_row_words(self, x, buf: ir.Value, start: ir.Value, words: int,
                         pixels: list[dict[int, int]]) -> bool:
        """Stages the current window row of every pixel, all inside the input, by words
        read at any byte (mrt_pair4_s8, or mrt_pair2u_s8 for two pixels) where x's
        values along the packed dim are contiguous bytes (a merged window row:
        schedule/window_rows.py); False, emitting nothing, where they are not. A row of
        3x3 over 13 channels (40 values) took ~6 instructions a value loaded and
        packed one by one, ~2 by words."""
        kernel = UKERNELS[self.nest.dot]
        d = self.nest.reduction[-1]
        forms = tuple(affine_of(i) for i in x.index)
        if not kernel.pair_two_unaligned_symbol or any(f is None for f in forms) \
                or self.k.operands[x.operand].dtype.name != "i8":
            return False
        shape = self.k.operands[x.operand].shape
        flat = flat_offset(forms, row_strides(shape), range(len(shape)))
        if flat.coeff(d) != 1:
            return False
        b = self.b
        srcs = []
        for pixel in pixels:
            self.point.update(pixel)
            self.point[d] = 0
            srcs.append(self._affine_address(x.operand, flat))
        dst = b.gep(buf, [ir.Constant(I32, 0), start], inbounds=True,
                    source_etype=buf.allocated_type)
        if len(pixels) == 2:
            pair = self._ukernel_function(kernel.pair_two_unaligned_symbol, 4)
        else:
            fty = ir.FunctionType(ir.VoidType(), [PTR, PTR, I32])
            pair = b.module.globals.get(kernel.pair_symbol) or ir.Function(
                b.module, fty, kernel.pair_symbol)
        b.call(pair, [dst, *srcs, ir.Constant(I32, words)])
        return True

    def _row_in_bounds(self, x, d: int, words: int, pixels: list[dict[int, int]]) -> ir.Value:
        """Whether all of the current window row's values along packed dim `d`, for
        every staged pixel, are inside x's operand: each index tested at the row's first
        and last value (an affine index moves one way along d)."""
        b = self.b
        shape = self.k.operands[x.operand].shape
        ok: ir.Value = ir.Constant(ir.IntType(1), 1)
        for pixel in pixels:
            self.point.update(pixel)
            for end in (0, words * WIDTH - 1):
                self.point[d] = end
                for i, size in enumerate(shape):
                    idx = self._as_index(x.index[i])
                    ok = b.and_(ok, b.icmp_unsigned("<", idx, ir.Constant(I32, size)))
        self.point[d] = 0
        return ok

    def _two_pixel_call(self, kernel: Ukernel, points: list[dict[int, int]],
                        slots: list[ir.Value]) -> bool:
        """A tile of two pixels x `kernel.rows` output channels (or the last pixel of
        the two-pixel dim alone: the one-pixel call, 1x4 against the same interleaved
        rows, at the 2x4 call's cost per MAC): one call over the whole reduction, the
        input staged for both (stage_input), the weights a group of rows interleaved
        (Kernel.interleaved) that starts where its first row does in the paired
        layout."""
        buf = self.staged["buffer"]
        operands = dot_operands(self.k)
        w = next(ld for ld in operands if ld.operand in self.k.paired)
        (p,) = self._pixel_points()[0]
        d = self.k.n_parallel - 1
        order = sorted(range(len(points)),
                       key=lambda j: (points[j].get(p, 0), points[j].get(d, 0)))
        rows = self.tile[d]  # the dim's last tile may be narrower (two_pixel_dim)
        if len(points) != rows * self.tile[p] or points[order[0]].get(d, 0) != 0 or \
                rows > kernel.rows or (rows < kernel.rows and self._rows_past(w) < kernel.rows):
            raise EmitError(f"kernel {self.k.name!r}: a 2x4 tile of {len(points)} points")
        self._ukernel_bases = {}
        self.point.update(points[order[0]])
        row = self._ukernel_word(w)
        if row is None:
            raise EmitError(f"kernel {self.k.name!r}: the 2x4 tile's weights are checked")
        steps = prod(self.k.domain[self.k.n_parallel:]) // WIDTH
        if self.nest.tap_rest:  # schedule/tap_rest.py: the zero lanes left out
            steps = tap_rest_steps(prod(self.k.domain[u] for u in self.nest.unroll))
        x = self.b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True)
        pixels = len(self._pixel_points())
        accs = self._ukernel_accs(kernel, pixels)

        def pixel(j: int) -> int:  # the point's pixel in the staged pair
            return points[j].get(p, 0) // max(self.tile[p] - 1, 1) if pixels == 2 else 0

        if rows <= kernel.row_call_max:
            # Calls of the most rows that fit, each from its first row of the group (4
            # bytes, 2 i16 a row), its sums in the cells from r * pixels on, pixel by
            # pixel.
            r = 0
            while r < rows:
                n, two, one = next(c for c in kernel.row_calls if c[0] <= rows - r)
                mine = [j for j in order if r <= points[j].get(d, 0) < r + n]
                buf, key, const = row
                self._accumulating_call(
                    accs, two if pixels == 2 else one, mine, slots,
                    [x, self._ukernel_pointer(buf, key, const + 2 * r),
                     ir.Constant(I32, steps)], late=True,
                    at=[r * pixels + pixel(j) * n + points[j].get(d, 0) - r for j in mine])
                r += n
            return True
        symbol = kernel.two_pixel_symbol if pixels == 2 else kernel.one_pixel_symbol
        # Cell of each point in the call's accumulators: pixel by pixel, kernel.rows each.
        at = [pixel(j) * kernel.rows + points[j].get(d, 0) for j in order]
        self._accumulating_call(accs, symbol, order, slots,
                                [x, self._ukernel_pointer(*row), ir.Constant(I32, steps)],
                                late=True, at=at)
        return True

    def _rows_past(self, w) -> int:
        """The weight rows (output channels) of paired operand `w` from the current tile's
        first on (its last base, where tiles loop): the padded group a narrower last
        tile's call reads whole."""
        d = self.k.n_parallel - 1
        return self.k.operands[w.operand].shape[0] - self.ranges[d][1]

    def _pair_call(self, pair: ir.Function, buf: ir.Value, at: int, srcs: list[ir.Value],
                   words: int) -> None:
        """`words` words of each pixel's input (mrt_pair_s8: one; mrt_pair2_s8: two,
        interleaved) paired into the staged buffer from its element `at`."""
        b = self.b
        dst = b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, at)], inbounds=True,
                    source_etype=buf.allocated_type)
        b.call(pair, [dst, *srcs, ir.Constant(I32, words)])

    def _staged_source(self, x, words: int) -> tuple[ir.Value, int, tuple | None]:
        """The address of x's `words` words at the current point (its packed dim from
        0), its constant element offset and base key; for a tap the region cannot prove
        inside the input, the address of `words` words of the pad value where it is
        outside (a select, no load), and key None."""
        shape = self.k.operands[x.operand].shape
        forms, strides, unproven = self._packed_split(x)  # the rules made sure it splits
        ptr, const, key = self._affine_parts(x.operand,
                                             flat_offset(forms, strides, range(len(forms))))
        src = ptr if const == 0 else self._gep_from(x.operand, ptr, ir.Constant(I32, const))
        if not unproven:
            return src, const, key
        b = self.b
        ok: ir.Value = ir.Constant(ir.IntType(1), 1)
        for i in unproven:
            idx = self._as_index(x.index[i])
            ok = b.and_(ok, b.icmp_unsigned("<", idx, ir.Constant(I32, shape[i])))
        return b.select(ok, src, self._pad_words(x, words)), const, None

    def _pad_words(self, x, words: int) -> ir.Value:
        """A constant of `words` words of x's (constant) pad value, read by mrt_pair_s8."""
        module = self.b.module
        value = int(x.pad.value)
        name = f"mrt_pad_s8_{value & 0xFF:02x}_{words}"
        g = module.globals.get(name)
        if g is None:
            ty = ir.ArrayType(ir.IntType(8), words * WIDTH)
            g = ir.GlobalVariable(module, ty, name)
            g.initializer = ir.Constant(ty, [value] * (words * WIDTH))
            g.global_constant = True
            g.linkage = "internal"
            g.align = 4
        return g

    def _staged_window_call(self, kernel: Ukernel, points: list[dict[int, int]],
                            slots: list[ir.Value], steps: int) -> bool:
        """A tile of `kernel.rows` output channels over a staged window (stage_input):
        one call over every tap's steps, where each point's weights run on from tap to
        tap (a convolution's rows over ky, kx and the channels) at a constant distance
        from one another; False, emitting nothing, where they do not."""
        buf, total = self.staged["window"]
        operands = dot_operands(self.k)
        w = next(ld for ld in operands if ld.operand in self.k.paired)
        unroll = self.nest.unroll
        taps = list(itertools.product(*[range(self.k.domain[u]) for u in unroll]))
        if len(points) != kernel.rows or total != len(taps) * steps:
            return False
        self._ukernel_bases = {}
        rows = []
        for p in points:
            self.point.update(p)
            offsets = []
            for tap in taps:
                self.point.update(zip(unroll, tap))
                word = self._ukernel_word(w)
                if word is None:
                    break
                offsets.append(word)
            for u in unroll:
                self.point[u] = 0
            if len(offsets) != len(taps) or any(
                    o[:2] != offsets[0][:2] or o[2] != offsets[0][2] + i * steps * WIDTH
                    for i, o in enumerate(offsets)):
                return False
            rows.append(offsets[0])
        order = sorted(range(len(points)), key=lambda j: rows[j][2])
        gap = rows[order[1]][2] - rows[order[0]][2]
        if gap <= 0 or gap % WIDTH or any(rows[order[i]][2] - rows[order[0]][2] != i * gap
                                          for i in range(len(order))):
            return False
        x = self.b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True,
                       source_etype=buf.allocated_type)
        self._accumulating_call(self._ukernel_accs(kernel), kernel.staged_symbol, order, slots,
                                [x, self._ukernel_pointer(*rows[order[0]]),
                                 ir.Constant(I32, gap * 2), ir.Constant(I32, total)])
        return True

    def _staged_pointer(self, call: _Call) -> ir.Value | None:
        """The staged copy of a call's input (stage_input), or None."""
        hit = self.staged.get(call.x[:2])  # a pixel's inputs (no window)
        if hit is None:
            return None
        buf, origin, n = hit
        off = call.x[2] - origin
        if off < 0 or off + call.steps * WIDTH > n:
            return None
        return self.b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, off)], inbounds=True,
                          source_etype=buf.allocated_type)

    def _ukernel_function(self, symbol: str, n_args: int) -> ir.Function:
        module = self.b.module
        fn = module.globals.get(symbol)
        if fn is None:
            fty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR] + [I32] * (n_args - 3))
            fn = ir.Function(module, fty, symbol)
        return fn

    def _ukernel_pointer(self, buf: int, key: tuple, const: int) -> ir.Value:
        ptr = self._ukernel_bases[(buf, key)]
        return ptr if const == 0 else self._gep_from(buf, ptr, ir.Constant(I32, const))

    def _ukernel_calls(self, kernel: Ukernel, points: list[dict[int, int]],
                       steps: int) -> list[_Call] | None:
        """The calls covering every MAC of the tile's packed loop (`steps` steps), or
        None: per tap, then merged (_runs)."""
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
                calls.append(_Call(tuple(m[0] for m in chunk), xw, chunk[0][1], gap, steps))
        return _runs(calls, steps * WIDTH) if kernel.runs_symbol else calls

    def _ukernel_word(self, ld) -> tuple[int, tuple, int] | None:
        """(buffer, base key, element offset) of `ld`'s word at the current point at the
        packed dim's start, with its base pointer noted; None where it is bounds-checked
        or not word-aligned."""
        split = self._packed_split(ld)
        if split is None or split[2]:
            return None
        forms, strides, _ = split
        ptr, const, key = self._affine_parts(ld.operand,
                                             flat_offset(forms, strides, range(len(forms))))
        if const % WIDTH:
            return None
        self._ukernel_bases[(ld.operand, key)] = ptr
        return ld.operand, key, const
