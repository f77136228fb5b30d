"""An ONNX model (as read by reader.py) -> verified Graph.

Nodes are converted in order through the table in ops.py. Constant-like values stay
numpy arrays (a node whose inputs are all constant is evaluated at import with onnx's
own reference implementation), so shape computations (Shape -> Gather -> Concat ->
Reshape, as PyTorch exports a flatten) cost nothing. DequantizeLinear outputs are
quantized views (context.QView): when an op's inputs are such views and its result goes
to a QuantizeLinear (through a Relu or Clip for convolutions and matrix products), the
op's int8 converter computes the QuantizeLinear's output in integers; otherwise the op
runs in float on the dequantized values.

Problems are collected over the whole model and reported together, one line per node
(`node 'conv1' (Conv): ...`); a node that reads the output of a failed one is skipped
rather than reported twice.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.frontend.onnx.context import OpContext, QView, Value
from toolchain.frontend.onnx.control import REGION_OPS, Branch, taken_branch
from toolchain.frontend.onnx.errors import NotInt8, OnnxError, Unsupported
from toolchain.frontend.onnx.functions import expand
from toolchain.frontend.onnx.ops import NO_FOLD, OPS, OpRow
from toolchain.frontend.onnx.quant import OutputQuant, dequantize_view, output_quant
from toolchain.frontend.onnx.reader import (
    DTYPES,
    SUB_BYTE_ARRAYS,
    ModelInfo,
    NodeInfo,
    load_model,
)
from toolchain.frontend.onnx.regions import body_reads
from toolchain.graph.custom_ops import MAX_CUSTOM_OPS, CustomOp
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.ops import ShapeError
from toolchain.graph.sources import Source, tag_new
from toolchain.graph.verify import verify_graph
from toolchain.small_floats import element_type_of
from toolchain.types import TensorType, dtype, to_dtype

# Constant folding evaluates a node at import only when its result stays this small
# (elements): larger constants are left to the graph (a broadcast stays an index map).
FOLD_LIMIT = 1 << 16
# What a converter may raise on inputs it did not expect (bad attribute types, ...):
# reported as the node's error rather than as a traceback.
_CONVERT_ERRORS = (ShapeError, ValueError, TypeError, KeyError, IndexError, ArithmeticError)


class _Importer:
    def __init__(self, model: ModelInfo, graph: Graph,
                 custom_ops: dict[str, CustomOp] | None = None):
        self.custom_ops = custom_ops or {}
        self.custom_count = 0  # custom_call nodes made so far: the next one's ordinal
        self.model = model
        self.graph = graph
        self.values: dict[str, Value] = dict(model.initializers)
        self.tensors: dict[str, Tensor] = {}  # constants and views made graph tensors
        self.failed: set[str] = set()
        self.done: set[int] = set()  # nodes consumed by a fused int8 pattern
        self.not_folded: dict[int, str] = {}  # why a node of constants was not evaluated
        self.errors: list[str] = []
        self.consumers: dict[str, list[NodeInfo]] = {}
        for node in model.nodes:
            for name in node.inputs:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.graph_outputs = {o.name for o in model.outputs}
        self.next_index = len(model.nodes)  # the first number free for a branch's nodes

    # ------------------------------------------------------------ values

    def lookup(self, name: str) -> Value:
        if name not in self.values:
            raise Unsupported(f"it reads '{name}', which no earlier node writes")
        return self.values[name]

    def as_tensor(self, name: str) -> Tensor:
        """The graph tensor of value `name`: constants become `constant` nodes and views
        are dequantized, once each."""
        v = self.lookup(name)
        if isinstance(v, Tensor):
            return v
        if name in self.tensors:
            return self.tensors[name]
        t = dequantize_view(self.graph, v) if isinstance(v, QView) else self._constant(v, name)
        self.tensors[name] = t
        return t

    def _constant(self, array: np.ndarray, name: str) -> Tensor:
        dt = _array_dtype(array, name)
        ty = TensorType(array.shape, dt)
        return self.graph.add("constant", [], [ty], {"value": to_dtype(array, dt)}).output

    # ------------------------------------------------------------ nodes

    def context(self, node: NodeInfo) -> OpContext:
        return OpContext(node, self.graph, self.lookup, self.as_tensor, self.model.opset)

    def fold(self, node: NodeInfo) -> list[np.ndarray] | None:
        """The outputs of a node whose inputs are all constant, evaluated with onnx's
        reference implementation; None when it cannot be (or should not be) folded."""
        if node.op_type in NO_FOLD or node.domain not in ("", "ai.onnx"):
            return None
        ins = [n for n in node.inputs if n]
        if not all(isinstance(self.values.get(n), np.ndarray) for n in ins):
            return None
        why = _fold_unbounded(node, {n: self.values[n] for n in ins}, self.model.opset)
        if why is not None:
            self.not_folded[node.index] = why
            return None
        from onnx.reference import ReferenceEvaluator

        try:
            evaluator = ReferenceEvaluator(node.proto, opsets={"": self.model.opset})
            outs = evaluator.run(None, {n: self.values[n] for n in ins})
        except Exception:  # any op the reference cannot evaluate: converted normally
            return None
        outs = [np.asarray(o) for o in outs]
        if any(o.size > FOLD_LIMIT or o.dtype == object for o in outs):
            return None
        return outs

    def convert_custom(self, node: NodeInfo, custom: CustomOp) -> None:
        """A custom-domain node the user registered (--custom-op): one custom_call node
        with the types the file declares for its outputs (value_info), and the bytes of
        its `options` string attribute, its only attribute, as the kernel's options."""
        others = sorted(set(node.attrs) - {"options"})
        if others:
            raise Unsupported(f"has attributes {', '.join(others)}; a custom node passes its "
                              "kernel one, 'options' (bytes)")
        types = []
        for name in node.outputs:
            info = self.model.declared.get(name)
            if info is None or info.dtype is None or info.dims is None or \
                    not all(isinstance(d, int) for d in info.dims):
                raise Unsupported(f"its output '{name}' has no static type in the file; a "
                                  "custom node's outputs need one (value_info)")
            types.append(TensorType(tuple(info.dims), info.dtype))
        if self.custom_count >= MAX_CUSTOM_OPS:
            raise Unsupported(f"the model has more than {MAX_CUSTOM_OPS} custom nodes")
        if any(n in self.failed for n in node.inputs if n):
            self.failed.update(node.outputs)
            return
        options = b"".join(a.s for a in node.proto.attribute if a.name == "options")
        inputs = [self.as_tensor(n) for n in node.inputs if n]
        result = self.graph.add("custom_call", inputs, types,
                                {"op": custom, "options": options,
                                 "ordinal": self.custom_count, "result_types": tuple(types)})
        self.custom_count += 1
        self.bind(node, list(result.outputs))

    def convert(self, node: NodeInfo) -> None:
        custom = self.custom_ops.get(node.op_type) \
            if node.domain not in ("", "ai.onnx") else None
        if custom is not None:
            self.convert_custom(node, custom)
            return
        if node.domain not in ("", "ai.onnx") or node.op_type in self.model.unknown_ops:
            where = f" (domain {node.domain})" if node.domain not in ("", "ai.onnx") else ""
            raise Unsupported(f"is not supported{where}")
        row = OPS.get(node.op_type)
        regional = REGION_OPS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        reads = [*node.inputs, *(body_reads(node) if regional else [])]
        if any(n in self.failed for n in reads if n):
            if row is None and regional is None:
                raise Unsupported("")
            self.failed.update(node.outputs)
            return
        if node.op_type == "If" and node.domain in ("", "ai.onnx"):
            branch = taken_branch(node, self.values.get(node.inputs[0]), self.next_index)
            if branch is not None:
                self.convert_branch(node, branch)
                return
        if regional is not None:
            try:
                self.bind(node, regional(self, node))
            except _CONVERT_ERRORS as e:
                raise Unsupported(f"{type(e).__name__}: {e}") from None
            return
        folded = self.fold(node)
        if folded is not None:
            self.bind(node, folded)
            return
        if row is None:
            why = self.not_folded.get(node.index)
            if why:  # too large to evaluate: its body (a Range's Loop) would not do better
                raise Unsupported(f"is not supported ({why})")
            body = expand(node, self.model.opset, [self.type_of(n) for n in node.inputs])
            if body is None:
                raise Unsupported("")
            self.convert_body(body)
            return
        n = len(node.inputs)
        if n < row.min_inputs or (row.max_inputs is not None and n > row.max_inputs):
            raise Unsupported(f"it has {n} inputs; {node.op_type} takes "
                              f"{row.min_inputs} to {row.max_inputs or 'any number of'}")
        ctx = self.context(node)
        if row.int8 is not None and self.try_int8(node, row, ctx):
            return
        try:
            result = row.convert(ctx)
        except _CONVERT_ERRORS as e:
            raise Unsupported(f"{type(e).__name__}: {e}") from None
        self.bind(node, result)

    def type_of(self, name: str) -> tuple[str, tuple[int, ...]] | None:
        """(element type, shape) of value `name` (None for an omitted input), for the
        context-dependent function bodies that depend on them."""
        if not name:
            return None
        v = self.lookup(name)
        if isinstance(v, Tensor):
            return v.type.dtype.name, tuple(v.type.shape)
        if isinstance(v, QView):
            return "f32", v.shape
        return _array_dtype(v, name).name, tuple(v.shape)

    def convert_body(self, body: list[NodeInfo]) -> None:
        """The nodes of an op's ONNX function body, converted in order; a failure is the
        op's, naming the body's op that failed."""
        for sub in body:
            try:
                self.convert(sub)
            except Unsupported as e:
                what = " ".join(str(e).split()) or "is not supported"
                sep = " " if what.startswith("is not supported") else ": "
                raise Unsupported(f"is not supported (in the ONNX function that defines it: "
                                  f"{sub.op_type}{sep}{what})") from None

    def convert_branch(self, node: NodeInfo, branch: Branch) -> None:
        """The nodes of the branch an If takes, converted in place of the If; its
        outputs are the If's. A failure is the If's, naming the branch's node."""
        self.next_index += len(branch.nodes)
        self.values.update(branch.initializers)
        for sub in branch.nodes:
            try:
                self.convert(sub)
            except Unsupported as e:
                what = " ".join(str(e).split()) or "is not supported"
                sep = " " if what.startswith("is not supported") else ": "
                raise Unsupported(f"in its {branch.name}: {sub.describe()}{sep}{what}"
                                  ) from None
        self.bind(node, [self.lookup(name) for name in branch.outputs])

    def try_int8(self, node: NodeInfo, row: OpRow, ctx: OpContext) -> bool:
        """Converts a node with quantized inputs by its int8 converter, the result being
        the value its QuantizeLinear consumer (found by output_quant) writes. False, with
        the graph as it was, when the pattern has no exact integer form."""
        if not any(isinstance(self.values.get(n), QView) for n in node.inputs if n):
            return False
        out = output_quant(node, self.consumers, self.graph_outputs, self.values)
        mark = (len(self.graph.nodes), dict(self.tensors))
        try:
            result = row.int8(ctx, out)
        except NotInt8:
            self.graph.nodes[mark[0]:] = []
            self.tensors = mark[1]
            return False
        except _CONVERT_ERRORS as e:
            raise Unsupported(f"{type(e).__name__}: {e}") from None
        if isinstance(result, QView):  # data movement: still a view of the same scale
            self.bind(node, result)
            return True
        assert out is not None
        self.bind_int8(node, out, result)
        return True

    def bind_int8(self, node: NodeInfo, out: OutputQuant, result: Tensor) -> None:
        """The fused pattern's int8 result is the QuantizeLinear's output; the node's own
        output and the fused activations are never computed in float."""
        for fused in out.nodes:
            self.done.add(fused.index)
        name = out.nodes[-1].outputs[0]
        result.name = name
        self.values[name] = result

    def bind(self, node: NodeInfo, result: Value | list) -> None:
        results = result if isinstance(result, list) else [result]
        outs = [o for o in node.outputs if o]
        if len(results) < len(outs):
            raise Unsupported(f"{len(outs)} outputs are used; minirt computes "
                              f"{len(results)}")
        for name, value in zip(node.outputs, results):
            if not name:
                continue
            if isinstance(value, Tensor) and not value.name:
                value.name = name
            self.values[name] = value

    def add_inputs(self) -> None:
        for info, ty in self.model.inputs:
            self.values[info.name] = self.graph.add_input(ty, info.name)
            self.graph.input_names.append(info.name)

    def run(self) -> None:
        self.add_inputs()
        for node in self.model.nodes:
            if node.index in self.done:
                continue
            start = len(self.graph.nodes)
            try:
                self.convert(node)
                # A node without a name (common in exported models) is known by its output.
                name = node.name or next((o for o in node.outputs if o), "")
                tag_new(self.graph, start, Source(name, f"onnx {node.describe()}"))
            except Unsupported as e:
                what = " ".join(str(e).split()) or "is not supported"  # one line each
                sep = " " if what.startswith("is not supported") else ": "
                self.errors.append(f"{node.describe()}{sep}{what}")
                self.failed.update(node.outputs)
        for out in self.model.outputs:
            if out.name in self.failed:
                continue
            try:
                t = self.as_tensor(out.name)
            except Unsupported:
                self.errors.append(f"output '{out.name}' is never written")
                continue
            problem = _declared_mismatch(out, t)
            if problem:
                self.errors.append(f"output '{out.name}': {problem}")
                continue
            self.graph.outputs.append(t)


