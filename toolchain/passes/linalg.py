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
  select (_put). Batch dims are flattened into one, so a loop step works on every
  matrix of the batch at once. Work is O(n^3) per matrix, O(n^2) per step.

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
from toolchain.types import I1, dtype

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
    first (cortex-m4, a 16x16 cholesky and a 16x16 solve: 147 K instructions, against
    170 K with dynamic_update_slice)."""
    shape = tuple(x.type.shape)
    at = b.op("compare", [_iota(b, shape, dim),
                          b.op("broadcast_in_dim", [k], dims=(), shape=shape)], direction="EQ")
    return b.op("select", [at, b.op("broadcast_in_dim", [v], dims=v_dims, shape=shape), x])


def _flat_batch(b: GraphBuilder, x: Tensor) -> Tensor:
    """x of shape (batch..., r, c) as (prod(batch), r, c)."""
    shape = tuple(x.type.shape)
    return b.op("reshape", [x], shape=(math.prod(shape[:-2]), *shape[-2:]))


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
    n, dt = shape[-1], a.type.dtype
    if not node.attrs["lower"]:
        a = _swap_last(b, a)  # U^T U = A: U^T is the lower factor of A^T
    a3 = _flat_batch(b, a)
    batch = a3.type.shape[0]
    zeros = b.splat(0, dt, (batch, n, n))
    ok0 = b.splat(True, I1, (batch,))

    def column(s: GraphBuilder, j: Tensor, carried: list[Tensor],
               captures: list[Tensor]) -> list[Tensor]:
        low, ok = carried
        (mat,) = captures
        z = _zero_index(s)
        a_col = s.op("reshape", [s.op("dynamic_slice", [mat, z, z, j],
                                      slice_sizes=(batch, n, 1))], shape=(batch, n))
        l_row = s.op("reshape", [s.op("dynamic_slice", [low, z, j, z],
                                      slice_sizes=(batch, 1, n))], shape=(batch, n))
        done = s.op("dot_general", [low, l_row], lhs_batch=(0,), rhs_batch=(0,),
                    lhs_contract=(2,), rhs_contract=(1,), dtype=dt.name)
        v = s.op("subtract", [a_col, done])
        pivot = s.op("dynamic_slice", [v, z, j], slice_sizes=(batch, 1))
        root = s.op("broadcast_in_dim", [s.op("sqrt", [pivot])], dims=(0, 1),
                    shape=(batch, n))
        rows = _iota(s, (batch, n), 1)
        jj = s.op("broadcast_in_dim", [j], dims=(), shape=(batch, n))
        below = s.op("select", [s.op("compare", [rows, jj], direction="GT"),
                                s.op("divide", [v, root]), s.splat(0, dt, (batch, n))])
        col = s.op("select", [s.op("compare", [rows, jj], direction="EQ"), root, below])
        low = _put(s, low, col, j, 2, (0, 1))
        positive = s.op("compare", [s.op("reshape", [pivot], shape=(batch,)),
                                    s.splat(0, dt, (batch,))], direction="GT")
        return [low, s.op("and", [ok, positive])]

    low, ok = _loop(b, n, [zeros, ok0], [a3], column)
    ok = b.op("broadcast_in_dim", [ok], dims=(0,), shape=(batch, n, n))
    low = b.op("select", [ok, low, b.splat(np.nan, dt, (batch, n, n))])
    low = b.op("reshape", [low], shape=shape)
    return [low if node.attrs["lower"] else _swap_last(b, low)]


# ------------------------------------------------------------------ triangular_solve


def _triangular_solve(b: GraphBuilder, node: Node) -> list[Tensor]:
    a, rhs = node.inputs
    at = node.attrs
    out_shape = tuple(rhs.type.shape)
    dt = a.type.dtype
    # Bring op(A) x = b / x op(A) = b to L y = c, L lower (the module docstring).
    lower = at["lower"]
    if at["transpose_a"] != "NO_TRANSPOSE":
        a, lower = _swap_last(b, a), not lower
    c = rhs
    if not at["left_side"]:
        a, lower, c = _swap_last(b, a), not lower, _swap_last(b, rhs)
    a, c = _flat_batch(b, a), _flat_batch(b, c)
    if not lower:
        a = b.op("reverse", [a], dims=(1, 2))
        c = b.op("reverse", [c], dims=(1,))
    batch, n, m = c.type.shape
    strict = _where(b, "GT", a, b.splat(0, dt, (batch, n, n)))
    unit = at["unit_diagonal"]

    def row(s: GraphBuilder, i: Tensor, carried: list[Tensor],
            captures: list[Tensor]) -> list[Tensor]:
        (y,) = carried
        z = _zero_index(s)
        l_row = s.op("dynamic_slice", [captures[0], z, i, z], slice_sizes=(batch, 1, n))
        done = s.op("dot_general", [l_row, y], lhs_batch=(0,), rhs_batch=(0,),
                    lhs_contract=(2,), rhs_contract=(1,), dtype=dt.name)
        c_row = s.op("dynamic_slice", [captures[1], z, i, z], slice_sizes=(batch, 1, m))
        r = s.op("subtract", [c_row, done])
        if not unit:
            diag = s.op("dynamic_slice", [captures[2], z, i, i], slice_sizes=(batch, 1, 1))
            r = s.op("divide", [r, s.op("broadcast_in_dim", [diag], dims=(0, 1, 2),
                                        shape=(batch, 1, m))])
        return [_put(s, y, s.op("reshape", [r], shape=(batch, m)), i, 1, (0, 2))]

    captures = [strict, c] + ([] if unit else [a])
    (y,) = _loop(b, n, [b.splat(0, dt, (batch, n, m))], captures, row)
    if not lower:
        y = b.op("reverse", [y], dims=(1,))
    if not at["left_side"]:
        y = _swap_last(b, y)
    return [b.op("reshape", [y], shape=out_shape)]


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
WIDENED = {"f16", "bf16"}


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

