"""The generic kernel form (in the spirit of `linalg.generic`).

A Kernel is a loop nest over `domain`. The first `n_parallel` loop dimensions index
the result; the rest are reduced. Each iteration evaluates `body`, a scalar
expression tree whose leaves are loop indices, constants and loads from the kernel's
operands (each load's index is itself an expression, so broadcasts, transposes,
strided windows, padding and gathers are all just index expressions). Without
reductions the body's value is stored; with them, values are folded with `combine`
starting from `init`.

Buffers a kernel is called with, in order: one per operand, then the result.
Tensors are dense, row-major, with the element type of their TensorType.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.types import DType, TensorType, dtype

INDEX = dtype("i32")  # loop and index arithmetic: every tensor here has < 2**31 elements


@dataclass(frozen=True)
class Index:
    """The current value of loop dimension `dim` (an INDEX)."""

    dim: int


@dataclass(frozen=True)
class Const:
    value: float | int | bool
    dtype: DType


@dataclass(frozen=True)
class Load:
    """Element `index` of operand `operand`.

    With `pad` set, the load is bounds-checked: when any index is outside the
    operand's shape, or `valid` (an i1 expression) is false, the value is `pad`.
    Without `pad`, indices are trusted to be in bounds.
    """

    operand: int
    index: tuple[Expr, ...]
    pad: Expr | None = None
    valid: Expr | None = None


@dataclass(frozen=True)
class Apply:
    """`op(*args)` with result element type `dtype`.

    `op` is a graph elementwise op name (`add`, `exponential`, `select`, `clamp`,
    `convert`, ...) or `compare.<DIR>` (e.g. `compare.LT`), with the same semantics as
    the reference executor. Index arithmetic uses the same ops on INDEX values.
    """

    op: str
    args: tuple[Expr, ...]
    dtype: DType


Expr = Index | Const | Load | Apply


@dataclass(frozen=True)
class Kernel:
    name: str
    domain: tuple[int, ...]
    n_parallel: int
    operands: tuple[TensorType, ...]
    result: TensorType
    body: Expr
    combine: str | None = None  # add / multiply / maximum / minimum / and / or
    init: Expr | None = None

    @property
    def is_reduction(self) -> bool:
        return self.combine is not None


def expr_dtype(e: Expr, operands: tuple[TensorType, ...]) -> DType:
    """The element type an expression evaluates to."""
    if isinstance(e, Index):
        return INDEX
    if isinstance(e, Load):
        return operands[e.operand].dtype
    return e.dtype
