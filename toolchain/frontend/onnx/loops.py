"""ONNX `Loop` and `Scan` as the graph's `while` (regions: cond, body).

Loop(M, cond, v...) carries (iteration number, condition, v..., one buffer per scan
output) through the `while`: the cond region tests `i < M and cond` (either part
absent when the Loop omits it), the body region is the ONNX body (regions.py) followed
by i + 1 and each scan output written into row i of its buffer. A scan output's
buffer has M rows, so it needs M known at build time (a constant, or pinned with
--input-value) and a loop that cannot stop before M iterations (its condition absent
or constant true, and the body returning its condition input as it is); otherwise
the scan output would have a shape known only at run time, which minirt refuses.

Scan(state..., scan inputs...) is a `while` over the scan inputs' common length L:
(i, state..., output buffers); the body region first takes element i (or L-1-i for a
reversed input) of each scan input along its axis with a dynamic_slice, and ends by
writing each scan output element into its buffer at position i (or L-1-i) along its
output axis.

Carried values keep their type: ONNX lets a loop-carried value change shape between
iterations, minirt's static shapes do not (refused in one line).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import NodeInfo
from toolchain.frontend.onnx.regions import (
    Scope,
    captures_of,
    import_region,
    read_subgraph,
    scalar_of,
)
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.verify import verify_node
from toolchain.types import TensorType, dtype

I64, I1 = dtype("i64"), dtype("i1")


def _builder(node: NodeInfo, graph: Graph, scope: Scope) -> OpContext:
    """An OpContext adding nodes to `graph` (a region being assembled)."""
    return OpContext(node, graph, scope.lookup, scope.as_tensor, 0)


def _check_carried(region: Graph, first_in: int, first_out: int, count: int,
                   what: str) -> None:
    for k in range(count):
        t_in, t_out = region.inputs[first_in + k].type, region.outputs[first_out + k].type
        if t_in != t_out:
            raise Unsupported(f"{what} {k} enters the body as {t_in} and leaves it as "
                              f"{t_out}; minirt's shapes are static")


def _add_buffers(region: Graph, at: int, types: list[TensorType]) -> list[Tensor]:
    """New region inputs of `types`, inserted at position `at` (before the captures)."""
    bufs = [Tensor(t, f"buffer{k}") for k, t in enumerate(types)]
    region.inputs[at:at] = bufs
    return bufs


def _write(b: OpContext, buf: Tensor, element: Tensor, axis: int, pos: Tensor) -> Tensor:
    """`element` written into `buf` at index `pos` of `axis` (the element lacks it)."""
    shape = list(element.type.shape)
    shape.insert(axis, 1)
    zero = b.constant(0, I64)
    starts = [pos if d == axis else zero for d in range(len(shape))]
    return b.node("dynamic_update_slice", [buf, b.reshape(element, shape), *starts])


def _while(scope: Scope, operands: list[Tensor], captures: list[str], cond: Graph,
           body: Graph) -> list[Tensor]:
    node = scope.graph.add("while", [*operands, *(scope.as_tensor(c) for c in captures)],
                           [t.type for t in operands], regions=[cond, body])
    err = verify_node(node)
    if err is not None:
        raise Unsupported(err.message)
    return list(node.outputs)


def _cond_region(body: Graph, name: str) -> Graph:
    """A cond region with the body's input types (fresh inputs)."""
    cond = Graph(name)
    for t in body.inputs:
        cond.add_input(t.type, t.name)
    return cond


def _always_true(region: Graph) -> bool:
    """Whether a Loop body returns its condition input unchanged (or constant true)."""
    out = region.outputs[0]
    if out is region.inputs[1]:
        return True
    p = out.producer
    return (p is not None and p.op == "constant" and bool(np.all(p.attrs["value"])))


