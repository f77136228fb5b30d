"""What an operator's converter works with: its TFLite tensors, the graph it adds nodes
to, and small helpers that build graph nodes with their types inferred.

Converters never trust a type they did not compute: `node()` infers every result type
from the graph op table (toolchain/graph/ops.py) and verifies the node; the importer
then compares the converter's result with the output tensor the model declares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.reader import ModelInfo, OperatorInfo, TensorInfo
from toolchain.frontend.tflite.state import StateTable
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS, ShapeError
from toolchain.graph.verify import tensor_type_error, verify_node
from toolchain.types import DType, QuantParams, TensorType, dtype

# TFLite element types minirt holds, and their graph element types.
DTYPES = {
    "FLOAT32": "f32", "FLOAT16": "f16", "FLOAT64": "f64", "INT8": "i8", "UINT8": "ui8",
    "INT16": "i16", "UINT16": "ui16", "INT32": "i32", "UINT32": "ui32", "INT64": "i64",
    "UINT64": "ui64", "BOOL": "i1",
}
F32 = dtype("f32")
# (subgraph index, inputs, graph to add to, role in messages) -> the subgraph's outputs
SubgraphImporter = Callable[[int, Sequence[Tensor], Graph, str], list[Tensor]]


def int_range(dt: DType) -> tuple[int, int]:
    """The least and greatest value of an integer element type."""
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def _quant_params(info: TensorInfo, dt: DType) -> QuantParams | None:
    """The graph's QuantParams of a quantized integer tensor, checked: scales positive
    and finite, zero points in the storage type's range, one pair per channel along the
    quantized dimension."""
    q = info.quant
    if q is None or not dt.is_integer:
        return None  # float tensors may carry calibration ranges: not quantization
    where = info.describe()
    for s in q.scales:
        if not (np.isfinite(s) and s > 0):
            raise Unsupported(f"{where} has quantization scale {s}; scales must be positive "
                              "and finite")
    lo, hi = int_range(dt)
    for z in q.zero_points:
        if not lo <= z <= hi:
            raise Unsupported(f"{where} has zero point {z}, outside {dt}'s range {lo}..{hi}")
    axis = None
    if q.per_channel and len(info.shape) == 1 and info.shape[0] == len(q.scales):
        # A vector's channels are its only dim, whatever quantized_dimension says: older
        # converters copied the filter's dim 3 onto biases (TFLite Micro's own
        # person_detect), and TFLite Micro's kernels read bias scales by channel alone.
        axis = 0
    elif q.per_channel:
        if not 0 <= q.axis < len(info.shape) or info.shape[q.axis] != len(q.scales):
            raise Unsupported(f"{where} has {len(q.scales)} quantization scales, which do not "
                              f"match its quantized dimension {q.axis} of shape "
                              f"{list(info.shape)}")
        axis = q.axis
    # Scales are float32 in the file; the tuple keeps exactly those values.
    return QuantParams(dt, F32, tuple(float(np.float32(s)) for s in q.scales),
                       tuple(int(z) for z in q.zero_points), axis)


def checked_info(info: TensorInfo) -> TensorInfo:
    """`info`, once it is known not to be sparse and its quantization to be sane (see
    _quant_params). Converters read constants (weights, biases) and their scales straight
    from the TensorInfo, without making a graph type: a sparse tensor's compressed data, a
    scale of inf or a zero point of 32768 must stop here, not inside the int8 kernels."""
    if info.sparse:
        raise Unsupported(f"{info.describe()} is sparse: the model uses sparse tensors, "
                          "which minirt does not support")
    name = DTYPES.get(info.type)
    if name is not None:
        _quant_params(info, dtype(name))
    return info


def tensor_type(info: TensorInfo) -> TensorType:
    """The graph type of a TFLite tensor: element type, static shape, quantization."""
    name = DTYPES.get(info.type)
    if name is None:
        raise Unsupported(f"{info.describe()} has element type {info.type}, which minirt "
                          "does not support")
    checked_info(info)
    dt = dtype(name)
    ty = TensorType(tuple(info.shape), dt, _quant_params(info, dt))
    problem = tensor_type_error(ty)
    if problem is not None:
        raise Unsupported(f"{info.describe()}: {problem}")
    return ty


class OpContext:
    """One operator being converted: its inputs and options, and the graph to add to.

    `tensor_for(i)` turns TFLite tensor i into a graph tensor (constants become
    `constant` nodes the first time an operator reads them)."""

    def __init__(self, model: ModelInfo, op: OperatorInfo, graph: Graph,
                 tensor_for: Callable[[int], Tensor], states: StateTable | None = None,
                 import_subgraph: SubgraphImporter | None = None):
        self.model = model
        self.op = op
        self.graph = graph
        self._tensor_for = tensor_for
        self.states = states if states is not None else StateTable(graph)
        # The importer's: adds subgraph k's operators to a graph (IF, WHILE).
        self._import_subgraph = import_subgraph
        self.new_tensors: set[int] = set()  # ids of the tensors this operator created

    # ------------------------------------------------------------ the operator

    @property
    def options(self) -> dict[str, Any]:
        return self.op.options

    def option(self, key: str) -> Any:
        """A builtin option, refusing an operator whose options table is of another kind
        (a corrupted union type gives fields that do not exist)."""
        if key not in self.op.options:
            raise Unsupported(f"its builtin options ({self.op.options_type}) have no field "
                              f"'{key}'")
        return self.op.options[key]

    def has_input(self, i: int) -> bool:
        return i < len(self.op.inputs) and self.op.inputs[i] != -1

    def info(self, i: int) -> TensorInfo:
        """The TFLite tensor of input i."""
        if not self.has_input(i):
            raise Unsupported(f"input {i} is missing")
        return checked_info(self.model.tensors[self.op.inputs[i]])

    def output_info(self, i: int = 0) -> TensorInfo:
        return checked_info(self.model.tensors[self.op.outputs[i]])

    def input(self, i: int) -> Tensor:
        """The graph tensor of input i."""
        return self._tensor_for(self.info(i).index)

    def value(self, i: int, what: str) -> np.ndarray:
        """The values of input i, which must be a constant (a shape, axes, paddings)."""
        info = self.info(i)
        if info.data is None or info.type not in ("INT32", "INT64"):
            raise Unsupported(f"input {i} ({what}) must be a constant INT32 or INT64 tensor")
        return info.data.astype(np.int64)

    def output_type(self, i: int = 0) -> TensorType:
        return tensor_type(self.output_info(i))

    # ------------------------------------------------------------ state

    def read_state(self, key: str, ty: TensorType, initial: np.ndarray | None = None,
                   reset: np.ndarray | None = None) -> Tensor:
        """The value of state `key` (a value kept between inferences, in the firmware's
        state region: state.py), of type `ty`: the value written last in this inference,
        else the one the previous inference left. `initial` is its value at boot and
        `reset` after a reset; both default to TFLite Micro's (the int8 zero point, else
        0). Any converter may keep state under a key of its own (e.g. `lstm:<tensor>`)."""
        return self.states.read(key, ty, initial, reset)

    def write_state(self, key: str, value: Tensor) -> None:
        """Sets state `key` to `value` from here on; the last value written is what the
        next inference reads."""
        self.states.write(key, value)

    def variable_input(self, i: int) -> Tensor:
        """Input i, a TFLite variable tensor (`is_variable`: an LSTM's or SVDF's state),
        as state keyed by its tensor index; write its new value with
        `write_state(ctx.variable_key(i), value)`."""
        return self._tensor_for(self.info(i).index)

    def variable_key(self, i: int) -> str:
        """The state key of input i's variable tensor."""
        return f"tensor:{self.info(i).index}"

    # ------------------------------------------------------------ subgraphs

    def import_subgraph(self, k: int, inputs: Sequence[Tensor], graph: Graph,
                        role: str) -> list[Tensor]:
        """Subgraph k's operators added to `graph` (this operator's graph: inlined; else
        a region being built) on `inputs`; its outputs (importer._Importer's)."""
        if self._import_subgraph is None:
            raise Unsupported(f"{role} subgraph {k} cannot be imported here")
        return self._import_subgraph(k, inputs, graph, role)

    # ------------------------------------------------------------ building nodes

    def node(self, op: str, inputs: Sequence[Tensor], **attrs: Any) -> Tensor:
        """Adds graph op `op` with its result type inferred, and returns the result."""
        probe = Node(op, list(inputs), [], attrs)
        try:
            types = OPS[op].infer(probe)
        except ShapeError as e:
            raise Unsupported(f"{op}: {e}") from None
        node = self.graph.add(op, list(inputs), types, attrs)
        err = verify_node(node)
        if err is not None:
            raise Unsupported(err.message)
        self.new_tensors.update(id(t) for t in node.outputs)
        return node.output

    def const(self, value: Any, dt: DType | str) -> Tensor:
        """A constant of element type `dt` (any shape; a Python number is rank 0)."""
        dt = dtype(dt) if isinstance(dt, str) else dt
        array = np.asarray(value).astype(dt.np_dtype)
        node = self.graph.add("constant", [], [TensorType(array.shape, dt)], {"value": array})
        self.new_tensors.add(id(node.output))
        return node.output

    def scalar(self, value: float | int, like: Tensor) -> Tensor:
        """A rank-0 constant of `like`'s element type."""
        return self.const(value, like.type.dtype)

    def broadcast(self, t: Tensor, shape: tuple[int, ...],
                  dims: tuple[int, ...] | None = None) -> Tensor:
        """`t` broadcast to `shape`; by default its dimensions align with the trailing
        ones (numpy's rule). Returns `t` itself when nothing changes."""
        if dims is None:
            dims = tuple(range(len(shape) - t.type.rank, len(shape)))
        if t.type.shape == tuple(shape) and dims == tuple(range(len(shape))):
            return t
        return self.node("broadcast_in_dim", [t], dims=tuple(dims), shape=tuple(shape))

    def filled(self, value: float | int, like: Tensor) -> Tensor:
        """`value` broadcast to `like`'s shape and element type."""
        return self.broadcast(self.scalar(value, like), like.type.shape, ())

    def reshape(self, t: Tensor, shape: tuple[int, ...]) -> Tensor:
        return self.node("reshape", [t], shape=tuple(shape))


__all__ = ["DTYPES", "OpContext", "checked_info", "int_range", "tensor_type"]
