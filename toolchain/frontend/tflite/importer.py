"""TFLite subgraph 0 (as read by reader.py) -> verified Graph.

Operators are converted in their (execution) order through the table in ops.py. The
graph keeps TFLite's NHWC layouts, its tensors' quantization and its input names.
Problems are collected over the whole model and reported together in one line, grouped
by operator (`3 operators are not supported: SIN x2 (operators 0, 2), ELU x1 (operator
1)`; refusals.py); an operator that reads the output of a failed one is skipped rather
than reported twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.frontend.tflite.context import OpContext, tensor_type
from toolchain.frontend.tflite.control_flow import RegionStates, SubgraphBudget, retype
from toolchain.frontend.tflite.errors import TFLiteError, Unsupported
from toolchain.frontend.tflite.ops import OPS
from toolchain.frontend.tflite.reader import (
    MAX_FILE_BYTES,
    FormatError,
    ModelInfo,
    OperatorInfo,
    read_model,
)
from toolchain.frontend.tflite.refusals import (
    Problem,
    sparse_refusal,
    summary,
    vela_refusal,
)
from toolchain.frontend.tflite.state import StateTable
from toolchain.graph.custom_ops import MAX_CUSTOM_OPS, CustomOp
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.ops import ShapeError
from toolchain.graph.sources import Source, tag_new
from toolchain.graph.verify import verify_graph

# The element-type families of ops.py: the rows' converter slots.
_FAMILIES = {"FLOAT32": "float", "FLOAT16": "float", "INT8": "int8"}
# Operators whose first input is not their data (TRANSPOSE_CONV's is the output shape,
# int32 whatever the data's type): the input that says the family instead.
_DATA_INPUT = {"TRANSPOSE_CONV": 2}


def family(model: ModelInfo, op: OperatorInfo) -> str:
    """The element-type family of an operator: 'int8' when its first input or output is
    int8, 'int16' when one is int16 (16x8; TRANSPOSE_CONV's data is its third input, the
    first being its output shape; QUANTIZE may go to int32), 'float' when both are
    float, else the offending type's name (e.g. 'uint8')."""
    k = _DATA_INPUT.get(op.opcode, 0)
    types = [model.tensors[i].type for i in (op.inputs[k:k + 1] + op.outputs[:1]) if i >= 0]
    if "INT8" in types:
        return "int8"
    if "INT16" in types:
        return "int16"
    for t in types:
        if _FAMILIES.get(t) != "float":
            return t.lower()
    return "float"


