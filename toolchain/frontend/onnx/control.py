"""An ONNX `If` whose condition is known at build time (a constant, or computed from a
pinned input: `--input-value sr=16000`) is replaced by the branch it takes: that
branch's nodes are imported in place of the If, and its outputs are the If's. An If on
a value computed at run time is not supported (minirt's graphs have static shapes and
one schedule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import NodeInfo, node_attributes, onnx_dtype


@dataclass
class Branch:
    """The branch an If takes: its attribute's name, nodes, own initializers and the
    names of the values it returns (in the If's output order)."""

    name: str
    nodes: list[NodeInfo]
    initializers: dict[str, np.ndarray]
    outputs: list[str]


def taken_branch(node: NodeInfo, cond: Any, first_index: int) -> Branch | None:
    """The branch If `node` takes when its condition `cond` (the value held for input 0)
    is a constant; None when it is not. Its nodes are numbered from `first_index`."""
    if not isinstance(cond, np.ndarray):
        return None
    if cond.size != 1:
        raise Unsupported(f"its condition has {cond.size} elements; If takes one")
    name = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
    attr = node.attrs.get(name)
    if attr is None:
        raise Unsupported(f"it has no {name}")
    from onnx import numpy_helper

    graph = attr.g
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
    return Branch(name, nodes, initializers, [o.name for o in graph.output])


__all__ = ["Branch", "taken_branch"]
