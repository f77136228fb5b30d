"""The random generator's rows for ops with regions: while, if, case, sort, map,
scatter, select_and_scatter, reduce_region, reduce_window_region and cfg.

A body is generated like a graph (gen_context.Gen over the region's inputs: its block
arguments, then the outer values it captures), from the ops that stay exact, so that
what a loop or a comparator computes never depends on a last bit: the region ops read
exact operands only (compares decide their control flow), and every body's results are
exact. Comparators are strict weak orders (LT / GT, TOTALORDER on floats, ties broken
on a second key): any other comparator makes a sort's result depend on its algorithm.
Loops run 0 to 4 times (a constant bound, or a captured input clamped to [0, 4]).
Integer and float bodies fold in the order minirt defines (row-major, accumulator
first; scatter updates in row-major order, out-of-range ones skipped), which the
reference follows, so results compare exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import REDUCE_KINDS, window_output_shape
from toolchain.testing.exactness import Info
from toolchain.testing.gen_context import DTYPE_WEIGHTS, Gen, GeneratorError
from toolchain.testing.input_values import InputSpec
from toolchain.testing.op_table import OP_GENS, OpGen, build_one
from toolchain.testing.reduction_gens import window_attrs
from toolchain.types import DTYPES, TensorType

__all__ = ["REGION_GENS", "body", "BODY_OPS"]

I1 = DTYPES["i1"]
# The ops bodies are built from: exact ones, elementwise or moving data.
BODY_OPS = ("abs", "negate", "sign", "floor", "ceil", "round_nearest_even", "not", "popcnt",
            "count_leading_zeros", "add", "subtract", "multiply", "divide", "remainder",
            "maximum", "minimum", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
            "shift_right_logical", "compare", "select", "clamp", "convert")
# Bodies over tensors (loops, branches) may also reshape, slice, reduce, ... and hold
# a region op themselves (one level down).
TENSOR_BODY_OPS = BODY_OPS + ("broadcast_in_dim", "reshape", "transpose", "reverse",
                              "slice", "pad", "concatenate", "dynamic_slice", "iota",
                              "gather", "reduce", "while", "if", "sort", "reduce_region")
NUMERIC = tuple(n for n in DTYPE_WEIGHTS if n != "i1")


def body(g: Gen, name: str, args: list[TensorType], captures: list[Tensor],
         results: list[TensorType], n_ops: int, ops: tuple[str, ...] = BODY_OPS,
         ) -> Graph:
    """A region graph: inputs `args` then one per capture, `n_ops` random exact ops,
    results of types `results` (exact)."""
    region, sub, _ = _sub(g, name, args + [c.type for c in captures])
    grow(sub, n_ops, ops)
    region.outputs = [sub.operand(ty, exact=True, new=0.05) for ty in results]
    return region


def grow(sub: Gen, n_ops: int, ops: tuple[str, ...] = BODY_OPS) -> None:
    """Adds `n_ops` random ops of `ops` to a region's Gen (rows of the whole table,
    which op_gens.py fills: a body may hold a region op itself)."""
    if not OP_GENS:
        raise GeneratorError("the op table is empty: import toolchain.testing.op_gens")
    table = {k: OP_GENS[k] for k in ops if k in OP_GENS}
    for _ in range(n_ops):
        build_one(sub, table)


def _exact_source(g: Gen, types: tuple[str, ...], min_rank: int = 0, max_rank: int = 3,
                  max_elements: int | None = None) -> Tensor:
    limit = max_elements or g.max_elements
    # Signed too: comparators compare floats in total order (exactness.NAN_SIGN_OPS).
    x = g.pick(lambda t: t.type.dtype.name in types and min_rank <= t.type.rank <= max_rank
               and t.type.num_elements <= limit, exact=True, signed=True)
    if x is None or g.chance(0.15):
        rank = g.rng.randint(min_rank, max(min_rank, min(max_rank, 3)))
        x = g.fresh(TensorType(g.shape(rank, limit), g.dtype(names=types)))
    return x


def _captures(g: Gen, k: int) -> list[Tensor]:
    """Up to k distinct exact pool tensors for a region to read from outside."""
    out: list[Tensor] = []
    for _ in range(k):
        t = g.pick(lambda t: t.type.num_elements <= 16 and all(t is not o for o in out),
                   exact=True, signed=True)
        if t is not None:
            out.append(t)
    return out


def _scalar(t: TensorType) -> TensorType:
    return TensorType((), t.dtype)


def _cmp(g: Gen, region_gen: Gen, a: Tensor, b: Tensor, direction: str) -> Tensor:
    attrs = {"direction": direction}
    if a.type.dtype.is_float:
        attrs["total_order"] = True
    return region_gen.node("compare", [a, b], attrs)[0]


def _sub(g: Gen, name: str, args: list[TensorType]) -> tuple[Graph, Gen, list[Tensor]]:
    """An empty region with inputs `args`, and its Gen (exact values only)."""
    region = Graph(name)
    sub = Gen(g.rng, region, parent=g, max_elements=g.max_elements)
    sub.exact_only = True
    ins = []
    for ty in args:
        t = region.add_input(ty)
        sub.info[id(t)] = Info(True, False)
        sub.pool.append(t)
        ins.append(t)
    return region, sub, ins


def closed(node_inputs: list[Tensor], n_own: int, regions: list[Graph]
           ) -> list[Tensor]:
    """`node_inputs` without the captures (those after the first `n_own`) that no
    region reads, each dropped from every region's inputs too: StableHLO writes a
    capture as a use, so an unused one does not exist (and the importer makes none)."""
    keep = list(node_inputs[:n_own])
    caps = node_inputs[n_own:]
    n_caps = len(caps)
    drop = []
    for i in range(n_caps):
        used = False
        for r in regions:
            t = r.inputs[len(r.inputs) - n_caps + i]
            used |= any(t is x for n in r.nodes for x in n.inputs) or any(
                t is o for o in r.outputs)
        if used:
            keep.append(caps[i])
        else:
            drop.append(i)
    for r in regions:
        base = len(r.inputs) - n_caps
        r.inputs = [t for j, t in enumerate(r.inputs) if j < base or j - base not in drop]
    return keep


def _is_kind_body(region: Graph) -> bool:
    """A body the importer reads as a plain `kind` reduction (one op of both args)."""
    if len(region.nodes) != 1 or len(region.inputs) != 2:
        return False
    n = region.nodes[0]
    return n.op in REDUCE_KINDS and {id(t) for t in n.inputs} == {id(t) for t in region.inputs}


# ---------------------------------------------------------------------------- reductions


def _arg_body(g: Gen, vt: TensorType, it: TensorType, direction: str) -> Graph:
    """argmax (GT) / argmin (LT) as JAX writes it: keep the accumulator when it wins, or
    ties and has the smaller index."""
    region, sub, (av, ai, xv, xi) = _sub(g, "argbody", [vt, it, vt, it])
    wins = _cmp(g, sub, av, xv, direction)
    tie = _cmp(g, sub, av, xv, "EQ") if not vt.dtype.is_float else \
        sub.node("compare", [av, xv], {"direction": "EQ", "total_order": True})[0]
    first = sub.node("compare", [ai, xi], {"direction": "LT"})[0]
    keep = sub.op("or", [wins, sub.op("and", [tie, first])])
    region.outputs = [sub.op("select", [keep, av, xv]), sub.op("select", [keep, ai, xi])]
    return region


def _reducer(g: Gen, x: Tensor, iota_dim: int | None, kind_name: str
             ) -> tuple[list[Tensor], list[Tensor], Graph]:
    """Operands, init values and body of a reduction with a region over `x`."""
    dt = x.type.dtype
    if iota_dim is not None and dt.name != "i1":
        it = DTYPES[g.rng.choice(("i32", "i64", "ui32"))]
        idx = g.op("iota", [], dimension=iota_dim, shape=x.type.shape, dtype=it.name)
        vt, itt = _scalar(x.type), TensorType((), it)
        direction = g.rng.choice(("GT", "LT"))
        if dt.is_float:
            start = -np.inf if direction == "GT" else np.inf
        else:
            info = np.iinfo(dt.np_dtype)
            start = info.min if direction == "GT" else info.max
        inits = [g.const(vt, start), g.const(itt, 0)]
        return [x, idx], inits, _arg_body(g, vt, itt, direction)
    xs = [x]
    if g.chance(0.3):
        xs.append(g.operand(TensorType(x.type.shape, g.dtype(names=NUMERIC)), exact=True,
                            signed=True))
    scalars = [_scalar(t.type) for t in xs]
    inits = [g.operand(s, exact=True, signed=True) for s in scalars]
    for _ in range(4):
        region = body(g, kind_name, scalars + scalars, [], scalars, g.rng.randint(1, 4))
        if not _is_kind_body(region):
            break
    else:
        return [], [], region
    return xs, inits, region


def reduce_region(g: Gen) -> bool:
    x = _exact_source(g, NUMERIC + ("i1",), min_rank=1)
    rank = x.type.rank
    dims = tuple(sorted(g.rng.sample(range(rank), g.rng.randint(1, rank))))
    argmax = g.chance(0.5)
    xs, inits, region = _reducer(g, x, g.rng.choice(dims) if argmax else None, "reducer")
    if not xs:
        return False
    g.node("reduce_region", xs + inits, {"dims": dims}, [region])
    return True


def reduce_window_region(g: Gen) -> bool:
    x = _exact_source(g, NUMERIC, min_rank=1)
    attrs = window_attrs(g, x.type.shape)
    if attrs is None:
        return False
    argmax = g.chance(0.5)
    xs, inits, region = _reducer(g, x, g.rng.randrange(x.type.rank) if argmax else None,
                                 "window_reducer")
    if not xs:
        return False
    g.node("reduce_window_region", xs + inits, attrs, [region])
    return True


# ---------------------------------------------------------------------------- sort, map


def sort(g: Gen) -> bool:
    x = _exact_source(g, NUMERIC, min_rank=1)
    xs = [x] + [g.operand(TensorType(x.type.shape, g.dtype()), exact=True, signed=True)
                for _ in range(g.rng.choice([0, 0, 1, 2]))]
    scalars = [_scalar(t.type) for t in xs]
    pairs = [s for s in scalars for s in (s, s)]
    captures = _captures(g, 1) if g.chance(0.2) else []
    captures = [c for c in captures if c.type.rank == 0]
    region, sub, ins = _sub(g, "comparator", pairs + [c.type for c in captures])
    direction = g.rng.choice(("LT", "GT"))
    key_a, key_b = ins[0], ins[1]
    if captures and captures[0].type.dtype == key_a.type.dtype and key_a.type.dtype.kind != "b":
        # Keys relative to a captured value: |a - c| orders by the distance to c.
        c = ins[-1]
        key_a, key_b = (sub.op("abs", [sub.op("subtract", [k, c])]) for k in (key_a, key_b))
    elif g.chance(0.3) and key_a.type.dtype.kind in "fi":
        key_a, key_b = sub.op("abs", [key_a]), sub.op("abs", [key_b])
    less = _cmp(g, sub, key_a, key_b, direction)
    if len(xs) > 1 and g.chance(0.6):
        # Ties broken on the second operand: still a strict weak order.
        tie = sub.node("compare", [key_a, key_b],
                       {"direction": "EQ", **({"total_order": True}
                                              if key_a.type.dtype.is_float else {})})[0]
        less2 = _cmp(g, sub, ins[2], ins[3], g.rng.choice(("LT", "GT")))
        less = sub.op("or", [less, sub.op("and", [tie, less2])])
    region.outputs = [less]
    rank = x.type.rank
    dim = g.rng.randrange(rank)
    if g.chance(0.2):
        dim -= rank  # the spec counts negative dimensions from the end
    g.node("sort", closed(xs + captures, len(xs), [region]),
           {"dimension": dim, "is_stable": g.chance(0.5)}, [region])
    return True


def map_(g: Gen) -> bool:
    x = _exact_source(g, tuple(DTYPE_WEIGHTS))
    xs = [x] + [g.operand(TensorType(x.type.shape, g.dtype()), exact=True, signed=True)
                for _ in range(g.rng.choice([0, 1, 1, 2]))]
    captures = [c for c in _captures(g, 1) if c.type.rank == 0] if g.chance(0.3) else []
    out = TensorType((), g.dtype(names=tuple({t.type.dtype.name for t in xs})))
    region = body(g, "computation", [_scalar(t.type) for t in xs], captures, [out],
                  g.rng.randint(1, 4))
    g.node("map", closed(xs + captures, len(xs), [region]),
           {"dimensions": tuple(range(x.type.rank)), "operands": len(xs)}, [region])
    return True


# ---------------------------------------------------------------------------- scatter


def scatter(g: Gen) -> bool:
    r = g.rng
    x = _exact_source(g, NUMERIC + ("i1",), min_rank=1)
    shape = x.type.shape
    rank = len(shape)
    dims = list(range(rank))
    r.shuffle(dims)
    batching = [dims.pop()] if rank > 1 and g.chance(0.2) else []
    k = r.randint(1, min(2, len(dims))) if dims else 0
    if k == 0:
        return False
    to_operand = dims[:k]
    inserted = sorted(d for d in dims[:k] if g.chance(0.5))
    window = [d for d in range(rank) if d not in inserted and d not in batching]
    win_sizes = [r.randint(1, shape[d]) for d in window]
    n_batch = r.randint(0, 2)
    batch_shape = [r.randint(1, 3) for _ in range(n_batch)]
    idx_batching: list[int] = []
    if batching:
        if not batch_shape:
            batch_shape.append(1)
        j = r.randrange(len(batch_shape))
        batch_shape[j] = shape[batching[0]]
        idx_batching = [j]
    implicit = k == 1 and g.chance(0.3)
    ivd = len(batch_shape) if implicit else r.randint(0, len(batch_shape))
    idx_shape = list(batch_shape)
    if not implicit:
        idx_shape.insert(ivd, k)
    idx_batching = [j if j < ivd or implicit else j + 1 for j in idx_batching]
    urank = len(batch_shape) + len(window)
    uwd = sorted(r.sample(range(urank), len(window)))
    ushape, bi, wi = [], 0, 0
    for d in range(urank):
        if d in uwd:
            ushape.append(win_sizes[wi])
            wi += 1
        else:
            ushape.append(batch_shape[bi])
            bi += 1
    if int(np.prod(ushape, dtype=np.int64)) > g.max_elements:
        return False
    it = DTYPES[r.choice(("i32", "i64", "i16", "ui8"))]
    idx = g.operand(TensorType(tuple(idx_shape), it), spec=InputSpec("index", -1, max(shape)))
    xs = [x]
    if g.chance(0.2):
        xs.append(g.operand(TensorType(shape, g.dtype()), exact=True))
    ups = [g.operand(TensorType(tuple(ushape), t.type.dtype), exact=True) for t in xs]
    scalars = [_scalar(t.type) for t in xs]
    if g.chance(0.4):
        region, sub, ins = _sub(g, "update", scalars + scalars)
        region.outputs = ins[len(xs):]  # replace: the last update wins
    else:
        region = body(g, "update", scalars + scalars, [], scalars, r.randint(1, 3))
    g.node("scatter", xs + [idx] + ups, {
        "update_window_dims": tuple(uwd), "inserted_window_dims": tuple(inserted),
        "input_batching_dims": tuple(batching),
        "scatter_indices_batching_dims": tuple(idx_batching),
        "scatter_dims_to_operand_dims": tuple(to_operand), "index_vector_dim": ivd,
        "indices_are_sorted": False, "unique_indices": False}, [region])
    return True


def select_and_scatter(g: Gen) -> bool:
    x = _exact_source(g, NUMERIC, min_rank=1)
    attrs = window_attrs(g, x.type.shape, dilate=False)
    if attrs is None:
        return False
    attrs = {k: attrs[k] for k in ("window", "strides", "padding")}
    out = window_output_shape(Node("select_and_scatter", [], [], attrs), x.type.shape)
    source = g.operand(TensorType(out, x.type.dtype), exact=True, signed=True)
    init = g.operand(_scalar(x.type), exact=True, signed=True)
    s = _scalar(x.type)
    select, sub, (a, b) = _sub(g, "select", [s, s])
    select.outputs = [_cmp(g, sub, a, b, g.rng.choice(("GE", "GT", "LE", "LT")))]
    scat = body(g, "scatter", [s, s], [], [s], g.rng.randint(1, 2),
                ("add", "maximum", "minimum", "multiply", "subtract"))
    g.node("select_and_scatter", [x, source, init], attrs, [select, scat])
    return True


# ---------------------------------------------------------------------------- control flow


def _trip_limit(g: Gen, region_gen: Gen, counter: Tensor, captured: Tensor | None) -> Tensor:
    """counter < limit, the limit a constant in [0, 4] or a captured scalar clamped."""
    if captured is not None:
        lo = region_gen.const(counter.type, 0)
        hi = region_gen.const(counter.type, 4)
        limit = region_gen.op("clamp", [lo, region_gen.op("convert", [captured],
                                                          dtype=counter.type.dtype.name), hi])
    else:
        limit = region_gen.const(counter.type, g.rng.randint(0, 4))
    return region_gen.node("compare", [counter, limit], {"direction": "LT"})[0]


def while_(g: Gen) -> bool:
    ct = TensorType((), DTYPES[g.rng.choice(("i32", "i64", "i16"))])
    counter0 = g.const(ct, 0)
    carried = [counter0] + [_exact_source(g, tuple(DTYPE_WEIGHTS), max_elements=24)
                            for _ in range(g.rng.randint(1, 2))]
    types = [t.type for t in carried]
    limit_src = None
    if g.chance(0.4):
        limit_src = g.pick(lambda t: t.type.rank == 0 and t.type.dtype.is_integer, exact=True)
    captures = _captures(g, g.rng.randint(0, 2))
    if limit_src is not None and all(limit_src is not c for c in captures):
        captures.append(limit_src)
    cond, sub, ins = _sub(g, "cond", types + [c.type for c in captures])
    lim = ins[len(types) + captures.index(limit_src)] if limit_src is not None else None
    cond.outputs = [_trip_limit(g, sub, ins[0], lim)]
    # The body: the counter + 1, and random exact ops over every input (the counter and
    # the captures included) for the other carried values.
    region, bsub, bins = _sub(g, "body", types + [c.type for c in captures])
    nxt = bsub.op("add", [bins[0], bsub.const(ct, 1)])
    grow(bsub, g.rng.randint(1, 4), TENSOR_BODY_OPS if g.depth == 0 else BODY_OPS)
    region.outputs = [nxt] + [bsub.operand(t, exact=True, new=0.05) for t in types[1:]]
    g.node("while", closed(carried + captures, len(carried), [cond, region]), {},
           [cond, region])
    return True


def _branches(g: Gen, n: int) -> tuple[list[Graph], list[Tensor]] | None:
    captures = _captures(g, g.rng.randint(1, 3))
    if not captures:
        return None
    results = [g.rng.choice(captures).type for _ in range(g.rng.randint(1, 2))]
    ops = TENSOR_BODY_OPS if g.depth == 0 else BODY_OPS
    regions = [body(g, f"branch{i}", [], captures, results, g.rng.randint(0, 3), ops)
               for i in range(n)]
    return regions, captures


def if_(g: Gen) -> bool:
    made = _branches(g, 2)
    if made is None:
        return False
    regions, captures = made
    pred = g.pick(lambda t: t.type == TensorType((), I1), exact=True)
    if pred is None:
        x = g.pick(lambda t: t.type.rank == 0 and t.type.dtype.kind != "b", exact=True)
        if x is not None and g.chance(0.7):
            y = g.operand(x.type, exact=True)
            pred = g.node("compare", [x, y], {"direction": g.rng.choice(("LT", "GE", "EQ"))},
                          )[0]
        else:
            pred = g.fresh(TensorType((), I1))
    g.node("if", closed([pred] + captures, 1, regions), {}, regions)
    return True


def case(g: Gen) -> bool:
    n = g.rng.randint(1, 4)
    made = _branches(g, n)
    if made is None:
        return False
    regions, captures = made
    # Out of range (negative or >= n) picks the last branch, as the spec says.
    index = g.operand(TensorType((), DTYPES["i32"]), spec=InputSpec("index", -1, n))
    g.node("case", closed([index] + captures, 1, regions), {}, regions)
    return True


def cfg(g: Gen) -> bool:
    """A function of several blocks: a diamond (cond_br to two blocks that return) or a
    counted loop (a header block branching back), as cf.br / cf.cond_br write it."""
    values = [_exact_source(g, tuple(DTYPE_WEIGHTS), max_elements=24)
              for _ in range(g.rng.randint(1, 2))]
    types = [t.type for t in values]
    return _cfg_diamond(g, values, types) if g.chance(0.5) else _cfg_loop(g, values, types)


def _cfg_diamond(g: Gen, values: list[Tensor], types: list[TensorType]) -> bool:
    # Block 0 (the values) picks block 1 or 2 by a compare; each returns its own result.
    n = len(values)
    b0, s0, ins0 = _sub(g, "bb0", types)
    x = next((t for t in ins0 if t.type.dtype.kind != "b"), None)
    if x is None:
        return False
    scalar = s0.op("reshape", [x], shape=()) if x.type.rank == 0 else s0.op(
        "slice", [x], start=(0,) * x.type.rank, limit=(1,) * x.type.rank,
        strides=(1,) * x.type.rank)
    if scalar.type.rank:
        scalar = s0.op("reshape", [scalar], shape=())
    pred = s0.node("compare", [scalar, s0.const(scalar.type, 0)],
                   {"direction": g.rng.choice(("LT", "GE"))})[0]
    b0.outputs = [pred] + ins0 + ins0
    results = [g.rng.choice(types)]
    b1 = body(g, "bb1", types, [], results, g.rng.randint(1, 3))
    b2 = body(g, "bb2", types, [], results, g.rng.randint(1, 3))
    blocks = ((n, tuple(range(n)), (), ("cond_br", 1, n, 2, n)),
              (n, tuple(range(n, 2 * n)), (), ("return", 1)),
              (n, tuple(range(2 * n, 3 * n)), (), ("return", 1)))
    g.node("cfg", values, {"blocks": blocks}, [b0, b1, b2])
    return True


def _cfg_loop(g: Gen, values: list[Tensor], types: list[TensorType]) -> bool:
    # bb0(v): br bb1(0, v); bb1(i, v): cond_br i < k, bb2(i, v), bb3(v);
    # bb2(i, v): br bb1(i + 1, step(v)); bb3(v): return v.
    n = len(values)
    ct = TensorType((), DTYPES["i32"])
    b0, s0, ins0 = _sub(g, "bb0", types)
    b0.outputs = [s0.const(ct, 0)] + ins0
    b1, s1, ins1 = _sub(g, "bb1", [ct] + types)
    b1.outputs = [_trip_limit(g, s1, ins1[0], None)] + ins1 + ins1[1:]
    b2, s2, ins2 = _sub(g, "bb2", [ct] + types)
    nxt = s2.op("add", [ins2[0], s2.const(ct, 1)])
    grow(s2, g.rng.randint(1, 3))
    b2.outputs = [nxt] + [s2.operand(t, exact=True, new=0.05) for t in types]
    b3, s3, ins3 = _sub(g, "bb3", types)
    b3.outputs = list(ins3)
    # Shared values: 0..n-1 the function's arguments, then each block's arguments.
    a1 = tuple(range(n, 2 * n + 1))
    a2 = tuple(range(2 * n + 1, 3 * n + 2))
    a3 = tuple(range(3 * n + 2, 4 * n + 2))
    blocks = ((n, tuple(range(n)), (), ("br", 1, n + 1)),
              (n + 1, a1, (), ("cond_br", 2, n + 1, 3, n)),
              (n + 1, a2, (), ("br", 1, n + 1)),
              (n, a3, (), ("return", n)))
    g.node("cfg", values, {"blocks": blocks}, [b0, b1, b2, b3])
    return True


def _row(op: str, weight: float, build: Callable[[Gen], bool]) -> OpGen:
    build.makes_regions = True  # type: ignore[attr-defined]
    return OpGen(op, weight, build)


REGION_GENS = [
    _row("reduce_region", 1.2, reduce_region),
    _row("reduce_window_region", 0.8, reduce_window_region),
    _row("sort", 1.0, sort),
    _row("map", 0.6, map_),
    _row("scatter", 1.0, scatter),
    _row("select_and_scatter", 0.6, select_and_scatter),
    _row("while", 1.0, while_),
    _row("if", 0.8, if_),
    _row("case", 0.6, case),
    _row("cfg", 0.6, cfg),
]
