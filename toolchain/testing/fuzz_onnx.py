"""Structured edits of serialized ONNX models, for fuzzing the ONNX frontend.

A byte flip mostly breaks the protobuf, which the reader refuses at once; these edits
keep the file well formed and change one field a careless or hostile author could get
wrong: an attribute's value or length, an initializer's dims, type or data, a scale or
zero point, the opset, an op type, a node's wiring, the graph's outputs, an input's
shape. Each edit takes the model's bytes and a random.Random and returns the edited
bytes and one line saying what changed; a model without what the edit needs is returned
unchanged, with a line that says so. `EDITS` is the table the fuzz driver picks from;
`seed_models()` builds small models covering the ops the importer supports.

    data, what = EDITS["scale"](seed_bytes, random.Random(7))
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

Edit = Callable[[bytes, random.Random], tuple[bytes, str]]

# Integers an attribute or dimension gets: the edges of every range a reader checks.
HOSTILE_INTS = (-1, 0, 1, 2, 7, -(2**31), 2**31 - 1, 2**31, 2**62, -(2**63), 2**63 - 1)
HOSTILE_FLOATS = (0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-45, 1e38,
                  -3e38)
OPSETS = (1, 7, 10, 11, 12, 13, 21, 22, 99, 2**31 - 1)
# The ops the importer converts (a changed op type lands on one of these, so the edited
# node reaches a converter with inputs and attributes meant for another op).
KNOWN_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "MaxPool",
             "AveragePool", "GlobalAveragePool", "Relu", "Clip", "Softmax", "Add", "Mul",
             "ReduceMean", "ReduceSum", "Cast", "Identity", "Reshape", "Flatten",
             "Transpose", "Concat", "Pad", "Slice", "Squeeze", "Unsqueeze", "Gather",
             "Expand", "Shape", "ConstantOfShape", "QuantizeLinear", "DequantizeLinear",
             "QLinearConv", "QLinearMatMul", "Range", "Tile", "Loop", "Equal", "Where",
             "Max", "Pow", "Mod", "BitShift", "Gelu")
# Attributes an edit may add to a node that lacks them, with their kind.
ADDED_ATTRS = {"axis": "int", "axes": "ints", "perm": "ints", "pads": "ints",
               "strides": "ints", "dilations": "ints", "kernel_shape": "ints",
               "group": "int", "keepdims": "int", "block_size": "int", "alpha": "float",
               "auto_pad": "string", "mode": "string", "to": "int"}
# (op type, input index) of the scale inputs and zero-point inputs of the quantized ops.
SCALE_INPUTS = {("QuantizeLinear", 1), ("DequantizeLinear", 1), ("QLinearConv", 1),
                ("QLinearConv", 4), ("QLinearConv", 6), ("QLinearMatMul", 1),
                ("QLinearMatMul", 4), ("QLinearMatMul", 6)}
ZERO_POINT_INPUTS = {(op, i + 1) for op, i in SCALE_INPUTS}


def _load(data: bytes) -> onnx.ModelProto:
    return onnx.load_model_from_string(data)


def _save(model: onnx.ModelProto) -> bytes:
    return model.SerializeToString()


def _who(node: onnx.NodeProto, index: int) -> str:
    return f"node '{node.name or f'#{index}'}' ({node.op_type})"


def _rank_of(model: onnx.ModelProto) -> int:
    """The rank of the first graph input (what 'rank + 1' means for an edit)."""
    for v in model.graph.input:
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape"):
            return len(v.type.tensor_type.shape.dim)
    return 4


def _pick_int(rng: random.Random, model: onnx.ModelProto | int, instead_of: int | None = None
              ) -> int:
    """A hostile integer for `model` (or a model of that rank), other than `instead_of`
    so that an edit changes something."""
    rank = model if isinstance(model, int) else _rank_of(model)
    return rng.choice([v for v in HOSTILE_INTS + (rank, rank + 1, -rank - 1)
                       if v != instead_of])


def _attrs(model: onnx.ModelProto, kinds: tuple[int, ...]
           ) -> list[tuple[int, onnx.NodeProto, AttributeProto]]:
    return [(i, n, a) for i, n in enumerate(model.graph.node) for a in n.attribute
            if a.type in kinds]


def _unchanged(data: bytes, edit: str, what: str) -> tuple[bytes, str]:
    return data, f"{edit}: unchanged (the model has no {what})"


# ------------------------------------------------------------------ attributes


def _edit_attr(data: bytes, rng: random.Random, edit: str, kind: int, what: str,
               change: Callable[[AttributeProto, onnx.ModelProto], Any]) -> tuple[bytes, str]:
    """`change` applied to one attribute of type `kind` (it returns the new value)."""
    model = _load(data)
    found = _attrs(model, (kind,))
    if not found:
        return _unchanged(data, edit, what)
    i, node, a = rng.choice(found)
    value = change(a, model)
    return _save(model), f"{edit}: {_who(node, i)} {a.name} = {value}"


def attr_ints(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One element of an ints attribute (pads, strides, perm, axes, ...) made hostile,
    or the list made one longer, one shorter or empty."""

    def change(a: AttributeProto, model: onnx.ModelProto) -> list[int]:
        values = list(a.ints)
        how = rng.choice(("element", "element", "longer", "shorter", "empty") if values
                         else ("longer",))
        if how == "element":
            k = rng.randrange(len(values))
            values[k] = _pick_int(rng, model, values[k])
        elif how == "longer":
            values.append(_pick_int(rng, model))
        elif how == "shorter":
            values.pop(rng.randrange(len(values)))
        else:
            values = []
        del a.ints[:]
        a.ints.extend(values)
        return values

    return _edit_attr(data, rng, "attr_ints", AttributeProto.INTS, "ints attribute", change)


