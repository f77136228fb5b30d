"""Constant folding and dead-node elimination.

Nodes whose inputs are all constants are evaluated at build time with the reference
executor (so a constant fft folds to numpy's transform in float64 rounded once, more
exact than passes/fft.py's decomposition would compute it), as long as the result is
not much larger than what it is computed from:
folding `broadcast(0.0)` into a 16 KB tensor would trade one flash word for 16 KB
(fusion turns such a broadcast into an index map instead). For the same reason a
`dequantize` of a sub-byte integer constant stays: its stored form is what the module
keeps.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.reference.kernels import KERNELS

# A folded result may have at most this many elements more than its largest input.
GROWTH_LIMIT = 256


def fold_constants(graph: Graph) -> Graph:
    """Folds constant subgraphs in place, drops unused nodes, and returns the graph.
    Regions are folded as graphs of their own; a node holding a `while` or a `cfg` (a
    function's blocks, which may branch back: a loop of blocks) anywhere in its regions
    is never evaluated here (their trip counts are not bounded, so folding could run
    forever)."""
    values: dict[int, np.ndarray] = {}
    for node in graph.nodes:
        for region in node.regions:
            fold_constants(region)
        if node.op == "constant":
            values[id(node.output)] = node.attrs["value"]
            continue
        if len(node.outputs) != 1 or not all(id(t) in values for t in node.inputs):
            continue
        if any(n.op in ("while", "cfg") for n in Graph("", nodes=[node]).walk()):
            continue
        if node.op == "dequantize" and node.inputs[0].type.dtype.is_integer and \
                node.inputs[0].type.dtype.bits < 8:
            # A sub-byte weight (an ONNX INT4 initializer) is kept as it is: the module
            # stores it bit-packed, an eighth of its f32 value (schedule/sub_byte.py).
            continue
        largest = max((values[id(t)].size for t in node.inputs), default=0)
        if node.output.type.num_elements > largest + GROWTH_LIMIT:
            continue
        if node.op == "broadcast_in_dim" and node.output.type.num_elements > largest and \
                np.issubdtype(node.output.type.dtype.np_dtype, np.integer):
            # An integer broadcast stays an index map (fusion reads its input), however
            # small: folded, a layer's per-channel bias and requantization constants
            # became per-pixel arrays on maps of under GROWTH_LIMIT outputs (1 or 2
            # channels), which the requantization fold and the depthwise kernels do not
            # recognise. Float ones fold as before: post-training quantization reads
            # a float layer's bias as a constant.
            continue
        result = np.asarray(KERNELS[node.op](node, *[values[id(t)] for t in node.inputs]))
        result = result.astype(node.output.type.dtype.np_dtype).reshape(node.output.type.shape)
        node.op, node.inputs, node.attrs = "constant", [], {"value": result}
        values[id(node.output)] = result
    eliminate_dead_nodes(graph)
    return graph


def eliminate_dead_nodes(graph: Graph) -> None:
    """Removes nodes none of whose outputs reach a graph output."""
    live = {id(t) for t in graph.outputs}
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if any(id(t) in live for t in node.outputs):
            kept.append(node)
            live.update(id(t) for t in node.inputs)
    graph.nodes = kept[::-1]
