"""Regions of StableHLO ops -> closed graph regions (toolchain/graph/ir.py).

A StableHLO region may use any value in scope. The graph wants every region closed, so
each value a region reads from outside becomes a *capture*: an input of the region
graph after its block arguments, fed by an extra operand of the node. Captures are
found lazily, when an op inside the region looks up a value its own scope lacks (the
importer's `lookup` asks `capture`), through any depth of nesting: a value two regions
out becomes a capture of the outer region first, then of the inner one. All regions of
one node take the same captures (the union, in order of first use), since the node
feeds them from one operand list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolchain.frontend.types import UNKNOWN, as_tensor_type
from toolchain.graph.ir import Graph, Tensor

if TYPE_CHECKING:
    from toolchain.mlir.ir import Operation, Region

# TOSA's cond_if / while_loop regions end in tosa.yield (toolchain/frontend/tosa/control.py).
TERMINATORS = ("stablehlo.return", "func.return", "tosa.yield")
# Regions are imported by recursion, a few frames per level (and folded, scheduled and
# run by recursion later): deeper nesting is refused with an error rather than left to
# Python's recursion limit. Exported models nest a few levels (a scan in a cond).
MAX_REGION_DEPTH = 20


@dataclass
class RegionScope:
    """The values of one region being imported: its graph, its env (value id ->
    tensor of that graph) and the outer env it captures from."""

    graph: Graph
    env: dict[int, Tensor]
    outer: dict[int, Tensor]
    captures: list[Tensor] = field(default_factory=list)  # outer tensors, in order
    inner: list[Tensor] = field(default_factory=list)  # their region inputs


def capture(scopes: dict[int, RegionScope], env: dict[int, Tensor], v: Any) -> Tensor | None:
    """The tensor for value `v` in the region whose env is `env`, captured from the
    enclosing scopes; None when `env` is not a region's (a function body sees only its
    arguments) or no enclosing scope defines `v`."""
    scope = scopes.get(id(env))
    if scope is None:
        return None
    outer = scope.outer.get(id(v))
    if outer is None:
        outer = capture(scopes, scope.outer, v)
        if outer is None:
            return None
    for o, i in zip(scope.captures, scope.inner):
        if o is outer:  # another value for the same tensor (a call's result, say)
            env[id(v)] = i
            return i
    inner = scope.graph.add_input(outer.type)
    scope.captures.append(outer)
    scope.inner.append(inner)
    env[id(v)] = inner
    return inner


def import_regions(importer: Any, op: Operation, env: dict[int, Tensor],
                   stack: list[str]) -> tuple[list[Graph], list[Tensor]]:
    """The graphs of `op`'s regions, converted by `importer` (stablehlo._Importer) inside
    the scope `env`, and the captured outer tensors every region takes after its block
    arguments."""
    scopes = [_import_region(importer, r, env, stack, op, i) for i, r in enumerate(op.regions)]
    captures: list[Tensor] = []
    for s in scopes:
        captures += [t for t in s.captures if all(t is not c for c in captures)]
    for s in scopes:
        args = s.graph.inputs[:len(s.graph.inputs) - len(s.inner)]
        have = {id(o): i for o, i in zip(s.captures, s.inner)}
        s.graph.inputs = args + [have.get(id(c)) or Tensor(c.type) for c in captures]
    return [s.graph for s in scopes], captures


def _import_region(importer: Any, region: Region, outer: dict[int, Tensor], stack: list[str],
                   op: Operation, index: int) -> RegionScope:
    graph = Graph(f"{op.name}.region{index}")
    scope = RegionScope(graph, {}, outer)
    if len(importer.region_scopes) >= MAX_REGION_DEPTH:
        importer.error(f"'{op.name}': regions nested more than {MAX_REGION_DEPTH} deep are "
                       "not supported", op)
        return scope
    if len(region.blocks) != 1:
        importer.error(f"'{op.name}': regions with {len(region.blocks)} blocks are not "
                       "supported", op)
        return scope
    block = region.blocks[0]
    for a in block.args:
        t = as_tensor_type(a.type)
        if t is None or not t.is_static:
            importer.error(f"'{op.name}': a region argument has type '{a.type}'; minirt "
                           "needs static tensor shapes", op)
            t = UNKNOWN
        scope.env[id(a)] = graph.add_input(t)
    saved = importer.graph
    importer.graph = graph
    importer.region_scopes[id(scope.env)] = scope
    try:
        for inner in block.ops:
            if inner.name in TERMINATORS:
                graph.outputs = [importer.lookup(scope.env, v) for v in inner.operands]
                break
            ins = [importer.lookup(scope.env, v) for v in inner.operands]
            outs = importer.convert(inner, ins, stack, scope.env)
            for r, t in zip(inner.results, outs):
                scope.env[id(r)] = t
        else:
            importer.error(f"a region of '{op.name}' does not end in a return", op)
    finally:
        importer.graph = saved
        del importer.region_scopes[id(scope.env)]
    return scope