class _Importer:
    def __init__(self, model: ModelInfo, graph: Graph, states: StateTable | None = None,
                 custom_ops: dict[str, CustomOp] | None = None,
                 root: ModelInfo | None = None, calling: tuple[int, ...] = (0,),
                 budget: SubgraphBudget | None = None):
        self.model = model
        # The model's subgraph 0, which holds the others (IF / WHILE name them by index),
        # and the subgraphs being imported, outermost first (a call back into one of
        # them would recurse without end).
        self.root = root if root is not None else model
        self.calling = calling
        self.budget = budget if budget is not None else SubgraphBudget()
        self.custom_ops = custom_ops or {}
        self.custom_count = 0  # custom_call nodes made so far: the next one's ordinal
        self.graph = graph
        if states is None:
            states = StateTable(graph)
            states.run_init = self.run_init
        self.states = states
        self.values: dict[int, Tensor] = {}  # TFLite tensor index -> graph tensor
        self.failed: set[int] = set()  # outputs of operators that could not be converted
        self.errors: list[Problem] = []

    def tensor(self, index: int) -> Tensor:
        """The graph tensor holding TFLite tensor `index`: an input, an earlier
        operator's output, or a constant (made a `constant` node on first use)."""
        if index in self.values:
            return self.values[index]
        info = self.model.tensors[index]
        if info.is_variable:  # state: its value now (state.py), not cached
            return self.states.read(f"tensor:{index}", tensor_type(info))
        if info.data is None:
            raise Unsupported(f"it reads {info.describe()}, which no earlier operator writes")
        ty = tensor_type(info)
        node = self.graph.add("constant", [], [ty], {"value": info.data.astype(ty.dtype.np_dtype)})
        self.values[index] = node.output
        return node.output

    def add_inputs(self) -> None:
        for k, index in enumerate(self.model.inputs):
            info = self.model.tensors[index]
            try:
                if index in self.values:
                    raise Unsupported(f"{info.describe()} is listed twice")
                if info.data is not None:
                    raise Unsupported(f"{info.describe()} is a constant")
                ty = tensor_type(info)
            except Unsupported as e:
                self.errors.append(Problem(f"model input {k}", str(e)))
                self.failed.add(index)
                continue
            self.values[index] = self.graph.add_input(ty, info.name)
            self.graph.input_names.append(info.name)

    def convert_custom(self, op: OperatorInfo, custom: CustomOp) -> None:
        """An operator the user registered (--custom-op): one custom_call node whose
        results have the types the model declares for the operator's outputs."""
        if not op.outputs:
            raise Unsupported("it has no outputs; a custom operator needs at least 1")
        if self.custom_count >= MAX_CUSTOM_OPS:
            raise Unsupported(f"the model has more than {MAX_CUSTOM_OPS} custom operators")
        types = []
        for index in op.outputs:
            t = tensor_type(self.model.tensors[index])
            if t.quant is not None and t.quant.axis is not None:
                raise Unsupported(f"{self.model.tensors[index].describe()} is quantized per "
                                  "channel; a custom operator's tensors have one scale")
            types.append(t)
        if any(i in self.failed for i in op.inputs):
            self.failed.update(op.outputs)
            return
        inputs = [self.tensor(i) for i in op.inputs if i >= 0]
        for t in inputs:
            if t.type.quant is not None and t.type.quant.axis is not None:
                raise Unsupported("an input is quantized per channel; a custom operator's "
                                  "tensors have one scale")
        node = self.graph.add("custom_call", inputs, types,
                              {"op": custom, "options": bytes(op.custom_options),
                               "ordinal": self.custom_count, "result_types": tuple(types)})
        self.custom_count += 1
        for k, index in enumerate(op.outputs):
            node.outputs[k].name = self.model.tensors[index].name
            self.values[index] = node.outputs[k]

    def convert(self, op: OperatorInfo) -> None:
        custom = self.custom_ops.get(op.opcode.removeprefix("CUSTOM:")) \
            if op.opcode.startswith("CUSTOM:") else None
        if custom is not None:
            self.convert_custom(op, custom)
            return
        row = OPS.get(op.opcode)
        if row is None and op.opcode.startswith("CUSTOM:"):
            code = op.opcode.removeprefix("CUSTOM:")
            raise Unsupported(f"{op.opcode} is not supported; give its C kernel and Python "
                              f"reference with --custom-op {code}=KERNEL.c,REFERENCE.py "
                              "(docs/custom-ops.md)")
        if row is None:
            raise Unsupported("")
        n = len(op.inputs)
        if n < row.min_inputs or (row.max_inputs is not None and n > row.max_inputs):
            want = (f"{row.min_inputs}" if row.min_inputs == row.max_inputs else
                    f"{row.min_inputs} or more" if row.max_inputs is None else
                    f"{row.min_inputs} to {row.max_inputs}")
            raise Unsupported(f"it has {n} inputs; {op.opcode} takes {want}")
        if row.outputs is not None and len(op.outputs) != row.outputs:
            raise Unsupported(f"it has {len(op.outputs)} outputs; {op.opcode} has "
                              f"{row.outputs}")
        if row.outputs is None and not op.outputs:
            raise Unsupported(f"it has no outputs; {op.opcode} has at least 1")
        kind = family(self.model, op)
        converter = row.converter(kind)
        if converter is None:
            raise Unsupported(f"{kind} {op.opcode} is not supported" +
                              (" yet" if kind in ("int8", "int16") else ""))
        if any(i in self.failed for i in op.inputs):
            # Whether the operator itself is supported is told above; what it would do
            # with an input that failed cannot be, and was reported where it failed.
            self.failed.update(op.outputs)
            return
        ctx = OpContext(self.model, op, self.graph, self.tensor, self.states,
                        self.import_subgraph)
        try:
            result = converter(ctx)
        except (ShapeError, ValueError) as e:
            # The int8 kernels (toolchain/quant) build through the op table's rules and
            # refuse shapes or parameters TFLite Micro would refuse too.
            raise Unsupported(str(e)) from None
        except CompileError as e:
            # A node the converter built failed verification (a 'pad' of 800 GB from a
            # dilation of 2**31 - 1): a flatbuffer has no line, so the operator says where.
            raise Unsupported(e.message) from None
        if result is None:
            return
        # Several outputs (SPLIT_V, the Signal library's FftAutoScale, ...) come as a
        # sequence, one result per output.
        results = result if isinstance(result, (list, tuple)) else [result]
        for k, r in enumerate(results):
            self.bind(op, ctx, r, k)

    def bind(self, op: OperatorInfo, ctx: OpContext, result: Tensor, k: int = 0) -> None:
        """Records `result` as the operator's output k after checking it against the type
        the model declares; the declared quantization is what a quantized result means
        (TFLite's data movement copies stored values whatever the scales say)."""
        index = op.outputs[k]
        info = self.model.tensors[index]
        if index in self.values or info.data is not None:
            raise Unsupported(f"it writes {info.describe()}, which already holds a value")
        want = tensor_type(info)
        got = result.type
        if got.shape != want.shape or got.dtype != want.dtype:
            raise Unsupported(f"it computes {got}, but the model declares {want} for "
                              f"{info.describe()}")
        if got.quant != want.quant:
            if id(result) not in ctx.new_tensors:  # never retype a tensor others hold
                result = ctx.reshape(result, want.shape)
            result.type = want
        result.name = info.name
        self.values[index] = result

    def run(self) -> None:
        self.add_inputs()
        self.convert_all()
        for k, index in enumerate(self.model.outputs):
            info = self.model.tensors[index]
            if index in self.failed:
                continue
            if index not in self.values and info.data is None:
                self.errors.append(Problem(f"model output {k} ({info.describe()}) is never "
                                           "written"))
                continue
            try:
                self.graph.outputs.append(self.tensor(index))
            except Unsupported as e:
                self.errors.append(Problem(f"model output {k}", str(e)))
        if not self.states.is_init:
            self.states.finish()

    def convert_all(self) -> None:
        """Converts the operators in order, collecting what fails in `errors`."""
        for op in self.model.operators:
            start = len(self.graph.nodes)
            try:
                self.convert(op)
                name = self.model.tensors[op.outputs[0]].name if op.outputs else ""
                tag_new(self.graph, start, Source(name, f"tflite {op.describe()}"))
            except Unsupported as e:
                what = str(e)
                self.errors.append(Problem(op.describe(), what, op.opcode, op.index))
                self.failed.update(op.outputs)

    def import_subgraph(self, k: int, inputs: Sequence[Tensor], graph: Graph,
                        role: str) -> list[Tensor]:
        """Subgraph k's operators added to `graph` (this importer's own graph: the
        subgraph inlined: an IF on a constant condition; else a region being built),
        its inputs bound to `inputs` in order, each retyped to the type the subgraph
        declares for it (TFLite Micro copies the bytes: a subgraph's tensors keep their
        own quantization). Returns the subgraph's outputs as it declares them. `role`
        (`IF's then`, `WHILE's body`) names the subgraph in messages. A called subgraph
        holds no state (RegionStates)."""
        what = f"{role} subgraph {k}"
        try:
            sub = self.root.subgraph(k)
        except FormatError as e:
            raise Unsupported(f"{what}: {e}") from None
        if k in self.calling:
            raise Unsupported(f"{what} is already being run by an operator that calls it: "
                              "a recursive subgraph is not supported")
        if len(inputs) != len(sub.inputs):
            raise Unsupported(f"{what} takes {len(sub.inputs)} inputs, but the operator "
                              f"passes {len(inputs)}")
        self.budget.spend(len(self.calling), what)
        child = _Importer(sub, graph, RegionStates(graph, what), self.custom_ops, self.root,
                          (*self.calling, k), self.budget)
        child.custom_count = self.custom_count
        for j, (index, t) in enumerate(zip(sub.inputs, inputs)):
            info = sub.tensors[index]
            if index in child.values or info.data is not None:
                raise Unsupported(f"{what}: input {j} ({info.describe()}) is "
                                  + ("listed twice" if index in child.values else
                                     "a constant"))
            try:
                want = tensor_type(info)
            except Unsupported as e:
                raise Unsupported(f"{what}: {e}") from None
            child.values[index] = retype(graph, t, want, f"{what}'s input {j} "
                                         f"({info.describe()})")
        child.convert_all()
        outputs = []
        for j, index in enumerate(sub.outputs):
            if index in child.failed:
                continue
            if index not in child.values and sub.tensors[index].data is None:
                child.errors.append(Problem(f"output {j} ({sub.tensors[index].describe()}) "
                                            "is never written"))
                continue
            outputs.append(child.tensor(index))
        if child.errors:
            raise Unsupported(f"{what}: " + summary(child.errors))
        self.custom_count = child.custom_count
        return outputs

    def run_init(self, k: int) -> dict[str, np.ndarray]:
        """Imports init subgraph k (CALL_ONCE's) and computes the values it assigns."""
        try:
            sub = self.model.subgraph(k)
        except FormatError as e:
            raise Unsupported(str(e)) from None
        if sub.inputs:
            raise Unsupported(f"init subgraph {k} has inputs; CALL_ONCE passes none")
        importer = _Importer(sub, Graph(f"init{k}"),
                             StateTable(Graph(f"init{k}"), dict(self.states.boot)),
                             root=self.root, calling=(*self.calling, k), budget=self.budget)
        importer.graph = importer.states.graph
        importer.run()
        if importer.errors:
            raise Unsupported(f"init subgraph {k}: " + summary(importer.errors))
        return importer.states.written()


