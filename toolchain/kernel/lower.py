"""Graph node -> generic Kernel, one rule per op (a table, like the reference).

Every rule describes its op as index expressions plus a scalar body; broadcasts,
transposes, windows, padding and gathers need no special code downstream.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.graph.ir import Node, Tensor
from toolchain.kernel.form import INDEX, Apply, Const, Expr, Index, Kernel, Load
from toolchain.types import DType, TensorType, dtype


class LoweringError(Exception):
    """An op instance the kernel form cannot express."""


# ------------------------------------------------------------ index arithmetic


def c(v: int) -> Const:
    return Const(int(v), INDEX)


def iadd(a: Expr, b: Expr) -> Expr:
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Const) and isinstance(b, Const):
        return c(a.value + b.value)
    return Apply("add", (a, b), INDEX)


def imul(a: Expr, k: int) -> Expr:
    if k == 1:
        return a
    if k == 0:
        return c(0)
    if isinstance(a, Const):
        return c(a.value * k)
    return Apply("multiply", (a, c(k)), INDEX)


def idiv(a: Expr, k: int) -> Expr:
    return a if k == 1 else Apply("divide", (a, c(k)), INDEX)


def irem(a: Expr, k: int) -> Expr:
    return c(0) if k == 1 else Apply("remainder", (a, c(k)), INDEX)


def identity(rank: int) -> tuple[Expr, ...]:
    return tuple(Index(d) for d in range(rank))


def cast(e: Expr, src: DType, dst: DType) -> Expr:
    return e if src == dst else Apply("convert", (e, ), dst)


def _row_major_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


# ------------------------------------------------------------ rules

Rule = Callable[[Node], Kernel]


def _kernel(node: Node, body: Expr, domain: tuple[int, ...] | None = None,
            n_parallel: int | None = None, combine: str | None = None,
            init: Expr | None = None) -> Kernel:
    out = node.outputs[0].type
    dom = tuple(out.shape) if domain is None else domain
    return Kernel(node.op, dom, len(out.shape) if n_parallel is None else n_parallel,
                  tuple(t.type for t in node.inputs), out, body, combine, init)


def _load_same(node: Node, i: int) -> Load:
    """Operand i at the iteration's own index (scalars broadcast)."""
    t = node.inputs[i].type
    return Load(i, () if t.shape == () and node.outputs[0].type.shape != () else
                identity(len(t.shape)))


def _elementwise(node: Node) -> Kernel:
    out = node.outputs[0].type
    args = tuple(_load_same(node, i) for i in range(len(node.inputs)))
    op = node.op
    if op == "compare":
        op = f"compare.{node.attrs['direction']}"
        if node.attrs.get("total_order"):
            op += ".total"
    return _kernel(node, Apply(op, args, out.dtype))


def _broadcast(node: Node) -> Kernel:
    src = node.inputs[0].type.shape
    out = node.outputs[0].type.shape
    idx = tuple(c(0) if src[i] == 1 and out[d] != 1 else Index(d)
                for i, d in enumerate(node.attrs["dims"]))
    return _kernel(node, Load(0, idx))


