"""TFLite's IF and WHILE, as TFLite Micro runs them (kernels/if.cc, while.cc), on the
graph's own control flow: `if` and `while` nodes whose regions are the called subgraphs
(the mechanism the StableHLO and ONNX frontends use; docs/architecture.md, "Control flow
and regions").

IF (IfOptions: then / else subgraph): input 0 is the condition, a one-element BOOL
(TFLite Micro's Prepare refuses any other type); the other inputs are the chosen
subgraph's inputs and its outputs are the IF's. A condition known when the model is
built (a constant) selects its branch then: that subgraph's operators are imported in
place of the IF and the other costs nothing. Otherwise both subgraphs become the
regions of an `if`, each taking the IF's inputs as its captured values.

WHILE (WhileOptions: cond / body subgraph): its inputs are the loop values, its outputs
their final values. The cond subgraph reads the values and its output 0 (a one-element
BOOL) says whether the body runs again; the body maps the values to the next ones. Both
become the regions of a `while`, which tests the condition before the first iteration
as TFLite Micro does. A body must give each value back with the shape it took (minirt's
shapes are static).

TFLite Micro copies tensors' bytes between the operator and the subgraphs, so each
subgraph's tensors keep their own types and quantization: a value enters a subgraph
retyped to what the subgraph declares, and leaves it retyped to what the operator (or
the loop) holds (`retype`). A called subgraph holds no state (RegionStates). Subgraphs
nest (an IF in a WHILE body): each is imported by the importer's own converters,
recursively, up to MAX_NESTING deep and MAX_SUBGRAPH_IMPORTS in all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.state import StateTable
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_node
from toolchain.types import TensorType

# Subgraphs inside subgraphs (an IF in a WHILE body is 2): deeper nesting is refused in
# one line, not left to Python's recursion limit.
MAX_NESTING = 16
# Subgraph imports per model: an IF whose two branches each hold such an IF doubles the
# count at every level, so a hostile file could ask for 2**16 regions.
MAX_SUBGRAPH_IMPORTS = 256


class SubgraphBudget:
    """The subgraph imports one model may make (MAX_NESTING deep, MAX_SUBGRAPH_IMPORTS
    in all), shared by the importers of its subgraphs."""

    def __init__(self) -> None:
        self.used = 0

    def spend(self, depth: int, what: str) -> None:
        """Counts one more import of a subgraph `depth` calls deep, or refuses it."""
        if depth > MAX_NESTING:
            raise Unsupported(f"{what} is nested {depth} subgraphs deep; minirt takes "
                              f"{MAX_NESTING}")
        self.used += 1
        if self.used > MAX_SUBGRAPH_IMPORTS:
            raise Unsupported(f"{what} would be the model's subgraph import number "
                              f"{self.used}; minirt imports at most {MAX_SUBGRAPH_IMPORTS} "
                              "(IF and WHILE nested in each other)")


class RegionStates(StateTable):
    """The state table of a subgraph IF or WHILE runs: it has none. A region's values
    enter through its inputs only, so a variable read or assigned inside an IF branch or
    a WHILE body is refused rather than silently cut from the model's state; an inlined
    branch too, since the importer keys variable tensors and resource handles by tensor
    index, which each subgraph numbers from 0."""

    def __init__(self, graph: Graph, where: str):
        super().__init__(graph)
        self.where = where

    def _refuse(self) -> Unsupported:
        return Unsupported(f"{self.where} reads or writes a variable (state), which minirt "
                           "does not support inside an IF branch or a WHILE loop")

    def read(self, key: str, ty: TensorType, initial: np.ndarray | None = None,
             reset: np.ndarray | None = None) -> Tensor:
        raise self._refuse()

    def write(self, key: str, value: Tensor, initial: np.ndarray | None = None,
              reset: np.ndarray | None = None) -> None:
        raise self._refuse()

    def call_once(self, k: int) -> None:
        raise self._refuse()


def retype(graph: Graph, t: Tensor, want: TensorType, what: str) -> Tensor:
    """`t` as a tensor of type `want` in `graph`: itself when its type is `want`, else a
    reshape to `want` (same element type and count: the bytes TFLite Micro copies, read
    with `want`'s shape and quantization)."""
    if t.type == want:
        return t
    if t.type.dtype != want.dtype or t.type.num_elements != want.num_elements:
        raise Unsupported(f"{what} is {want}, but it is given {t.type}")
    node = graph.add("reshape", [t], [want], {"shape": tuple(want.shape)})
    return node.output


def _scalar_bool(graph: Graph, t: Tensor, what: str) -> Tensor:
    """A one-element BOOL tensor as the rank-0 i1 that `if` and `while` test."""
    if t.type.dtype.name != "i1" or t.type.num_elements != 1:
        raise Unsupported(f"{what} is {t.type}; TFLite Micro reads one BOOL")
    if t.type.shape == ():
        return t
    return graph.add("reshape", [t], [TensorType((), t.type.dtype)], {"shape": ()}).output


def _region(ctx: OpContext, k: int, role: str, in_types: Sequence[TensorType],
            out_types: Sequence[TensorType] | None) -> tuple[Graph, list[Tensor]]:
    """Subgraph k as a region taking `in_types`; with `out_types`, its outputs are
    retyped to them (their count checked). Returns the region and its outputs."""
    region = Graph(f"subgraph{k}")
    for j, ty in enumerate(in_types):
        region.add_input(ty, f"arg{j}")
    outs = ctx.import_subgraph(k, list(region.inputs), region, role)
    if out_types is not None:
        outs = _outputs(region, outs, out_types, f"{role} subgraph {k}")
    return region, outs


def _outputs(graph: Graph, outs: Sequence[Tensor], types: Sequence[TensorType],
             what: str) -> list[Tensor]:
    if len(outs) != len(types):
        raise Unsupported(f"{what} has {len(outs)} outputs, but the operator has "
                          f"{len(types)}")
    return [retype(graph, t, ty, f"{what}'s output {j} as the operator holds it")
            for j, (t, ty) in enumerate(zip(outs, types))]


def _add_node(ctx: OpContext, op: str, inputs: list[Tensor], types: list[TensorType],
              regions: list[Graph]) -> list[Tensor]:
    node = ctx.graph.add(op, inputs, types, regions=regions)
    err = verify_node(node)
    if err is not None:
        raise Unsupported(err.message)
    return list(node.outputs)


def _constant(t: Tensor) -> np.ndarray | None:
    """The value of `t` when it is known at build time (a constant node's), else None."""
    p = t.producer
    return np.asarray(p.attrs["value"]) if p is not None and p.op == "constant" else None


def if_op(ctx: OpContext) -> list[Tensor]:
    """IF: the chosen subgraph's outputs (the module docstring)."""
    branches = {"then": int(ctx.option("then_subgraph_index")),
                "else": int(ctx.option("else_subgraph_index"))}
    cond_info = ctx.info(0)
    if cond_info.type != "BOOL" or int(np.prod(cond_info.shape)) != 1:
        raise Unsupported(f"its condition {cond_info.describe()} is {cond_info.type}"
                          f"{list(cond_info.shape)}; TFLite Micro's IF takes one BOOL")
    cond = ctx.input(0)
    args = [ctx.input(i) for i in range(1, len(ctx.op.inputs))]
    out_types = [ctx.output_type(j) for j in range(len(ctx.op.outputs))]
    known = _constant(cond)
    if known is not None:
        role = "then" if bool(known.reshape(-1)[0]) else "else"
        k = branches[role]
        outs = ctx.import_subgraph(k, args, ctx.graph, f"IF's {role}")
        return _outputs(ctx.graph, outs, out_types, f"IF's {role} subgraph {k}")
    pred = _scalar_bool(ctx.graph, cond, "its condition")
    regions = [_region(ctx, k, f"IF's {role}", [t.type for t in args], out_types)
               for role, k in branches.items()]
    for region, outs in regions:
        region.outputs = outs
    return _add_node(ctx, "if", [pred, *args], out_types, [r for r, _ in regions])


def while_op(ctx: OpContext) -> list[Tensor]:
    """WHILE: the loop values once the cond subgraph says stop (the module docstring)."""
    cond_k = int(ctx.option("cond_subgraph_index"))
    body_k = int(ctx.option("body_subgraph_index"))
    n = len(ctx.op.inputs)
    if len(ctx.op.outputs) != n:
        raise Unsupported(f"it has {n} inputs and {len(ctx.op.outputs)} outputs; a WHILE "
                          "gives back each loop value")
    init = [ctx.input(i) for i in range(n)]
    carried = [t.type for t in init]
    body, next_values = _region(ctx, body_k, "WHILE's body", carried, None)
    if len(next_values) != n:
        raise Unsupported(f"WHILE's body subgraph {body_k} has {len(next_values)} outputs "
                          f"for {n} loop values")
    for j, (t, ty) in enumerate(zip(next_values, carried)):
        if t.type.shape != ty.shape or t.type.dtype != ty.dtype:
            raise Unsupported(f"WHILE's body subgraph {body_k} turns loop value {j} from "
                              f"{ty} into {t.type}; minirt's shapes are static")
    body.outputs = _outputs(body, next_values, carried, f"WHILE's body subgraph {body_k}")
    cond, tests = _region(ctx, cond_k, "WHILE's cond", carried, None)
    if not tests:
        raise Unsupported(f"WHILE's cond subgraph {cond_k} has no output")
    cond.outputs = [_scalar_bool(cond, tests[0], f"WHILE's cond subgraph {cond_k}'s "
                                                 "output 0")]
    return _add_node(ctx, "while", init, carried, [cond, body])


__all__ = ["MAX_NESTING", "MAX_SUBGRAPH_IMPORTS", "RegionStates", "SubgraphBudget", "if_op",
           "retype", "while_op"]
