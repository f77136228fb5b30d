"""What a TOSA converter works with: the MLIR op, its operands as graph tensors, a
builder that appends typed graph nodes, and readers for TOSA's attributes and for the
operands TOSA 1.0 made of former attributes (zero points, shifts, multipliers, shapes),
which must be constants for minirt.

Converters never state a type: the builder infers each node's result from the graph op
table, and `expand` (toolchain/frontend/tosa/__init__.py) compares what a converter
computed with the result type the model declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.frontend.types import declared_result
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.mlir.ir import (
    ArrayAttr,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    StringAttr,
    TypeAttr,
)
from toolchain.types import DType, TensorType, dtype

__all__ = ["Scope", "TosaError", "TosaOp", "int_range", "I32", "I64"]

I32, I64 = dtype("i32"), dtype("i64")


class TosaError(Exception):
    """An op instance minirt cannot express, or one that breaks the TOSA specification;
    the importer adds the op's name and location."""


def int_range(dt: DType) -> tuple[int, int]:
    """The least and greatest value of an integer element type."""
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    if dt.kind == "b":
        return 0, 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


@dataclass
class Scope:
    """Where an op sits in the importer (toolchain/frontend/stablehlo.py): what
    `regions.import_regions` needs to build the region graphs of COND_IF and WHILE_LOOP
    (their ops may read values of this scope, which become captures)."""

    importer: Any
    env: dict[int, Tensor]
    stack: list[str]


