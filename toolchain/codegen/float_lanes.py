"""Float sums of products written in vector registers: a FloatLanes tile (loops/cost.py)
as explicit `<W x float>` IR instead of scalar code for LLVM's SLP vectorizer.

A tile blocked along the result's last dim in whole vectors of W lanes (the schedule's
`vector`) computes each group of W outputs as one vector: per tap, the contiguous
operand (a convolution's or dense layer's weights over its output channels) is one
vector load, the other operand (the input pixel) one scalar broadcast, and the product
one `llvm.fma.v<W>f32`; partial sums are vectors too, added in the scalar code's order,
so each lane's result is the bits the scalar tile computes. The epilogue (bias, ReLU,
a residual add) runs on the vectors where its ops are plain float arithmetic, selects
and compares, and the group is stored as one vector; any other op is computed lane by
lane from the extracted sums.

Why not leave it to the SLP vectorizer: it made vector FMAs of the reduction but built
the partial sums' additions and the epilogue back up lane by lane (autoencoder on
x86-64-v4: 128 extracts and scalar adds per 32-output tile, and NaN-propagating
maximums as branches), and left whole tiles scalar where a window's border made their
operands irregular (resnet8's first layer: 2,592 scalar FMAs).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.addresses import flat_offset, row_strides
from toolchain.kernel.form import Acc, Apply, Expr, Load, expr_dtype
from toolchain.loops.affine import Affine

F32 = ir.FloatType()
I32 = ir.IntType(32)
# Ops the epilogue computes on whole vectors when every operand and the result are f32
# (emit.py's _binary handles them on vectors as on scalars).
_VECTOR_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum"})
_VECTOR_COMPARE = frozenset({"compare.LT", "compare.LE", "compare.GT", "compare.GE",
                             "compare.EQ", "compare.NE"})


# Targets whose vector FMA takes one lane of a vector register as its multiplier
# (AArch64 FMLA by element): there the partial sums' consecutive broadcast inputs are
# one vector load and a lane each, as the SLP vectorizer made them (autoencoder on
# aarch64 under QEMU: 200 K -> 167 K instructions against a scalar load per broadcast).
# x86 broadcasts from memory instead (VBROADCASTSS, or folded into VFMADD as {1toN}).
_LANE_INDEXED_FMA = ("aarch64",)


class FloatLaneEmitter:
    """Vector tiles for NestEmitter (codegen/nest.py), which provides the point, the
    caches, the reduction loops (_reduce_level) and emit.py's scalar ops."""

    # (lane dim, lanes, the contiguous load, the broadcast operand) while a vector
    # tile's reduction runs: _combine then makes vector FMAs.
    lane_tile: tuple[int, int, Load, Expr] | None = None

    def _lane_operands(self, d: int) -> tuple[Load, Expr] | None:
        """The contiguous f32 load along dim d and the operand that does not vary with
        d, of a float sum of products this file can vectorize; None otherwise."""
        k = self.k
        body = k.body
        if not (self.fma and k.combine == "add" and isinstance(body, Apply)
                and body.op == "multiply" and body.dtype == k.acc_dtype
                and k.acc_dtype.name == "f32" and len(body.args) == 2):
            return None
        for vec, other in (body.args, body.args[::-1]):
            if d in self.deps[id(other)] or not self._vector_loadable(vec, d):
                continue
            return vec, other
        return None

    def _vector_loadable(self, e: Expr, d: int) -> bool:
        """Whether `e` is an f32 load whose elements along dim d are contiguous in memory
        and unchecked, so W of them are one vector load."""
        k = self.k
        if not isinstance(e, Load) or e.pad is not None or e.valid is not None \
                or e.operand in k.paired or e.operand in k.bit_packed \
                or k.operands[e.operand].dtype.name != "f32":
            return False
        forms = self.affine.get(id(e))
        if forms is None or any(f is None for f in forms):
            return False
        return self._flat(e).coeff(d) == 1

    def _flat(self, e: Load) -> Affine:
        shape = self.k.operands[e.operand].shape or ()
        return flat_offset(self.affine[id(e)], row_strides(shape), range(len(shape)))

    def _vector_load(self, e: Load, lanes: int) -> ir.Value:
        """W consecutive elements of `e` from the current point on, loaded once per
        address (the tile's pixels share their weights)."""
        ptr = self._affine_address(e.operand, self._flat(e))
        vt = ir.VectorType(F32, lanes)
        return self._cached(("vl", id(ptr), lanes),
                            lambda: self.b.load(ptr, typ=vt, align=4))

    def _splat(self, v: ir.Value, lanes: int) -> ir.Value:
        """The scalar `v` in every lane (LLVM's CSE merges repeats)."""
        b = self.b
        vt = ir.VectorType(v.type, lanes)
        one = b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))

    def _gather_lanes(self, e: Expr, d: int, lanes: int, vacc: ir.Value | None) -> ir.Value:
        """`e` computed lane by lane (scalar code at each lane's point, the lane's sum as
        Acc), in a vector."""
        b = self.b
        start = self.point[d]
        out = None
        for j in range(lanes):
            self.point[d] = start + j
            if vacc is not None:
                self.acc = b.extract_element(vacc, ir.Constant(I32, j))
            v = self.value(e)
            if out is None:
                out = ir.Constant(ir.VectorType(v.type, lanes), ir.Undefined)
            out = b.insert_element(out, v, ir.Constant(I32, j))
        self.point[d] = start
        return out

    def _lane_value(self, e: Expr, d: int, lanes: int, vacc: ir.Value,
                    memo: dict[int, ir.Value]) -> ir.Value:
        """`e` at the lanes' points as a vector: broadcast where it does not depend on
        dim d, vector loads and arithmetic where it can be, lane by lane elsewhere."""
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        k = self.k
        if isinstance(e, Acc):
            v = vacc
        elif d not in self.deps[id(e)]:
            v = self._splat(self.value(e), lanes)
        elif isinstance(e, Load) and self._vector_loadable(e, d):
            v = self._vector_load(e, lanes)
        elif isinstance(e, Apply) and self._vector_op(e):
            args = [self._lane_value(a, d, lanes, vacc, memo) for a in e.args]
            dts = [expr_dtype(a, k.operands) for a in e.args]
            if e.op in _VECTOR_BINARY:
                v = self._binary(e.op, *args, e.dtype, e.dtype)
            elif e.op == "select":
                v = self.b.select(*args)
            elif e.op == "convert":
                v = args[0]
            else:
                v = self._compare(e.op.split(".", 1)[1], args, dts)
        else:
            v = self._gather_lanes(e, d, lanes, vacc)
        memo[id(e)] = v
        return v

    def _vector_op(self, e: Apply) -> bool:
        """Whether the epilogue op `e` is computed on whole f32 vectors."""
        dts = [expr_dtype(a, self.k.operands) for a in e.args]
        f32 = all(t.name == "f32" for t in dts)
        if e.op in _VECTOR_BINARY or e.op == "convert":
            return f32 and e.dtype.name == "f32"
        if e.op == "select":
            return dts[0].kind == "b" and all(t.name == "f32" for t in dts[1:]) \
                and e.dtype.name == "f32"
        return e.op in _VECTOR_COMPARE and f32

    def float_lane_tile(self, points: list[dict[int, int]]) -> bool:
        """The tile of `points` in vectors along the result's last dim, stored; False
        (nothing emitted) when the nest or the tile is not one of whole f32 vectors."""
        k = self.k
        lanes = self.nest.vector
        d = k.n_parallel - 1
        if lanes <= 1 or self.nest.dot or d < 0 or self.tile.get(d, 1) % lanes \
                or 0 in k.domain[k.n_parallel:] or k.result.dtype.name != "f32" \
                or self.out_map.get(d, (1, 0))[0] != 1:
            return False
        operands = self._lane_operands(d)
        if operands is None:
            return False
        b = self.b
        vt = ir.VectorType(F32, lanes)
        heads = [p for p in points if p.get(d, 0) % lanes == 0]
        inits = []
        for p in heads:
            self.point.update(p)
            init = self._cast(self.value(k.init), expr_dtype(k.init, k.operands), k.acc_dtype) \
                if d not in self.deps[id(k.init)] else None
            inits.append(self._splat(init, lanes) if init is not None else
                         self._gather_lanes(k.init, d, lanes, None))
        parts = self.nest.partials if self.nest.reduction else 1
        here = b.block
        b.position_at_start(self.fn.entry_basic_block)
        slots = [[b.alloca(vt, name="vacc") for _ in heads] for _ in range(parts)]
        b.position_at_end(here)
        neutral = ir.Constant(vt, [-0.0] * lanes)  # the identity of a float sum
        for u, row in enumerate(slots):
            for slot, v in zip(row, inits, strict=True):
                b.store(v if u == 0 else neutral, slot)
        self.lane_tile = (d, lanes, *operands)
        try:
            self._reduce_level(0, heads, slots)
        finally:
            self.lane_tile = None
        sums = [b.load(s) for s in slots[0]]
        for row in slots[1:]:  # the scalar tile's order: ((p0 + p1) + p2) + p3
            sums = [b.fadd(x, b.load(s)) for x, s in zip(sums, row, strict=True)]
        for p, vacc in zip(heads, sums, strict=True):
            self.point.update(p)
            v = vacc if k.epilogue is None else \
                self._lane_value(k.epilogue, d, lanes, vacc, {})
            b.store(v, self.output_pointer(), align=4)
        return True

    def lane_fma(self, acc: ir.Value) -> ir.Value:
        """One step of a vector tile's reduction at the current point: the contiguous
        operand's W elements times the other's broadcast value, added to `acc`."""
        d, lanes, vec, other = self.lane_tile
        x = self._vector_load(vec, lanes)
        y = self._lane_of_partials(other, lanes)
        if y is None:
            y = self._splat(self._cast(self.value(other), expr_dtype(other, self.k.operands),
                                       self.k.acc_dtype), lanes)
        fn = mathlib._intrinsic(self.b.module, f"llvm.fma.v{lanes}f32", acc.type,
                                [acc.type] * 3)
        return self.b.call(fn, [x, y, acc])

    def _lane_of_partials(self, e: Expr, lanes: int) -> ir.Value | None:
        """On a _LANE_INDEXED_FMA target, the broadcast operand `e` of a reduction with
        P partial sums as lane u of one vector load of its P consecutive values (u: the
        current step's partial); None where that does not apply or could read past the
        operand (a last, shorter group of steps)."""
        parts = self.nest.partials
        if parts <= 1 or not self.nest.reduction or \
                not self.b.module.triple.startswith(_LANE_INDEXED_FMA):
            return None
        rd = self.nest.reduction[-1]
        if rd not in self.varying or not self._vector_loadable(e, rd):
            return None
        u = self.point[rd]
        size = self.k.operands[e.operand].num_elements
        flat = self._flat(e)
        self.point[rd] = 0
        try:
            # The group's last element at the loop's last value must be in the operand.
            hi = {x: self._interval(x)[1] for x in range(len(self.k.domain))}
            last = flat.const + sum(c * (hi[x] + (parts - 1 if x == rd else 0))
                                    for x, c in flat.terms)
            if any(c < 0 for _, c in flat.terms) or last > size - 1:
                return None
            group = self._vector_load(e, parts)
        finally:
            self.point[rd] = u
        mask = ir.Constant(ir.VectorType(I32, lanes), [u] * lanes)
        return self.b.shuffle_vector(group, ir.Constant(group.type, ir.Undefined), mask)
