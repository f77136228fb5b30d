"""Graph IR: a function of tensors with static shapes, in SSA form.

A Node has an op name from `toolchain.graph.ops.OPS`, input tensors, output tensors
and plain-Python attributes (ints, tuples of ints, strings; numpy arrays for constant
values). Nodes are kept in a valid execution order. Quantized tensors carry their
scale / zero point on the TensorType, so int8 graphs need no other node kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolchain.diagnostics import Location
from toolchain.types import TensorType


@dataclass(eq=False)
class Tensor:
    """An SSA tensor value: a graph input or a node output."""

    type: TensorType
    name: str = ""
    producer: Node | None = None

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclass(eq=False)
class Node:
    op: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    attrs: dict[str, Any] = field(default_factory=dict)
    loc: Location | None = None

    @property
    def output(self) -> Tensor:
        """The single output of a one-result node."""
        assert len(self.outputs) == 1, self.op
        return self.outputs[0]


@dataclass(eq=False)
class Graph:
    name: str
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)

    def add(self, op: str, inputs: list[Tensor], out_types: list[TensorType],
            attrs: dict[str, Any] | None = None, loc: Location | None = None) -> Node:
        """Appends a node with fresh output tensors and returns it."""
        node = Node(op, list(inputs), [], dict(attrs or {}), loc)
        node.outputs = [Tensor(t, "", node) for t in out_types]
        self.nodes.append(node)
        return node

    def add_input(self, ty: TensorType, name: str = "") -> Tensor:
        t = Tensor(ty, name)
        self.inputs.append(t)
        return t

    def rename(self) -> None:
        """Numbers tensors in order (`arg0`, ..., `0`, `1`, ...) for printing."""
        for i, t in enumerate(self.inputs):
            t.name = f"arg{i}"
        n = 0
        for node in self.nodes:
            for t in node.outputs:
                t.name = str(n)
                n += 1
