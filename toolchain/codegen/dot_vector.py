"""int8 dot products a vector register at a time: NEON, AVX2 and Helium microkernels.

The same kernels as codegen/dot.py's packed steps (an int8 convolution or dense layer,
both operands contiguous along the innermost reduced dim), on targets whose vector
registers take 16 int8 lanes. Each output of the tile keeps an accumulator of the kind's
type across the packed loop (a vector of int32 lanes, or the scalar itself where the
instruction reduces across lanes), added to the output's int32 sum once the loop ends.
Every kind is exact: no product or partial sum is narrowed below 32 bits where it could
overflow, so the sum is the reference's whatever the order of the additions.

- `neon` (Armv8.0-A, aarch64): SMULL / SMULL2 multiply the low and high 8 lanes into
  16-bit products (at most 128 * 128 = 16384, so they fit), SADALP adds adjacent pairs
  into the 4 int32 lanes of the accumulator: 4 instructions per 16 MACs. Accumulating
  the products in 16 bits first (SMULL + SMLAL2, 3 instructions) would overflow for
  -128 x -128 pairs (2 x 16384 = 32768).
- `sdot` (aarch64 with Armv8.2-A's dot product, a target whose `simd` is
  `neon-dotprod`): SDOT multiplies 16 lane pairs and adds each group of 4 into one of
  the accumulator's 4 int32 lanes: 1 instruction per 16 MACs.
- `avx2` (x86-64-v3): VPMOVSXBW sign-extends 16 lanes to 16-bit (folded into the load),
  VPMADDWD multiplies and adds adjacent pairs into 8 int32 lanes, VPADDD accumulates:
  2 instructions per output and 16 MACs, plus the extensions the tile shares.
- `mve` (Helium, Armv8.1-M): VMLADAVA.S8 multiplies 16 lane pairs and adds all of them
  to a general-purpose register: one instruction per 16 MACs, the scalar accumulator
  itself.
- `mve4` (Helium, the SIMD row's short kind: a sum none of whose reduced dims has 16
  contiguous elements, such as a 10x4 window's rows of 4 taps over one input channel):
  VLDRB.S32 loads 4 int8 lanes sign-extended to 32 bits, VMLADAVA.S32 adds their 4
  products to the scalar accumulator.

A depthwise convolution reduces over its taps only, but both operands are contiguous
along its output channels: with `dot lanes` a tile computes 16 channels in the lanes
of a <16 x i32> accumulator (`_lane_reduction`: products in 16 bits, sums in 32, as
generic IR that LLVM selects for each ISA), each lane extracted for the epilogue.

The steps are LLVM intrinsics emitted inline by the loop nest (codegen/packed.py calls
`_vector_packed_loop` where the schedule's `dot` kind is one of `VECTOR_DOT_KINDS`),
for the reasons codegen/dot.py gives for the DSP steps: registers allocated across the
tile and its epilogue, operands shared by the tile, no call per tile.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.element_types import compute_type
from toolchain.codegen.requant_helium import requant_vectors
from toolchain.kernel.form import Const, Index, Load, expr_dtype, postorder
from toolchain.loops.patterns import dot_operands
from toolchain.loops.requant_lanes import REQUANT_GROUP, Requant, match_requant, requant_dim
from toolchain.loops.rules import VECTOR_DOT_KINDS, lane_dim

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
LANES = 16  # int8 lanes per step (one 128-bit register)
SIMD_LANES = 16  # outputs per vector of accumulators (rules.SIMD's int8_lanes)
V16I8 = ir.VectorType(I8, LANES)
# What _lane_reduction returns for a tile whose outputs it stored itself.
LANES_STORED = "stored"

Step = Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], ir.Value]
Finish = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def _halves(b: ir.IRBuilder, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Lanes 0-7 and 8-15 of a <16 x i8> (SMULL reads the low half of a register,
    SMULL2 the high half: no instruction for either)."""
    undef = ir.Constant(V16I8, None)
    lo = b.shuffle_vector(v, undef, ir.Constant(ir.VectorType(I32, 8), list(range(8))))
    hi = b.shuffle_vector(v, undef, ir.Constant(ir.VectorType(I32, 8), list(range(8, 16))))
    return lo, hi


