"""A dense layer's tile of output rows as one call of runtime_c's dense-rows kernel.

loops/dense_rows.py chooses the tile (the nest's dot kind DENSE_ROWS_KIND) for a dense
layer on a DSP target: one pixel, paired weights whose rows follow one another. The
tile's packed reduction is then one call of mrt_dense_s8_paired_rows
(runtime_c/ukernel/dsp/mrt_dense_dsp.c), whatever its number of rows: the kernel pairs
the input into a stack buffer on the first tile of the pixel (its raw address; later
tiles pass NULL and read the buffer), runs the rows in pairs, and adds each row's sum to
its accumulator, which goes through a stack array to the generated epilogue: the
sums' start stored there by the generated code, or for 12 rows and more copied from its
table by mrt_copy_words; each sum read where its output's epilogue starts. Integer sums
in another order are the same sums, so the outputs are the reference's bit for bit
(tests/codegen/test_dense_rows.py).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from llvmlite import ir

from toolchain.codegen.addresses import flat_offset, row_strides
from toolchain.codegen.dot import WIDTH
from toolchain.codegen.errors import EmitError
from toolchain.kernel.form import Load
from toolchain.loops.affine import affine_of
from toolchain.loops.dense_rows import (
    COPY_WORDS_SYMBOL,
    DENSE_ROWS_KIND,
    DENSE_ROWS_S8_SYMBOL,
    DENSE_ROWS_SYMBOL,
    dense_rows_operands,
    padded_tail,
    weights_paired,
)

I32 = ir.IntType(32)
PTR = ir.PointerType()
DENSE_ROWS_DSP = "dsp"  # the SIMD row's dot kind whose staging a window's tile reuses
# From this many rows a tile's sums' start is copied from its table by mrt_copy_words
# (runtime_c/ukernel/dsp/mrt_dense_dsp.c): 16 values copied by the generated code took
# ~45 instructions (kept in registers, spilled), the call ~21; 10 about as many either
# way, so fewer rows keep the generated copy.
INIT_ROWS = 12


class DenseRowsEmitter:
    """The dense-rows call for NestEmitter (which provides the builder, the addresses,
    the tile and, from codegen/dot_ukernel.py, the word addresses of a packed step)."""

    def _dense_tile_words(self, d: int, points: list[dict[int, int]], what: str
                          ) -> tuple[int, set, list]:
        """The input's real elements along packed dim d (padded_tail), the input words
        and each point's weight word of a dense tile over `points` (the dense-rows and
        the tiny dense emitters'); EmitError naming `what` where the tile is not one."""
        operands = dense_rows_operands(self.k)
        if operands is None:
            raise EmitError(f"kernel {self.k.name!r}: {what} without its two operands")
        x, w = operands
        real = padded_tail(self.k, x, d)
        if real is None or self.gathered - {x.operand}:
            raise EmitError(f"kernel {self.k.name!r}: {what}'s input is padded past its "
                            "last word or its weights are gathered")
        self._ukernel_bases = {}
        rows, xs = [], set()
        for p in points:
            self.point.update(p)
            xw, ww = self._input_word(x), self._ukernel_word(w)
            if xw is None or ww is None:
                raise EmitError(f"kernel {self.k.name!r}: {what}'s words are checked or "
                                "unaligned")
            xs.add(xw)
            rows.append(ww)
        return real, xs, rows

    def dense_rows_loop(self, d: int, points: list[dict[int, int]], slots: list[ir.Value],
                        steps: int) -> bool:
        """Emits packed dim d (`steps` steps of 4 from 0) of the tile's points as one
        call and returns True where the nest is a dense-rows one; False otherwise."""
        if self.nest.dot != DENSE_ROWS_KIND:
            return False
        if "window" in self.staged:
            self._window_rows_call(points, slots)
            return True
        real, xs, rows = self._dense_tile_words(d, points, "a dense-rows tile")
        order = sorted(range(len(points)), key=lambda j: rows[j][2])
        first = rows[order[0]]
        if len(xs) != 1 or any(rows[j][:2] != first[:2] or
                               rows[j][2] != first[2] + i * steps * WIDTH
                               for i, j in enumerate(order)):
            raise EmitError(f"kernel {self.k.name!r}: a dense-rows tile's rows do not "
                            "follow one another over one input")
        b = self.b
        buf = self.staged.get(DENSE_ROWS_KIND)
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        if buf is None:
            buf = b.alloca(ir.ArrayType(ir.IntType(16), steps * WIDTH), name="dense_x")
            buf.align = 8
            self.staged[DENSE_ROWS_KIND] = buf
        b.position_at_end(here)
        x_ptr = self._ukernel_pointer(*xs.pop())
        (c,) = [dim for dim, n in self.nest.blocks if n > 1] or [None]
        if c is not None and not self.nest.reverse:
            # Later tiles of the pixel read the input the first one paired (in reverse
            # order the first tile run is the last: every tile pairs it).
            saved, self.point[c] = self.point[c], 0
            start = self.index_value(c)
            self.point[c] = saved
            first_tile = b.icmp_unsigned("==", start, ir.Constant(I32, 0))
            x_ptr = b.select(first_tile, x_ptr, ir.Constant(PTR, None))
        # The mask of the last word's bytes past the real elements (the pad, 0), made
        # here so the kernel only clears them (0: a whole word).
        tail = 0 if real == steps * WIDTH else \
            0xFFFFFFFF & ~((1 << 8 * (real % WIDTH)) - 1)
        zero = ir.Constant(I32, 0)
        self._dense_rows_call(points, slots, order, x_ptr, self._ukernel_pointer(*first),
                              steps, b.gep(buf, [zero, zero], inbounds=True), tail)
        return True

    def _dense_rows_call(self, points: list[dict[int, int]], slots: list[ir.Value],
                         order: list[int], x: ir.Value, w: ir.Value, steps: int,
                         buf: ir.Value, tail: int) -> None:
        """The call over the tile's points in row order `order`, their accumulators
        through a stack array (the init in, the sum out)."""
        b = self.b
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        sums = b.alloca(ir.ArrayType(I32, len(points)), name="dense_sums")
        b.position_at_end(here)
        symbol = DENSE_ROWS_SYMBOL if weights_paired(self.k) else DENSE_ROWS_S8_SYMBOL
        fn = self._runtime_function(symbol, [PTR, PTR, PTR, I32, I32, PTR, I32])
        zero = ir.Constant(I32, 0)
        cells = [b.gep(sums, [zero, ir.Constant(I32, i)], inbounds=True)
                 for i in range(len(points))]
        init = self._init_rows(points, order) if len(points) >= INIT_ROWS else None
        if init is not None:
            copy = self._runtime_function(COPY_WORDS_SYMBOL, [PTR, PTR, I32])
            b.call(copy, [cells[0], init, ir.Constant(I32, len(points))])
        else:
            for cell, j in zip(cells, order, strict=True):
                b.store(b.load(slots[j]), cell)
        b.call(fn, [cells[0], x, w, ir.Constant(I32, steps), ir.Constant(I32, len(points)),
                    buf, ir.Constant(I32, tail)])
        # The call ends the reduction (its one loop, the whole packed dim): each point's
        # slot becomes its cell, read where the point's epilogue starts (codegen/nest.py
        # LateSum), not all read back at once: with the requantization's values 16 sums
        # outgrew the registers and spilled (dense 67 -> 32 on cortex-m4: ~2
        # instructions an output).
        late = len(self.nest.reduction) == 1 and self.nest.partials <= 1
        for cell, j in zip(cells, order, strict=True):
            if late:
                slots[j] = cell
            else:
                b.store(b.load(cell), slots[j])

    def _runtime_function(self, symbol: str, params: list[ir.Type]) -> ir.Function:
        """runtime_c's `symbol` (void, `params`), declared once in the module."""
        fn = self.b.module.globals.get(symbol)
        if fn is None:
            fn = ir.Function(self.b.module, ir.FunctionType(ir.VoidType(), params), symbol)
        return fn

    def _init_rows(self, points: list[dict[int, int]], order: list[int]) -> ir.Value | None:
        """The address of the tile's first row's start value where the sums start from
        an int32 table read as stored, one element a row in row order (a bias): the
        call copies them into its sums (mrt_copy_words: 8 words an LDM / STM). None
        otherwise."""
        k = self.k
        init = k.init
        if not isinstance(init, Load) or init.pad is not None or init.valid is not None \
                or init.operand in k.paired or init.operand in k.bit_packed \
                or k.operands[init.operand].dtype != k.acc_dtype \
                or k.acc_dtype.name != "i32":
            return None
        forms = self.affine.get(id(init)) or tuple(affine_of(i) for i in init.index)
        if any(f is None for f in forms):
            return None
        flat = flat_offset(forms, row_strides(k.operands[init.operand].shape or ()),
                           range(len(forms)))
        parts = []
        for j in order:
            self.point.update(points[j])
            parts.append(self._affine_parts(init.operand, flat))
        first = parts[0]
        if any(p[0] is not first[0] or p[2] != first[2] or p[1] != first[1] + i
               for i, p in enumerate(parts)):
            return None
        self.point.update(points[order[0]])
        return self._affine_address(init.operand, flat)

    def stage_input(self) -> None:
        """Nest.stage for a window's dense-rows tile: the window staged as for the 1x4
        kernel's staged windows (codegen/dot_ukernel.py, whose pairing it reads by the
        nest's DSP kind)."""
        if self.nest.dot != DENSE_ROWS_KIND:
            super().stage_input()
            return
        nest = self.nest
        self.nest = replace(nest, dot=DENSE_ROWS_DSP)
        try:
            super().stage_input()
        finally:
            self.nest = nest

    def _window_rows_call(self, points: list[dict[int, int]], slots: list[ir.Value]) -> None:
        """A window's tile of output channels over its staged window (stage_input): one
        call over every tap's steps, the input already paired (x NULL), each channel's
        weights one row running on from tap to tap, rows one after another."""
        buf, total = self.staged["window"]
        operands = dense_rows_operands(self.k)
        if operands is None:
            raise EmitError(f"kernel {self.k.name!r}: a window's dense-rows tile without "
                            "its two operands")
        w = operands[1]
        unroll = self.nest.unroll
        taps = list(itertools.product(*[range(self.k.domain[u]) for u in unroll]))
        self._ukernel_bases = {}
        rows = []
        for p in points:
            self.point.update(p)
            for u in unroll:
                self.point[u] = 0
            word = self._ukernel_word(w)
            if word is None:
                raise EmitError(f"kernel {self.k.name!r}: a window's dense-rows weights "
                                "are checked or unaligned")
            rows.append(word)
        order = sorted(range(len(points)), key=lambda j: rows[j][2])
        first = rows[order[0]]
        if any(rows[j][:2] != first[:2] or rows[j][2] != first[2] + i * total * WIDTH
               for i, j in enumerate(order)):
            raise EmitError(f"kernel {self.k.name!r}: a window's dense-rows weight rows do "
                            f"not follow one another ({len(taps)} taps)")
        zero = ir.Constant(I32, 0)
        self._dense_rows_call(points, slots, order, ir.Constant(PTR, None),
                              self._ukernel_pointer(*first), total,
                              self.b.gep(buf, [zero, zero], inbounds=True,
                                         source_etype=buf.allocated_type), 0)

    def _input_word(self, x) -> tuple[int, tuple, int] | None:
        """(buffer, base key, element offset) of the input's first word at the current
        point, with its base pointer noted (as _ukernel_word), its padding past the real
        elements ignored: the kernel reads the last word whole and pads it itself."""
        split = self._packed_split(x)
        if split is None:
            return None
        forms, strides, _ = split
        ptr, const, key = self._affine_parts(x.operand,
                                             flat_offset(forms, strides, range(len(forms))))
        if const % WIDTH:
            return None
        self._ukernel_bases[(x.operand, key)] = ptr
        return x.operand, key, const