def _dim_groups(src: tuple[int, ...], out: tuple[int, ...]
                ) -> list[tuple[list[int], list[int]]] | None:
    """The non-unit dims of a reshape's source and result in matching groups, (source
    dims, result dims) of equal products, each as small as it can be; None when the
    shapes hold different element counts."""
    s = [d for d, n in enumerate(src) if n != 1]
    o = [d for d, n in enumerate(out) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(s) and j < len(o):
        gs, go, ps, po = [s[i]], [o[j]], src[s[i]], out[o[j]]
        i, j = i + 1, j + 1
        while ps != po:
            if ps < po and i < len(s):
                gs.append(s[i])
                ps, i = ps * src[s[i]], i + 1
            elif po < ps and j < len(o):
                go.append(o[j])
                po, j = po * out[o[j]], j + 1
            else:
                return None
        groups.append((gs, go))
    return groups if i == len(s) and j == len(o) else None


def _reshape(node: Node) -> Kernel:
    """A row-major reshape as an index remap. Each group of source dims reads only its
    group of result dims (_dim_groups): a dim kept as it is reads Index(d), a unit dim
    0 (a Conv1D's [1, w, c] <-> [1, 1, w, c], which fusion can then inline even into a
    padded load: schedule/fuse.py), and merged or split dims the divisions of their
    group's offset alone, not of the whole element's (Keras' upsampling reshapes
    [1, 8, 2, 8, 5] <-> [1, 16, 8, 1, 5] divide by 2, not by 80)."""
    src = node.inputs[0].type.shape
    out = node.outputs[0].type.shape
    groups = _dim_groups(src, out)
    if groups is None:
        linear: Expr = c(0)
        for d, st in enumerate(_row_major_strides(out)):
            linear = iadd(linear, imul(Index(d), st))
        return _kernel(node, Load(0, tuple(
            irem(idiv(linear, st), src[d]) if d else idiv(linear, st)
            for d, st in enumerate(_row_major_strides(src)))))
    idx: list[Expr] = [c(0)] * len(src)
    for gs, go in groups:
        offset: Expr = c(0)
        for d, st in zip(go, _row_major_strides(tuple(out[d] for d in go)), strict=True):
            offset = iadd(offset, imul(Index(d), st))
        for k, (d, st) in enumerate(zip(gs, _row_major_strides(tuple(src[d] for d in gs)),
                                        strict=True)):
            idx[d] = idiv(offset, st) if k == 0 else irem(idiv(offset, st), src[d])
    return _kernel(node, Load(0, tuple(idx)))


def _transpose(node: Node) -> Kernel:
    perm = node.attrs["permutation"]
    idx: list[Expr] = [c(0)] * len(perm)
    for i, p in enumerate(perm):
        idx[p] = Index(i)
    return _kernel(node, Load(0, tuple(idx)))


def _reverse(node: Node) -> Kernel:
    shape = node.inputs[0].type.shape
    idx = tuple(Apply("subtract", (c(shape[d] - 1), Index(d)), INDEX)
                if d in node.attrs["dims"] else Index(d) for d in range(len(shape)))
    return _kernel(node, Load(0, idx))


def _slice(node: Node) -> Kernel:
    at = node.attrs
    idx = tuple(iadd(imul(Index(d), st), c(s))
                for d, (s, st) in enumerate(zip(at["start"], at["strides"])))
    return _kernel(node, Load(0, idx))


def _pad(node: Node) -> Kernel:
    at = node.attrs
    idx: list[Expr] = []
    valid: Expr | None = None
    for d, (lo, it) in enumerate(zip(at["low"], at["interior"])):
        v = iadd(Index(d), c(-lo))
        if it:
            ok = Apply("compare.EQ", (irem(v, it + 1), c(0)), dtype("i1"))
            valid = ok if valid is None else Apply("and", (valid, ok), dtype("i1"))
            v = idiv(v, it + 1)
        idx.append(v)
    return _kernel(node, Load(0, tuple(idx), pad=Load(1, ()), valid=valid))


def _concatenate(node: Node) -> Kernel:
    dim = node.attrs["dimension"]
    out = node.outputs[0].type
    starts, acc = [], 0
    for t in node.inputs:
        starts.append(acc)
        acc += t.type.shape[dim]
    zero = Const(0, out.dtype)

    def piece(i: int) -> Load:
        idx = tuple(iadd(Index(d), c(-starts[i])) if d == dim else Index(d)
                    for d in range(len(out.shape)))
        return Load(i, idx, pad=zero)

    body: Expr = piece(len(node.inputs) - 1)
    for i in range(len(node.inputs) - 2, -1, -1):
        cond = Apply("compare.LT", (Index(dim), c(starts[i + 1])), dtype("i1"))
        body = Apply("select", (cond, piece(i), body), out.dtype)
    return _kernel(node, body)


def _iota(node: Node) -> Kernel:
    out = node.outputs[0].type
    return _kernel(node, cast(Index(node.attrs["dimension"]), INDEX, out.dtype))


def _product_dtype(dt: DType) -> DType:
    """The type products of a dot or a convolution are formed in: the accumulator's
    (f32 for f16 / bf16, Kernel.acc_dtype), so each product is not rounded to the
    narrow type before it is added, as the reference and XLA compute them (a bf16
    product rounded first is off by up to half a bf16 ulp of the product, which a
    cancelling sum turns into many ulps of the result: found by the random graph
    fuzzer)."""
    return dtype("f32") if dt.is_float and dt.bits < 32 else dt


def _dot_general(node: Node) -> Kernel:
    at = node.attrs
    a, b = (t.type for t in node.inputs)
    out = node.outputs[0].type
    lb, rb, lc, rc = at["lhs_batch"], at["rhs_batch"], at["lhs_contract"], at["rhs_contract"]
    lf = [i for i in range(a.rank) if i not in lb + lc]
    rf = [i for i in range(b.rank) if i not in rb + rc]
    n_par = len(out.shape)
    a_idx: list[Expr] = [c(0)] * a.rank
    b_idx: list[Expr] = [c(0)] * b.rank
    for k, (x, y) in enumerate(zip(lb, rb)):
        a_idx[x] = b_idx[y] = Index(k)
    for j, x in enumerate(lf):
        a_idx[x] = Index(len(lb) + j)
    for j, y in enumerate(rf):
        b_idx[y] = Index(len(lb) + len(lf) + j)
    for k, (x, y) in enumerate(zip(lc, rc)):
        a_idx[x] = b_idx[y] = Index(n_par + k)
    acc = _product_dtype(out.dtype)
    body = Apply("multiply", (cast(Load(0, tuple(a_idx)), a.dtype, acc),
                              cast(Load(1, tuple(b_idx)), b.dtype, acc)), acc)
    domain = tuple(out.shape) + tuple(a.shape[x] for x in lc)
    return _kernel(node, body, domain, n_par, "add", Const(0, acc))


def _convolution(node: Node) -> Kernel:
    at = node.attrs
    x, w = (t.type for t in node.inputs)
    out = node.outputs[0].type
    nsp = len(at["input_spatial"])
    fg, bg = at["feature_group_count"], at["batch_group_count"]
    kin = w.shape[at["kernel_input"]]
    kout = w.shape[at["kernel_output"]]
    n_par = len(out.shape)
    ksp = [w.shape[d] for d in at["kernel_spatial"]]
    # Reduction loops: kernel taps (one per spatial dim), then input features in a group.
    tap = [Index(n_par + i) for i in range(nsp)]
    ci = Index(n_par + nsp)
    ob, of = Index(at["output_batch"]), Index(at["output_feature"])
    x_idx: list[Expr] = [c(0)] * x.rank
    w_idx: list[Expr] = [c(0)] * w.rank
    feature: Expr = ci
    if fg > 1:
        feature = iadd(imul(idiv(of, kout // fg), kin), ci)
    batch: Expr = ob
    if bg > 1:
        batch = iadd(imul(idiv(of, kout // bg), out.shape[at["output_batch"]]), ob)
    x_idx[at["input_batch"]] = batch
    x_idx[at["input_feature"]] = feature
    valid: Expr | None = None
    checked = False
    for i in range(nsp):
        lo, hi = at["padding"][i]
        v = iadd(iadd(imul(Index(at["output_spatial"][i]), at["strides"][i]),
                      imul(tap[i], at["rhs_dilation"][i])), c(-lo))
        checked |= lo != 0 or hi != 0
        ld = at["lhs_dilation"][i]
        if ld > 1:
            checked = True
            ok = Apply("compare.EQ", (irem(v, ld), c(0)), dtype("i1"))
            valid = ok if valid is None else Apply("and", (valid, ok), dtype("i1"))
            v = idiv(v, ld)
        x_idx[at["input_spatial"][i]] = v
    for i, d in enumerate(at["kernel_spatial"]):
        w_idx[d] = tap[i]
    w_idx[at["kernel_input"]] = ci
    w_idx[at["kernel_output"]] = of
    acc = _product_dtype(out.dtype)
    zero = Const(0, x.dtype)
    xl: Expr = Load(0, tuple(x_idx), pad=zero if checked else None, valid=valid)
    if valid is not None and x.dtype.is_float and not _finite_constant(node.inputs[1]):
        # The spec multiplies the zeros between dilated input elements by the kernel:
        # an infinite or NaN weight makes NaN there. A guarded load (`valid`) lets the
        # schedule skip those taps (loops/phases.py), which is exact only for finite
        # weights; otherwise the holes are read as zeros and multiplied like the spec.
        xl = Apply("select", (valid, Load(0, tuple(x_idx), pad=zero), zero), x.dtype)
    body = Apply("multiply", (cast(xl, x.dtype, acc), cast(Load(1, tuple(w_idx)), w.dtype, acc)),
                 acc)
    domain = tuple(out.shape) + tuple(ksp) + (kin,)
    return _kernel(node, body, domain, n_par, "add", Const(0, acc))


def _finite_constant(t: Tensor) -> bool:
    """Whether `t` is a constant whose values are all finite (a model's weights, mostly):
    then a product with zero is zero and a tap on a hole may be skipped."""
    p = t.producer
    if p is None or p.op != "constant" or p.outputs[0] is not t:
        return False
    value = np.asarray(p.attrs["value"])
    return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())


def _reduce(node: Node) -> Kernel:
    x = node.inputs[0].type
    dims = node.attrs["dims"]
    kept = [d for d in range(x.rank) if d not in dims]
    idx: list[Expr] = [c(0)] * x.rank
    for j, d in enumerate(kept):
        idx[d] = Index(j)
    for k, d in enumerate(dims):
        idx[d] = Index(len(kept) + k)
    domain = tuple(x.shape[d] for d in kept) + tuple(x.shape[d] for d in dims)
    return _kernel(node, Load(0, tuple(idx)), domain, len(kept), node.attrs["kind"],
                   Load(1, ()))


def _reduce_window(node: Node) -> Kernel:
    at = node.attrs
    x = node.inputs[0].type
    rank = x.rank
    idx: list[Expr] = []
    valid: Expr | None = None
    checked = False
    for d in range(rank):
        lo, hi = at["padding"][d]
        v = iadd(iadd(imul(Index(d), at["strides"][d]),
                      imul(Index(rank + d), at["window_dilations"][d])), c(-lo))
        checked |= lo != 0 or hi != 0
        bd = at["base_dilations"][d]
        if bd > 1:
            checked = True
            ok = Apply("compare.EQ", (irem(v, bd), c(0)), dtype("i1"))
            valid = ok if valid is None else Apply("and", (valid, ok), dtype("i1"))
            v = idiv(v, bd)
        idx.append(v)
    init = Load(1, ())
    body = Load(0, tuple(idx), pad=init if checked else None, valid=valid)
    domain = tuple(node.outputs[0].type.shape) + tuple(at["window"])
    return _kernel(node, body, domain, rank, at["kind"], init)


def _gather(node: Node) -> Kernel:
    at = node.attrs
    operand, indices = (t.type for t in node.inputs)
    out = node.outputs[0].type
    ivd = at["index_vector_dim"]
    sizes = at["slice_sizes"]
    collapsed = set(at["collapsed_slice_dims"]) | set(at["operand_batching_dims"])
    offset_dims = at["offset_dims"]
    batch_out = [d for d in range(out.rank) if d not in offset_dims]
    idx_rank = indices.rank

    def index_load(k: int | None) -> Expr:
        """Element of the index tensor at this iteration's batch position (k on ivd)."""
        pos: list[Expr] = []
        b = iter(batch_out)
        for d in range(idx_rank):
            pos.append(c(k or 0) if d == ivd else Index(next(b)))
        return Load(1, tuple(pos))

    starts: list[Expr] = [c(0)] * operand.rank
    dt = indices.dtype
    for k, od in enumerate(at["start_index_map"]):
        raw = index_load(k if ivd < idx_rank else None)
        # StableHLO clamps starts so the slice stays inside the operand: in the index's
        # own type, then as INDEX, so that a ui32 / ui64 / i64 start past INDEX's range
        # cannot wrap into it (ui32 4294967295 became -1 and clamped to 0; found by the
        # random graph fuzzer). The bound fits the type: a start cannot exceed its max.
        hi = min(operand.shape[od] - sizes[od], int(np.iinfo(dt.np_dtype).max))
        clamped = Apply("clamp", (Const(0, dt), raw, Const(hi, dt)), dt)
        starts[od] = cast(clamped, dt, INDEX)
    for ob, ib in zip(at["operand_batching_dims"], at["start_indices_batching_dims"]):
        pos = ib if ib < ivd or ivd >= idx_rank else ib - 1
        starts[ob] = Index(batch_out[pos])
    offsets = iter(offset_dims)
    idx = tuple(starts[d] if d in collapsed else iadd(starts[d], Index(next(offsets)))
                for d in range(operand.rank))
    return _kernel(node, Load(0, idx))


def _clamped_start(node: Node, operand: int, dim: int, size: int) -> Expr:
    """Start index `operand` (an integer scalar) clamped to [0, dim - size] in its own
    type, then as INDEX: a wide value cannot wrap into range."""
    dt = node.inputs[operand].type.dtype
    hi = node.inputs[0].type.shape[dim] - size
    low = Const(0, dt)
    raw = Apply("clamp", (low, Load(operand, ()), Const(hi, dt)), dt)
    return cast(raw, dt, INDEX)


def _dynamic_slice(node: Node) -> Kernel:
    sizes = node.attrs["slice_sizes"]
    idx = tuple(iadd(_clamped_start(node, 1 + d, d, s), Index(d)) for d, s in enumerate(sizes))
    return _kernel(node, Load(0, idx))


def _dynamic_update_slice(node: Node) -> Kernel:
    """The update where the output index falls in its window (clamped), else the
    operand: one bounds-checked load of the update with the operand as its pad."""
    upd = node.inputs[1].type.shape
    rank = len(upd)
    idx = tuple(iadd(Index(d), Apply("negate", (_clamped_start(node, 2 + d, d, upd[d]),),
                                     INDEX)) for d in range(rank))
    return _kernel(node, Load(1, idx, pad=Load(0, identity(rank))))


def _batch_norm(node: Node) -> Kernel:
    x = node.inputs[0].type
    fi = node.attrs["feature_index"]
    f = (Index(fi),)
    dt = x.dtype
    centered = Apply("subtract", (Load(0, identity(x.rank)), Load(3, f)), dt)
    denom = Apply("sqrt", (Apply("add", (Load(4, f), Const(node.attrs["epsilon"], dt)), dt),), dt)
    body = Apply("add", (Apply("multiply", (Apply("divide", (centered, denom), dt), Load(1, f)),
                               dt), Load(2, f)), dt)
    return _kernel(node, body)


def _dequantize(node: Node) -> Kernel:
    q, scale = (t.type for t in node.inputs)
    axis = node.attrs["axis"]
    out = node.outputs[0].type
    s = Load(1, () if axis is None else (Index(axis),))
    return _kernel(node, Apply("multiply", (cast(Load(0, identity(q.rank)), q.dtype, out.dtype),
                                            s), out.dtype))


def _bitcast_convert(node: Node) -> Kernel:
    """Same width: one `bitcast_convert` Apply (the bits kept, the type changed). To a
    narrower type, element k of the new last dim is bits k * w .. k * w + w - 1 of the
    operand's (little-endian, as memory holds them on every target); to a wider type,
    the last dim's elements are or-ed together at those places."""
    src, out = node.inputs[0].type, node.outputs[0].type
    a, w = src.dtype.bits, out.dtype.bits
    # i1 is its own unsigned 1-bit type: convert takes it to 0 / 1 and back by != 0.
    ua, uw = (d if d.kind == "b" else dtype(f"ui{d.bits}") for d in (src.dtype, out.dtype))

    def bits(e: Expr, frm: DType, to: DType) -> Expr:
        return e if frm == to else Apply("bitcast_convert", (e,), to)

    if a == w:
        return _kernel(node, bits(Load(0, identity(src.rank)), src.dtype, out.dtype))
    if a > w:
        rank = src.rank
        whole = bits(Load(0, identity(rank)), src.dtype, ua)
        shift = cast(imul(Index(rank), w), INDEX, ua)
        low = Apply("shift_right_logical", (whole, shift), ua)
        if uw.kind == "b":  # the lowest bit alone (convert to i1 would test != 0)
            low = Apply("and", (low, Const(1, ua)), ua)
        piece = Apply("convert", (low,), uw)
        return _kernel(node, bits(piece, uw, out.dtype))
    parts = []
    for k in range(w // a):
        v = Apply("convert", (bits(Load(0, identity(out.rank) + (c(k),)), src.dtype, ua),), uw)
        parts.append(Apply("shift_left", (v, Const(k * a, uw)), uw) if k else v)
    while len(parts) > 1:  # a balanced tree keeps the body shallow
        parts = [Apply("or", (parts[i], parts[i + 1]), uw) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    return _kernel(node, bits(parts[0], uw, out.dtype))


RULES: dict[str, Rule] = {
    "broadcast_in_dim": _broadcast, "reshape": _reshape, "transpose": _transpose,
    "reverse": _reverse, "slice": _slice, "pad": _pad, "concatenate": _concatenate,
    "iota": _iota, "dot_general": _dot_general, "convolution": _convolution,
    "reduce": _reduce, "reduce_window": _reduce_window, "gather": _gather,
    "batch_norm_inference": _batch_norm, "dequantize": _dequantize,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    "bitcast_convert": _bitcast_convert,
}


def lower_node(node: Node) -> Kernel:
    """The kernel computing `node` (any graph op except `constant`)."""
    from toolchain.graph.ops import OPS

    rule = RULES.get(node.op)
    if rule is None and OPS[node.op].group == "elementwise":
        rule = _elementwise
    if rule is None:
        raise LoweringError(f"no kernel rule for '{node.op}'")
    return rule(node)


__all__ = ["lower_node", "LoweringError", "RULES", "TensorType"]