def _neon_step(b: ir.IRBuilder, x: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
    v8i8, v8i16, v4i32 = ir.VectorType(I8, 8), ir.VectorType(I16, 8), ir.VectorType(I32, 4)
    smull = mathlib._intrinsic(b.module, "llvm.aarch64.neon.smull.v8i16", v8i16,
                               [v8i8, v8i8])
    saddlp = mathlib._intrinsic(b.module, "llvm.aarch64.neon.saddlp.v4i32.v8i16", v4i32,
                                [v8i16])
    (x0, x1), (w0, w1) = _halves(b, x), _halves(b, w)
    for xs, ws in ((x0, w0), (x1, w1)):  # add(acc, saddlp(p)) selects SADALP
        acc = b.add(acc, b.call(saddlp, [b.call(smull, [xs, ws])]))
    return acc


def _sdot_step(b: ir.IRBuilder, x: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
    v4i32 = ir.VectorType(I32, 4)
    fn = mathlib._intrinsic(b.module, "llvm.aarch64.neon.sdot.v4i32.v16i8", v4i32,
                            [v4i32, V16I8, V16I8])
    return b.call(fn, [acc, x, w])


def _avx2_step(b: ir.IRBuilder, x: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
    v16i16, v8i32 = ir.VectorType(I16, 16), ir.VectorType(I32, 8)
    pmadd = mathlib._intrinsic(b.module, "llvm.x86.avx2.pmadd.wd", v8i32, [v16i16, v16i16])
    return b.add(acc, b.call(pmadd, [b.sext(x, v16i16), b.sext(w, v16i16)]))


def _mve_step(b: ir.IRBuilder, x: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
    # llvm.arm.mve.vmldava(unsigned, subtract, exchange, acc, a, b): VMLADAVA.S8.
    fn = mathlib._intrinsic(b.module, "llvm.arm.mve.vmldava.v16i8", I32,
                            [I32, I32, I32, I32, V16I8, V16I8])
    zero = ir.Constant(I32, 0)
    return b.call(fn, [zero, zero, zero, acc, x, w])


def _mve4_step(b: ir.IRBuilder, x: ir.Value, w: ir.Value, acc: ir.Value) -> ir.Value:
    # Both <4 x i8> sign-extended to <4 x i32> (selected as VLDRB.S32: the extension is
    # the load's), then VMLADAVA.S32: 4 products, each exact in 32 bits, into the sum.
    v4i32 = ir.VectorType(I32, 4)
    fn = mathlib._intrinsic(b.module, "llvm.arm.mve.vmldava.v4i32", I32,
                            [I32, I32, I32, I32, v4i32, v4i32])
    zero = ir.Constant(I32, 0)
    return b.call(fn, [zero, zero, zero, acc, b.sext(x, v4i32), b.sext(w, v4i32)])


def _reduce_lanes(b: ir.IRBuilder, acc: ir.Value) -> ir.Value:
    n = acc.type.count
    fn = mathlib._intrinsic(b.module, f"llvm.vector.reduce.add.v{n}i32", I32, [acc.type])
    return b.call(fn, [acc])


@dataclass(frozen=True)
class VectorDotCode:
    """The instructions of a vector int8 dot step (its costs and widths are the
    schedule rules' VECTOR_DOT_KINDS): `step(b, x, w, acc)` adds the products of two
    <16 x i8> to an output's accumulator, `finish(b, acc)` reduces it to an i32."""

    step: Step
    finish: Finish


VECTOR_DOT_CODE: dict[str, VectorDotCode] = {
    "neon": VectorDotCode(step=_neon_step, finish=_reduce_lanes),
    "sdot": VectorDotCode(step=_sdot_step, finish=_reduce_lanes),
    "avx2": VectorDotCode(step=_avx2_step, finish=_reduce_lanes),
    "mve": VectorDotCode(step=_mve_step, finish=lambda b, acc: acc),
    "mve4": VectorDotCode(step=_mve4_step, finish=lambda b, acc: acc),
}


def _acc_type(lanes: int) -> ir.Type:
    return I32 if lanes == 0 else ir.VectorType(I32, lanes)


class VectorDotEmitter:
    """The vector packed loop, for NestEmitter (which provides the builder, the caches,
    the addresses and `packed_pointer`)."""

    def packed_vector(self, ld: Load, lanes: int = LANES) -> ir.Value:
        """The `lanes` int8 elements of `ld` from the current point on along the packed
        (or lane) dim, one unaligned vector load (or the pad value in every lane where
        the region's check fails: the check depends on the pixel, not the channel)."""
        ok, ptr = self.packed_pointer(ld)
        if ok is None:
            return self._cached(("vec", id(ptr)), lambda: self._vector_at(ptr, lanes))
        pad = ir.Constant(ir.VectorType(I8, lanes), [int(ld.pad.value) & 0xFF] * lanes)
        return self.b.select(ok, self._vector_at(ptr, lanes), pad)

    def _vector_at(self, ptr: ir.Value, lanes: int) -> ir.Value:
        v = self.b.load(ptr, typ=ir.VectorType(I8, lanes))
        v.align = 1  # the operands' rows need not be 16-byte aligned; these ISAs allow it
        return v

    def _vector_packed_loop(self, d: int, points: list[dict[int, int]],
                            slots: list[ir.Value]) -> None:
        """Reduced dim d 16 at a time with vector accumulators (one per output, zero at
        the start), each reduced and added to its output's sum at the end; the rest one
        element at a time."""
        kind = VECTOR_DOT_KINDS[self.nest.dot]
        code = VECTOR_DOT_CODE[self.nest.dot]
        b = self.b
        n = self.k.domain[d]
        full, rest = divmod(n, kind.width)
        here = b.block
        acc_type = _acc_type(kind.acc_lanes)
        b.position_at_start(self.fn.entry_basic_block)
        vslots = [b.alloca(acc_type, name="vacc") for _ in points]
        b.position_at_end(here)
        zero = ir.Constant(acc_type, 0 if kind.acc_lanes == 0 else [0] * kind.acc_lanes)
        for s in vslots:
            b.store(zero, s)
        self.ranges[d] = (0, (full - 1) * kind.width)

        def body(i: ir.Value) -> None:
            self.base[d] = i
            with self._scope():
                self._vector_body(code, points, vslots, kind.width)

        # Written out where the body is one step per output (no unrolled taps: with
        # them pretrainedResnet's 3x3 layers lost 2%).
        if full == 1 or (full <= kind.written_out and not self.nest.unroll):
            for step in range(full):
                self.base[d] = step * kind.width
                with self._scope():
                    self._vector_body(code, points, vslots, kind.width)
        else:
            self._loop_range(f"r{d}", 0, full, kind.width, body)
        for s, vs in zip(slots, vslots, strict=True):
            b.store(b.add(b.load(s), code.finish(b, b.load(vs))), s)
        self._packed_remainder(d, full * kind.width, rest, points, slots)

    def _vector_body(self, code: VectorDotCode, points: list[dict[int, int]],
                     vslots: list[ir.Value], width: int) -> None:
        k = self.k
        b = self.b
        accs = [b.load(s) for s in vslots]
        unroll = self.nest.unroll
        for tap in itertools.product(*[range(k.domain[u]) for u in unroll]):
            self.point.update(zip(unroll, tap))
            for j, p in enumerate(points):
                self.point.update(p)
                x, w = dot_operands(k)
                accs[j] = code.step(b, self.packed_vector(x, width),
                                    self.packed_vector(w, width), accs[j])
        for u in unroll:
            self.point[u] = 0
        for s, v in zip(vslots, accs, strict=True):
            b.store(v, s)

    # ------------------------------------------------------------ outputs in lanes

    def _lane_reduction(self, points: list[dict[int, int]]) -> list[ir.Value] | str | None:
        """The sums of a tile whose outputs along the lane dim (rules.lane_dim: a
        depthwise convolution's channels) are the lanes of vector accumulators: per
        reduction step one vector of inputs per group of lanes (the tile's other outputs)
        and one of weights that every group shares, multiplied in 16 bits (|x*w| <=
        16384) and added in 32 (exact). Each output's lane is extracted and added to its
        init. None where the tile is not a whole vector wide (the dim's remainder: the
        scalar path), or an operand cannot be read a vector at a time. LANES_STORED
        where the outputs were requantized and stored in vectors (Helium, the epilogue
        loops/requant_lanes.py matches)."""
        k = self.k
        c = lane_dim(k)
        lanes = SIMD_LANES
        operands = dot_operands(k)
        if c is None or operands is None or self.tile[c] != lanes:
            return None
        for u in self.nest.reduction:
            self.ranges[u] = (0, k.domain[u] - 1)
        saved = {u: self.ranges[u] for u in self.nest.unroll}
        for u in self.nest.unroll:
            self.ranges[u] = (0, k.domain[u] - 1)
        try:
            if any(self._packed_split(ld, c) is None for ld in operands):
                return None
        finally:
            self.ranges.update(saved)
            for u in self.nest.reduction:
                self.ranges[u] = (0, 0)
        b = self.b
        inits = []
        for p in points:
            self.point.update(p)
            inits.append(self._cast(self.value(k.init), expr_dtype(k.init, k.operands),
                                    k.acc_dtype))
        self.point[c] = 0
        groups = [p for p in points if p.get(c, 0) == 0]
        acc_type = ir.VectorType(I32, lanes)
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        vslots = [b.alloca(acc_type, name="lacc") for _ in groups]
        b.position_at_end(here)
        for s in vslots:
            b.store(ir.Constant(acc_type, [0] * lanes), s)
        self._lane_level(0, groups, vslots, lanes)
        accs = [b.load(s) for s in vslots]
        requant = match_requant(k) if _helium(b.module) else None
        if requant is not None and isinstance(k.init, Const) and k.init.value == 0 and \
                c == k.n_parallel - 1 and self.out_map.get(c, (1, 0))[0] == 1:
            for g, acc in zip(groups, accs, strict=True):
                self._helium_requant_store(g, acc, requant)
            return LANES_STORED
        out = []
        for p, init in zip(points, inits, strict=True):
            g = next(i for i, q in enumerate(groups)
                     if all(q.get(d, 0) == v for d, v in p.items() if d != c))
            at = p.get(c, 0)
            lane = b.extract_element(accs[g], ir.Constant(I32, _helium_lane(at)
                                                          if _helium(b.module) else at))
            out.append(b.add(init, lane))
        assert compute_type(k.acc_dtype) == I32
        return out

    def _lane_level(self, level: int, groups: list[dict[int, int]], vslots: list[ir.Value],
                    lanes: int) -> None:
        loops = self.nest.reduction
        if level == len(loops):
            self._lane_body(groups, vslots, lanes)
            return
        d = loops[level]
        self.ranges[d] = (0, self.k.domain[d] - 1)

        def body(i: ir.Value) -> None:
            self.base[d] = i
            with self._scope():
                self._lane_level(level + 1, groups, vslots, lanes)

        self._loop_range(f"r{d}", 0, self.k.domain[d], 1, body)
        self.base[d] = 0
        self.ranges[d] = (0, 0)

    def _lane_body(self, groups: list[dict[int, int]], vslots: list[ir.Value],
                   lanes: int) -> None:
        k = self.k
        b = self.b
        v16, v32 = ir.VectorType(I16, lanes), ir.VectorType(I32, lanes)
        accs = [b.load(s) for s in vslots]
        unroll = self.nest.unroll
        x, w = dot_operands(k)
        helium = _helium(b.module)
        for tap in itertools.product(*[range(k.domain[u]) for u in unroll]):
            self.point.update(zip(unroll, tap))
            for j, g in enumerate(groups):
                self.point.update(g)
                if helium:
                    accs[j] = b.add(accs[j], self._helium_lane_products(x, w, g))
                    continue
                xv, wv = self.packed_vector(x, lanes), self.packed_vector(w, lanes)
                prod16 = b.mul(b.sext(xv, v16), b.sext(wv, v16), flags=["nsw"])
                accs[j] = b.add(accs[j], b.sext(prod16, v32))
        for u in unroll:
            self.point[u] = 0
        for s, v in zip(vslots, accs, strict=True):
            b.store(v, s)

    def _helium_lane_products(self, x: Load, w: Load, group: dict[int, int]) -> ir.Value:
        """The 16 products of one tap for a group of lanes on Helium, in its lane order
        (_helium_lane): per half of 8 channels both operands loaded sign-extended to
        16 bits (VLDRB.S16), VMULLB.S16 / VMULLT.S16 multiply the even and odd lanes
        into 4 int32 lanes each. The generic form (16-bit products widened to 32)
        became VSTRW + VLDRH.S32 round trips through the stack on Helium, which has no
        widening move of a whole register."""
        b = self.b
        c = lane_dim(self.k)
        v8i16, v4i32 = ir.VectorType(I16, 8), ir.VectorType(I32, 4)
        vmull = mathlib._intrinsic(b.module, "llvm.arm.mve.vmull.v4i32.v8i16", v4i32,
                                   [v8i16, v8i16, I32, I32])
        parts = []
        for half in (0, 8):
            self.point[c] = group.get(c, 0) + half
            xh = b.sext(self.packed_vector(x, 8), v8i16)
            wh = b.sext(self.packed_vector(w, 8), v8i16)
            for top in (0, 1):
                parts.append(b.call(vmull, [xh, wh, ir.Constant(I32, 0),
                                            ir.Constant(I32, top)]))
        self.point[c] = group.get(c, 0)
        lo = b.shuffle_vector(parts[0], parts[1], ir.Constant(ir.VectorType(I32, 8),
                                                              list(range(8))))
        hi = b.shuffle_vector(parts[2], parts[3], ir.Constant(ir.VectorType(I32, 8),
                                                              list(range(8))))
        return b.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(I32, 16), list(range(16))))


    def _helium_requant_tile(self, points: list[dict[int, int]],
                             sums: list[ir.Value]) -> bool:
        """On Helium, requantizes and stores a tile's outputs 4 channels at a time when
        its epilogue is TFLite's requantization left unfolded for it (loops/
        requant_lanes.py) and the tile blocks the output channels in fours: each
        group's 4 scalar sums moved into one register (2 VMOVs of 2), the tables read
        as 4 words, the 4 int8 results stored by one VSTRB.32. False (nothing emitted)
        otherwise: the per-output epilogue follows."""
        k = self.k
        b = self.b
        if not _helium(b.module) or lane_dim(k) is not None:
            return False
        q = match_requant(k)
        c = requant_dim(k)
        if q is None or self.tile[c] % REQUANT_GROUP or c != k.n_parallel - 1 or \
                self.out_map.get(c, (1, 0))[0] != 1:
            return False
        v4i32 = ir.VectorType(I32, 4)

        def table(e: Load | Const) -> ir.Value:
            if isinstance(e, Const):
                return ir.Constant(v4i32, [int(e.value)] * 4)
            ok, ptr = self.packed_pointer(e)
            assert ok is None  # an unpadded table read at the channel: never checked
            words = b.load(ptr, typ=v4i32)
            words.align = 4
            return words

        by_point = {tuple(sorted(p.items())): v for p, v in zip(points, sums, strict=True)}
        # The tables' vectors of a group of channels, read once for the tile's pixels
        # (the stores between them may alias as far as LLVM knows: it would reload).
        # Tables read at the whole output index depend on the pixel: cached by it too.
        tables: dict[tuple, tuple[list[ir.Value], ir.Value, ir.Value, ir.Value]] = {}
        for p in points:
            at_c = p.get(c, 0)
            if at_c % REQUANT_GROUP:
                continue
            self.point.update(p)
            key = tuple(sorted(p.items())) if self._tables_vary(q, c) else (at_c,)
            if key not in tables:
                tables[key] = ([table(t) for t in q.terms], table(q.multiplier),
                               table(q.exponent), table(q.zero_point))
            terms, mult, exponent, zp = tables[key]
            vec: ir.Value = ir.Constant(v4i32, None)
            for j in range(REQUANT_GROUP):
                at = tuple(sorted({**p, c: at_c + j}.items()))
                vec = b.insert_element(vec, by_point[at], ir.Constant(I32, j))
            for t in terms:
                vec = b.add(vec, t)
            y = requant_vectors(b, vec, mult, exponent, zp, q)
            store = b.store(b.trunc(y, ir.VectorType(I8, 4)), self.output_pointer())
            store.align = 1
        for d in {d for p in points for d in p}:
            self.point[d] = 0
        return True

    def _tables_vary(self, q: Requant, c: int) -> bool:
        """Whether a table of `q` is read at an index that depends on a dim other than
        the channels (a table at the whole output index)."""
        return any(isinstance(t, Load) and any(
            isinstance(e, Index) and e.dim != c for i in t.index for e in postorder(i))
            for t in (*q.terms, q.multiplier, q.exponent, q.zero_point))

    def _helium_requant_store(self, group: dict[int, int], acc: ir.Value,
                              q: Requant) -> None:
        """Requantizes a group's 16 lanes (in _helium_lane's order) 4 at a time and
        stores them as 16 int8 outputs in channel order: per half of 8 channels the even
        and the odd 4, each per-channel table read as 8 words split into its even and
        odd lanes (VLD20 / VLD21), VMOVNT merging both halves' results into 8 16-bit
        lanes that VSTRB.16 stores."""
        b = self.b
        c = lane_dim(self.k)
        v4i16, v8i32 = ir.VectorType(I16, 4), ir.VectorType(I32, 8)

        def pick(v: ir.Value, idx: list[int]) -> ir.Value:
            return b.shuffle_vector(v, ir.Constant(v.type, None),
                                    ir.Constant(ir.VectorType(I32, len(idx)), idx))

        def table(e: Load | Const) -> tuple[ir.Value, ir.Value]:
            if isinstance(e, Const):
                splat = ir.Constant(ir.VectorType(I32, 4), [int(e.value)] * 4)
                return splat, splat
            ok, ptr = self.packed_pointer(e)
            assert ok is None  # an unpadded table read at the channel: never checked
            words = b.load(ptr, typ=v8i32)
            words.align = 4
            return pick(words, [0, 2, 4, 6]), pick(words, [1, 3, 5, 7])

        for half in (0, 8):
            self.point.update(group)
            self.point[c] = half
            sums = (pick(acc, list(range(half, half + 4))),
                    pick(acc, list(range(half + 4, half + 8))))
            for t in q.terms:
                sums = tuple(b.add(x, y) for x, y in zip(sums, table(t), strict=True))
            ys = [requant_vectors(b, x, m, e, z, q) for x, m, e, z in
                  zip(sums, table(q.multiplier), table(q.exponent), table(q.zero_point),
                      strict=True)]
            merged = b.shuffle_vector(b.trunc(ys[0], v4i16), b.trunc(ys[1], v4i16),
                                      ir.Constant(ir.VectorType(I32, 8),
                                                  [0, 4, 1, 5, 2, 6, 3, 7]))
            store = b.store(b.trunc(merged, ir.VectorType(I8, 8)), self.output_pointer())
            store.align = 1
        self.point[c] = 0


def _helium(module: ir.Module) -> bool:
    """Whether the module is for Helium: of the targets whose SIMD row computes int8
    outputs in lanes (Helium, NEON, AVX2), the Armv8.1-M one (cortex-m55)."""
    return module.triple.startswith("thumbv8.1m")


def _helium_lane(channel: int) -> int:
    """Where channel `channel` (0-15) of a group sits in a Helium lane accumulator:
    per half of 8 channels, the 4 even channels (VMULLB's products), then the 4 odd
    ones (VMULLT's)."""
    half, lane = divmod(channel, 8)
    return half * 8 + (lane % 2) * 4 + lane // 2