def loop(scope: Scope, node: NodeInfo) -> list[Tensor]:
    """Loop as a `while`; its results: the final carried values, then the scan outputs."""
    body_proto = node.attrs.get("body")
    if body_proto is None:
        raise Unsupported("it has no body")
    body = read_subgraph(body_proto.g, "body", scope.next_index)
    n_carried = len(node.inputs) - 2
    n_scan = len(body.outputs) - 1 - n_carried
    if len(body.inputs) != 2 + n_carried or n_scan < 0:
        raise Unsupported(f"its body takes {len(body.inputs)} inputs and returns "
                          f"{len(body.outputs)} values for {n_carried} carried values")
    outer = _builder(node, scope.graph, scope)
    trip = scope.lookup(node.inputs[0]) if node.inputs[0] else None
    if trip is None and not node.inputs[1]:
        raise Unsupported("it has neither a trip count nor a condition: it never ends")
    captures = captures_of(scope, [body_proto.g])
    trip_name = node.inputs[0]
    if isinstance(trip, Tensor) and trip_name not in captures:
        captures.append(trip_name)
    cond0 = (scalar_of(scope.graph, scope.as_tensor(node.inputs[1]), "the condition")
             if node.inputs[1] else outer.constant(True, I1))
    if cond0.type.dtype != I1:
        raise Unsupported(f"its condition is {cond0.type.dtype}; Loop takes a bool")
    carried = [scope.as_tensor(n) for n in node.inputs[2:]]
    own = [(body.inputs[0], TensorType((), I64)), (body.inputs[1], TensorType((), I1)),
           *((name, t.type) for name, t in zip(body.inputs[2:], carried))]
    region = import_region(scope, body, own, captures)
    _check_carried(region, 2, 1, n_carried, "carried value")
    b = _builder(node, region, scope)
    i, scans = region.inputs[0], region.outputs[1 + n_carried:]
    bufs: list[Tensor] = []
    if n_scan:
        cond_given = scope.values.get(node.inputs[1]) if node.inputs[1] else np.array(True)
        if not isinstance(trip, np.ndarray):
            raise Unsupported("its scan outputs have one row per iteration, so the trip "
                              "count must be known when the model is built (a constant, "
                              "or pinned with --input-value)")
        if not (isinstance(cond_given, np.ndarray) and bool(np.all(cond_given))
                and _always_true(region)):
            raise Unsupported("its scan outputs have one row per iteration, and its "
                              "condition may end it before the trip count: their shape "
                              "would be known at run time only")
        rows = int(trip.reshape(-1)[0])
        bufs = _add_buffers(region, 2 + n_carried, [
            TensorType((rows, *t.type.shape), t.type.dtype) for t in scans])
    cond_out = scalar_of(region, region.outputs[0], "the body's condition")
    if cond_out.type.dtype != I1:
        raise Unsupported(f"its body's condition is {cond_out.type.dtype}; a bool is "
                          "expected")
    written = [_write(b, buf, s, 0, i) for buf, s in zip(bufs, scans)]
    next_i = b.node("add", [i, b.constant(1, I64)])
    region.outputs = [next_i, cond_out, *region.outputs[1:1 + n_carried], *written]

    cond = _cond_region(region, "cond")
    c = _builder(node, cond, scope)
    test = cond.inputs[1]
    if trip is not None:
        limit = (c.constant(int(np.asarray(trip).reshape(-1)[0]), I64)
                 if isinstance(trip, np.ndarray) else
                 scalar_of(cond, cond.inputs[len(cond.inputs) - len(captures)
                                             + captures.index(trip_name)], "the trip count"))
        below = c.node("compare", [cond.inputs[0], c.node("convert", [limit], dtype="i64")
                                   if limit.type.dtype != I64 else limit], direction="LT")
        test = c.node("and", [below, test])
    cond.outputs = [test]
    operands = [outer.constant(0, I64), cond0, *carried,
                *(outer.broadcast(outer.constant(0, buf.type.dtype), tuple(buf.type.shape),
                                  ()) for buf in bufs)]
    results = _while(scope, operands, captures, cond, region)
    return results[2:]


