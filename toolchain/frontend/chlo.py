"""CHLO ("client HLO", StableHLO's companion dialect that JAX writes) into the graph.

JAX emits CHLO for functions StableHLO lacks: `jnp.var` squares with `chlo.square`,
`jax.nn.gelu(approximate=False)` calls `chlo.erfc`, `lax.erf` `chlo.erf`, `lax.top_k`
`chlo.top_k`. Each CHLO op here is either one graph op of its own (the math functions:
erf, lgamma, zeta, ... computed by toolchain/codegen/mathlib_special.py, referenced by
toolchain/reference/special.py) or a few StableHLO-level graph ops, as StableHLO's
ChloLegalizeToStablehlo pass decomposes it:

- `square(x)` is `x * x`; `conj` negates the imaginary part (a real operand is itself);
- `is_inf` / `is_pos_inf` / `is_neg_inf` compare |x| or x with infinity;
- `constant` is a constant; `constant_like` splats its scalar to the operand's shape;
- `broadcast_<op>(a, b)` broadcasts both operands to the result's shape (a lower-rank
  operand's dims map to `broadcast_dimensions` when given, else to the trailing ones as
  in numpy; size-1 dims stretch), then applies `<op>`; `broadcast_select` the same with
  the predicate;
- `mulhi(a, b)` is the high half of the double-width product: both widened, multiplied,
  shifted right by the width (arithmetic for signed types) and narrowed; 64-bit operands
  (no 128-bit type to widen to) by 32-bit halves in ui64, the schoolbook way, then for
  i64 the unsigned high half less b where a < 0 and less a where b < 0 (mod 2**64);
- `top_k(x, k)` is a stable sort of (x, iota) along the last dim in descending total
  order (NaN above +inf, as XLA's TopK; ties keep the lower index first), then the first
  k of each row.

Every converter takes a `ChloOp` (the builder, the op, its operand tensors) and returns
the result tensors; `expand_chlo` checks them against the declared result types. The ops in
UNSUPPORTED are refused with their reason (docs/ops.md lists them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.types import declared_result
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.ops import ShapeError
from toolchain.mlir.ir import (
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
)
from toolchain.types import I1, DType, TensorType, dtype, round_to_bf16, to_bf16

__all__ = ["CHLO_EXPANDERS", "ChloError", "ChloOp", "UNSUPPORTED", "expand_chlo"]


class ChloError(Exception):
    """A CHLO op the graph cannot express, or one that is ill-formed (no location: the
    importer adds the op's)."""


@dataclass
class ChloOp:
    """What a converter sees: where to add nodes, the op, its operand tensors."""

    b: GraphBuilder
    op: Operation
    inputs: list[Tensor]

    def result(self, i: int = 0) -> TensorType:
        return declared_result(self.op, i, ChloError)

    def attr(self, key: str) -> object:
        return self.op.attr(key)

    def enum(self, key: str) -> str | None:
        """`#chlo<comparison_direction LT>` -> "LT" (None when absent)."""
        a = self.op.attr(key)
        if a is None:
            return None
        if not isinstance(a, OpaqueAttr):
            raise ChloError(f"attribute '{key}' must be an enum")
        return a.body.split()[-1]

    def ints(self, key: str) -> tuple[int, ...] | None:
        a = self.op.attr(key)
        if a is None:
            return None
        if isinstance(a, DenseArrayAttr):
            return tuple(int(v) for v in a.values)
        if isinstance(a, DenseAttr):
            return tuple(int(v) for v in a.array.reshape(-1))
        raise ChloError(f"attribute '{key}' must be a list of integers")


Converter = Callable[[ChloOp], Tensor | list[Tensor]]


# ------------------------------------------------------------------ one graph op each

# CHLO ops that are graph elementwise ops of the same name (toolchain/graph/ops.py).
MATH = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "cosh", "digamma",
        "erf", "erf_inv", "erfc", "lgamma", "sinh", "tan", "next_after", "polygamma", "zeta")


def _same(name: str) -> Converter:
    return lambda c: c.b.op(name, c.inputs)


