"""A reduction with several accumulators and a general combine: `reduce` and
`reduce_window` with a body (argmax / argmin as JAX exports them: the value and its
index folded together by a compare / select region).

Like a Kernel reduction, a `Reduction` loops over `domain` with the first `n_parallel`
dimensions indexing the results. Per result position, accumulator i starts at
`inits[i]` (an expression of the parallel indices) and, for every position of the
reduced dimensions in row-major order, becomes `combine[i]`, an expression of the
leaves Arg(j) (j < N: accumulator j before this step; N <= j < 2N: `elements[j - N]`,
the element of this step). All N accumulators step together from their old values.
Result i, of the accumulator's type, is stored row-major over the parallel dimensions.

Buffers, in order: one per operand, then one per result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from toolchain.graph.ir import Node
from toolchain.kernel.form import (
    INDEX,
    Apply,
    Const,
    Expr,
    Index,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.kernel.lower import LoweringError, c, iadd, idiv, imul, irem
from toolchain.kernel.regions import Arg, region_expr, scalar_load
from toolchain.types import TensorType, dtype


@dataclass(frozen=True)
class Reduction:
    name: str
    domain: tuple[int, ...]
    n_parallel: int
    operands: tuple[TensorType, ...]
    results: tuple[TensorType, ...]
    inits: tuple[Expr, ...]
    elements: tuple[Expr, ...]
    combine: tuple[Expr, ...]

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands + self.results

    def exprs(self) -> tuple[Expr, ...]:
        """Every expression of the kernel."""
        return self.inits + self.elements + self.combine

    def with_exprs(self, fn: Callable[[Expr], Expr],
                   operands: tuple[TensorType, ...]) -> Reduction:
        """The reduction with `fn` applied to every expression, over `operands`."""
        return replace(self, operands=operands, inits=tuple(map(fn, self.inits)),
                       elements=tuple(map(fn, self.elements)),
                       combine=tuple(map(fn, self.combine)))

    def used_operands(self) -> list[int]:
        """The operands some expression loads, in order."""
        return sorted({e.operand for root in self.exprs() for e in postorder(root)
                       if isinstance(e, Load)})

    def renumbered(self, used: list[int]) -> Reduction:
        """The reduction over operands `used` only (their loads renumbered)."""
        new = {old: i for i, old in enumerate(used)}

        def fn(e: Expr) -> Expr:
            return rewrite(e, lambda x, kids: with_children(x, kids, new[x.operand])
                           if isinstance(x, Load) else with_children(x, kids))

        return self.with_exprs(fn, tuple(self.operands[i] for i in used))


def _captures(node: Node, first: int, what: str) -> list[Expr]:
    """Scalar loads of the captured operands from `first` on."""
    out: list[Expr] = []
    for i, t in enumerate(node.inputs[first:], first):
        if t.type.shape != ():
            raise LoweringError(f"{what} reads a {t.type} from outside; only scalars can "
                                "be captured by a reducer")
        out.append(scalar_load(i))
    return out


def lower_reduce_region(node: Node) -> Reduction:
    """reduce with a body: the accumulators fold the reduced dims in the order of
    `dims`, as the reference does."""
    n = len(node.outputs)
    x = node.inputs[0].type
    dims = tuple(node.attrs["dims"])
    kept = [d for d in range(x.rank) if d not in dims]
    idx: list[Expr] = [c(0)] * x.rank
    for j, d in enumerate(kept):
        idx[d] = Index(j)
    for k, d in enumerate(dims):
        idx[d] = Index(len(kept) + k)
    combine = region_expr(node.regions[0], _captures(node, 2 * n, "reduce's body"),
                          "reduce's body")
    domain = tuple(x.shape[d] for d in kept) + tuple(x.shape[d] for d in dims)
    return Reduction(node.op, domain, len(kept), tuple(t.type for t in node.inputs),
                     tuple(t.type for t in node.outputs),
                     tuple(scalar_load(n + i) for i in range(n)),
                     tuple(Load(i, tuple(idx)) for i in range(n)), tuple(combine))


def lower_reduce_window_region(node: Node) -> Reduction:
    """reduce_window with a body: each window in row-major order; padding and base
    dilation holes read the init values, as in the spec."""
    at = node.attrs
    n = len(node.outputs)
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
    elements = tuple(Load(i, tuple(idx), pad=scalar_load(n + i) if checked else None,
                          valid=valid if checked else None) for i in range(n))
    combine = region_expr(node.regions[0], _captures(node, 2 * n, "reduce_window's body"),
                          "reduce_window's body")
    domain = tuple(node.outputs[0].type.shape) + tuple(at["window"])
    return Reduction(node.op, domain, rank, tuple(t.type for t in node.inputs),
                     tuple(t.type for t in node.outputs),
                     tuple(scalar_load(n + i) for i in range(n)), elements, tuple(combine))


def run_reduction(r: Reduction, operands: list[np.ndarray]) -> list[np.ndarray]:
    """The results on the host (numpy, element by element through the kernel
    interpreter's expression evaluation): what the generated code computes."""
    from toolchain.kernel.form import Kernel
    from toolchain.kernel.interpret import run_kernel
    from toolchain.kernel.regions import substitute

    n = len(r.results)
    ops = [np.asarray(o) for o in operands]
    scalar = [TensorType((), t.dtype) for t in r.results]
    n_ops, n_dims = len(r.operands), len(r.domain)
    slot_types = tuple(r.operands) + (TensorType((), INDEX),) * n_dims + tuple(scalar)

    def body(e: Expr) -> Expr:
        return substitute(e, arg=lambda a: scalar_load(n_ops + n_dims + a.index)
                          if a.index < n else body(r.elements[a.index - n]),
                          index=lambda i: scalar_load(n_ops + i.dim))

    outs = [np.zeros(t.shape, t.dtype.np_dtype) for t in r.results]
    for p in np.ndindex(*r.domain[:r.n_parallel]):
        pos = [np.asarray(v, np.int32) for v in p] + [np.int32(0)] * (n_dims - r.n_parallel)
        accs = [np.zeros((), t.dtype.np_dtype) for t in scalar]
        for i in range(n):
            k = Kernel("init", (), 0, slot_types, scalar[i], body(r.inits[i]))
            accs[i] = run_kernel(k, ops + pos + accs)
        for q in np.ndindex(*r.domain[r.n_parallel:]):
            pos[r.n_parallel:] = [np.asarray(v, np.int32) for v in q]
            accs = [run_kernel(Kernel("step", (), 0, slot_types, scalar[i], body(r.combine[i])),
                               ops + pos + accs) for i in range(n)]
        for o, a in zip(outs, accs):
            o[p] = a
    return outs


__all__ = ["Arg", "Reduction", "lower_reduce_region", "lower_reduce_window_region",
           "run_reduction", "Const"]
