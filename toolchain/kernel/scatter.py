"""`scatter` with its update region and general dimension numbers, as a kernel kind that
updates its results in place.

The schedule first copies each operand into its result (ordinary dispatches); a
`Scatter` then walks the update index space in row-major order and, for each update
element, computes the result index the spec gives (start index from the indices
tensor + batching index + window index: `target`, one expression per result dimension
over the update loop indices, reading the indices operand). An element whose result
index falls outside the results is skipped (the spec's interpreter does the same); the
others become `update[k]`, expressions of Arg(k) (result k's current element) and
Arg(N + k) (`values[k]`, update k's element), all N from the old elements.

Buffers, in order: the operands (indices, the N updates, captured scalars), then the
N results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Node
from toolchain.kernel.form import INDEX, Apply, Const, Expr, Index, Load
from toolchain.kernel.lower import LoweringError, cast, iadd
from toolchain.kernel.regions import region_expr, scalar_load
from toolchain.types import TensorType


@dataclass(frozen=True)
class Scatter:
    name: str
    operands: tuple[TensorType, ...]
    results: tuple[TensorType, ...]
    domain: tuple[int, ...]  # the update index space
    target: tuple[Expr, ...]  # per result dim, an INDEX expression
    values: tuple[Expr, ...]  # per result, the update element
    update: tuple[Expr, ...]  # per result, its new element

    in_place = True  # it reads its results: they hold the operands' copies

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands + self.results


def _start_component(indices: TensorType, pos: tuple[Expr, ...], bound: int) -> Expr:
    """A start index from the indices tensor as INDEX; values wider than INDEX are
    first clamped to [-1, bound] so that no out-of-range value wraps into range."""
    dt = indices.dtype
    raw: Expr = Load(0, pos)
    if dt.bits > INDEX.bits:
        raw = Apply("clamp", (Const(-1 if dt.kind == "i" else 0, dt), raw, Const(bound, dt)),
                    dt)
    return cast(raw, dt, INDEX)


def lower_scatter(node: Node) -> Scatter:
    """The Scatter of a graph `scatter` node (operands: N inputs, indices, N updates,
    captures)."""
    at = node.attrs
    n = len(node.outputs)
    operand = node.inputs[0].type
    indices = node.inputs[n].type
    update = node.inputs[n + 1].type
    rank, urank = operand.rank, update.rank
    window = tuple(at["update_window_dims"])
    inserted, obatch = tuple(at["inserted_window_dims"]), tuple(at["input_batching_dims"])
    to_operand, ivd = at["scatter_dims_to_operand_dims"], at["index_vector_dim"]
    scatter_dims = [d for d in range(urank) if d not in window]
    target: list[Expr] = [Const(0, INDEX)] * rank
    for k, od in enumerate(to_operand):
        pos: list[Expr] = []
        it = iter(scatter_dims)
        for d in range(indices.rank):
            pos.append(Const(k, INDEX) if d == ivd else Index(next(it)))
        target[od] = iadd(target[od], _start_component(indices, tuple(pos), operand.shape[od]))
    for ob, ib in zip(obatch, at["scatter_indices_batching_dims"]):
        target[ob] = iadd(target[ob], Index(scatter_dims[ib if ib < ivd else ib - 1]))
    window_operand_dims = [d for d in range(rank) if d not in inserted + obatch]
    for k, d in enumerate(window_operand_dims):
        target[d] = iadd(target[d], Index(window[k]))
    # Operands of the kernel: indices, the updates, then the captures.
    captures: list[Expr] = []
    for j, t in enumerate(node.inputs[2 * n + 1:]):
        if t.type.shape != ():
            raise LoweringError(f"scatter's update region reads a {t.type} from outside; "
                                "only scalars can be captured")
        captures.append(scalar_load(1 + n + j))
    update_exprs = region_expr(node.regions[0], captures, "scatter's update region")
    identity = tuple(Index(d) for d in range(urank))
    return Scatter(node.op, tuple(t.type for t in node.inputs[n:]),
                   tuple(t.type for t in node.outputs), tuple(update.shape), tuple(target),
                   tuple(Load(1 + k, identity) for k in range(n)), tuple(update_exprs))


def run_scatter(s: Scatter, args: list[np.ndarray]) -> list[np.ndarray]:
    """The updated results on the host, by the generated code's walk (expressions
    evaluated by the kernel interpreter)."""
    from toolchain.kernel.form import Kernel
    from toolchain.kernel.interpret import run_kernel
    from toolchain.kernel.regions import substitute

    m, n = len(s.operands), len(s.results)
    ops, results = list(args[:m]), [np.array(a) for a in args[m:]]
    dims = len(s.domain)
    scalars = tuple(TensorType((), t.dtype) for t in s.results)
    slot_types = s.operands + (TensorType((), INDEX),) * dims + scalars

    def over_slots(e: Expr) -> Expr:
        return substitute(e, arg=lambda a: scalar_load(m + dims + a.index) if a.index < n
                          else over_slots(s.values[a.index - n]),
                          index=lambda i: scalar_load(m + i.dim))

    shape = s.results[0].shape
    for u in np.ndindex(*s.domain):
        pos = [np.int32(v) for v in u]
        where = tuple(int(run_kernel(Kernel("t", (), 0, slot_types[:m + dims],
                                            TensorType((), INDEX), over_slots(e)), ops + pos))
                      for e in s.target)
        if not all(0 <= w < d for w, d in zip(where, shape)):
            continue
        current = [r[where] for r in results]
        new = [run_kernel(Kernel("u", (), 0, slot_types, scalars[k], over_slots(e)),
                          ops + pos + current) for k, e in enumerate(s.update)]
        for r, v in zip(results, new):
            r[where] = v
    return results
