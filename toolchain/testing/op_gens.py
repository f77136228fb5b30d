"""The random generator's op table: one row per graph op (toolchain/graph/ops.py) with
how often it is picked and a builder that draws its operands and attributes.

A builder takes the Gen (random_graphs.py), adds its op (and any adapter or guard op
before it) and returns True, or False when it cannot build here (then another row is
tried). Attributes follow the StableHLO spec's constraints, not only what the verifier
checks, so every graph means what the spec says: unsorted broadcast dimensions, negative
padding, dilations, feature and batch groups, gathers with batching dimensions and
out-of-range start indices are all valid and all drawn. `mlir` is False for minirt's own
ops, which have no StableHLO spelling (the fixed-point primitives, dequantize): a graph
holding one skips the MLIR round trip. New ops join by adding a row; region ops have
theirs in region_gens.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from toolchain.graph.ir import Node, Tensor
from toolchain.graph.ops import FFT_TYPES, OPS, REDUCE_KINDS, RNG_ALGORITHMS, ShapeError
from toolchain.testing.random_graphs import DTYPE_WEIGHTS, FLOATS, Gen, InputSpec
from toolchain.types import DTYPES, DType, TensorType, complex_of, complex_part

__all__ = ["OP_GENS", "OpGen", "build_one", "MATH_OPS"]


@dataclass(frozen=True)
class OpGen:
    """A table row: `build` adds op `op` to a Gen; `weight` is its relative frequency;
    `mlir` says whether the op has a StableHLO spelling."""

    op: str
    weight: float
    build: Callable[[Gen], bool]
    mlir: bool = True


@cache
def accepts(op: str, name: str) -> bool:
    """Whether the op table takes element type `name` for elementwise `op` (asked of
    the type rule itself, so the generator follows ops.py as it changes)."""
    spec = OPS[op]
    t = Tensor(TensorType((2,), DTYPES[name]))
    try:
        spec.infer(Node(op, [t] * (spec.arity or 1), [], {"direction": "EQ"}))
    except ShapeError:
        return False
    return True


def _types(op: str) -> tuple[str, ...]:
    return tuple(n for n in DTYPE_WEIGHTS if accepts(op, n))


# Float functions whose result jumps under the smallest change of the operand: they only
# read exact values (random_graphs.py).
DISCONTINUOUS = frozenset({"floor", "ceil", "round_nearest_afz", "round_nearest_even", "sign",
                           "is_finite", "remainder"})
# Domain edges at 0: an inexact operand is read through |x| + c.
GUARDED = frozenset({"log", "sqrt", "rsqrt", "log_plus_one"})
# Our math library computes these in f32 (f64 operands rounded to f32 and back,
# codegen/mathlib.py), so an f64 operand is first bounded to where f32 holds it well.
MATH_OPS = frozenset({"exponential", "exponential_minus_one", "log", "log_plus_one",
                      "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan",
                      "power", "atan2",
                      # CHLO's functions (codegen/mathlib_special.py)
                      "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin",
                      "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "zeta",
                      "polygamma"})
# CHLO functions whose domain ends, or whose poles lie, where random values fall (asin
# and acos outside [-1, 1], acosh below 1, atanh and erf_inv at +-1, lgamma and digamma
# at the non-positive integers): they read exact values only, so a last-bit difference
# of an inexact operand cannot cross an edge; on exact operands out of the domain both
# sides give NaN.
DOMAIN_EXACT = frozenset({"asin", "acos", "acosh", "atanh", "erf_inv", "lgamma", "digamma"})
# The CHLO functions of one operand; their budgets are in tolerance.py.
CHLO_UNARY = ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos",
              "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
# The bound for f64 operands of MATH_OPS: exp(20) and 20**3 stay well inside f32.
F64_MATH_BOUND = 20.0


def _source(g: Gen, types: tuple[str, ...], exact: bool = False, rank: int | None = None,
            min_rank: int = 0, max_rank: int = 4) -> Tensor:
    """A pool tensor of one of `types` (and rank bounds), or a new one."""
    x = g.pick(lambda t: t.type.dtype.name in types and min_rank <= t.type.rank <= max_rank
               and (rank is None or t.type.rank == rank), exact)
    if x is None or g.chance(0.1):
        r = rank if rank is not None else g.rng.randint(min_rank, max(min_rank, min(max_rank, 3)))
        x = g.fresh(TensorType(g.shape(r), g.dtype(names=types)))
    return x


def _math_operand(g: Gen, op: str, x: Tensor) -> Tensor:
    if x.type.dtype.name == "f64" and op in MATH_OPS:
        x = g.bounded(x, F64_MATH_BOUND)
    if op in GUARDED and x.type.dtype.is_float and not g.is_exact(x):
        x = g.positive(x)
    return x


# ---------------------------------------------------------------------------- elementwise


def unary(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        x = _source(g, _types(op), exact=op in DISCONTINUOUS or op in DOMAIN_EXACT)
        g.op(op, [_math_operand(g, op, x)])
        return True

    return build


def binary(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        exact = op in DISCONTINUOUS
        a = _source(g, _types(op), exact=exact)
        spec = InputSpec("shift") if op.startswith("shift") and g.chance(0.7) else None
        b = g.operand(a.type, exact=exact, spec=spec)
        if op not in ("shift_left", "shift_right_arithmetic", "shift_right_logical") and \
                g.chance(0.5):
            a, b = b, a
        if a.type.dtype.is_float:
            inexact = not (g.is_exact(a) and g.is_exact(b))
            if op == "divide" and not g.is_exact(b):
                b = g.positive(b)
            elif op == "power" and inexact:
                # pow of a negative base is NaN off the integers: keep the base positive.
                a = g.positive(_math_operand(g, op, a))
                b = _math_operand(g, op, b)
            elif op == "atan2" and inexact:
                # atan2 jumps by 2 pi across y = 0 for x < 0: keep x positive.
                a, b = _math_operand(g, op, a), g.positive(_math_operand(g, op, b))
            elif op in MATH_OPS:
                a, b = _math_operand(g, op, a), _math_operand(g, op, b)
        g.op(op, [a, b])
        return True

    return build


COMPARE_DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")


def compare(g: Gen) -> bool:
    a = _source(g, tuple(DTYPE_WEIGHTS), exact=True)
    b = g.operand(a.type, exact=True)
    attrs = {"direction": g.rng.choice(COMPARE_DIRECTIONS)}
    if a.type.dtype.is_float and g.is_signed(a) and g.is_signed(b) and g.chance(0.3):
        attrs["total_order"] = True  # (random_graphs.NAN_SIGN_OPS)
    g.node("compare", [a, b], attrs)
    return True


def predicate(g: Gen, shape: tuple[int, ...]) -> Tensor:
    """An i1 tensor of `shape`: a compare of exact pool values, or an i1 operand."""
    x = g.pick(lambda t: t.type.shape == shape and t.type.dtype.name != "i1", exact=True)
    if x is not None and g.chance(0.6):
        y = g.operand(x.type, exact=True)
        attrs = {"direction": g.rng.choice(COMPARE_DIRECTIONS)}
        return g.node("compare", [x, y], attrs)[0]
    return g.operand(TensorType(shape, DTYPES["i1"]))


def select(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS))
    pred = predicate(g, x.type.shape if g.chance(0.75) else ())
    y = g.operand(x.type)
    g.op("select", [pred, x, y])
    return True


def clamp(g: Gen) -> bool:
    x = _source(g, tuple(n for n in DTYPE_WEIGHTS if n != "i1"))
    scalar = TensorType((), x.type.dtype)
    lo = g.operand(scalar if g.chance(0.6) else x.type)
    hi = g.operand(scalar if g.chance(0.6) else x.type)
    g.op("clamp", [lo, x, hi])
    return True


def convert(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS))
    to = g.dtype()
    if to == x.type.dtype or not g.convertible(x, to):
        to = g.dtype("f")
        if to == x.type.dtype:
            return False
    g.op("convert", [x], dtype=to.name)
    return True


# ---------------------------------------------------------------------------- layout


def broadcast_in_dim(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), max_rank=3)
    src = x.type.shape
    rank = g.rng.randint(len(src), min(4, len(src) + 2))
    positions = sorted(g.rng.sample(range(rank), len(src)))
    if g.chance(0.2):
        g.rng.shuffle(positions)  # the spec allows broadcast dims in any order
    out = [0] * rank
    for i, p in enumerate(positions):
        out[p] = src[i] if src[i] != 1 or g.chance(0.5) else g.rng.randint(1, 4)
    room = max(1, g.max_elements // max(1, int(np.prod([d for d in out if d], dtype=np.int64))))
    for p in range(rank):
        if out[p] == 0:
            out[p] = g.rng.randint(1, max(1, min(4, room)))
            room = max(1, room // out[p])
    if int(np.prod(out, dtype=np.int64)) > g.max_elements:
        return False
    g.op("broadcast_in_dim", [x], dims=tuple(positions), shape=tuple(out))
    return True


def _factor_shape(g: Gen, n: int) -> tuple[int, ...]:
    """A random shape of n elements (rank 0 to 4)."""
    dims: list[int] = []
    rest = n
    for _ in range(g.rng.randint(0, 3)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = g.rng.choice(divisors)
        dims.append(d)
        rest //= d
    if rest > 1 or not dims and n != 1:
        dims.append(rest)
    g.rng.shuffle(dims)
    return tuple(dims)


def reshape(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS))
    shape = _factor_shape(g, x.type.num_elements)
    if shape == x.type.shape:
        shape = (x.type.num_elements,) if x.type.rank != 1 else (1, x.type.num_elements)
    g.op("reshape", [x], shape=shape)
    return True


def transpose(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=2)
    perm = list(range(x.type.rank))
    while perm == sorted(perm):
        g.rng.shuffle(perm)
    g.op("transpose", [x], permutation=tuple(perm))
    return True


def reverse(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    dims = g.rng.sample(range(x.type.rank), g.rng.randint(1, x.type.rank))
    g.op("reverse", [x], dims=tuple(dims))
    return True


def concatenate(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    d = g.rng.randrange(x.type.rank)
    parts = [x]
    total = x.type.num_elements
    for _ in range(g.rng.randint(1, 3)):
        shape = list(x.type.shape)
        shape[d] = g.rng.randint(1, 3)
        ty = TensorType(tuple(shape), x.type.dtype)
        if total + ty.num_elements > g.max_elements:
            break
        total += ty.num_elements
        parts.append(g.operand(ty))
    if len(parts) == 1 and g.chance(0.7):
        return False
    g.rng.shuffle(parts)
    g.op("concatenate", parts, dimension=d)
    return True


def slice_(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    starts, limits, strides = [], [], []
    for d in x.type.shape:
        s = g.rng.randint(0, d - 1)
        lim = g.rng.randint(s + 1, d)
        starts.append(s)
        limits.append(lim)
        strides.append(g.rng.choice([1, 1, 2, 3]))
    g.op("slice", [x], start=tuple(starts), limit=tuple(limits), strides=tuple(strides))
    return True


def pad(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    value = g.operand(TensorType((), x.type.dtype))
    low, high, interior = [], [], []
    size = 1
    for d in x.type.shape:
        it = g.rng.choice([0, 0, 0, 1, 2])
        full = d + (d - 1) * it
        lo = g.rng.randint(-1, 2)
        hi = g.rng.randint(-1, 2)
        while full + lo + hi < 1:  # negative padding crops, but keep something
            lo, hi = lo + 1, hi + 1
        low.append(lo)
        high.append(hi)
        interior.append(it)
        size *= full + lo + hi
    if size > g.max_elements:
        return False
    g.op("pad", [x, value], low=tuple(low), high=tuple(high), interior=tuple(interior))
    return True


def iota(g: Gen) -> bool:
    shape = g.shape(g.rng.randint(1, 3))
    dt = g.dtype("fiu")
    g.op("iota", [], dimension=g.rng.randrange(len(shape)), shape=shape, dtype=dt.name)
    return True


def constant(g: Gen) -> bool:
    g.pool.append(g.const(TensorType(g.shape(), g.dtype())))
    return True


# ---------------------------------------------------------------------------- indexing

INDEX_TYPES = ("i32", "i64", "i8", "i16", "ui8", "ui32")


def gather(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1, max_rank=3)
    shape = x.type.shape
    rank = len(shape)
    dims = list(range(rank))
    g.rng.shuffle(dims)
    batching = [dims.pop()] if rank > 1 and g.chance(0.2) else []
    k = g.rng.randint(1, min(2, len(dims))) if dims else 0
    if k == 0:
        return False
    start_map = dims[:k]
    sizes = [g.rng.randint(1, d) for d in shape]
    collapsed = sorted(d for d in range(rank) if d not in batching and g.chance(0.4))
    for d in collapsed + batching:
        sizes[d] = 1
    n_batch = g.rng.randint(0, 2)
    batch_shape = [g.rng.randint(1, 3) for _ in range(n_batch)]
    idx_batching: list[int] = []
    if batching:
        # An operand batching dim pairs with an indices batch dim of the same size.
        if not batch_shape:
            batch_shape.append(1)
        j = g.rng.randrange(len(batch_shape))
        batch_shape[j] = shape[batching[0]]
        idx_batching = [j]
    implicit = k == 1 and g.chance(0.3)
    ivd = len(batch_shape) if implicit else g.rng.randint(0, len(batch_shape))
    idx_shape = list(batch_shape)
    if not implicit:
        idx_shape.insert(ivd, k)
    # Batch dims of the indices are numbered in the indices' own dims (ivd skipped).
    idx_batching = [j if j < ivd or implicit else j + 1 for j in idx_batching]
    offsets = [d for d in range(rank) if d not in collapsed and d not in batching]
    out_rank = len(batch_shape) + len(offsets)
    offset_dims = sorted(g.rng.sample(range(out_rank), len(offsets)))
    n_out = int(np.prod(batch_shape, dtype=np.int64)) * int(
        np.prod([sizes[d] for d in offsets], dtype=np.int64))
    if n_out > g.max_elements:
        return False
    it = DTYPES[g.rng.choice(INDEX_TYPES)]
    hi = max(shape) + 1
    idx = g.operand(TensorType(tuple(idx_shape), it), spec=InputSpec("index", -1, hi))
    g.op("gather", [x, idx], offset_dims=tuple(offset_dims),
         collapsed_slice_dims=tuple(collapsed), operand_batching_dims=tuple(batching),
         start_indices_batching_dims=tuple(idx_batching), start_index_map=tuple(start_map),
         index_vector_dim=ivd, slice_sizes=tuple(sizes))
    return True


def _starts(g: Gen, shape: tuple[int, ...], sizes: tuple[int, ...]) -> list[Tensor]:
    it = DTYPES[g.rng.choice(INDEX_TYPES)]
    return [g.operand(TensorType((), it), spec=InputSpec("index", -2, d - s + 2))
            for d, s in zip(shape, sizes)]


def dynamic_slice(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    sizes = tuple(g.rng.randint(1, d) for d in x.type.shape)
    g.op("dynamic_slice", [x, *_starts(g, x.type.shape, sizes)], slice_sizes=sizes)
    return True


def dynamic_update_slice(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    sizes = tuple(g.rng.randint(1, d) for d in x.type.shape)
    update = g.operand(TensorType(sizes, x.type.dtype))
    g.op("dynamic_update_slice", [x, update, *_starts(g, x.type.shape, sizes)])
    return True


# ---------------------------------------------------------------------------- contractions

# Result types a contraction may widen to (the accumulator of an int8 model, say).
WIDER = {"f16": ("f32",), "bf16": ("f32",), "f32": ("f64",), "i8": ("i16", "i32"),
         "i16": ("i32",), "i32": ("i64",), "ui8": ("ui16", "ui32", "i32"), "ui16": ("ui32",)}
NUMERIC = tuple(n for n in DTYPE_WEIGHTS if n != "i1")


def _result_type(g: Gen, dt: DType) -> str:
    if dt.name in WIDER and g.chance(0.3):
        return g.rng.choice(WIDER[dt.name])
    return dt.name


def dot_general(g: Gen) -> bool:
    dt = g.dtype(names=NUMERIC)
    r = g.rng
    batch = [r.randint(1, 3) for _ in range(r.choice([0, 0, 1]))]
    contract = [r.randint(1, 5) for _ in range(r.choice([0, 1, 1, 1, 2]))]
    free_a = [r.randint(1, 4) for _ in range(r.choice([0, 1, 1, 2]))]
    free_b = [r.randint(1, 4) for _ in range(r.choice([0, 1, 1, 2]))]
    out = int(np.prod(batch + free_a + free_b, dtype=np.int64))
    size_a = int(np.prod(batch + free_a + contract, dtype=np.int64))
    size_b = int(np.prod(batch + free_b + contract, dtype=np.int64))
    if max(out, size_a, size_b) > g.max_elements:
        return False

    def layout(free: list[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        roles = [("b", i) for i in range(len(batch))] + [("f", i) for i in range(len(free))] \
            + [("c", i) for i in range(len(contract))]
        r.shuffle(roles)
        sizes = {"b": batch, "f": free, "c": contract}
        shape = tuple(sizes[k][i] for k, i in roles)
        pos = {role: p for p, role in enumerate(roles)}
        # Batch and contracting dims pair up by their order in the attribute lists.
        return (shape, tuple(pos[("b", i)] for i in range(len(batch))),
                tuple(pos[("c", i)] for i in range(len(contract))))

    sa, lb, lc = layout(free_a)
    sb, rb, rc = layout(free_b)
    a = g.operand(TensorType(sa, dt))
    b = g.operand(TensorType(sb, dt))
    g.op("dot_general", [a, b], lhs_batch=lb, rhs_batch=rb, lhs_contract=lc, rhs_contract=rc,
         dtype=_result_type(g, dt))
    return True


def convolution(g: Gen) -> bool:
    r = g.rng
    dt = g.dtype(names=NUMERIC)
    nsp = r.choice([1, 2, 2])
    fg = r.choice([1, 1, 1, 2, 3])
    bg = r.choice([1, 1, 2]) if fg == 1 else 1
    batch = bg * r.randint(1, 2)
    cin_group = r.randint(1, 3)
    cin = cin_group * fg
    cout = fg * bg * r.randint(1, 2)
    spatial, ksize, strides, pads, lhs_dil, rhs_dil, out_sp = [], [], [], [], [], [], []
    for _ in range(nsp):
        s = r.randint(1, 5)
        k = r.randint(1, 3)
        st = r.choice([1, 1, 2])
        ld = r.choice([1, 1, 1, 2])
        rd = r.choice([1, 1, 1, 2])
        lo, hi = r.choice([0, 0, 1, 2, -1]), r.choice([0, 0, 1, 2, -1])
        size = (s - 1) * ld + 1 + lo + hi
        win = (k - 1) * rd + 1
        if size < win:
            return False
        spatial.append(s)
        ksize.append(k)
        strides.append(st)
        pads.append((lo, hi))
        lhs_dil.append(ld)
        rhs_dil.append(rd)
        out_sp.append((size - win) // st + 1)
    x_elems = batch * cin * int(np.prod(spatial))
    w_elems = cout * cin_group * int(np.prod(ksize))
    o_elems = batch // bg * cout * int(np.prod(out_sp))
    if max(x_elems, w_elems, o_elems) > g.max_elements:
        return False

    def layout(first: int, second: int, sp: list[int]) -> tuple[tuple[int, ...], list[int]]:
        perm = list(range(nsp + 2))
        r.shuffle(perm)  # perm[i]: where logical dim i (first, second, spatial...) sits
        shape = [0] * (nsp + 2)
        for logical, size in enumerate([first, second, *sp]):
            shape[perm[logical]] = size
        return tuple(shape), perm

    xs, xp = layout(batch, cin, spatial)
    ws, wp = layout(cin_group, cout, ksize)
    _, op_ = layout(batch // bg, cout, out_sp)
    x = g.operand(TensorType(xs, dt))
    # Any kernel, infinite and NaN weights included: the spec multiplies the zeros
    # between lhs-dilated input elements by the kernel (0 * inf is NaN there), and so
    # must the firmware (tests/e2e/data/random_graphs/lhs_dilation_inf_*.mlir).
    w = g.operand(TensorType(ws, dt))
    g.op("convolution", [x, w], strides=tuple(strides), padding=tuple(pads),
         lhs_dilation=tuple(lhs_dil), rhs_dilation=tuple(rhs_dil),
         input_batch=xp[0], input_feature=xp[1], input_spatial=tuple(xp[2:]),
         kernel_input=wp[0], kernel_output=wp[1], kernel_spatial=tuple(wp[2:]),
         output_batch=op_[0], output_feature=op_[1], output_spatial=tuple(op_[2:]),
         feature_group_count=fg, batch_group_count=bg, dtype=_result_type(g, dt))
    return True


# ---------------------------------------------------------------------------- reductions

_IDENTITY = {"add": 0, "multiply": 1, "and": -1, "or": 0}


def _kinds(dt: DType) -> tuple[str, ...]:
    if dt.kind == "b":
        return REDUCE_KINDS
    if dt.is_float:
        return ("add", "multiply", "maximum", "minimum")
    return REDUCE_KINDS


def reduction_init(g: Gen, kind: str, dt: DType) -> Tensor:
    """The init value of a reduction: its identity mostly, any value sometimes (the
    spec folds it in once, whatever it is), or a graph input."""
    scalar = TensorType((), dt)
    if g.chance(0.3):
        return g.operand(scalar)
    if kind in ("maximum", "minimum"):
        if dt.is_float:
            value = -np.inf if kind == "maximum" else np.inf
        elif dt.kind == "b":
            value = kind == "minimum"
        else:
            info = np.iinfo(dt.np_dtype)
            value = info.min if kind == "maximum" else info.max
    else:
        value = _IDENTITY[kind]
        if dt.kind == "b":
            value = bool(value)
        elif dt.kind == "u" and value == -1:
            value = np.iinfo(dt.np_dtype).max
    return g.const(scalar, value)


def reduce(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    kind = g.rng.choice(_kinds(x.type.dtype))
    rank = x.type.rank
    dims = () if g.chance(0.05) else tuple(sorted(g.rng.sample(range(rank),
                                                              g.rng.randint(1, rank))))
    if g.chance(0.2):
        dims = tuple(g.rng.sample(dims, len(dims)))  # any order (reduces the same)
    g.op("reduce", [x, reduction_init(g, kind, x.type.dtype)], kind=kind, dims=dims)
    return True


def window_attrs(g: Gen, shape: tuple[int, ...], dilate: bool = True,
                 negative_pad: bool = False) -> dict | None:
    """Random reduce_window-style attributes for an operand of `shape` (None when the
    windows do not fit)."""
    r = g.rng
    at: dict[str, list] = {k: [] for k in ("window", "strides", "base_dilations",
                                           "window_dilations", "padding")}
    out = 1
    for d in shape:
        w = r.randint(1, min(3, d + 1))
        st = r.choice([1, 1, 2])
        bd = r.choice([1, 1, 1, 2]) if dilate else 1
        wd = r.choice([1, 1, 1, 2]) if dilate else 1
        lo = r.choice([0, 0, 0, 1, 2] + ([-1] if negative_pad else []))
        hi = r.choice([0, 0, 0, 1, 2] + ([-1] if negative_pad else []))
        base = (d - 1) * bd + 1 + lo + hi
        win = (w - 1) * wd + 1
        if base < win:
            return None
        out *= (base - win) // st + 1
        for k, v in zip(at, (w, st, bd, wd, (lo, hi))):
            at[k].append(v)
    if out > g.max_elements:
        return None
    return {k: tuple(v) for k, v in at.items()}


def reduce_window(g: Gen) -> bool:
    x = _source(g, tuple(DTYPE_WEIGHTS), min_rank=1)
    attrs = window_attrs(g, x.type.shape)
    if attrs is None:
        return False
    kind = g.rng.choice(_kinds(x.type.dtype))
    g.op("reduce_window", [x, reduction_init(g, kind, x.type.dtype)], kind=kind, **attrs)
    return True


# The epsilons are exact in f32, so the attribute survives an MLIR round trip bit for bit.
EPSILONS = (2.0**-10, 2.0**-17, 0.0009765625 * 1.5)


def batch_norm_inference(g: Gen) -> bool:
    x = _source(g, FLOATS, min_rank=1)
    fi = g.rng.randrange(x.type.rank)
    vec = TensorType((x.type.shape[fi],), x.type.dtype)
    scale, offset, mean = (g.operand(vec) for _ in range(3))
    var = g.operand(vec, spec=InputSpec("positive", 0.05, 2.0))
    if not g.is_exact(var) or g.chance(0.3):
        var = g.positive(var)  # variance + epsilon must stay away from 0
    g.op("batch_norm_inference", [x, scale, offset, mean, var], epsilon=g.rng.choice(EPSILONS),
         feature_index=fi)
    return True


# ---------------------------------------------------------------------------- linear algebra

# The bound operands of the batch norms are clamped to (clamp also takes infinities to
# the bound; a NaN stays and is NaN on both sides): f16's largest intermediate of
# batch_norm_grad (passes/linalg.py, the spec's i3 * centered / (variance + epsilon))
# is then 96 elements * 2 * 4 * 4 / 0.25 = 12,288, well inside its 65,504.
NORM_BOUND = 2.0
# A linear-algebra matrix is at most 6 x 6 (MAX_DIM) and the op's tensors stay small.
LINALG_ELEMENTS = 72


def _norm_operands(g: Gen) -> tuple[Tensor, int, TensorType]:
    """A batch norm's operand (rank >= 1, bounded), its feature index and the type of
    a per-feature vector."""
    x = g.bounded(_source(g, FLOATS, min_rank=1), NORM_BOUND)
    fi = g.rng.randrange(x.type.rank)
    return x, fi, TensorType((x.type.shape[fi],), x.type.dtype)


def batch_norm_training(g: Gen) -> bool:
    """batch_norm_training over bounded operands: the mean, biased variance and
    normalized values (three results, all in the pool)."""
    x, fi, vec = _norm_operands(g)
    scale, offset = (g.bounded(g.operand(vec), NORM_BOUND) for _ in range(2))
    g.node("batch_norm_training", [x, scale, offset],
           {"epsilon": g.rng.choice(EPSILONS), "feature_index": fi})
    return True


def batch_norm_grad(g: Gen) -> bool:
    """batch_norm_grad with bounded operands and a variance kept >= 0.25 (|v| + c, or a
    new input in [0.25, 2]): d operand, d scale, d offset."""
    x, fi, vec = _norm_operands(g)
    scale, mean = (g.bounded(g.operand(vec), NORM_BOUND) for _ in range(2))
    var = g.operand(vec, spec=InputSpec("positive", 0.25, 2.0)) if g.chance(0.5) \
        else g.positive(g.bounded(g.operand(vec), NORM_BOUND))
    grad = g.bounded(g.operand(x.type), NORM_BOUND)
    g.node("batch_norm_grad", [x, scale, mean, var, grad],
           {"epsilon": g.rng.choice(EPSILONS), "feature_index": fi})
    return True


def _matrix_type(g: Gen, n: int, last: int) -> tuple[TensorType, list[int]] | None:
    """A float type batch + (n, last) with 0 to 2 batch dims, or None when too big."""
    batch = [g.rng.randint(1, 3) for _ in range(g.rng.choice([0, 0, 1, 2]))]
    shape = tuple(batch + [n, last])
    if int(np.prod(shape)) > LINALG_ELEMENTS:
        return None
    return TensorType(shape, g.dtype(names=FLOATS)), batch


def _identity(g: Gen, ty: TensorType, scale: float) -> Tensor:
    """scale * I on every matrix of a batch of type `ty` (a constant)."""
    eye = np.broadcast_to(np.eye(ty.shape[-1]) * scale, ty.shape)
    return g.const(ty, eye)


def cholesky(g: Gen) -> bool:
    """cholesky of A = M M^T + n I, M of shape (n, k) with entries in [-1, 1] (a new
    input or constant: no NaN or infinity): A's eigenvalues lie in [n, n + k n], so its
    condition number is at most 1 + k <= 7 and every pivot is far above 0 in every
    element type. Sometimes some matrices of the batch are negated (negative definite:
    the first pivot is <= -n, so the result is NaN on both sides, the batch's other
    matrices unaffected). Both triangles are drawn."""
    n, k = g.rng.randint(1, 6), g.rng.randint(1, 6)
    made = _matrix_type(g, n, k)
    if made is None or int(np.prod(made[0].shape[:-1])) * n > LINALG_ELEMENTS:
        return False
    mty, batch = made
    m = g.fresh(mty, InputSpec("positive", -1.0, 1.0))
    dims = tuple(range(len(batch)))
    a = g.op("dot_general", [m, m], lhs_batch=dims, rhs_batch=dims,
             lhs_contract=(len(batch) + 1,), rhs_contract=(len(batch) + 1,),
             dtype=mty.dtype.name)
    a = g.op("add", [a, _identity(g, a.type, float(n))])
    if batch and g.chance(0.25):
        signs = g.nrng.choice([-1.0, 1.0], size=tuple(batch) + (1, 1))
        a = g.op("multiply", [a, g.const(a.type, np.broadcast_to(signs, a.type.shape))])
    g.op("cholesky", [a], lower=g.chance(0.5))
    return True


def triangular_solve(g: Gen) -> bool:
    """triangular_solve with A = M + n I, M's entries in [-0.5, 0.5] (a new input or
    constant): the triangle read is diagonally dominant (|off-diagonal row sum| <= (n -
    1) / 2 < n - 1/2 <= the diagonal), and with unit_diagonal its inverse grows at most
    1.5**(n - 1) < 8, so op(A) is well conditioned; the other triangle holds the rest of
    M + n I, which must not be read. B is any pool operand of the right type, bounded."""
    n, m = g.rng.randint(1, 6), g.rng.randint(1, 6)
    left = g.chance(0.5)
    made = _matrix_type(g, n, n)
    if made is None:
        return False
    aty, batch = made
    bty = TensorType(tuple(batch) + ((n, m) if left else (m, n)), aty.dtype)
    if bty.num_elements > LINALG_ELEMENTS:
        return False
    a = g.op("add", [g.fresh(aty, InputSpec("positive", -0.5, 0.5)),
                     _identity(g, aty, float(n))])
    b = g.bounded(g.operand(bty), 8.0)
    g.op("triangular_solve", [a, b], left_side=left, lower=g.chance(0.5),
         unit_diagonal=g.chance(0.3),
         transpose_a=g.rng.choice(["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]))
    return True


def next_after(g: Gen) -> bool:
    """next_after(x, y): one step of x's own grid towards y; exact, but it jumps where
    y passes x, so both operands are exact."""
    x = _source(g, FLOATS, exact=True)
    y = g.operand(x.type, exact=True)
    if g.chance(0.3):
        y = x  # x == y gives y
    g.op("next_after", [x, y])
    return True


def zeta_polygamma(op: str) -> Callable[[Gen], bool]:
    """zeta(s, q) with s in (1, 6], q in (0, 5]; polygamma(n, x) with n = 0 to 3 (an
    integer held as a float) and x in (0, 6]: where both are defined and finite. The
    operands are new inputs (constants in regions) of those ranges."""

    def build(g: Gen) -> bool:
        ty = TensorType(g.shape(), g.dtype(names=FLOATS))
        if op == "zeta":
            a = g.fresh(ty, InputSpec("positive", 1.25, 6.0))
            b = g.fresh(ty, InputSpec("positive", 0.25, 5.0))
        else:
            a = g.const(ty, float(g.rng.randint(0, 3)))
            b = g.fresh(ty, InputSpec("positive", 0.25, 6.0))
        g.op(op, [a, b])
        return True

    return build


# ---------------------------------------------------------------------------- complex, fft

# The part types of complex<f32> and complex<f64>.
PARTS = ("f32", "f64")


def complex_operand(g: Gen, ty: TensorType) -> Tensor:
    """A complex tensor of exactly `ty`: from the pool, complex(re, im) of two float
    operands, or a new input."""
    if g.chance(0.6):
        x = g.pick(lambda t: t.type == ty, complex_ok=True)
        if x is not None:
            return x
    if g.chance(0.5):
        part = TensorType(ty.shape, complex_part(ty.dtype))
        return g.op("complex", [g.operand(part), g.operand(part)])
    return g.fresh(ty)


def make_complex(g: Gen) -> bool:
    a = _source(g, PARTS)
    g.op("complex", [a, g.operand(a.type)])
    return True


def part(op: str) -> Callable[[Gen], bool]:
    """real / imag of a complex tensor (or, as the spec allows, of a float one: itself
    and zeros)."""

    def build(g: Gen) -> bool:
        x = g.pick(lambda t: t.type.dtype.is_complex, complex_ok=True)
        if g.chance(0.15):
            x = _source(g, PARTS)
        elif x is None or g.chance(0.3):
            ty = TensorType(g.shape(), complex_of(g.dtype(names=PARTS)))
            x = complex_operand(g, ty)
        g.op(op, [x])
        return True

    return build


def fft(g: Gen) -> bool:
    """FFT / IFFT / RFFT / IRFFT over the last 1 to 3 dims, lengths 1 to 9 (radix 2,
    mixed radix, small primes; every path of passes/fft.py but Bluestein's, whose primes
    above its DFT limit make a bigger graph than these tensors call for)."""
    r = g.rng
    kind = r.choice(FFT_TYPES)
    lengths = [r.randint(1, 9) for _ in range(r.choice([1, 1, 1, 2, 3]))]
    batch = [r.randint(1, 3) for _ in range(r.choice([0, 1, 1]))]
    if int(np.prod(batch + lengths)) > 48:
        return False
    part_t = DTYPES[r.choice(["f32", "f32", "f64"])]
    if kind == "RFFT":
        x = g.operand(TensorType(tuple(batch + lengths), part_t))
    else:
        last = lengths[-1] // 2 + 1 if kind == "IRFFT" else lengths[-1]
        x = complex_operand(g, TensorType(tuple(batch + lengths[:-1] + [last]),
                                          complex_of(part_t)))
    g.op("fft", [x], fft_type=kind, fft_length=tuple(lengths))
    return True


# ---------------------------------------------------------------------------- bits, rng

BITS_TYPES = tuple(n for n in DTYPE_WEIGHTS if n != "i1")


def _raw_float(t: Tensor) -> bool:
    """A float whose NaNs have known bits: a graph input or a constant. Computed NaNs
    (0 / 0, a NaN through convert) have the hardware's sign and payload, which
    bitcast_convert would expose to an exact comparison."""
    return t.producer is None or t.producer.op == "constant"


def bitcast_convert(g: Gen) -> bool:
    """The operand's bits as another type: of the same width (same shape), narrower (one
    more trailing dim of the width ratio) or wider (the trailing dim of that ratio
    consumed). Floats it reads are inputs or constants (_raw_float)."""
    x = _source(g, BITS_TYPES, exact=True, max_rank=3)
    if x.type.dtype.is_float and not _raw_float(x):
        x = g.fresh(x.type)
    a = x.type.dtype.bits
    options = []
    for n in BITS_TYPES:
        b = DTYPES[n].bits
        if n == x.type.dtype.name:
            continue
        if b == a:
            options.append((n, x.type.shape))
        elif b < a and x.type.num_elements * (a // b) <= g.max_elements:
            options.append((n, (*x.type.shape, a // b)))
        elif b > a and x.type.rank >= 1 and x.type.shape[-1] * a == b:
            options.append((n, x.type.shape[:-1]))
    if not options:
        return False
    name, shape = g.rng.choice(options)
    g.op("bitcast_convert", [x], dtype=name, shape=tuple(shape))
    return True


# Result types of rng_bit_generator (the spec's integer and float types of 8 to 64 bits).
RNG_BITS_TYPES = tuple(n for n in BITS_TYPES if n != "bf16")


def rng_bit_generator(g: Gen) -> bool:
    """THREE_FRY or PHILOX (DEFAULT is PHILOX) from a ui64 state of 2 or 3 values (an
    input, full range, or a constant); the bits are small tensors: the algorithms'
    rounds make a big fused expression per element, slow to compile."""
    algo = g.rng.choice(RNG_ALGORITHMS)
    n = 2 if algo == "THREE_FRY" else g.rng.choice([2, 3])
    state = g.fresh(TensorType((n,), DTYPES["ui64"]))
    name = g.rng.choice(RNG_BITS_TYPES)
    shape = g.shape(g.rng.randint(0, 2), max_elements=16)
    g.node("rng_bit_generator", [state], {"algorithm": algo, "dtype": name, "shape": shape})
    return True


def rng(g: Gen) -> bool:
    """The old rng op: UNIFORM in [a, b) of any integer or float type, or NORMAL (mean
    a, deviation b) of floats; its numbers are rng_bit_generator's through XLA's
    distributions (frontend/stablehlo_random.py, keyed by the op's place in the source:
    top-level graphs only, where node order is source order)."""
    if g.parent is not None:
        return False
    dist = g.rng.choice(["UNIFORM", "NORMAL"])
    dt = g.dtype("f" if dist == "NORMAL" else "fiu")
    scalar = TensorType((), dt)
    a, b = g.operand(scalar, exact=True), g.operand(scalar, exact=True)
    shape = g.shape(g.rng.randint(1, 2), max_elements=16)
    g.op("rng", [a, b], distribution=dist, dtype=dt.name, shape=shape)
    return True


# ---------------------------------------------------------------------------- minirt's own


def fixed_point(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        a = _source(g, ("i32",))
        spec = InputSpec("index", -3, 34) if op == "rounding_divide_by_pot" else None
        b = g.operand(a.type, spec=spec)
        g.op(op, [a, b])
        return True

    return build


def dequantize(g: Gen) -> bool:
    q = _source(g, ("i8", "ui8", "i16"))
    dt = g.dtype(names=("f32", "f32", "f16", "bf16"))
    if q.type.rank and g.chance(0.5):
        axis = g.rng.randrange(q.type.rank)
        scale = g.operand(TensorType((q.type.shape[axis],), dt))
    else:
        axis = None
        scale = g.operand(TensorType((), dt))
    g.op("dequantize", [q, scale], axis=axis)
    return True


# ---------------------------------------------------------------------------- the table


# The elementwise ops drawn by the generic unary / binary builders (each op's element
# types come from its type rule, `accepts`).
UNARY = ("abs", "negate", "sign", "exponential", "exponential_minus_one", "log",
         "log_plus_one", "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan",
         "floor", "ceil", "round_nearest_afz", "round_nearest_even", "not", "popcnt",
         "count_leading_zeros")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
          "atan2", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
          "shift_right_logical")


def _rows() -> dict[str, OpGen]:
    from toolchain.testing.region_gens import REGION_GENS

    rows = [OpGen(op, 1.0, unary(op)) for op in UNARY]
    rows += [OpGen(op, 0.4, unary(op)) for op in CHLO_UNARY]
    rows += [OpGen(op, 1.2, binary(op)) for op in BINARY]
    rows += [
        OpGen("is_finite", 0.5, unary("is_finite")),
        OpGen("compare", 2.0, compare),
        OpGen("select", 2.0, select),
        OpGen("clamp", 1.0, clamp),
        OpGen("convert", 2.0, convert),
        OpGen("broadcast_in_dim", 2.5, broadcast_in_dim),
        OpGen("reshape", 2.5, reshape),
        OpGen("transpose", 2.0, transpose),
        OpGen("reverse", 1.0, reverse),
        OpGen("concatenate", 1.5, concatenate),
        OpGen("slice", 1.5, slice_),
        OpGen("pad", 1.5, pad),
        OpGen("iota", 0.7, iota),
        OpGen("constant", 0.5, constant),
        OpGen("gather", 1.5, gather),
        OpGen("dynamic_slice", 1.0, dynamic_slice),
        OpGen("dynamic_update_slice", 1.0, dynamic_update_slice),
        OpGen("dot_general", 3.0, dot_general),
        OpGen("convolution", 3.0, convolution),
        OpGen("reduce", 3.0, reduce),
        OpGen("reduce_window", 2.0, reduce_window),
        OpGen("batch_norm_inference", 0.8, batch_norm_inference),
        OpGen("batch_norm_training", 0.5, batch_norm_training),
        OpGen("batch_norm_grad", 0.5, batch_norm_grad),
        OpGen("cholesky", 0.5, cholesky),
        OpGen("triangular_solve", 0.5, triangular_solve),
        OpGen("saturating_rounding_doubling_high_mul", 0.4,
              fixed_point("saturating_rounding_doubling_high_mul"), mlir=False),
        OpGen("rounding_divide_by_pot", 0.4, fixed_point("rounding_divide_by_pot"),
              mlir=False),
        OpGen("dequantize", 0.6, dequantize, mlir=False),
        OpGen("next_after", 0.4, next_after),
        OpGen("zeta", 0.3, zeta_polygamma("zeta")),
        OpGen("polygamma", 0.3, zeta_polygamma("polygamma")),
        OpGen("complex", 0.6, make_complex),
        OpGen("real", 0.5, part("real")),
        OpGen("imag", 0.5, part("imag")),
        OpGen("fft", 0.8, fft),
        OpGen("bitcast_convert", 0.8, bitcast_convert),
        # Low weights: their Threefry / Philox rounds are slow to compile (kernel/form.py).
        OpGen("rng_bit_generator", 0.25, rng_bit_generator),
        OpGen("rng", 0.25, rng),
    ]
    rows += REGION_GENS
    return {row.op: row for row in rows}


OP_GENS: dict[str, OpGen] = _rows()


def build_one(g: Gen, table: dict[str, OpGen]) -> bool:
    """Adds one op drawn from `table` by weight (a few tries when a builder declines)."""
    rows = list(table.values())
    if g.depth >= 2:  # regions inside regions inside regions: no deeper
        rows = [r for r in rows if not getattr(r.build, "makes_regions", False)]
    for _ in range(8):
        row = g.rng.choices(rows, [r.weight for r in rows])[0]
        if row.build(g):
            return True
    return False