def _square(c: ChloOp) -> Tensor:
    (x,) = c.inputs
    return c.b.op("multiply", [x, x])


def _conj(c: ChloOp) -> Tensor:
    (x,) = c.inputs
    if x.type.dtype.is_float:
        return x  # a real number is its own conjugate
    if x.type.dtype.kind != "c":
        raise ChloError(f"takes a float or complex tensor, not {x.type}")
    re, im = c.b.op("real", [x]), c.b.op("imag", [x])
    return c.b.op("complex", [re, c.b.op("negate", [im])])


def _inf_test(sign: int | None) -> Converter:
    """is_inf (sign None: |x| == inf), is_pos_inf (+1), is_neg_inf (-1)."""

    def convert(c: ChloOp) -> Tensor:
        (x,) = c.inputs
        t = x.type
        if not t.dtype.is_float:
            raise ChloError(f"takes a float tensor, not {t}")
        v = x if sign is not None else c.b.op("abs", [x])
        inf = c.b.splat(np.inf if sign in (None, 1) else -np.inf, t.dtype, t.shape)
        return c.b.op("compare", [v, inf], direction="EQ")

    return convert


def _array(value: np.ndarray, dt: DType) -> np.ndarray:
    # The host holds bf16 in float32: literals are rounded once, here (as the
    # StableHLO importer's constants).
    return round_to_bf16(value) if dt.name == "bf16" else np.asarray(value).astype(dt.np_dtype)


def _constant(c: ChloOp) -> Tensor:
    v = c.attr("value")
    t = c.result()
    if not isinstance(v, DenseAttr):
        raise ChloError("constant value must be a dense literal")
    array = _array(v.array, t.dtype).reshape(t.shape)
    return c.b.graph.add("constant", [], [t], {"value": array}, c.b.loc).output


def _constant_like(c: ChloOp) -> Tensor:
    """The scalar `value` splat to the operand's shape, in the result's element type."""
    v = c.attr("value")
    t = c.result()
    if isinstance(v, IntAttr | FloatAttr):
        scalar = np.array(v.value)
    elif isinstance(v, DenseAttr) and v.array.size == 1:
        scalar = v.array.reshape(())
    else:
        raise ChloError("constant_like's value must be a scalar")
    if tuple(t.shape) != tuple(c.inputs[0].type.shape):
        raise ChloError(f"result {t} does not have the operand's shape "
                        f"{c.inputs[0].type}")
    value = to_bf16(scalar) if t.dtype.name == "bf16" else scalar.astype(t.dtype.np_dtype)
    const = c.b.graph.add("constant", [], [TensorType((), t.dtype)], {"value": value},
                          c.b.loc).output
    if not t.shape:
        return const
    return c.b.op("broadcast_in_dim", [const], dims=(), shape=tuple(t.shape))


def _mulhi_64(c: ChloOp, a: Tensor, b: Tensor) -> Tensor:
    """The high 64 bits of the 128-bit product of two 64-bit integers, from 32-bit
    halves (each partial product fits ui64; the middle sum is below 3 * 2**32)."""
    shape = tuple(a.type.shape)
    u64 = dtype("ui64")
    signed = a.type.dtype.kind == "i"
    ua, ub = ((c.b.op("bitcast_convert", [x], dtype="ui64", shape=shape) for x in (a, b))
              if signed else (a, b))
    k32, low = c.b.splat(32, u64, shape), c.b.splat(0xFFFFFFFF, u64, shape)

    def split(x: Tensor) -> tuple[Tensor, Tensor]:
        return (c.b.op("shift_right_logical", [x, k32]), c.b.op("and", [x, low]))

    def mul(x: Tensor, y: Tensor) -> Tensor:
        return c.b.op("multiply", [x, y])

    def add(*xs: Tensor) -> Tensor:
        total = xs[0]
        for x in xs[1:]:
            total = c.b.op("add", [total, x])
        return total

    (ah, al), (bh, bl) = split(ua), split(ub)
    ll, lh, hl, hh = mul(al, bl), mul(al, bh), mul(ah, bl), mul(ah, bh)
    (lh_hi, lh_lo), (hl_hi, hl_lo) = split(lh), split(hl)
    mid = add(c.b.op("shift_right_logical", [ll, k32]), lh_lo, hl_lo)
    high = add(hh, lh_hi, hl_hi, c.b.op("shift_right_logical", [mid, k32]))
    if not signed:
        return high
    # as signed, a = ua - 2**64 [a < 0]: the product's high half loses b [a < 0] and
    # a [b < 0]; (x >> 63) is all ones exactly where x < 0.
    k63 = c.b.splat(63, a.type.dtype, shape)
    for sign_of, other in ((a, ub), (b, ua)):
        mask = c.b.op("bitcast_convert", [c.b.op("shift_right_arithmetic", [sign_of, k63])],
                      dtype="ui64", shape=shape)
        high = c.b.op("subtract", [high, c.b.op("and", [mask, other])])
    return c.b.op("bitcast_convert", [high], dtype=a.type.dtype.name, shape=shape)


