"""The graph verifier: every node checked against its op's rule in `ops.OPS`, and every
region of a node as a graph of its own (regions are closed: they read only their
inputs, see toolchain/graph/ir.py)."""

from __future__ import annotations

from toolchain.diagnostics import CompileError, raise_all
from toolchain.graph.ir import Graph, Node
from toolchain.graph.ops import OPS, ShapeError
from toolchain.types import TensorType

# Limits of what the backends can hold, checked here so that a model beyond them gets a
# located error instead of failing deep inside a build or a host run:
# - a module binds a buffer by a 30-bit offset (docs/module-format.md, "kind << 30 |
#   value"), so no tensor may be larger than 2**30 bytes (this also keeps element counts
#   within the kernels' i32 index arithmetic);
# - numpy, which holds every tensor on the host (reference, inputs, outputs), has at most
#   64 dimensions.
MAX_TENSOR_BYTES = 1 << 30
MAX_RANK = 64


def tensor_type_error(ty: TensorType) -> str | None:
    """Why a static tensor type is beyond what minirt handles, or None."""
    if ty.rank > MAX_RANK:
        return f"'{ty}' has {ty.rank} dimensions; minirt handles at most {MAX_RANK}"
    size = ty.num_elements * ty.dtype.itemsize
    if size > MAX_TENSOR_BYTES:
        return (f"'{ty}' takes {size} bytes; minirt tensors are limited to "
                f"{MAX_TENSOR_BYTES} bytes (1 GiB: a module addresses buffers with 30 bits)")
    return None


def verify_node(node: Node) -> CompileError | None:
    """Returns the error in `node`, or None when it is well-formed."""
    spec = OPS.get(node.op)
    if spec is None:
        return CompileError(f"unknown graph op '{node.op}'", node.loc)
    if spec.arity is not None and len(node.inputs) != spec.arity:
        return CompileError(f"'{node.op}' takes {spec.arity} operands, got {len(node.inputs)}",
                            node.loc)
    if spec.arity is None and not node.inputs and spec.regions == 0:
        return CompileError(f"'{node.op}' needs at least one operand", node.loc)
    if spec.regions is None:
        if not node.regions:
            return CompileError(f"'{node.op}' needs at least one region", node.loc)
    elif len(node.regions) != spec.regions:
        return CompileError(f"'{node.op}' takes {spec.regions} regions, got "
                            f"{len(node.regions)}", node.loc)
    missing = [a for a in spec.attrs if a not in node.attrs]
    if missing:
        return CompileError(f"'{node.op}' lacks attribute '{missing[0]}'", node.loc)
    for t in node.inputs + node.outputs:
        if not t.type.is_static:
            return CompileError(f"'{node.op}' has a dynamic shape ({t.type}); minirt needs "
                                "static shapes", node.loc)
    for t in node.outputs:  # inputs are checked where they are defined
        problem = tensor_type_error(t.type)
        if problem is not None:
            return CompileError(f"'{node.op}' result {problem}", node.loc)
    try:
        want = spec.infer(node)
    except ShapeError as e:
        return CompileError(f"'{node.op}': {e}", node.loc)
    if len(want) != len(node.outputs):
        return CompileError(f"'{node.op}' has {len(node.outputs)} results, expected {len(want)}",
                            node.loc)
    for i, (w, t) in enumerate(zip(want, node.outputs)):
        if w.shape != t.type.shape or w.dtype != t.type.dtype:
            return CompileError(f"'{node.op}' result {i} is declared '{t.type}' but its operands "
                                f"give '{w}'", node.loc)
    return None


def verify_graph(graph: Graph) -> None:
    """Raises a CompileError listing every ill-formed node (and any use before definition),
    inside regions too."""
    errors: list[CompileError] = []
    stack: list[tuple[Graph, Node | None]] = [(graph, None)]
    while stack:  # regions are verified as graphs of their own; a loop: they may nest
        g, owner = stack.pop()
        errors += _graph_errors(g, owner)
        for node in g.nodes:
            stack.extend((r, node) for r in node.regions)
    raise_all(errors)


def _state_errors(graph: Graph) -> list[CompileError]:
    """A state value's input and output (the last ones: graph/ir.py) must have one type,
    that of its boot and reset values."""
    n = len(graph.states)
    if n > min(len(graph.inputs), len(graph.outputs)):
        return [CompileError(f"the graph keeps {n} state values but has "
                             f"{len(graph.inputs)} inputs and {len(graph.outputs)} outputs")]
    errors = []
    olds, news = graph.inputs[len(graph.inputs) - n:], graph.outputs[len(graph.outputs) - n:]
    for s, old, new in zip(graph.states, olds, news):
        ty = old.type
        if (new.type.shape, new.type.dtype) != (ty.shape, ty.dtype) or any(
                v.shape != ty.shape or v.dtype != ty.dtype.np_dtype
                for v in (s.initial, s.reset)):
            errors.append(CompileError(f"state '{s.key}' is '{ty}' at the start of an "
                                       f"inference but '{new.type}' at its end, or its "
                                       "boot or reset value is of another shape or type"))
    return errors


def _graph_errors(graph: Graph, owner: Node | None) -> list[CompileError]:
    """The errors of one graph's own nodes; `owner` is the node whose region it is."""
    errors: list[CompileError] = []
    defined = {id(t) for t in graph.inputs}
    for i, t in enumerate(graph.inputs):
        problem = tensor_type_error(t.type) if t.type.is_static else None
        if problem is not None:
            errors.append(CompileError(f"argument {i}: {problem}"))
    for node in graph.nodes:
        for t in node.inputs:
            if id(t) not in defined:
                errors.append(CompileError(f"'{node.op}' uses a value before it is defined",
                                           node.loc))
                break
        err = verify_node(node)
        if err is not None:
            errors.append(err)
        defined.update(id(t) for t in node.outputs)
    errors += _state_errors(graph)
    for t in graph.outputs:
        if id(t) not in defined:
            if owner is None:
                errors.append(CompileError("graph output is never defined"))
            else:
                errors.append(CompileError(f"a region of '{owner.op}' returns a value it "
                                           "does not define", owner.loc))
    return errors
