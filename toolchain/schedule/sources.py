"""Which of the model's ops each command runs, for the reports (graph/sources.py).

Fusion inlines producers into their readers, so a dispatch computes every graph node
between the tensors it reads and the tensor(s) it writes. Rather than carrying a list
through every rewrite of the schedule, the nodes are found back from the tensors: a walk
from each written tensor's producer through the inputs it reached without reading them
from memory. It stops at what the dispatch binds (its operands), at every tensor some
command writes (materialized elsewhere) and at constants and graph inputs. A result the
schedule redirected into a copy's destination (an output buffer, a loop variable:
schedule/copies.py) is followed back to the graph tensor it stands for.

The step's `main` source is the one of its heaviest node (a contraction before a
reduction before anything else, data movement last; among equals the one nearest the
result): that is the layer a dispatch is named after.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from toolchain.graph.ir import Node, Tensor
from toolchain.graph.sources import Source

__all__ = ["StepSources", "step_sources"]

# How much a node says what its dispatch is (the larger, the more): contractions, then
# reductions, then any computation; index remaps and conversions say least.
OP_WEIGHT: dict[str, int] = {
    "convolution": 4, "dot_general": 4, "dot": 4,
    "reduce_window": 3, "reduce": 3, "sort": 3, "scatter": 3, "fft": 3,
    "broadcast_in_dim": 0, "reshape": 0, "transpose": 0, "slice": 0, "pad": 0,
    "convert": 0, "bitcast_convert": 0, "constant": 0, "concatenate": 0, "copy": 0,
}
_DEFAULT_WEIGHT = 1


@dataclass(frozen=True)
class StepSources:
    """The graph ops one command runs: `kind`, the op of its heaviest node; `main`, that
    node's source (None when the model named nothing it runs); `sources`, every distinct
    source of its nodes, in model order."""

    kind: str
    main: Source | None = None
    sources: tuple[Source, ...] = ()


def step_sources(writes: Iterable[Tensor], reads: Iterable[Tensor],
                 boundary: set[int], alias: Mapping[int, Tensor], order: Mapping[int, int],
                 fallback: str) -> StepSources:
    """The sources of a command writing `writes` and binding `reads`; `boundary` holds
    the ids of tensors the walk stops at (materialized, constant, inputs), `alias` maps a
    copy destination's id to the tensor it stands for, `order` a node's id to its place
    in the graph, `fallback` is the kind of a command that runs no graph node."""
    bound = {id(t) for t in reads}  # the boundary is not copied: one walk per step
    seen: set[int] = set()
    nodes: list[tuple[int, Node]] = []  # (distance from the result, node)
    frontier: deque[tuple[int, Tensor]] = deque()  # breadth first: nearest first
    for t in writes:
        hops = 0
        # A copy reads the tensor its destination stands for: it runs no op of its own.
        while (t.producer is None and id(t) in alias and id(alias[id(t)]) not in bound
               and hops < 64):
            t, hops = alias[id(t)], hops + 1
        frontier.append((0, t))
    while frontier:
        dist, t = frontier.popleft()
        node = t.producer
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append((dist, node))
        for u in node.inputs:
            if id(u) not in boundary and id(u) not in bound:
                frontier.append((dist + 1, u))
    if not nodes:
        return StepSources(fallback)
    main = min(nodes, key=lambda dn: (-OP_WEIGHT.get(dn[1].op, _DEFAULT_WEIGHT), dn[0]))[1]
    in_order = sorted((n for _, n in nodes), key=lambda n: order.get(id(n), 0))
    sources: list[Source] = []
    for n in in_order:
        if n.source is not None and n.source not in sources:
            sources.append(n.source)
    main_source = main.source
    if main_source is None:  # a node the passes made: the nearest named one speaks
        named = [(d, n) for d, n in nodes if n.source is not None]
        main_source = min(named, key=lambda dn: dn[0])[1].source if named else None
    return StepSources(main.op, main_source, tuple(sources))