def scan(scope: Scope, node: NodeInfo) -> list[Tensor]:
    """Scan (opset 9 and later) as a `while`; its results: the final states, then the
    scan outputs."""
    body_proto = node.attrs.get("body")
    n_inputs = node.attrs.get("num_scan_inputs")
    if body_proto is None or not isinstance(n_inputs, int):
        raise Unsupported("it needs a body and num_scan_inputs")
    body = read_subgraph(body_proto.g, "body", scope.next_index)
    n_state = len(node.inputs) - n_inputs
    n_out = len(body.outputs) - n_state
    if n_state < 0 or n_out < 0 or len(body.inputs) != len(node.inputs):
        raise Unsupported(f"its body takes {len(body.inputs)} inputs and returns "
                          f"{len(body.outputs)} values for {len(node.inputs)} inputs")
    xs = [scope.as_tensor(n) for n in node.inputs[n_state:]]
    states = [scope.as_tensor(n) for n in node.inputs[:n_state]]
    in_axes = [axis_of(a, x.type.rank, "scan_input_axes") for a, x in zip(
        node.attrs.get("scan_input_axes", [0] * n_inputs), xs)]
    in_rev = node.attrs.get("scan_input_directions", [0] * n_inputs)
    out_axes = node.attrs.get("scan_output_axes", [0] * n_out)
    out_rev = node.attrs.get("scan_output_directions", [0] * n_out)
    if len(in_axes) != n_inputs or len(in_rev) != n_inputs or len(out_axes) != n_out \
            or len(out_rev) != n_out:
        raise Unsupported("its scan axes and directions do not match its inputs and "
                          "outputs")
    lengths = {x.type.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise Unsupported(f"its scan inputs have different lengths {sorted(lengths)}")
    length = lengths.pop()
    scanned = list(dict.fromkeys(node.inputs[n_state:]))
    captures = scanned + [c for c in captures_of(scope, [body_proto.g]) if c not in scanned]
    # The step number is no value of the ONNX body: a name it cannot read.
    own = [(f"{node.name or 'scan'}.i", TensorType((), I64)),
           *((name, t.type) for name, t in zip(body.inputs[:n_state], states))]

    def elements(region: Graph, values: dict[str, Any]) -> dict[str, Any]:
        b = _builder(node, region, scope)
        i = region.inputs[0]
        last = b.constant(length - 1, I64)
        zero = b.constant(0, I64)
        out = {}
        for name, outer_name, axis, rev in zip(body.inputs[n_state:], node.inputs[n_state:],
                                               in_axes, in_rev):
            x = values[outer_name]
            pos = b.node("subtract", [last, i]) if rev else i
            sizes = list(x.type.shape)
            sizes[axis] = 1
            starts = [pos if d == axis else zero for d in range(x.type.rank)]
            part = b.node("dynamic_slice", [x, *starts], slice_sizes=tuple(sizes))
            out[name] = b.reshape(part, [s for d, s in enumerate(sizes) if d != axis])
        return out

    region = import_region(scope, body, own, captures, elements)
    _check_carried(region, 1, 0, n_state, "state")
    b = _builder(node, region, scope)
    i = region.inputs[0]
    element_outs = region.outputs[n_state:]
    axes = [axis_of(a, t.type.rank + 1, "scan_output_axes")
            for a, t in zip(out_axes, element_outs)]
    types = []
    for t, a in zip(element_outs, axes):
        shape = list(t.type.shape)
        shape.insert(a, length)
        types.append(TensorType(tuple(shape), t.type.dtype))
    bufs = _add_buffers(region, 1 + n_state, types)
    last = b.constant(length - 1, I64)
    written = [_write(b, buf, e, a, b.node("subtract", [last, i]) if rev else i)
               for buf, e, a, rev in zip(bufs, element_outs, axes, out_rev)]
    next_i = b.node("add", [i, b.constant(1, I64)])
    region.outputs = [next_i, *region.outputs[:n_state], *written]

    cond = _cond_region(region, "cond")
    c = _builder(node, cond, scope)
    cond.outputs = [c.node("compare", [cond.inputs[0], c.constant(length, I64)],
                           direction="LT")]
    outer = _builder(node, scope.graph, scope)
    operands = [outer.constant(0, I64), *states,
                *(outer.broadcast(outer.constant(0, t.dtype), tuple(t.shape), ())
                  for t in types)]
    results = _while(scope, operands, captures, cond, region)
    return results[1:]


__all__ = ["loop", "scan"]
