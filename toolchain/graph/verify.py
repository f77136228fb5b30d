"""The graph verifier: every node checked against its op's rule in `ops.OPS`."""

from __future__ import annotations

from toolchain.diagnostics import CompileError, raise_all
from toolchain.graph.ir import Graph, Node
from toolchain.graph.ops import OPS, ShapeError


def verify_node(node: Node) -> CompileError | None:
    """Returns the error in `node`, or None when it is well-formed."""
    spec = OPS.get(node.op)
    if spec is None:
        return CompileError(f"unknown graph op '{node.op}'", node.loc)
    if spec.arity is not None and len(node.inputs) != spec.arity:
        return CompileError(f"'{node.op}' takes {spec.arity} operands, got {len(node.inputs)}",
                            node.loc)
    if spec.arity is None and not node.inputs:
        return CompileError(f"'{node.op}' needs at least one operand", node.loc)
    missing = [a for a in spec.attrs if a not in node.attrs]
    if missing:
        return CompileError(f"'{node.op}' lacks attribute '{missing[0]}'", node.loc)
    for t in node.inputs + node.outputs:
        if not t.type.is_static:
            return CompileError(f"'{node.op}' has a dynamic shape ({t.type}); minirt needs "
                                "static shapes", node.loc)
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
    """Raises a CompileError listing every ill-formed node (and any use before definition)."""
    errors: list[CompileError] = []
    defined = {id(t) for t in graph.inputs}
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
    for t in graph.outputs:
        if id(t) not in defined:
            errors.append(CompileError("graph output is never defined"))
    raise_all(errors)
