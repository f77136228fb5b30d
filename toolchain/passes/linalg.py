"""batch_norm_training, batch_norm_grad, cholesky and triangular_solve as ops the
backends already compile, before scheduling.

The reference computes these four with numpy (reference/linalg.py); the firmware computes
this rewrite, so `minirt-run --check` holds one against the other. No new kernel kind is
needed:

- the batch norms are StableHLO's own decomposition (the spec's pseudocode, XLA's
  batchnorm_expander): reductions over every dim but the feature's and elementwise ops
  (batch_norm_training ends in the graph's batch_norm_inference);
- cholesky and triangular_solve are `while` loops over the columns (rows) of the batch
  of matrices, a constant number of graph nodes whatever the size: each step reads
  with dynamic_slice, multiplies with dot_general and writes its column (row) with a
  select (_put). A loop step works on every matrix of the batch at once (the batch
  dims are dot_general's batching dims). Work is O(n^3) per matrix, O(n^2) per step.

cholesky (left-looking, column j of L per step, L starting at 0):
    v = A[:, j] - L @ L[j, :]            (L's columns >= j are still 0)
    L[:, j] = (row < j: 0, row == j: sqrt(v[j]), row > j: v / sqrt(v[j]))
It reads only the lower triangle of A (an upper cholesky factors A's transpose and
transposes back, so it reads only the upper one), leaves 0 in the other triangle, and a
matrix with a pivot that is not > 0 (not positive definite, or NaN) becomes NaN in every
element, as JAX's cholesky does.

triangular_solve is brought to one form, a forward substitution L y = c with L lower:
op(A) is A's triangle transposed for TRANSPOSE / ADJOINT (the same on real numbers), a
right-side solve x M = b is M^T x^T = b^T, and an upper matrix is made lower by
reversing its rows and columns (and c's rows, and the solution's). Then per row i:
    y[i, :] = (c[i, :] - L_strict[i, :] @ y) / L[i, i]   (no divide with unit_diagonal)
where L_strict is L without its diagonal (the diagonal is read only for the divide,
never with unit_diagonal) and y's rows >= i are still 0.

f16 and bf16 operands are widened to f32 for the whole computation and the results
rounded once (WIDENED), as XLA computes half-precision linear algebra.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.types import I1, SMALL_FLOATS, dtype

__all__ = ["LINALG_OPS", "lower_linalg"]

I32, F32 = dtype("i32"), dtype("f32")


# ------------------------------------------------------------------ helpers


def _zero_index(b: GraphBuilder) -> Tensor:
    return b.const(0, I32)


def _iota(b: GraphBuilder, shape: tuple[int, ...], dim: int) -> Tensor:
    return b.op("iota", [], dimension=dim, shape=shape, dtype="i32")


def _where(b: GraphBuilder, rows_vs_cols: str, x: Tensor, other: Tensor) -> Tensor:
    """x where (row index `rows_vs_cols` column index) over x's last two dims, else
    `other` (same type)."""
    shape = tuple(x.type.shape)
    rank = len(shape)
    mask = b.op("compare", [_iota(b, shape, rank - 2), _iota(b, shape, rank - 1)],
                direction=rows_vs_cols)
    return b.op("select", [mask, x, other])


def _swap_last(b: GraphBuilder, x: Tensor) -> Tensor:
    rank = x.type.rank
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    return b.op("transpose", [x], permutation=perm)


def _loop(b: GraphBuilder, trips: int, carried: list[Tensor], captures: list[Tensor],
          step: Callable[[GraphBuilder, Tensor, list[Tensor], list[Tensor]], list[Tensor]]
          ) -> list[Tensor]:
    """`for i in range(trips): carried = step(i, carried, captures)` as a `while` node
    with an i32 counter; returns the final carried values."""
    state = [b.const(0, I32), *carried]
    types = [t.type for t in state]
    region_types = types + [t.type for t in captures]

    cond = Graph("linalg_cond")
    cb = GraphBuilder(cond, b.loc)
    args = [cond.add_input(t) for t in region_types]
    cond.outputs = [cb.op("compare", [args[0], cb.const(trips, I32)], direction="LT")]

    body = Graph("linalg_body")
    bb = GraphBuilder(body, b.loc)
    args = [body.add_input(t) for t in region_types]
    i = args[0]
    new = step(bb, i, args[1:len(types)], args[len(types):])
    body.outputs = [bb.op("add", [i, bb.const(1, I32)]), *new]

    node = b.graph.add("while", state + captures, types, {}, b.loc, [cond, body])
    return node.outputs[1:]


def _put(b: GraphBuilder, x: Tensor, v: Tensor, k: Tensor, dim: int,
         v_dims: tuple[int, ...]) -> Tensor:
    """x with its slice k along `dim` replaced by v (v's dims are x's `v_dims`).

    A select over all of x rather than a dynamic_update_slice: it is elementwise at the
    element it writes, so the loop updates its state in place (docs/architecture.md,
    "Control flow and regions"), where a dynamic_update_slice copies the whole state
    first (cortex-m4, a step of a 16x16 cholesky: 2.7 K instructions for the select,
    3.2 K for the dynamic_update_slice)."""
    shape = tuple(x.type.shape)
    at = b.op("compare", [_iota(b, shape, dim),
                          b.op("broadcast_in_dim", [k], dims=(), shape=shape)], direction="EQ")
    return b.op("select", [at, b.op("broadcast_in_dim", [v], dims=v_dims, shape=shape), x])


# ------------------------------------------------------------------ batch norm


def _per_feature_count(shape: tuple[int, ...], fi: int) -> int:
    """How many elements each feature has (the product of the other dims)."""
    return math.prod(d for i, d in enumerate(shape) if i != fi)


def _feature_reduce(b: GraphBuilder, x: Tensor, fi: int) -> Tensor:
    dims = tuple(i for i in range(x.type.rank) if i != fi)
    return b.op("reduce", [x, b.const(0, x.type.dtype)], kind="add", dims=dims)


def _per_feature(b: GraphBuilder, v: Tensor, like: Tensor, fi: int) -> Tensor:
    return b.op("broadcast_in_dim", [v], dims=(fi,), shape=tuple(like.type.shape))


def _batch_norm_training(b: GraphBuilder, node: Node) -> list[Tensor]:
    x, scale, offset = node.inputs
    fi, eps = node.attrs["feature_index"], node.attrs["epsilon"]
    dt = x.type.dtype
    count = b.splat(_per_feature_count(x.type.shape, fi), dt, (x.type.shape[fi],))
    mean = b.op("divide", [_feature_reduce(b, x, fi), count])
    centered = b.op("subtract", [x, _per_feature(b, mean, x, fi)])
    var = b.op("divide", [_feature_reduce(b, b.op("multiply", [centered, centered]), fi), count])
    y = b.op("batch_norm_inference", [x, scale, offset, mean, var], epsilon=eps,
             feature_index=fi)
    return [y, mean, var]


def _batch_norm_grad(b: GraphBuilder, node: Node) -> list[Tensor]:
    x, scale, mean, var, grad = node.inputs
    fi, eps = node.attrs["feature_index"], node.attrs["epsilon"]
    dt, shape = x.type.dtype, tuple(x.type.shape)
    var_eps = b.op("add", [_per_feature(b, var, x, fi), b.splat(eps, dt, shape)])
    stddev = b.op("sqrt", [var_eps])
    centered = b.op("subtract", [x, _per_feature(b, mean, x, fi)])
    normalized = b.op("divide", [centered, stddev])
    count = b.splat(_per_feature_count(shape, fi), dt, shape)
    # The spec's i1 .. i6 (XLA's batchnorm_expander).
    grad_offset = _feature_reduce(b, grad, fi)
    i1 = b.op("multiply", [grad, count])
    i2 = _per_feature(b, grad_offset, x, fi)
    i3 = _per_feature(b, _feature_reduce(b, b.op("multiply", [grad, centered]), fi), x, fi)
    i5 = b.op("divide", [b.op("multiply", [i3, centered]), var_eps])
    i6 = b.op("subtract", [b.op("subtract", [i1, i2]), i5])
    factor = b.op("divide", [b.op("divide", [_per_feature(b, scale, x, fi), stddev]), count])
    grad_x = b.op("multiply", [factor, i6])
    grad_scale = _feature_reduce(b, b.op("multiply", [grad, normalized]), fi)
    return [grad_x, grad_scale, grad_offset]


# ------------------------------------------------------------------ cholesky


def _cholesky(b: GraphBuilder, node: Node) -> list[Tensor]:
    (a,) = node.inputs
    shape = tuple(a.type.shape)
    lead, n, dt = shape[:-2], shape[-1], a.type.dtype
    nb = len(lead)
    batch = tuple(range(nb))
    if not node.attrs["lower"]:
        a = _swap_last(b, a)  # U^T U = A: U^T is the lower factor of A^T

    def column(s: GraphBuilder, j: Tensor, carried: list[Tensor],
               captures: list[Tensor]) -> list[Tensor]:
        low, ok = carried
        (mat,) = captures
        zs = [_zero_index(s)] * nb
        z = _zero_index(s)
        vec = (*lead, n)
        a_col = s.op("reshape", [s.op("dynamic_slice", [mat, *zs, z, j],
                                      slice_sizes=(*lead, n, 1))], shape=vec)
        l_row = s.op("reshape", [s.op("dynamic_slice", [low, *zs, j, z],
                                      slice_sizes=(*lead, 1, n))], shape=vec)
        done = s.op("dot_general", [low, l_row], lhs_batch=batch, rhs_batch=batch,
                    lhs_contract=(nb + 1,), rhs_contract=(nb,), dtype=dt.name)
        v = s.op("subtract", [a_col, done])
        pivot = s.op("dynamic_slice", [v, *zs, j], slice_sizes=(*lead, 1))
        root = s.op("broadcast_in_dim", [s.op("sqrt", [pivot])], dims=(*batch, nb),
                    shape=vec)
        rows = _iota(s, vec, nb)
        jj = s.op("broadcast_in_dim", [j], dims=(), shape=vec)
        below = s.op("select", [s.op("compare", [rows, jj], direction="GT"),
                                s.op("divide", [v, root]), s.splat(0, dt, vec)])
        col = s.op("select", [s.op("compare", [rows, jj], direction="EQ"), root, below])
        low = _put(s, low, col, j, nb + 1, (*batch, nb))
        positive = s.op("compare", [s.op("reshape", [pivot], shape=lead),
                                    s.splat(0, dt, lead)], direction="GT")
        return [low, s.op("and", [ok, positive])]

    low, ok = _loop(b, n, [b.splat(0, dt, shape), b.splat(True, I1, lead)], [a], column)
    ok = b.op("broadcast_in_dim", [ok], dims=batch, shape=shape)
    low = b.op("select", [ok, low, b.splat(np.nan, dt, shape)])
    return [low if node.attrs["lower"] else _swap_last(b, low)]


# ------------------------------------------------------------------ triangular_solve


def _triangular_solve(b: GraphBuilder, node: Node) -> list[Tensor]:
    a, rhs = node.inputs
    at = node.attrs
    dt = a.type.dtype
    # Bring op(A) x = b / x op(A) = b to L y = c, L lower (the module docstring).
    lower = at["lower"]
    if at["transpose_a"] != "NO_TRANSPOSE":
        a, lower = _swap_last(b, a), not lower
    c = rhs
    if not at["left_side"]:
        a, lower, c = _swap_last(b, a), not lower, _swap_last(b, rhs)
    *lead, n, m = c.type.shape
    lead = tuple(lead)
    nb = len(lead)
    batch = tuple(range(nb))
    if not lower:
        a = b.op("reverse", [a], dims=(nb, nb + 1))
        c = b.op("reverse", [c], dims=(nb,))
    strict = _where(b, "GT", a, b.splat(0, dt, tuple(a.type.shape)))
    unit = at["unit_diagonal"]

    def row(s: GraphBuilder, i: Tensor, carried: list[Tensor],
            captures: list[Tensor]) -> list[Tensor]:
        (y,) = carried
        zs = [_zero_index(s)] * nb
        z = _zero_index(s)
        l_row = s.op("dynamic_slice", [captures[0], *zs, i, z], slice_sizes=(*lead, 1, n))
        done = s.op("dot_general", [l_row, y], lhs_batch=batch, rhs_batch=batch,
                    lhs_contract=(nb + 1,), rhs_contract=(nb,), dtype=dt.name)
        c_row = s.op("dynamic_slice", [captures[1], *zs, i, z], slice_sizes=(*lead, 1, m))
        r = s.op("subtract", [c_row, done])
        if not unit:
            diag = s.op("dynamic_slice", [captures[2], *zs, i, i],
                        slice_sizes=(*lead, 1, 1))
            r = s.op("divide", [r, s.op("broadcast_in_dim", [diag], dims=(*batch, nb, nb + 1),
                                        shape=(*lead, 1, m))])
        r = s.op("reshape", [r], shape=(*lead, m))
        return [_put(s, y, r, i, nb, (*batch, nb + 1))]

    captures = [strict, c] + ([] if unit else [a])
    (y,) = _loop(b, n, [b.splat(0, dt, (*lead, n, m))], captures, row)
    if not lower:
        y = b.op("reverse", [y], dims=(nb,))
    return [y if at["left_side"] else _swap_last(b, y)]


# ------------------------------------------------------------------ the pass

LINALG_OPS: dict[str, Callable[[GraphBuilder, Node], list[Tensor]]] = {
    "batch_norm_training": _batch_norm_training,
    "batch_norm_grad": _batch_norm_grad,
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
}


# Half-precision matrices are factored and solved in f32 and rounded once at the end:
# every step rounded to f16 would leave results several ulp from the exact answer
# (the reference's, rounded once), where f32 leaves them within rounding of it.
WIDENED = {"f16", "bf16", *SMALL_FLOATS}  # and the 8- to 4-bit floats


def _lower(b: GraphBuilder, node: Node) -> list[Tensor]:
    rewrite = LINALG_OPS[node.op]
    if node.op in ("cholesky", "triangular_solve") and 0 in node.outputs[0].type.shape:
        # No element to compute (n or the batch or b's other dim is 0): nothing to loop
        # over, and a dynamic_slice of a 0-sized dim could not even be written.
        t = node.outputs[0].type
        return [b.const(np.zeros(t.shape), t.dtype)]
    dt = node.inputs[0].type.dtype
    if dt.name not in WIDENED:
        return rewrite(b, node)
    wide = Node(node.op, [b.op("convert", [t], dtype="f32") for t in node.inputs],
                [Tensor(t.type.with_dtype(F32)) for t in node.outputs], node.attrs, node.loc)
    return [b.op("convert", [t], dtype=dt.name) for t in rewrite(b, wide)]


def lower_linalg(graph: Graph) -> Graph:
    """graph with every node of LINALG_OPS replaced by the ops computing it, in place
    (regions included); returns graph."""
    for g in [graph, *(r for n in graph.walk() for r in n.regions)]:
        if not any(n.op in LINALG_OPS for n in g.nodes):
            continue
        nodes, g.nodes = g.nodes, []
        replaced: dict[int, Tensor] = {}
        for node in nodes:
            node.inputs = [replaced.get(id(t), t) for t in node.inputs]
            if node.op not in LINALG_OPS:
                g.nodes.append(node)
                continue
            new = _lower(GraphBuilder(g, node.loc), node)
            for old, t in zip(node.outputs, new):
                assert t.type == old.type, (node.op, t.type, old.type)
                replaced[id(old)] = t
        g.outputs = [replaced.get(id(t), t) for t in g.outputs]
    return graph

