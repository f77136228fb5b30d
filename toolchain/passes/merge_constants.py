"""Equal constants stored once.

Constant folding turns each small splat (a scalar broadcast to an operand's shape) into
a constant of its own; a graph that repeats one computation many times (an unrolled
recurrence: an LSTM's 28 time steps) then holds the same few values hundreds of times,
each its own bytes of flash (1,681 constants of 80 bytes, 134 KB, in mnist_lstm's int8
model). Constants of one type and the same bytes become one node that every reader
reads.
"""

from __future__ import annotations

from toolchain.graph.ir import Graph, Tensor
from toolchain.passes.fold import eliminate_dead_nodes


def merge_equal_constants(graph: Graph) -> Graph:
    """Replaces every constant equal (type, quantization and bytes) to an earlier one by
    that one, in place, and returns the graph. Graph outputs are never merged; a graph
    with regions is left as it is:
    its regions may read the outer constants by identity."""
    if any(node.regions for node in graph.nodes):
        return graph
    outputs = {id(t) for t in graph.outputs}  # each output keeps its own buffer
    first: dict[tuple, Tensor] = {}
    replaced: dict[int, Tensor] = {}
    for node in graph.nodes:
        node.inputs = [replaced.get(id(t), t) for t in node.inputs]
        if node.op != "constant" or id(node.output) in outputs:
            continue
        value = node.attrs["value"]
        key = (node.output.type, value.dtype.str, value.shape, value.tobytes())
        if key in first:
            replaced[id(node.output)] = first[key]
        else:
            first[key] = node.output
    if replaced:
        eliminate_dead_nodes(graph)
    return graph


__all__ = ["merge_equal_constants"]