def _fold_unbounded(node: NodeInfo, inputs: dict[str, np.ndarray], opset: int
                    ) -> str | None:
    """Why evaluating `node` at import might not be cheap, or None when onnx's shape
    inference, given the constant inputs, proves every output static and at most
    FOLD_LIMIT elements.

    The result's size is known before anything is computed, so a Range, Tile,
    ConstantOfShape or Expand of hostile sizes (2**40 elements) is never allocated, and
    ops with a body (Loop, Scan, If), whose trip count inference cannot bound, are never
    run. Large inputs are given by their type only: sizes that depend on values come
    from small integer tensors (a shape, repeats, limits)."""
    import onnx
    from onnx import AttributeProto, helper, numpy_helper

    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS)
           for a in node.proto.attribute):
        return "an op with a body is not evaluated at import"
    try:
        inits, typed = [], []
        for name, value in inputs.items():
            if value.size <= FOLD_LIMIT:
                inits.append(numpy_helper.from_array(value, name))
            else:
                elem = helper.np_dtype_to_tensor_dtype(value.dtype)
                typed.append(helper.make_tensor_value_info(name, elem, value.shape))
        graph = helper.make_graph([node.proto], "fold", typed,
                                  [helper.ValueInfoProto(name=o) for o in node.outputs if o],
                                  inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference refuses the node: leave it to its converter
        return "onnx's shape inference cannot bound its result"
    shapes = {v.name: v.type for v in inferred.graph.output}
    for name in (o for o in node.outputs if o):
        ty = shapes.get(name)
        if ty is None or not ty.HasField("tensor_type") or \
                not ty.tensor_type.HasField("shape"):
            return "onnx's shape inference cannot bound its result"
        dims = ty.tensor_type.shape.dim
        if not all(d.HasField("dim_value") and d.dim_value >= 0 for d in dims):
            return "onnx's shape inference cannot bound its result"
        size = math.prod(d.dim_value for d in dims)
        if size > FOLD_LIMIT:
            return (f"its constant result of {size} elements is larger than the "
                    f"{FOLD_LIMIT} minirt evaluates at import")
    return None


def _array_dtype(array: np.ndarray, name: str):
    sub_byte = SUB_BYTE_ARRAYS.get(array.dtype.name)
    if sub_byte is not None:  # an ml_dtypes int4 / uint2 / ... array: held a byte each
        return dtype(sub_byte)
    held = element_type_of(array.dtype)  # bfloat16 and the small floats: ml_dtypes'
    if held is not None:
        return dtype(held)
    for dt_name in DTYPES.values():
        dt = dtype(dt_name)
        if dt.np_dtype == array.dtype and dt_name != "bf16":
            return dt
    raise Unsupported(f"'{name}' holds {array.dtype} values, which minirt does not support")


def _declared_mismatch(info, t: Tensor) -> str | None:
    """How the computed type disagrees with the type the model declares for an output
    (dimensions without a size, like a batch 'N', match anything)."""
    if info.dtype is not None and info.dtype != t.type.dtype:
        return f"minirt computes {t.type.dtype}, the model declares {info.dtype}"
    if info.dims is not None:
        shape = tuple(t.type.shape)
        if len(info.dims) != len(shape) or any(isinstance(d, int) and d != s
                                               for d, s in zip(info.dims, shape)):
            return (f"minirt computes shape {list(shape)}, the model declares "
                    f"{info.describe()}")
    return None


def import_model(model: ModelInfo, path: str = "model.onnx",
                 custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    """Builds the verified Graph, the custom-domain nodes registered in `custom_ops` (by
    op type) as custom_call nodes. Raises OnnxError listing every problem, one line
    each, prefixed with `path`."""
    graph = Graph("main")
    importer = _Importer(model, graph, custom_ops)
    importer.run()
    if importer.errors:
        raise OnnxError(path, importer.errors)
    if not graph.outputs:
        raise OnnxError(path, ["the model computes no output"])
    try:
        verify_graph(graph)  # converters verify each node; this is the safety net
    except CompileError as e:  # a node no converter checked: still one line, naming the file
        raise OnnxError(path, [f"the imported graph is ill-formed: {m.message}"
                               for m in [e, *e.notes]]) from None
    return graph


def load_onnx(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
              input_values: dict[str, np.ndarray] | None = None,
              custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    """Reads and imports an .onnx file, the inputs in `input_values` made constants of
    those values. Raises OnnxError (`path: not a valid ONNX model: ...` for a damaged
    file, one line per unsupported node otherwise) and OSError when the file cannot be
    read."""
    return import_model(load_model(path, input_shapes, input_values), str(path), custom_ops)


__all__ = ["import_model", "load_onnx"]
