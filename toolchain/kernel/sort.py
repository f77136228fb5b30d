"""`sort` with its comparator region, as a kernel kind that sorts its results in place.

The schedule first copies each operand into its result (ordinary dispatches, so the
operand's producer may fuse into the copy); a `Sort` then sorts every slice of the
results along `dimension` by binary insertion: each element in turn is placed after
every earlier element that is not greater (by the comparator), so the sort is stable,
whatever `is_stable` says (which only allows more). For a comparator that is a strict
weak order this is the order of any stable sort, the reference's included.

`comparator` is an expression of Arg leaves as the region's arguments are ordered:
Arg(2k) is the left element of result k, Arg(2k + 1) the right one; it may load the
scalar operands (the region's captures). It is true when left goes before right.

Buffers, in order: one per operand (captured scalars), then one per result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Node
from toolchain.kernel.form import Expr, Load
from toolchain.kernel.lower import LoweringError
from toolchain.kernel.regions import region_expr, scalar_load, substitute
from toolchain.types import I1, TensorType


@dataclass(frozen=True)
class Sort:
    name: str
    operands: tuple[TensorType, ...]
    results: tuple[TensorType, ...]
    dimension: int
    comparator: Expr

    in_place = True  # it reads its results: they hold the operands' copies

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands + self.results

    def comparator_over(self, lhs: Callable[[int], Expr], rhs: Callable[[int], Expr]
                        ) -> Expr:
        """The comparator with result k's left element `lhs(k)` and right `rhs(k)`."""
        return substitute(self.comparator, arg=lambda a: (lhs if a.index % 2 == 0 else rhs)(
            a.index // 2))


def lower_sort(node: Node) -> Sort:
    """The Sort of a graph `sort` node (its operands: N tensors, then captures)."""
    comparator = node.regions[0]
    n = len(comparator.inputs) - len(node.inputs)
    captures: list[Expr] = []
    for j, t in enumerate(node.inputs[n:]):
        if t.type.shape != ():
            raise LoweringError(f"sort's comparator reads a {t.type} from outside; only "
                                "scalars can be captured")
        captures.append(scalar_load(j))
    (less,) = region_expr(comparator, captures, "sort's comparator")
    rank = node.outputs[0].type.rank
    return Sort(node.op, tuple(t.type for t in node.inputs[n:]),
                tuple(t.type for t in node.outputs), node.attrs["dimension"] % max(rank, 1),
                less)


def run_sort(s: Sort, args: list[np.ndarray]) -> list[np.ndarray]:
    """The sorted results on the host, by the generated code's algorithm (binary
    insertion, comparator evaluated by the kernel interpreter)."""
    from toolchain.kernel.form import Kernel
    from toolchain.kernel.interpret import run_kernel

    m, n = len(s.operands), len(s.results)
    caps, results = list(args[:m]), [np.array(a) for a in args[m:]]
    if results[0].size == 0:
        return results
    scalars = tuple(TensorType((), t.dtype) for t in s.results)
    less = Kernel("less", (), 0, s.operands + scalars + scalars, TensorType((), I1),
                  s.comparator_over(lambda k: Load(m + k, ()), lambda k: Load(m + n + k, ())))
    rows = [np.moveaxis(r, s.dimension, -1).reshape(-1, r.shape[s.dimension])
            for r in results]
    for row in range(rows[0].shape[0]):
        for i in range(1, rows[0].shape[1]):
            key = [r[row, i].copy() for r in rows]
            lo, hi = 0, i
            while lo < hi:
                mid = (lo + hi) // 2
                if bool(run_kernel(less, caps + key + [r[row, mid] for r in rows])):
                    hi = mid
                else:
                    lo = mid + 1
            for r, kv in zip(rows, key):
                r[row, lo + 1:i + 1] = r[row, lo:i].copy()
                r[row, lo] = kv
    return [np.moveaxis(r.reshape(np.moveaxis(res, s.dimension, -1).shape), -1, s.dimension)
            for r, res in zip(rows, results)]