def _mulhi(c: ChloOp) -> Tensor:
    a, b = c.inputs
    dt = a.type.dtype
    if not dt.is_integer or dt.bits > 64:
        raise ChloError(f"takes integers of up to 64 bits, not {dt}")
    if dt.bits == 64:
        return _mulhi_64(c, a, b)
    wide = dtype(("i" if dt.kind == "i" else "ui") + str(2 * dt.bits))
    product = c.b.op("multiply", [c.b.op("convert", [x], dtype=wide.name) for x in (a, b)])
    shift = c.b.splat(dt.bits, wide, tuple(a.type.shape))
    op = "shift_right_arithmetic" if dt.kind == "i" else "shift_right_logical"
    return c.b.op("convert", [c.b.op(op, [product, shift])], dtype=dt.name)


# ------------------------------------------------------------------ broadcast_*


def _broadcast_operands(c: ChloOp, tensors: list[Tensor]) -> list[Tensor]:
    """Each operand broadcast to the result's shape: a lower-rank operand's dims go to
    `broadcast_dimensions` when given, else to the trailing dims; size-1 dims stretch."""
    shape = tuple(c.result().shape)
    given = c.ints("broadcast_dimensions")
    out = []
    for x in tensors:
        src = tuple(x.type.shape)
        if src == shape:
            out.append(x)
            continue
        if len(src) == len(shape):
            dims = tuple(range(len(shape)))
        elif given is not None and len(given) == len(src):
            dims = given
        else:
            dims = tuple(range(len(shape) - len(src), len(shape)))
        if len(src) > len(shape) or any(
                not 0 <= d < len(shape) or s not in (1, shape[d]) for s, d in zip(src, dims)):
            raise ChloError(f"operand {x.type} does not broadcast to the result's shape "
                            f"{list(shape)}" + (f" along dims {list(dims)}" if given else ""))
        out.append(c.b.op("broadcast_in_dim", [x], dims=dims, shape=shape))
    return out


def _broadcast(name: str) -> Converter:
    return lambda c: c.b.op(name, _broadcast_operands(c, c.inputs))


def _broadcast_compare(c: ChloOp) -> Tensor:
    direction = c.enum("comparison_direction")
    if direction is None:
        raise ChloError("missing attribute 'comparison_direction'")
    a, b = _broadcast_operands(c, c.inputs)
    attrs: dict = {"direction": direction}
    # TOTALORDER orders floats -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
    if c.enum("compare_type") == "TOTALORDER" and a.type.dtype.is_float:
        attrs["total_order"] = True
    return c.b.op("compare", [a, b], **attrs)


# ------------------------------------------------------------------ top_k


def _descending_comparator(dt: DType, index: DType) -> Graph:
    """(a, b, ia, ib) -> a > b in total order: sort's comparator for top_k."""
    g = Graph("chlo.top_k.comparator")
    a, b2 = g.add_input(TensorType((), dt)), g.add_input(TensorType((), dt))
    g.add_input(TensorType((), index))
    g.add_input(TensorType((), index))
    attrs = {"direction": "GT"}
    if dt.is_float:
        attrs["total_order"] = True
    g.outputs = [g.add("compare", [a, b2], [TensorType((), I1)], attrs).output]
    return g


