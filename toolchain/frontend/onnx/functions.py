"""Ops ONNX defines as functions of other ops (Attention, SoftmaxCrossEntropyLoss,
NegativeLogLikelihoodLoss, RotaryEmbedding, MeanVarianceNormalization, ...): a node
without a converter of its own is replaced by its schema's function body, as ONNX
specifies the op's meaning, and the body's nodes are converted one by one.

The body is the one of the schema at the model's opset (a context-dependent one is
built for the node's attributes and input types by onnx itself); its values are renamed
apart under the node's name, and attribute references take the node's attributes (the
schema's defaults where the node has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchain.frontend.onnx.reader import DTYPES, NodeInfo, node_attributes


def _onnx_type(t: tuple[str, Sequence[int]] | None) -> Any:
    """A TypeProto of (element type, shape); an empty one for an omitted input."""
    from onnx import TypeProto, helper

    if t is None:
        return TypeProto()
    codes = {name: code for code, name in DTYPES.items()}
    return helper.make_tensor_type_proto(codes[t[0]], list(t[1]))


def _body(node: NodeInfo, opset: int, input_types: list[tuple[str, tuple[int, ...]] | None]
          ) -> Any | None:
    """The FunctionProto defining `node` at `opset`, or None when its op has none."""
    from onnx import FunctionProto, defs

    try:
        schema = defs.get_schema(node.op_type, opset, node.domain or "")
    except Exception:  # noqa: BLE001 - no schema: the node stays unsupported
        return None
    # A function defined for the newest version at or below the model's opset.
    plain = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if not plain and not dependent:
        return None
    proto = FunctionProto()
    if dependent and (not plain or max(dependent) >= max(plain)):
        types = [_onnx_type(t).SerializeToString() for t in input_types]
        proto.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            max(dependent), _with_defaults(node, schema).SerializeToString(), types))
    else:
        proto.ParseFromString(schema.get_function_with_opset_version(max(plain)))
    return proto


def _with_defaults(node: NodeInfo, schema: Any) -> Any:
    """The node's proto with every attribute it omits set to the schema's default."""
    from onnx import NodeProto

    proto = NodeProto()
    proto.CopyFrom(node.proto)
    given = {a.name for a in proto.attribute}
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value.name:
            proto.attribute.append(attr.default_value)
    return proto


def expand(node: NodeInfo, opset: int, input_types: list[tuple[str, tuple[int, ...]] | None]
           ) -> list[NodeInfo] | None:
    """`node` as the nodes of its function body, or None when its op has no body."""
    from onnx import AttributeProto, NodeProto, defs

    body = _body(node, opset, input_types)
    if body is None:
        return None
    schema = defs.get_schema(node.op_type, opset, node.domain or "")
    attrs = {a.name: a for a in _with_defaults(node, schema).attribute}
    names = {inner: outer for inner, outer in zip(body.input, node.inputs)}
    names.update({inner: outer for inner, outer in zip(body.output, node.outputs) if outer})
    prefix = f"{node.name or node.outputs[0]}/{node.op_type}/"

    def rename(name: str) -> str:
        return names.get(name, prefix + name) if name else ""

    nodes = []
    for i, inner in enumerate(body.node):
        p = NodeProto()
        p.CopyFrom(inner)
        p.name = prefix + (inner.name or str(i))
        p.ClearField("input")
        p.ClearField("output")
        p.input.extend(rename(n) for n in inner.input)
        p.output.extend(rename(n) for n in inner.output)
        p.ClearField("attribute")
        for a in inner.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in attrs:
                    continue  # absent on the node: the inner op's own default applies
                a2 = AttributeProto()
                a2.CopyFrom(attrs[a.ref_attr_name])
                a2.name = a.name
                p.attribute.append(a2)
            else:
                p.attribute.append(a)
                if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                    for g in _graphs(p.attribute[-1]):
                        _rename_outer(g, rename, set())
        info = NodeInfo(node.index, p.name, p.op_type, p.domain, list(p.input),
                        list(p.output), proto=p)
        info.attrs = node_attributes(p, info.describe())
        nodes.append(info)
    return nodes


def _graphs(attr: Any) -> list[Any]:
    from onnx import AttributeProto

    return [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)


def _rename_outer(graph: Any, rename: Any, outer_defined: set[str]) -> None:
    """Renames, in place, the names a body subgraph (a Scan's or Loop's in a function)
    reads from the function body around it, as that body's values were renamed; names
    the subgraph (or one enclosing it inside the function) defines stay as they are."""
    defined = set(outer_defined) | {i.name for i in graph.input} | {
        t.name for t in graph.initializer}
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name and name not in defined:
                node.input[k] = rename(name)
        for a in node.attribute:
            for g in _graphs(a):
                _rename_outer(g, rename, defined)
        defined.update(node.output)
    for out in graph.output:
        if out.name not in defined:
            out.name = rename(out.name)


__all__ = ["expand"]
