"""A region over scalars (a reducer body, a sort comparator, a scatter update) as
kernel-form expressions.

The region's block arguments become `Arg(i)` leaves, its captured values whatever
expressions the caller gives (a scalar Load of the node's operand, usually), its
elementwise nodes `Apply`s and its constants `Const`s. The kernel kinds that run
regions (kernel/reduction.py, sort.py, scatter.py) keep `Arg` leaves in their
expressions and substitute them when they build the code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.kernel.form import Apply, Const, Expr, Index, Load, rewrite
from toolchain.kernel.lower import LoweringError
from toolchain.types import DType


@dataclass(frozen=True)
class Arg:
    """Block argument `index` of the region being run, of element type `dtype`."""

    index: int
    dtype: DType


# Shape ops that are the identity on scalars (JAX wraps some region values in them).
_SCALAR_IDENTITY = ("broadcast_in_dim", "reshape", "transpose")


def region_expr(region: Graph, captures: list[Expr], what: str) -> list[Expr]:
    """The region's results as expressions of `Arg(i)` (block argument i) and of
    `captures` (one expression per captured value, after the block arguments).
    Raises LoweringError when the region does more than scalar elementwise work."""
    from toolchain.graph.ops import OPS

    n_args = len(region.inputs) - len(captures)
    env: dict[int, Expr] = {}
    for i, t in enumerate(region.inputs[:n_args]):
        if t.type.shape != ():
            raise LoweringError(f"{what}: argument {i} is {t.type}, not a scalar")
        env[id(t)] = Arg(i, t.type.dtype)
    for t, e in zip(region.inputs[n_args:], captures, strict=True):
        env[id(t)] = e
    for node in region.nodes:
        if any(t.type.shape != () for t in node.outputs):
            raise LoweringError(f"{what}: '{node.op}' computes {node.outputs[0].type}; "
                                "only scalar work can run here")
        args = [env[id(t)] for t in node.inputs]
        out = node.outputs[0].type.dtype
        if node.op == "constant":
            env[id(node.output)] = Const(np.asarray(node.attrs["value"]).item(), out)
        elif node.op in _SCALAR_IDENTITY:
            env[id(node.output)] = args[0]
        elif OPS[node.op].group == "elementwise" and not node.regions:
            op = node.op
            if op == "compare":
                op = f"compare.{node.attrs['direction']}"
                if node.attrs.get("total_order"):
                    op += ".total"
            env[id(node.output)] = Apply(op, tuple(args), out)
        else:
            raise LoweringError(f"{what}: '{node.op}' cannot run in a scalar region")
    return [env[id(t)] for t in region.outputs]


def substitute(e: Expr, arg: Callable[[Arg], Expr] | None = None,
               index: Callable[[Index], Expr] | None = None) -> Expr:
    """`e` with each Arg leaf replaced by `arg(leaf)` and each Index by `index(leaf)`
    (shared subexpressions stay shared)."""
    from toolchain.kernel.form import with_children

    def fn(x: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(x, Arg) and arg is not None:
            return arg(x)
        if isinstance(x, Index) and index is not None:
            return index(x)
        return with_children(x, kids)

    return rewrite(e, fn)


def scalar_load(operand: int) -> Load:
    """Element () of a rank-0 operand."""
    return Load(operand, ())
