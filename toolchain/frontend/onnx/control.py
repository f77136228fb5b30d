"""ONNX `If`.

An If whose condition is known at build time (a constant, or computed from a pinned
input: `--input-value sr=16000`) is replaced by the branch it takes: that branch's
nodes are imported in place of the If, and its outputs are the If's; the other branch
costs nothing. An If on a value computed at run time becomes the graph's `if`, both
branches imported as its regions (regions.py), which must then return the same types
(minirt's shapes are static: ONNX lets the branches differ).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.loops import loop, scan
from toolchain.frontend.onnx.reader import NodeInfo
from toolchain.frontend.onnx.regions import (
    Scope,
    Subgraph,
    captures_of,
    import_region,
    read_subgraph,
    scalar_of,
)
from toolchain.graph.verify import verify_node

Branch = Subgraph
BRANCHES = ("then_branch", "else_branch")


def _branch_attr(node: NodeInfo, name: str) -> Any:
    attr = node.attrs.get(name)
    if attr is None:
        raise Unsupported(f"it has no {name}")
    return attr.g


def taken_branch(node: NodeInfo, cond: Any, first_index: int) -> Branch | None:
    """The branch If `node` takes when its condition `cond` (the value held for input 0)
    is a constant; None when it is not. Its nodes are numbered from `first_index`."""
    if not isinstance(cond, np.ndarray):
        return None
    if cond.size != 1:
        raise Unsupported(f"its condition has {cond.size} elements; If takes one")
    name = BRANCHES[0] if bool(cond.reshape(-1)[0]) else BRANCHES[1]
    return read_subgraph(_branch_attr(node, name), name, first_index)


def if_region(scope: Scope, node: NodeInfo) -> list:
    """An If on a run-time condition as the graph's `if` (regions: then, else); its
    results."""
    graphs = [_branch_attr(node, name) for name in BRANCHES]
    cond = scalar_of(scope.graph, scope.as_tensor(node.inputs[0]), "the condition")
    if cond.type.dtype.name != "i1":
        raise Unsupported(f"its condition is {cond.type.dtype}; If takes a bool")
    captures = captures_of(scope, graphs)
    regions = []
    for name, g in zip(BRANCHES, graphs):
        regions.append(import_region(scope, read_subgraph(g, name, scope.next_index), [],
                                     captures))
    then_types = [t.type for t in regions[0].outputs]
    else_types = [t.type for t in regions[1].outputs]
    if then_types != else_types:
        raise Unsupported(f"its branches return different types ({', '.join(map(str, then_types))}"
                          f" and {', '.join(map(str, else_types))}); minirt's shapes are "
                          "static")
    operands = [cond, *(scope.as_tensor(c) for c in captures)]
    out = scope.graph.add("if", operands, then_types, regions=regions)
    err = verify_node(out)
    if err is not None:
        raise Unsupported(err.message)
    return list(out.outputs)


# Ops with bodies, imported as regions: op type -> (scope, node) -> the node's results.
REGION_OPS = {"If": if_region, "Loop": loop, "Scan": scan}

__all__ = ["BRANCHES", "REGION_OPS", "Branch", "if_region", "taken_branch"]