@dataclass
class TosaOp:
    """One TOSA op being converted: `b` appends nodes at the op's location; `scope` is
    the importer's, for the ops with regions (None where no importer is at hand)."""

    b: GraphBuilder
    op: Operation
    inputs: list[Tensor]
    scope: Scope | None = None

    # ------------------------------------------------------------------ operands

    def input(self, i: int, what: str = "") -> Tensor:
        """Operand i, which must exist."""
        if i >= len(self.inputs):
            raise TosaError(f"takes at least {i + 1} operands ({what or f'operand {i}'} is "
                            f"missing), got {len(self.inputs)}")
        return self.inputs[i]

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs)

    def constant(self, i: int, what: str) -> np.ndarray:
        """The value of operand i, which must be a constant (`tosa.const`,
        `tosa.const_shape`, `arith.constant`): TOSA 1.0 passes zero points, shifts,
        multipliers and shapes as operands, and minirt builds them into the code."""
        t = self.outer(self.input(i, what))
        node = t.producer
        if node is None or node.op != "constant":
            raise TosaError(f"{what} (operand {i}) must be a constant ('tosa.const' or "
                            "'tosa.const_shape'); minirt does not compute it at run time")
        return np.asarray(node.attrs["value"])

    def outer(self, t: Tensor) -> Tensor:
        """The tensor a region input captures (through every enclosing region being
        imported), or `t` itself: a zero point defined outside a WHILE_LOOP is still a
        constant inside it."""
        scopes = list(self.scope.importer.region_scopes.values()) if self.scope else []
        while t.producer is None:
            found = next((o for s in scopes for o, i in zip(s.captures, s.inner) if i is t),
                         None)
            if found is None:
                break
            t = found
        return t

    def scalar(self, i: int, what: str) -> Any:
        """A one-element constant operand (a zero point, a shift) as a Python number."""
        v = self.constant(i, what)
        if v.size != 1:
            raise TosaError(f"{what} (operand {i}) must hold one value, it holds {v.size}")
        return v.reshape(-1)[0].item()

    def shape(self, i: int, what: str) -> tuple[int, ...]:
        """A `!tosa.shape<N>` operand (or a constant integer tensor) as integers."""
        v = self.constant(i, what)
        if v.dtype.kind not in "iu":
            raise TosaError(f"{what} (operand {i}) must be integers")
        return tuple(int(x) for x in v.reshape(-1))

    def zero_point(self, i: int, attr: str, what: str) -> int | float:
        """A zero point: operand i in TOSA 1.0, attribute `attr` before it, else 0."""
        if self.has_input(i):
            return self.scalar(i, what)
        a = self.op.attr(attr)
        return 0 if a is None else self.number(attr)

    # ------------------------------------------------------------------ results

    def result(self, i: int = 0) -> TensorType:
        """The declared type of result i (its shape is checked static before conversion;
        that it is a tensor at all, here: `tosa.const` may be given a `!tosa.shape`)."""
        return declared_result(self.op, i, TosaError)

    # ------------------------------------------------------------------ attributes

    def attr(self, key: str) -> Any:
        return self.op.attr(key)

    def ints(self, key: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
        """A list of integers: `array<i64: ...>`, `[1, 2]` or a dense tensor."""
        a = self.op.attr(key)
        if a is None:
            if default is None:
                raise TosaError(f"missing attribute '{key}'")
            return tuple(default)
        if isinstance(a, DenseArrayAttr):
            return tuple(int(v) for v in a.values)
        if isinstance(a, DenseAttr) and a.array.dtype.kind in "iu":
            return tuple(int(v) for v in a.array.reshape(-1))
        if isinstance(a, ArrayAttr) and all(isinstance(v, IntAttr) for v in a.items):
            return tuple(v.value for v in a.items)
        raise TosaError(f"attribute '{key}' must be a list of integers")

    def int(self, key: str, default: int | None = None) -> int:
        a = self.op.attr(key)
        if a is None and default is not None:
            return default
        if isinstance(a, IntAttr):
            return a.value
        if isinstance(a, DenseAttr) and a.array.size == 1 and a.array.dtype.kind in "iu":
            return int(a.array.reshape(-1)[0])
        raise TosaError(f"attribute '{key}' must be an integer"
                        if a is not None else f"missing attribute '{key}'")

    def number(self, key: str) -> int | float:
        """An integer or float attribute (clamp bounds, legacy zero points)."""
        a = self.op.attr(key)
        if isinstance(a, IntAttr | FloatAttr):
            return a.value
        if isinstance(a, BoolAttr):
            return int(a.value)
        if isinstance(a, DenseAttr) and a.array.size == 1:
            return a.array.reshape(-1)[0].item()
        raise TosaError(f"attribute '{key}' must be a number"
                        if a is not None else f"missing attribute '{key}'")

    def flag(self, key: str, default: bool = False) -> bool:
        a = self.op.attr(key)
        if a is None:
            return default
        if isinstance(a, BoolAttr):
            return a.value
        if isinstance(a, IntAttr):
            return bool(a.value)
        raise TosaError(f"attribute '{key}' must be true or false")

    def enum(self, key: str, choices: Sequence[str], default: str | None = None) -> str:
        """An enum attribute in any spelling MLIR used: `"IGNORE"` (LLVM 20/21), bare
        `IGNORE` (#tosa<nan_mode IGNORE>) or `#tosa.nan_mode<IGNORE>`."""
        a = self.op.attr(key)
        if a is None:
            if default is None:
                raise TosaError(f"missing attribute '{key}'")
            return default
        if isinstance(a, StringAttr):
            word = a.value
        elif isinstance(a, OpaqueAttr):
            word = a.body.split()[-1] if a.body.split() else ""
        else:
            word = ""
        if word not in choices:
            raise TosaError(f"attribute '{key}' must be one of {', '.join(choices)}")
        return word

    def type_attr(self, key: str) -> DType | None:
        """An element type attribute (`acc_type = f32`), or None when absent."""
        a = self.op.attr(key)
        if a is None:
            return None
        if isinstance(a, TypeAttr) and isinstance(a.type, DType):
            return a.type
        raise TosaError(f"attribute '{key}' must be an element type")

    def nan_mode(self) -> str:
        return self.enum("nan_mode", ("PROPAGATE", "IGNORE"), "PROPAGATE")

    # ------------------------------------------------------------------ node helpers

    def node(self, name: str, inputs: list[Tensor], **attrs: Any) -> Tensor:
        return self.b.op(name, inputs, **attrs)

    def splat(self, value: Any, dt: DType, shape: Sequence[int]) -> Tensor:
        return self.b.splat(value, dt, tuple(shape))

    def convert(self, t: Tensor, dt: DType) -> Tensor:
        """t as element type dt (no node when it already is)."""
        if t.type.dtype == dt:
            return t
        return self.b.op("convert", [t], dtype=dt.name)

    def broadcast(self, t: Tensor, shape: Sequence[int]) -> Tensor:
        """t broadcast to `shape` TOSA's way: same rank, dimensions of 1 stretched (a
        lower rank, as pre-1.0 TOSA allowed, is aligned to the trailing dimensions)."""
        shape = tuple(shape)
        src = tuple(t.type.shape)
        if src == shape:
            return t
        if len(src) == len(shape):
            if any(s not in (1, d) for s, d in zip(src, shape)):
                raise TosaError(f"cannot broadcast {_fmt(src)} to {_fmt(shape)}")
            return self.b.op("broadcast_in_dim", [t], dims=tuple(range(len(shape))),
                             shape=shape)
        try:
            return self.b.broadcast_to(t, shape)
        except ValueError:
            raise TosaError(f"cannot broadcast {_fmt(src)} to {_fmt(shape)}") from None


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"