def attr_int(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An int attribute (axis, group, to, keepdims, ...) set to a hostile value."""

    def change(a: AttributeProto, model: onnx.ModelProto) -> int:
        a.i = _pick_int(rng, model, a.i)
        return a.i

    return _edit_attr(data, rng, "attr_int", AttributeProto.INT, "int attribute", change)


def attr_float(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A float attribute (alpha, epsilon, ...) set to 0, inf, NaN, negative, tiny."""

    def change(a: AttributeProto, model: onnx.ModelProto) -> float:
        a.f = rng.choice(HOSTILE_FLOATS)
        return a.f

    return _edit_attr(data, rng, "attr_float", AttributeProto.FLOAT, "float attribute",
                      change)


def drop_attr(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One attribute of one node removed (the op's default, or nothing, then applies)."""
    model = _load(data)
    found = [(i, n, k) for i, n in enumerate(model.graph.node) for k in range(len(n.attribute))]
    if not found:
        return _unchanged(data, "drop_attr", "attribute")
    i, node, k = rng.choice(found)
    name = node.attribute[k].name
    del node.attribute[k]
    return _save(model), f"drop_attr: {_who(node, i)} loses {name}"


def add_attr(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An attribute the node lacks (axis, perm, pads, block_size, ...) added with a
    hostile value: a schema may allow it, the converter must check it."""
    model = _load(data)
    if not model.graph.node:
        return _unchanged(data, "add_attr", "node")
    i = rng.randrange(len(model.graph.node))
    node = model.graph.node[i]
    name = rng.choice(sorted(ADDED_ATTRS))
    kind = ADDED_ATTRS[name]
    value: Any
    if kind == "int":
        value = _pick_int(rng, model)
    elif kind == "float":
        value = rng.choice(HOSTILE_FLOATS)
    elif kind == "string":
        value = rng.choice(("SAME_UPPER", "VALID", "NOTSET", "reflect", "edge", "bogus", ""))
    else:
        value = [_pick_int(rng, model) if rng.random() < 0.3 else rng.randrange(-1, 5)
                 for _ in range(rng.randrange(0, 2 * _rank_of(model) + 2))]
    for k, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[k]
            break
    kinds = {"int": AttributeProto.INT, "float": AttributeProto.FLOAT,
             "string": AttributeProto.STRING, "ints": AttributeProto.INTS}
    node.attribute.append(helper.make_attribute(name, value, attr_type=kinds[kind]))
    return _save(model), f"add_attr: {_who(node, i)} {name} = {value}"


# ------------------------------------------------------------------ initializers


def _edit_initializer(data: bytes, rng: random.Random, edit: str,
                      change: Callable[[TensorProto], str],
                      keep: Callable[[TensorProto], bool] = lambda t: True,
                      what: str = "initializer") -> tuple[bytes, str]:
    """`change` applied to one initializer that `keep` accepts (it returns what it did,
    or '' when it could not)."""
    model = _load(data)
    found = [t for t in model.graph.initializer if keep(t)]
    if not found:
        return _unchanged(data, edit, what)
    t = rng.choice(found)
    did = change(t)
    if not did:
        return _unchanged(data, edit, f"non-empty {what}")
    return _save(model), f"{edit}: initializer '{t.name}' {did}"


def init_dims(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An initializer's dims changed (one to 0, -1, huge, another size; one added or
    removed) with its data left as it was."""

    def change(t: TensorProto) -> str:
        dims = list(t.dims)
        how = rng.choice(("element", "element", "append", "drop")) if dims else "append"
        if how == "element":
            k = rng.randrange(len(dims))
            dims[k] = rng.choice([d for d in (0, -1, 2, 3, 2**31, 2**40, 2**62)
                                  if d != dims[k]])
        elif how == "append":
            dims.insert(rng.randrange(len(dims) + 1), rng.choice((1, 2, 0)))
        else:
            dims.pop(rng.randrange(len(dims)))
        del t.dims[:]
        t.dims.extend(dims)
        return f"dims = {dims}"

    return _edit_initializer(data, rng, "init_dims", change)


def init_dtype(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An initializer's element type changed, its data left as it was."""

    def change(t: TensorProto) -> str:
        t.data_type = rng.choice([d for d in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                              14, 16, 17, 21, 99) if d != t.data_type])
        return f"data_type = {t.data_type}"

    return _edit_initializer(data, rng, "init_dtype", change)


def init_raw_length(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An initializer's raw data cut short, lengthened or emptied."""

    def change(t: TensorProto) -> str:
        if not t.raw_data:  # typed fields: move the values to raw_data first
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
        raw = t.raw_data
        how = rng.choice(("cut", "grow", "empty", "odd"))
        t.raw_data = {"cut": raw[:len(raw) // 2], "grow": raw + raw, "empty": b"",
                      "odd": raw + b"\x01"}[how]
        return f"has {len(t.raw_data)} raw bytes"

    return _edit_initializer(data, rng, "init_raw_length", change)


def init_values(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One value of an integer initializer (a shape, axes, pads, starts, indices) made
    hostile: -1, 0, huge, past the rank."""
    rank = _rank_of(_load(data))

    def change(t: TensorProto) -> str:
        a = numpy_helper.to_array(t).copy()
        if a.size == 0:
            return ""
        info = np.iinfo(a.dtype)
        k = rng.randrange(a.size)
        v = _pick_int(rng, rank, int(a.reshape(-1)[k]))
        a.reshape(-1)[k] = min(max(v, int(info.min)), int(info.max))
        t.CopyFrom(numpy_helper.from_array(a, t.name))
        return f"= {a.reshape(-1).tolist()[:16]}"

    return _edit_initializer(data, rng, "init_values", change,
                             lambda t: t.data_type in (TensorProto.INT32, TensorProto.INT64),
                             "integer initializer")


def _quant_inputs(model: onnx.ModelProto, which: set[tuple[str, int]]) -> set[str]:
    return {n.input[k] for n in model.graph.node for op, k in which
            if n.op_type == op and k < len(n.input) and n.input[k]}


def _constant_tensor(model: onnx.ModelProto, name: str) -> TensorProto | None:
    """The initializer or Constant node's tensor named `name`."""
    for t in model.graph.initializer:
        if t.name == name:
            return t
    for n in model.graph.node:
        if n.op_type == "Constant" and name in n.output:
            for a in n.attribute:
                if a.name == "value" and a.type == AttributeProto.TENSOR:
                    return a.t
    return None


def scale(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A quantization scale (of a Q/DQ or QLinear node; any float initializer when the
    model has none) set to 0, inf, NaN, negative, a denormal."""
    model = _load(data)
    names = sorted(_quant_inputs(model, SCALE_INPUTS))
    tensors = [t for t in (_constant_tensor(model, n) for n in names) if t is not None]
    if not tensors:
        tensors = [t for t in model.graph.initializer if t.data_type == 1]
    if not tensors:
        return _unchanged(data, "scale", "scale or float initializer")
    t = rng.choice(tensors)
    a = numpy_helper.to_array(t).astype(np.float32).copy()
    v = rng.choice(HOSTILE_FLOATS)
    if a.size:
        if rng.random() < 0.5:
            a.reshape(-1)[rng.randrange(a.size)] = v
        else:
            a[...] = v
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return _save(model), f"scale: '{t.name}' = {a.reshape(-1).tolist()[:8]}"


def zero_point(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A zero point made hostile: out of its quantized type's range (stored wider), of
    another type, or of another shape than its scale."""
    model = _load(data)
    names = sorted(_quant_inputs(model, ZERO_POINT_INPUTS))
    tensors = [t for t in (_constant_tensor(model, n) for n in names) if t is not None]
    if not tensors:
        return _unchanged(data, "zero_point", "zero point")
    t = rng.choice(tensors)
    a = numpy_helper.to_array(t)
    how = rng.choice(("wide", "wide", "type", "shape"))
    if how == "wide":
        new = a.astype(np.int32).copy()
        if new.size:
            new.reshape(-1)[rng.randrange(new.size)] = rng.choice(
                (300, -300, 2**31 - 1, -(2**31), 65536))
    elif how == "type":
        new = a.astype(rng.choice((np.float32, np.int64, np.uint16, np.int16, np.uint8)))
    else:
        new = np.resize(a, (rng.choice((0, 2, 3, 7)),))
    t.CopyFrom(numpy_helper.from_array(np.asarray(new), t.name))
    return _save(model), (f"zero_point: '{t.name}' = {new.dtype} "
                          f"{np.asarray(new).reshape(-1).tolist()[:8]}")


# ------------------------------------------------------------------ the graph


def opset(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The default domain's opset version changed (to 1, 7, 99, ...)."""
    model = _load(data)
    v = rng.choice(OPSETS)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = v
            break
    else:
        model.opset_import.append(helper.make_opsetid("", v))
    return _save(model), f"opset: default domain version {v}"


def op_type(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A node's op type changed to another one the importer knows (inputs and
    attributes stay those of the old op)."""
    model = _load(data)
    if not model.graph.node:
        return _unchanged(data, "op_type", "node")
    i = rng.randrange(len(model.graph.node))
    node = model.graph.node[i]
    old = node.op_type
    node.op_type = rng.choice([op for op in KNOWN_OPS if op != old])
    return _save(model), f"op_type: node #{i} {old} -> {node.op_type}"


def rewire(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A node's input renamed: to a name nothing writes, to its own output, or to a
    later node's output (a cycle, or a use before the definition)."""
    model = _load(data)
    nodes = model.graph.node
    found = [(i, k) for i, n in enumerate(nodes) for k in range(len(n.input))]
    if not found:
        return _unchanged(data, "rewire", "node input")
    i, k = rng.choice(found)
    node = nodes[i]
    later = [o for n in nodes[i + 1:] for o in n.output if o]
    how = rng.choice(("missing", "self", "later", "later"))
    if how == "later" and later:
        name = rng.choice(later)
    elif how == "self" and node.output:
        name = node.output[0]
    else:
        name = "no_such_value"
    node.input[k] = name
    return _save(model), f"rewire: {_who(node, i)} input {k} reads '{name}' ({how})"


def remove_output(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One graph output removed, or all of them."""
    model = _load(data)
    outs = model.graph.output
    if not outs:
        return _unchanged(data, "remove_output", "graph output")
    if rng.random() < 0.25:
        del outs[:]
        return _save(model), "remove_output: every graph output"
    k = rng.randrange(len(outs))
    name = outs[k].name
    del outs[k]
    return _save(model), f"remove_output: '{name}'"


def input_dims(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A graph input's declared dim changed to 0, -1, huge or symbolic, or a dim added
    or removed."""
    model = _load(data)
    shaped = [v for v in model.graph.input if v.type.HasField("tensor_type")
              and v.type.tensor_type.HasField("shape")]
    if not shaped:
        return _unchanged(data, "input_dims", "shaped graph input")
    v = rng.choice(shaped)
    dims = v.type.tensor_type.shape.dim
    how = rng.choice(("value", "value", "symbolic", "add", "remove"))
    if how == "add" or not dims:
        dims.add().dim_value = rng.choice((1, 2))
    elif how == "remove":
        del dims[rng.randrange(len(dims))]
    else:
        d = dims[rng.randrange(len(dims))]
        if how == "symbolic":
            d.dim_param = rng.choice(("N", "batch", ""))
        else:
            d.dim_value = rng.choice((0, -1, 3, 2**20, 2**31, 2**62))
    shown = [d.dim_param or d.dim_value for d in dims]
    return _save(model), f"input_dims: input '{v.name}' shape = {shown}"


def swap_nodes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Two nodes exchanged in the node list (the graph is no longer in order)."""
    model = _load(data)
    nodes = model.graph.node
    if len(nodes) < 2:
        return _unchanged(data, "swap_nodes", "second node")
    i, j = sorted(rng.sample(range(len(nodes)), 2))
    a, b = onnx.NodeProto(), onnx.NodeProto()
    a.CopyFrom(nodes[i])
    b.CopyFrom(nodes[j])
    nodes[i].CopyFrom(b)
    nodes[j].CopyFrom(a)
    return _save(model), f"swap_nodes: #{i} ({a.op_type}) and #{j} ({b.op_type})"


def duplicate_node(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A node repeated right after itself: two writers of the same values."""
    model = _load(data)
    nodes = model.graph.node
    if not nodes:
        return _unchanged(data, "duplicate_node", "node")
    i = rng.randrange(len(nodes))
    copy = onnx.NodeProto()
    copy.CopyFrom(nodes[i])
    nodes.insert(i + 1, copy)
    return _save(model), f"duplicate_node: {_who(copy, i)}"


EDITS: dict[str, Edit] = {
    "attr_ints": attr_ints,
    "attr_int": attr_int,
    "attr_float": attr_float,
    "drop_attr": drop_attr,
    "add_attr": add_attr,
    "init_dims": init_dims,
    "init_dtype": init_dtype,
    "init_raw_length": init_raw_length,
    "init_values": init_values,
    "scale": scale,
    "zero_point": zero_point,
    "opset": opset,
    "op_type": op_type,
    "rewire": rewire,
    "remove_output": remove_output,
    "input_dims": input_dims,
    "swap_nodes": swap_nodes,
    "duplicate_node": duplicate_node,
}


# ------------------------------------------------------------------ seeds


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, tuple[int, ...]]],
           outputs: list[str], consts: dict[str, np.ndarray], opset_version: int = 17
           ) -> bytes:
    """A model with shapes inferred for its outputs (the checker wants their types)."""
    ins = [helper.make_tensor_value_info(k, dt, list(shape))
           for k, (dt, shape) in inputs.items()]
    graph = helper.make_graph(nodes, "seed", ins, [helper.ValueInfoProto(name=o)
                                                   for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k)
                               for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    typed = {v.name: v for v in inferred.graph.output}
    for out in model.graph.output:
        if out.name in typed and typed[out.name].type.HasField("tensor_type"):
            out.CopyFrom(typed[out.name])
    return model.SerializeToString()


def _rand(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _q(name: str, s: float | list[float], z: int | list[int], dt: type = np.int8
       ) -> dict[str, np.ndarray]:
    return {f"{name}_s": np.asarray(s, np.float32), f"{name}_z": np.asarray(z, dt)}


F, I8, I64, BOOL = TensorProto.FLOAT, TensorProto.INT8, TensorProto.INT64, TensorProto.BOOL


def seed_models() -> dict[str, bytes]:
    """Small valid models over the ops the importer supports, named by what they hold."""
    n = helper.make_node
    i64 = np.int64
    seeds = {}
    seeds["conv_pool"] = _model(
        [n("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1],
           dilations=[1, 1], kernel_shape=[3, 3], group=1),
         n("Relu", ["c"], ["r"], name="relu"),
         n("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2],
           pads=[0, 0, 0, 0]),
         n("AveragePool", ["p"], ["a"], name="avg", kernel_shape=[2, 2], pads=[1, 1, 0, 0],
           count_include_pad=1),
         n("GlobalAveragePool", ["a"], ["y"], name="gap")],
        {"x": (F, (1, 2, 6, 6))}, ["y"], {"w": _rand((4, 2, 3, 3), 1), "b": _rand((4,), 2)})
    seeds["gemm_softmax"] = _model(
        [n("Flatten", ["x"], ["f"], name="flat", axis=1),
         n("Gemm", ["f", "w", "c"], ["g"], name="gemm", transB=1, alpha=1.0, beta=1.0),
         n("Softmax", ["g"], ["y"], name="softmax", axis=-1)],
        {"x": (F, (2, 3, 2))}, ["y"], {"w": _rand((5, 6), 3), "c": _rand((5,), 4)})
    seeds["shapes"] = _model(
        [n("Reshape", ["x", "shape"], ["r"], name="reshape"),
         n("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1]),
         n("Pad", ["t", "pads"], ["p"], name="pad", mode="reflect"),
         n("Slice", ["p", "starts", "ends", "axes", "steps"], ["s"], name="slice"),
         n("Unsqueeze", ["s", "uaxes"], ["u"], name="unsqueeze"),
         n("Squeeze", ["u", "uaxes"], ["q"], name="squeeze"),
         n("Concat", ["q", "q"], ["c"], name="concat", axis=1),
         n("Gather", ["c", "idx"], ["g"], name="gather", axis=2),
         n("ReduceSum", ["g", "raxes"], ["y"], name="reduce", keepdims=1)],
        {"x": (F, (2, 12))},
        ["y"], {"shape": np.array([2, 3, 4], i64), "pads": np.array([0, 1, 1, 0, 1, 1], i64),
                "starts": np.array([0, -3], i64), "ends": np.array([2, 100], i64),
                "axes": np.array([0, 2], i64), "steps": np.array([1, 1], i64),
                "uaxes": np.array([1], i64), "idx": np.array([0, 2, -1], i64),
                "raxes": np.array([1], i64)})
    seeds["qdq_conv"] = _model(
        [n("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="qx"),
         n("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"], name="dqx"),
         n("DequantizeLinear", ["wq", "w_s", "w_z"], ["wd"], name="dqw", axis=0),
         n("DequantizeLinear", ["bq", "b_s", "b_z"], ["bd"], name="dqb", axis=0),
         n("Conv", ["xd", "wd", "bd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         n("Relu", ["c"], ["r"], name="relu"),
         n("QuantizeLinear", ["r", "y_s", "y_z"], ["yq"], name="qy"),
         n("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"], name="dqy")],
        {"x": (F, (1, 2, 5, 5))}, ["y"],
        {**_q("x", 0.03, -5), **_q("w", [0.01, 0.02, 0.015], [0, 0, 0]),
         **_q("b", [0.0003, 0.0006, 0.00045], [0, 0, 0], np.int32), **_q("y", 0.05, 3),
         "wq": np.random.default_rng(5).integers(-127, 128, (3, 2, 3, 3)).astype(np.int8),
         "bq": np.array([100, -50, 7], np.int32)})
    seeds["qlinear"] = _model(
        [n("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "c_s", "c_z", "b"], ["c"],
           name="qconv", pads=[1, 1, 1, 1], strides=[2, 1]),
         n("Reshape", ["c", "shape"], ["r"], name="reshape"),
         n("QLinearMatMul", ["r", "c_s", "c_z", "m", "m_s", "m_z", "y_s", "y_z"], ["y"],
           name="qmatmul")],
        {"x": (I8, (1, 3, 5, 5))}, ["y"],
        {**_q("x", 0.02, -3), **_q("w", [0.01, 0.02, 0.015, 0.03], [0, 0, 0, 0]),
         **_q("c", 0.07, 5), **_q("m", 0.02, 0), **_q("y", 0.5, -4),
         "w": np.random.default_rng(6).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
         "b": np.array([10, -20, 30, 0], np.int32), "shape": np.array([4, 15], i64),
         "m": np.random.default_rng(7).integers(-127, 128, (15, 6)).astype(np.int8)})
    seeds["conv_transpose_bn"] = _model(
        [n("ConvTranspose", ["x", "w"], ["c"], name="deconv", strides=[2], pads=[1, 0],
           output_padding=[1]),
         n("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], name="bn", epsilon=1e-5),
         n("Clip", ["bn", "lo", "hi"], ["y"], name="clip")],
        {"x": (F, (1, 2, 5))}, ["y"],
        {"w": _rand((2, 3, 3), 8), "g": _rand((3,), 9), "b": _rand((3,), 10),
         "m": _rand((3,), 11), "v": np.abs(_rand((3,), 12)) + 0.5,
         "lo": np.array(-1, np.float32), "hi": np.array(1, np.float32)})
    # Constants computed at import: sizes that come from values (Range's limit, Tile's
    # repeats, ConstantOfShape's shape, Expand's shape).
    seeds["folded"] = _model(
        [n("Shape", ["x"], ["sh"], name="shape"),
         n("Gather", ["sh", "one_i"], ["d1"], name="dim1", axis=0),
         n("Range", ["zero_i", "limit", "one_i"], ["r"], name="range"),
         n("Cast", ["r"], ["rf"], name="cast", to=1),
         n("Slice", ["rf", "zero_1", "d1_1"], ["rs"], name="first_d1"),
         n("Tile", ["rs", "reps"], ["t"], name="tile"),
         n("ConstantOfShape", ["zshape"], ["z"], name="zeros",
           value=numpy_helper.from_array(np.array([0.5], np.float32))),
         n("Expand", ["t", "eshape"], ["e"], name="expand"),
         n("Add", ["x", "e"], ["a"], name="add"),
         n("Mul", ["a", "z"], ["y"], name="mul")],
        {"x": (F, (2, 3))}, ["y"],
        {"zero_i": np.array(0, i64), "one_i": np.array(1, i64), "limit": np.array(5, i64),
         "zero_1": np.array([0], i64), "d1_1": np.array([3], i64),
         "reps": np.array([1], i64), "zshape": np.array([2, 3], i64),
         "eshape": np.array([2, 3], i64)})
    # Recurrent layers (their attributes and optional inputs) and ops with bodies.
    seeds["recurrent"] = _model(
        [n("LSTM", ["x", "lw", "lr", "lb", "lens", "h0"], ["ly", "lh"], name="lstm",
           hidden_size=3, direction="bidirectional", clip=2.0),
         n("GRU", ["x", "gw", "gr", "", "", ""], ["gy"], name="gru", hidden_size=3,
           linear_before_reset=1, activations=["HardSigmoid", "Tanh"],
           activation_alpha=[0.3], activation_beta=[0.4])],
        {"x": (F, (3, 2, 4)), "h0": (F, (2, 2, 3))}, ["ly", "lh", "gy"],
        {"lw": _rand((2, 12, 4), 13), "lr": _rand((2, 12, 3), 14), "lb": _rand((2, 24), 15),
         "lens": np.array([3, 2], np.int32), "gw": _rand((1, 9, 4), 16),
         "gr": _rand((1, 9, 3), 17)})
    body = helper.make_graph(
        [n("ReduceSum", ["v"], ["total"], name="total", keepdims=0),
         n("Less", ["total", "limit"], ["small"], name="small"),
         n("If", ["small"], ["v2"], name="branch",
           then_branch=helper.make_graph([n("Add", ["v", "x"], ["up"], name="up")], "then",
                                         [], [helper.make_tensor_value_info("up", F, [3])]),
           else_branch=helper.make_graph([n("Sub", ["v", "x"], ["dn"], name="dn")], "else",
                                         [], [helper.make_tensor_value_info("dn", F, [3])])),
         n("Identity", ["c"], ["c2"], name="keep"),
         n("Identity", ["v2"], ["row"], name="row")],
        "body", [helper.make_tensor_value_info("i", I64, []),
                 helper.make_tensor_value_info("c", BOOL, []),
                 helper.make_tensor_value_info("v", F, [3])],
        [helper.make_tensor_value_info(k, t, s) for k, t, s in (
            ("c2", BOOL, []), ("v2", F, [3]), ("row", F, [3]))])
    scan_body = helper.make_graph(
        [n("Add", ["s", "e"], ["s2"], name="acc")], "scan_body",
        [helper.make_tensor_value_info("s", F, [3]), helper.make_tensor_value_info("e", F, [3])],
        [helper.make_tensor_value_info("s2", F, [3])])
    control = onnx.load_model_from_string(_model(
        [n("Loop", ["trips", "", "x"], ["v", "rows"], name="loop", body=body),
         n("Scan", ["x", "rows"], ["y"], name="scan", body=scan_body, num_scan_inputs=1,
           scan_input_directions=[1])],
        {"x": (F, (3,))}, ["v", "y"], {"trips": np.array(4, i64),
                                       "limit": np.array(2.0, np.float32)}))
    for out in control.graph.output:  # shape inference leaves a Loop's shapes open
        out.CopyFrom(helper.make_tensor_value_info(out.name, F, [3]))
    seeds["control"] = control.SerializeToString()
    return seeds


__all__ = ["EDITS", "Edit", "seed_models"]