def _top_k(c: ChloOp) -> list[Tensor]:
    (x,) = c.inputs
    k_attr = c.attr("k")
    if not isinstance(k_attr, IntAttr):
        raise ChloError("missing attribute 'k'")
    k, t = k_attr.value, x.type
    if t.rank < 1 or not 0 <= k <= t.shape[-1]:
        raise ChloError(f"k = {k} must be between 0 and the last dim of {t}")
    stable = c.attr("is_stable")
    if stable is not None and not isinstance(stable, BoolAttr):
        raise ChloError("attribute 'is_stable' must be true or false")
    index = c.result(1).dtype
    if not index.is_integer:
        raise ChloError(f"the indices' element type must be an integer, not {index}")
    dim = t.rank - 1
    iota = c.b.op("iota", [], dimension=dim, shape=tuple(t.shape), dtype=index.name)
    # Stable whatever is_stable says: equal values keep the lower index first (CHLO's
    # definition), which a stable sort of (x, iota) gives.
    node = c.b.graph.add("sort", [x, iota], [t, iota.type], {"dimension": dim,
                                                             "is_stable": True},
                         c.b.loc, [_descending_comparator(t.dtype, index)])
    start, limit = (0,) * t.rank, tuple(t.shape[:-1]) + (k,)
    return [c.b.op("slice", [r], start=start, limit=limit, strides=(1,) * t.rank)
            for r in node.outputs]


# ------------------------------------------------------------------ ragged_dot


def _ragged_dot(c: ChloOp) -> Tensor:
    """The mode lax.ragged_dot means by default: lhs's ragged dim is a non-contracting
    one, rhs has a group dim, and lhs row i is multiplied by the rhs group whose range
    of group_sizes' running sum holds i (rows past the sum give 0). Decomposed as one
    dot_general: lhs is broadcast along a new leading group dim, each group's copy keeps
    only its own rows (select against iota and the running sums), and that dim is
    contracted with rhs's group dim."""
    lhs, rhs, sizes = c.inputs
    dn = c.attr("ragged_dot_dimension_numbers")
    get = getattr(dn, "get", None)
    if get is None:
        raise ChloError("missing attribute 'ragged_dot_dimension_numbers'")
    lb, rb = tuple(get("lhs_batching_dimensions", ())), tuple(get("rhs_batching_dimensions", ()))
    lc = tuple(get("lhs_contracting_dimensions", ()))
    rc = tuple(get("rhs_contracting_dimensions", ()))
    ragged, group = tuple(get("lhs_ragged_dimensions", ())), tuple(get("rhs_group_dimensions", ()))
    if len(ragged) != 1 or len(group) != 1 or ragged[0] in lc + lb:
        raise ChloError("takes a ragged non-contracting lhs dim and an rhs group dim (the "
                        "mode lax.ragged_dot uses); ragged contracting and batch dims are "
                        "not implemented")
    if not (0 <= ragged[0] < lhs.type.rank and 0 <= group[0] < rhs.type.rank):
        raise ChloError(f"lhs_ragged_dimensions {list(ragged)} or rhs_group_dimensions "
                        f"{list(group)} is past its operand's rank")
    g = rhs.type.shape[group[0]]
    if sizes.type.shape != (g,) or not sizes.type.dtype.is_integer:
        raise ChloError(f"group_sizes must be {g} integers, not {sizes.type}")
    it = sizes.type.dtype
    # ends[i] = sizes[0] + ... + sizes[i]: a lower-triangular select and a row sum.
    tri = np.tril(np.ones((g, g), bool))
    square = c.b.op("broadcast_in_dim", [sizes], dims=(1,), shape=(g, g))
    kept = c.b.op("select", [c.b.const(tri, I1), square, c.b.splat(0, it, (g, g))])
    ends = c.b.op("reduce", [kept, c.b.const(0, it)], kind="add", dims=(1,))
    starts = c.b.op("subtract", [ends, sizes])
    shape = (g,) + tuple(lhs.type.shape)
    row = c.b.op("iota", [], dimension=ragged[0] + 1, shape=shape, dtype=it.name)
    lo = c.b.op("broadcast_in_dim", [starts], dims=(0,), shape=shape)
    hi = c.b.op("broadcast_in_dim", [ends], dims=(0,), shape=shape)
    mine = c.b.op("and", [c.b.op("compare", [lo, row], direction="LE"),
                          c.b.op("compare", [row, hi], direction="LT")])
    spread = c.b.op("broadcast_in_dim", [lhs], dims=tuple(range(1, len(shape))),
                    shape=shape)
    masked = c.b.op("select", [mine, spread, c.b.splat(0, lhs.type.dtype, shape)])
    return c.b.op("dot_general", [masked, rhs], lhs_batch=tuple(d + 1 for d in lb),
                  rhs_batch=rb, lhs_contract=(0,) + tuple(d + 1 for d in lc),
                  rhs_contract=group + rc, dtype=c.result().dtype.name)


