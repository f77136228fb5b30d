"""Graph IR: a function of tensors with static shapes, in SSA form.

A Node has an op name from `toolchain.graph.ops.OPS`, input tensors, output tensors
and plain-Python attributes (ints, tuples of ints, strings; numpy arrays for constant
values). Nodes are kept in a valid execution order. Quantized tensors carry their
scale / zero point on the TensorType, so int8 graphs need no other node kinds.

Ops with regions (`while`, `if`, `case`, `sort`, `scatter`, reductions with a body)
hold them in `Node.regions`, each a Graph of its own: its inputs are the region's block
arguments, then one input per value the region reads from outside (StableHLO lets a
region use any value in scope; the frontend makes those captures explicit operands of
the node, so every region is closed and runs, prints and verifies on its own). Which
node operand feeds which region input is the op's rule (toolchain/graph/ops.py).

State that survives an inference (TFLite resource and variable tensors, a filter's
running estimate) keeps the graph a pure function: each `StateVar` in `Graph.states` is
one extra input (its value when the inference starts) and one extra output (its value
when it ends), the last `len(states)` of each, in the same order. Passes and the
schedule see ordinary tensors; the reference (reference/state.py) and the firmware
(one RAM region the image binds both to) carry the values from one inference to the
next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolchain.diagnostics import Location
from toolchain.graph.sources import Source
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
    regions: list[Graph] = field(default_factory=list)
    # The model's own name for the op this node computes (part of): reports only, never
    # compiled into the image (graph/sources.py).
    source: Source | None = None

    @property
    def output(self) -> Tensor:
        """The single output of a one-result node."""
        assert len(self.outputs) == 1, self.op
        return self.outputs[0]


@dataclass(eq=False)
class StateVar:
    """A value kept between inferences: `initial` when the firmware boots (after any
    TFLite CALL_ONCE init subgraph) and `reset` after a reset of the state (TFLite
    Micro's MicroInterpreter::Reset); both of the state tensor's shape and storage
    type."""

    key: str
    initial: np.ndarray
    reset: np.ndarray


@dataclass(eq=False)
class Graph:
    name: str
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    # The last len(states) inputs and outputs are these values' old and new values
    # (module docstring).
    states: list[StateVar] = field(default_factory=list)

    @property
    def user_inputs(self) -> list[Tensor]:
        """The inputs the caller gives: every input but the state's."""
        return self.inputs[:len(self.inputs) - len(self.states)]

    @property
    def user_outputs(self) -> list[Tensor]:
        """The outputs the caller reads: every output but the state's."""
        return self.outputs[:len(self.outputs) - len(self.states)]

    def add(self, op: str, inputs: list[Tensor], out_types: list[TensorType],
            attrs: dict[str, Any] | None = None, loc: Location | None = None,
            regions: list[Graph] | None = None) -> Node:
        """Appends a node with fresh output tensors and returns it."""
        node = Node(op, list(inputs), [], dict(attrs or {}), loc, list(regions or []))
        node.outputs = [Tensor(t, "", node) for t in out_types]
        self.nodes.append(node)
        return node

    def add_input(self, ty: TensorType, name: str = "") -> Tensor:
        t = Tensor(ty, name)
        self.inputs.append(t)
        return t

    def rename(self) -> None:
        """Numbers tensors in order (`arg0`, ..., `0`, `1`, ...) for printing; tensors
        inside regions continue the numbering (their inputs are `a0`, `a1`, ...), so
        every name is unique in the printed text."""
        for i, t in enumerate(self.inputs):
            t.name = f"arg{i}"
        counters = [0, 0]  # node results, region inputs
        stack: list[tuple[Graph, int]] = [(self, 0)]
        while stack:  # a loop, not a recursion: regions may nest deeply
            graph, start = stack.pop()
            for k in range(start, len(graph.nodes)):
                node = graph.nodes[k]
                for t in node.outputs:
                    t.name = str(counters[0])
                    counters[0] += 1
                if node.regions:
                    # Regions are numbered before the nodes after them, as printed.
                    stack.append((graph, k + 1))
                    for region in reversed(node.regions):
                        stack.append((region, 0))
                    for region in node.regions:
                        for t in region.inputs:
                            t.name = f"a{counters[1]}"
                            counters[1] += 1
                    break

    def walk(self) -> list[Node]:
        """Every node of the graph and of its regions, each before its regions' nodes."""
        order: list[Node] = []
        stack: list[Graph] = [self]
        while stack:
            graph = stack.pop()
            for node in graph.nodes:
                order.append(node)
                stack.extend(reversed(node.regions))
        return order
