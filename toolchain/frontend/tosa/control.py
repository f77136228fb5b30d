"""TOSA's control flow, COND_IF and WHILE_LOOP, onto the graph's `if` and `while`.

Their regions are imported by `regions.import_regions` in the importer's scope (the op's
`Scope`): values a region reads from outside it become captures, operands appended to
the node after TOSA's own. The graph's regions are closed and take every capture after
their block arguments, which is what TOSA's regions are with the input list in front:

- COND_IF(condition, input_list...): `if(pred, input_list..., captures...)`; both
  branches take the input list as their block arguments (or none, in the older form
  whose branches read outer values directly). The condition is a bool of rank 0 or of
  shape [1] (TOSA 1.0 has both); the graph's predicate is a rank-0 i1.
- WHILE_LOOP(input_list...): `while(input_list..., captures...)`; the cond region yields
  the bool (rank 0 or [1]: a shape-[1] one is reshaped inside the region), the body the
  next values of the input list.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolchain.frontend.regions import import_regions
from toolchain.frontend.tosa.context import TosaError, TosaOp
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS
from toolchain.types import TensorType

__all__ = ["CONVERTERS"]


def _regions(t: TosaOp, args: Sequence[Tensor], names: tuple[str, str]
             ) -> tuple[list[Graph], list[Tensor]]:
    """The op's two region graphs, `names` in TOSA's words (block arguments typed like
    `args`, then the captures) and the captured outer tensors."""
    if t.scope is None:
        raise TosaError("has regions, which need the importer's scope")
    s = t.scope
    graphs, captures = import_regions(s.importer, t.op, s.env, s.stack)
    want = [a.type for a in args]
    if len(graphs) != 2:
        raise TosaError(f"needs a {names[0]} and a {names[1]} region, has {len(graphs)}")
    for g, name in zip(graphs, names):
        got = [x.type for x in g.inputs[:len(g.inputs) - len(captures)]]
        if got != want:
            raise TosaError(f"the {name} region takes {_fmt(got)}, the input list is "
                            f"{_fmt(want)}")
    return graphs, captures


def _yields(g: Graph, what: str, want: list[TensorType], of: str) -> None:
    """Region `g` yields values of `want`'s shapes and element types (quantization is
    an annotation: it need not match)."""
    got = [o.type for o in g.outputs]
    if [(tuple(x.shape), x.dtype) for x in got] != [(tuple(x.shape), x.dtype) for x in want]:
        raise TosaError(f"the {what} region yields {_fmt(got)}, {of} {_fmt(want)}")


def _predicate(b: GraphBuilder, c: Tensor, what: str) -> Tensor:
    """A bool of rank 0 or shape [1] as the graph's rank-0 predicate."""
    ty = c.type
    if ty.dtype.name != "i1" or tuple(ty.shape) not in ((), (1,)):
        raise TosaError(f"{what} must be a tensor<i1> or tensor<1xi1>, not {ty}")
    return c if ty.shape == () else b.op("reshape", [c], shape=())


def _node(t: TosaOp, name: str, inputs: list[Tensor], regions: list[Graph]) -> list[Tensor]:
    """A node with regions, its result types inferred by the graph's op table."""
    probe = Node(name, inputs, [], {}, t.b.loc, regions)
    types = OPS[name].infer(probe)
    return t.b.graph.add(name, inputs, types, {}, t.b.loc, regions).outputs


def cond_if(t: TosaOp) -> list[Tensor]:
    """COND_IF(condition, input_list...) -> if(pred, input_list..., captures...)."""
    args = t.inputs[1:]
    graphs, captures = _regions(t, args, ("then", "else"))  # first: errors inside count
    pred = _predicate(t.b, t.input(0, "condition"), "the condition")
    declared = [t.result(i) for i in range(len(t.op.results))]
    for g, what in zip(graphs, ("then", "else")):
        _yields(g, what, declared, "the op declares")
    return _node(t, "if", [pred, *args, *captures], graphs)


def while_loop(t: TosaOp) -> list[Tensor]:
    """WHILE_LOOP(input_list...) -> while(input_list..., captures...)."""
    args = t.inputs
    if not args:
        raise TosaError("needs at least one loop value")
    graphs, captures = _regions(t, args, ("cond", "body"))
    cond = graphs[0]
    if len(cond.outputs) != 1:
        raise TosaError(f"the cond region yields {len(cond.outputs)} values, not one bool")
    _yields(graphs[1], "body", [a.type for a in args], "the loop carries")
    cond.outputs = [_predicate(GraphBuilder(cond, t.b.loc), cond.outputs[0],
                               "the cond region's result")]
    return _node(t, "while", [*args, *captures], graphs)


def _fmt(types: Sequence[TensorType]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


CONVERTERS = {"tosa.cond_if": cond_if, "tosa.while_loop": while_loop}