# ------------------------------------------------------------------ the table

_BROADCAST = ("add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply",
              "next_after", "or", "polygamma", "power", "remainder", "shift_left",
              "shift_right_arithmetic", "shift_right_logical", "subtract", "xor", "zeta",
              "select")

CHLO_EXPANDERS: dict[str, Converter] = {
    **{f"chlo.{n}": _same(n) for n in MATH},
    **{f"chlo.broadcast_{n}": _broadcast(n) for n in _BROADCAST},
    "chlo.broadcast_compare": _broadcast_compare,
    "chlo.square": _square,
    "chlo.conj": _conj,
    "chlo.is_inf": _inf_test(None),
    "chlo.is_pos_inf": _inf_test(1),
    "chlo.is_neg_inf": _inf_test(-1),
    "chlo.constant": _constant,
    "chlo.constant_like": _constant_like,
    "chlo.mulhi": _mulhi,
    "chlo.top_k": _top_k,
    "chlo.ragged_dot": _ragged_dot,
}

# How many operands each op takes (its ODS definition); checked before converting.
ARITY = {name: 1 for name in CHLO_EXPANDERS}
ARITY.update({f"chlo.{n}": 2 for n in ("next_after", "polygamma", "zeta", "mulhi")})
ARITY.update({f"chlo.broadcast_{n}": 2 for n in _BROADCAST + ("compare",)})
ARITY.update({"chlo.broadcast_select": 3, "chlo.ragged_dot": 3, "chlo.constant": 0})

# CHLO ops refused, with the reason (docs/ops.md shows it).
UNSUPPORTED = {
    "chlo._asin_acos_kernel": "a helper of complex asin / acos that JAX does not emit; "
                              "minirt computes real asin / acos directly",
}


def expand_chlo(b: GraphBuilder, op: Operation, inputs: list[Tensor]) -> list[Tensor]:
    """The graph tensors of CHLO op `op`'s results, its nodes appended through `b`.
    Raises ChloError (the importer adds the op's location)."""
    if op.name in UNSUPPORTED:
        raise ChloError(f"is not supported: {UNSUPPORTED[op.name]}")
    want = ARITY[op.name]
    if len(inputs) != want:
        raise ChloError(f"takes {want} operand{'s' * (want != 1)}, not {len(inputs)}")
    try:
        out = CHLO_EXPANDERS[op.name](ChloOp(b, op, inputs))
    except (ShapeError, ValueError, KeyError, IndexError, TypeError) as e:
        raise ChloError(f"cannot be computed: {e.args[0] if e.args else e}") from None
    outs = [out] if isinstance(out, Tensor) else list(out)
    if len(outs) != len(op.results):
        raise ChloError(f"computes {len(outs)} results, the op declares {len(op.results)}")
    for i, (t, r) in enumerate(zip(outs, op.results, strict=True)):
        want = r.type if isinstance(r.type, TensorType) else TensorType((), r.type)
        if t.type != want:
            raise ChloError(f"result {i} is {t.type} by CHLO's rules, not the declared {want}")
    return outs

