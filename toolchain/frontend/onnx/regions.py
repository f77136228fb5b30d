"""An ONNX subgraph (an If branch, a Loop or Scan body) imported as a closed region of
the graph IR (toolchain/graph/ir.py): its own inputs first (a body's iteration number,
condition and carried values), then one input per value of the enclosing scope that
it reads at run time (the captures, which the region node takes as its last
operands). Values the enclosing scope holds as constants stay constants inside: no
capture, and they fold there as anywhere else.

The nodes are converted by the importer's own `convert`, with the importer pointed at
the region's graph and values for the duration (`Scope`), so every op the importer
takes works inside a body too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from toolchain.frontend.onnx.context import QView
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import NodeInfo, node_attributes, onnx_dtype
from toolchain.graph.ir import Graph, Tensor
from toolchain.types import TensorType


class Scope(Protocol):
    """What the importer offers a region import (importer._Importer)."""

    graph: Graph
    values: dict[str, Any]
    tensors: dict[str, Tensor]
    next_index: int

    def convert(self, node: NodeInfo) -> None: ...
    def lookup(self, name: str) -> Any: ...
    def as_tensor(self, name: str) -> Tensor: ...


# (the region, its values so far by name) -> values to add
Prelude = Callable[[Graph, dict[str, Any]], dict[str, Any]]


@dataclass
class Subgraph:
    """A graph attribute read: its name, nodes, own initializers, the names of its
    inputs and of the values it returns."""

    name: str
    nodes: list[NodeInfo]
    initializers: dict[str, np.ndarray]
    inputs: list[str]
    outputs: list[str]


def read_subgraph(graph: Any, name: str, first_index: int) -> Subgraph:
    """The GraphProto `graph` (attribute `name`), its nodes numbered from first_index."""
    from onnx import numpy_helper

    nodes = []
    for i, proto in enumerate(graph.node):
        info = NodeInfo(first_index + i, proto.name, proto.op_type, proto.domain,
                        list(proto.input), list(proto.output), proto=proto)
        info.attrs = node_attributes(proto, info.describe())
        nodes.append(info)
    initializers = {}
    for t in graph.initializer:
        onnx_dtype(t.data_type, f"{name} initializer '{t.name}'")
        initializers[t.name] = np.asarray(numpy_helper.to_array(t))
    return Subgraph(name, nodes, initializers, [i.name for i in graph.input],
                    [o.name for o in graph.output])


def outer_reads(graph: Any) -> list[str]:
    """The names a GraphProto (and the subgraphs of its nodes) reads from the enclosing
    scope, in the order first read."""
    from onnx import AttributeProto

    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    reads: list[str] = []

    def read(name: str) -> None:
        if name and name not in defined and name not in reads:
            reads.append(name)

    for node in graph.node:
        for name in node.input:
            read(name)
        for a in node.attribute:
            subs = [a.g] if a.type == AttributeProto.GRAPH else (
                list(a.graphs) if a.type == AttributeProto.GRAPHS else [])
            for sub in subs:
                for name in outer_reads(sub):
                    read(name)
        defined.update(node.output)
    for out in graph.output:  # a body may return an enclosing value as it is
        read(out.name)
    return reads


def body_reads(node: NodeInfo) -> list[str]:
    """The enclosing names the bodies of `node` (an If, Loop or Scan) read."""
    from onnx import AttributeProto

    names: list[str] = []
    for a in node.proto.attribute if node.proto is not None else []:
        subs = [a.g] if a.type == AttributeProto.GRAPH else (
            list(a.graphs) if a.type == AttributeProto.GRAPHS else [])
        for g in subs:
            names += [n for n in outer_reads(g) if n not in names]
    return names


def _at_run_time(value: Any) -> bool:
    """Whether a value is computed at run time (not a constant, nor a view of one)."""
    return isinstance(value, Tensor) or (isinstance(value, QView) and not value.is_const)


def captures_of(scope: Scope, graphs: Sequence[Any]) -> list[str]:
    """The enclosing values `graphs` read that are computed at run time (graph tensors,
    quantized views): the region node's captures, in the order first read."""
    names: list[str] = []
    for g in graphs:
        for name in outer_reads(g):
            if name in names or name not in scope.values:
                continue  # an unknown name fails in the body, naming its node
            if _at_run_time(scope.values[name]):
                names.append(name)
    return names


def import_region(scope: Scope, sub: Subgraph, own: Sequence[tuple[str, TensorType]],
                  captures: Sequence[str], prelude: Prelude | None = None) -> Graph:
    """`sub` as a region: inputs `own` (the subgraph's inputs, by name and type), then
    one per capture (typed as the enclosing tensor); outputs the subgraph's. `prelude`
    adds nodes before the subgraph's and the values they bind (a Scan's slices of its
    inputs). A failing node is the region's error, naming it."""
    outer_tensors = [scope.as_tensor(c) for c in captures]
    region = Graph(sub.name)
    values = {k: v for k, v in scope.values.items() if not _at_run_time(v)}
    for name, ty in own:
        values[name] = region.add_input(ty, name)
    for name, t in zip(captures, outer_tensors):
        values[name] = region.add_input(t.type, name)
    values.update(sub.initializers)
    saved = scope.graph, scope.values, scope.tensors
    scope.graph, scope.values, scope.tensors = region, values, {}
    scope.next_index += len(sub.nodes)
    try:
        if prelude is not None:
            values.update(prelude(region, values))
        for node in sub.nodes:
            try:
                scope.convert(node)
            except Unsupported as e:
                what = " ".join(str(e).split()) or "is not supported"
                sep = " " if what.startswith("is not supported") else ": "
                raise Unsupported(f"in its {sub.name}: {node.describe()}{sep}{what}"
                                  ) from None
        region.outputs = [scope.as_tensor(o) for o in sub.outputs]
    finally:
        scope.graph, scope.values, scope.tensors = saved
    return region


def scalar_of(graph: Graph, t: Tensor, what: str) -> Tensor:
    """A one-element tensor (a condition, a trip count) as the scalar region ops take."""
    if t.type.num_elements != 1:
        raise Unsupported(f"{what} has shape {list(t.type.shape)}; one value is expected")
    if t.type.shape == ():
        return t
    return graph.add("reshape", [t], [TensorType((), t.type.dtype)], {"shape": ()}).output


__all__ = ["Prelude", "Scope", "Subgraph", "body_reads", "captures_of", "import_region",
           "outer_reads", "read_subgraph", "scalar_of"]