def import_model(model: ModelInfo, path: str = "model.tflite",
                 custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    """Builds the verified Graph of subgraph 0, the custom operators registered in
    `custom_ops` (by code) as custom_call nodes. Raises TFLiteError listing every
    problem in one line (refusals.summary), prefixed with `path`."""
    refusal = vela_refusal(model) or sparse_refusal(model)
    if refusal is not None:
        raise TFLiteError(path, [refusal])
    graph = Graph("main")
    importer = _Importer(model, graph, custom_ops=custom_ops)
    importer.run()
    if importer.errors:
        raise TFLiteError(path, [summary(importer.errors)])
    try:
        verify_graph(graph)  # the converters verify each node; this is the safety net
    except CompileError as e:
        raise TFLiteError(path, [e.message]) from None
    return graph


def load_tflite(path: str | Path, custom_ops: dict[str, CustomOp] | None = None) -> Graph:
    """Reads and imports a .tflite file. Raises TFLiteError (`path: not a valid TFLite
    model: ...` for a damaged file, the unsupported operators grouped in one line
    otherwise) and OSError when the file cannot be read."""
    size = Path(path).stat().st_size
    if size > MAX_FILE_BYTES:  # refused before reading gigabytes
        raise TFLiteError(str(path), [f"not a valid TFLite model: the file has {size} bytes, "
                                      "more than the 2 GiB a flatbuffer can address"])
    data = Path(path).read_bytes()
    try:
        model = read_model(data)
    except FormatError as e:
        raise TFLiteError(str(path), [f"not a valid TFLite model: {e}"]) from None
    return import_model(model, str(path), custom_ops)


__all__ = ["family", "import_model", "load_tflite"]
