"""The generic MLIR operation tree and its attribute values.

This mirrors MLIR's own model: an Operation has operands, result values, an attribute
dictionary, a property dictionary and regions of blocks. Pretty (custom) op syntax is
normalized at parse time into exactly what the generic form would give, so every
later stage sees one shape of data whatever spelling the file used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolchain.diagnostics import Location
from toolchain.types import DType, FunctionType, OpaqueType, TensorType

Type = TensorType | DType | FunctionType | OpaqueType


# ---------------------------------------------------------------------------- attributes


@dataclass(frozen=True)
class IntAttr:
    value: int
    type: DType | None = None  # None prints bare (an i64 in MLIR)


@dataclass(frozen=True)
class FloatAttr:
    value: float
    type: DType | None = None


@dataclass(frozen=True)
class BoolAttr:
    value: bool


@dataclass(frozen=True)
class StringAttr:
    value: str


@dataclass(frozen=True)
class UnitAttr:
    pass


@dataclass(frozen=True)
class SymbolRefAttr:
    name: str


@dataclass(frozen=True)
class TypeAttr:
    type: Type


@dataclass(frozen=True)
class ArrayAttr:
    items: tuple


@dataclass(frozen=True)
class DenseArrayAttr:
    """`array<i64: 1, 2>`."""

    type: DType
    values: tuple


@dataclass(frozen=True)
class DictAttr:
    items: tuple[tuple[str, Any], ...]

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        return default


@dataclass(eq=False)
class DenseAttr:
    """`dense<...> : tensor<...>` (and resolved `dense_resource`), values in numpy."""

    type: TensorType
    array: np.ndarray
    resource: str | None = None  # the blob name when it came from dense_resource

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DenseAttr) and self.type == other.type
                and self.array.dtype == other.array.dtype
                and np.array_equal(self.array, other.array, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class StructAttr:
    """A dialect attribute with `key = value` parameters, e.g. `#stablehlo.dot<...>`."""

    name: str
    params: tuple[tuple[str, Any], ...]

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.params:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class OpaqueAttr:
    """A dialect attribute kept as text: `#stablehlo<comparison_direction GT>`."""

    dialect: str
    body: str

    def __str__(self) -> str:
        return f"#{self.dialect}<{self.body}>"


Attribute = Any  # one of the classes above


# ---------------------------------------------------------------------------- op tree


@dataclass(eq=False)
class Value:
    """An SSA value: an op result or a block argument."""

    type: Type
    name: str = ""

    def __repr__(self) -> str:
        return f"Value(%{self.name}: {self.type})"


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)
    label: str = ""


@dataclass(eq=False)
class Region:
    blocks: list[Block] = field(default_factory=list)


@dataclass(eq=False)
class Operation:
    name: str
    operands: list[Value]
    results: list[Value]
    attributes: dict[str, Attribute] = field(default_factory=dict)
    properties: dict[str, Attribute] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    loc: Location | None = None
    # Blocks this terminator may branch to (`cf.br ^bb1`); their arguments are operands.
    successors: list[Block] = field(default_factory=list)
    # The text of the op's trailing loc(...) and the name it gives (mlir/locations.py):
    # for reports only, so they take no part in printing or comparing ops.
    loc_text: str = field(default="", compare=False, repr=False)
    loc_name: str = field(default="", compare=False, repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        """A property or attribute by name (the generic form may put either)."""
        if key in self.properties:
            return self.properties[key]
        return self.attributes.get(key, default)

    def walk(self):
        """Yields this op and every op nested in its regions, in order (a loop, not a
        recursion, so no nesting depth can exhaust Python's stack)."""
        stack = [iter((self,))]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            yield op
            if op.regions:
                stack.append(o for r in op.regions for b in r.blocks for o in b.ops)
