"""Build `.tflite` models of several subgraphs, with resource variables and variable
tensors, for the state tests; and run them step by step in TFLite Micro.

`build_subgraphs([Subgraph(ops, inputs, outputs), ...])` writes subgraph 0 first (the
entry), then the others (CALL_ONCE's init subgraph is `init_subgraph_index` 1, ...).
Tensors are `tests.tflite_models.Tensor`s, identified by object identity within a
subgraph; `resource()` makes a VAR_HANDLE's result tensor and a subgraph's `variables`
are its `is_variable` tensors.
Options are keyword-style as in tflite_models, with strings written as strings for the
options tables that hold names (VarHandleOptions).

`streaming_model(dtype)` is the model the state tests stream: a ring buffer of the
last three input frames (a resource variable read, cut with SPLIT_V, refilled with
CONCATENATION and assigned back), a FULLY_CONNECTED over the ring and a running sum in
a second variable, both initialised by a CALL_ONCE init subgraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite
from tflite_models import (
    TENSOR_TYPES,
    Op,
    Tensor,
    _bytes_vector,
    _camel,
    _options,
    _quantization,
    _vector,
)

# Options tables with string fields, or of ops tflite_models does not list.
_STATE_OPTIONS: dict[str, str | None] = {
    "VAR_HANDLE": "VarHandleOptions",
    "READ_VARIABLE": None,
    "ASSIGN_VARIABLE": None,
    "CALL_ONCE": "CallOnceOptions",
    "SPLIT_V": "SplitVOptions",
    "SPLIT": "SplitOptions",
}


def resource(name: str = "") -> Tensor:
    """A VAR_HANDLE's result: a rank-0 resource tensor."""
    TENSOR_TYPES.setdefault("resource", tflite.TensorType.RESOURCE)
    return Tensor((), "resource", name=name)


@dataclass
class Subgraph:
    """One subgraph: its operators in order, its inputs and outputs, and the tensors
    that are TFLite variable tensors (`is_variable`)."""

    ops: Sequence[Op]
    inputs: Sequence[Tensor]
    outputs: Sequence[Tensor]
    variables: Sequence[Tensor] = field(default_factory=list)
    name: str = "main"


def _state_options(b: flatbuffers.Builder, opcode: str, options: dict[str, Any]
                   ) -> tuple[int, int]:
    if opcode not in _STATE_OPTIONS:
        return _options(b, opcode, options)
    table = _STATE_OPTIONS[opcode]
    if table is None:
        return 0, 0
    values = {k: b.CreateString(v) if isinstance(v, str) else v for k, v in options.items()}
    getattr(tflite, f"{table}Start")(b)
    for key, value in values.items():
        getattr(tflite, f"{table}Add{_camel(key)}")(b, value)
    return getattr(tflite.BuiltinOptions, table), getattr(tflite, f"{table}End")(b)


def build_subgraphs(subgraphs: Sequence[Subgraph]) -> bytes:
    """A model of `subgraphs`, subgraph 0 the entry."""
    b = flatbuffers.Builder(1024)
    opcodes = sorted({op.opcode for sg in subgraphs for op in sg.ops})
    buffer_offsets = []
    tflite.BufferStart(b)
    buffer_offsets.append(tflite.BufferEnd(b))
    sg_offsets = []
    for sg in subgraphs:
        tensors: list[Tensor] = []
        index: dict[int, int] = {}

        def idx(t: Tensor | None, tensors: list[Tensor] = tensors,
                index: dict[int, int] = index) -> int:
            if t is None:
                return -1
            if id(t) not in index:
                index[id(t)] = len(tensors)
                tensors.append(t)
            return index[id(t)]

        for t in sg.inputs:
            idx(t)
        for op in sg.ops:
            for t in [*op.inputs, *op.outputs]:
                idx(t)
        for t in sg.outputs:
            idx(t)
        variables = {id(t) for t in sg.variables}
        tensor_offsets = []
        for i, t in enumerate(tensors):
            buffer = 0
            if t.data is not None:
                data_vec = _bytes_vector(b, np.ascontiguousarray(t.data).tobytes())
                tflite.BufferStart(b)
                tflite.BufferAddData(b, data_vec)
                buffer = len(buffer_offsets)
                buffer_offsets.append(tflite.BufferEnd(b))
            name = b.CreateString(t.name or f"t{i}")
            shape = _vector(b, np.asarray(t.shape, dtype=np.int32), "PrependInt32")
            quant = _quantization(b, t)
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, TENSOR_TYPES[t.dtype])
            tflite.TensorAddBuffer(b, buffer)
            tflite.TensorAddName(b, name)
            if quant is not None:
                tflite.TensorAddQuantization(b, quant)
            if id(t) in variables:
                tflite.TensorAddIsVariable(b, True)
            tensor_offsets.append(tflite.TensorEnd(b))
        op_offsets = []
        for op in sg.ops:
            ins = _vector(b, np.asarray([idx(t) for t in op.inputs], np.int32), "PrependInt32")
            outs = _vector(b, np.asarray([idx(t) for t in op.outputs], np.int32),
                           "PrependInt32")
            opt_type, opt = _state_options(b, op.opcode, op.options)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, opcodes.index(op.opcode))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if opt_type:
                tflite.OperatorAddBuiltinOptionsType(b, opt_type)
                tflite.OperatorAddBuiltinOptions(b, opt)
            op_offsets.append(tflite.OperatorEnd(b))
        tensors_vec = _table_vector(b, tensor_offsets)
        ops_vec = _table_vector(b, op_offsets)
        sg_in = _vector(b, np.asarray([idx(t) for t in sg.inputs], np.int32), "PrependInt32")
        sg_out = _vector(b, np.asarray([idx(t) for t in sg.outputs], np.int32), "PrependInt32")
        sg_name = b.CreateString(sg.name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, sg_in)
        tflite.SubGraphAddOutputs(b, sg_out)
        tflite.SubGraphAddOperators(b, ops_vec)
        tflite.SubGraphAddName(b, sg_name)
        sg_offsets.append(tflite.SubGraphEnd(b))
    code_offsets = []
    for name in opcodes:
        code = getattr(tflite.BuiltinOperator, name)
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))
    codes_vec = _table_vector(b, code_offsets)
    subgraphs_vec = _table_vector(b, sg_offsets)
    buffers_vec = _table_vector(b, buffer_offsets)
    description = b.CreateString("minirt state test model")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, description)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _table_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


FRAME = 4  # elements per input frame
FRAMES = 3  # frames the ring buffer holds
CLASSES = 3


def streaming_model(dtype: str, seed: int = 0, cut: str = "SPLIT_V") -> bytes:
    """The streaming test model (module docstring) in float32 or int8; `cut` drops the
    ring's oldest frame with SPLIT_V or with STRIDED_SLICE."""
    rng = np.random.default_rng(seed)
    ring_n = FRAME * FRAMES
    if dtype == "float32":
        def act(shape: tuple[int, ...], name: str, **_: Any) -> Tensor:
            return Tensor(shape, "float32", name=name)
        ring_init = rng.normal(size=(1, ring_n)).astype(np.float32)
        w = Tensor((CLASSES, ring_n), "float32", data=rng.normal(size=(CLASSES, ring_n)),
                   name="w")
        bias = Tensor((CLASSES,), "float32", data=rng.normal(size=CLASSES), name="b")
        acc_init = np.full((1, CLASSES), 0.5, np.float32)
    else:
        def act(shape: tuple[int, ...], name: str, scale: float = 0.05,
                zero_point: int = -3) -> Tensor:
            return Tensor(shape, "int8", scale=scale, zero_point=zero_point, name=name)
        ring_init = rng.integers(-128, 128, size=(1, ring_n)).astype(np.int8)
        w = Tensor((CLASSES, ring_n), "int8", scale=0.02, zero_point=0,
                   data=rng.integers(-127, 128, size=(CLASSES, ring_n)), name="w")
        bias = Tensor((CLASSES,), "int32", scale=0.05 * 0.02, zero_point=0,
                      data=rng.integers(-500, 500, size=CLASSES), name="b")
        acc_init = np.full((1, CLASSES), 7, np.int8)
    out_q = {"scale": 0.1, "zero_point": 2}
    acc_q = {"scale": 0.2, "zero_point": -5}
    x = act((1, FRAME), "x")
    # init subgraph: assigns the variables' boot values
    h_ring_i, h_acc_i = resource("ring_handle"), resource("acc_handle")
    ring_c = act((1, ring_n), "ring_init")
    ring_c.data = ring_init
    acc_c = act((1, CLASSES), "acc_init", **acc_q)
    acc_c.data = acc_init
    init = Subgraph([
        Op("VAR_HANDLE", [], [h_ring_i], {"shared_name": "ring"}),
        Op("ASSIGN_VARIABLE", [h_ring_i, ring_c], []),
        Op("VAR_HANDLE", [], [h_acc_i], {"shared_name": "acc"}),
        Op("ASSIGN_VARIABLE", [h_acc_i, acc_c], []),
    ], [], [], name="init")
    h_ring, h_acc = resource("ring_handle"), resource("acc_handle")
    ring = act((1, ring_n), "ring")
    oldest, keep = act((1, FRAME), "oldest"), act((1, ring_n - FRAME), "keep")
    sizes = Tensor((2,), "int32", data=np.array([FRAME, ring_n - FRAME]), name="sizes")
    axis = Tensor((), "int32", data=np.array(1), name="axis")
    new_ring = act((1, ring_n), "new_ring")
    y = act((1, CLASSES), "y", **out_q)
    acc = act((1, CLASSES), "acc", **acc_q)
    acc2 = act((1, CLASSES), "acc2", **acc_q)
    main = Subgraph([
        Op("CALL_ONCE", [], [], {"init_subgraph_index": 1}),
        Op("VAR_HANDLE", [], [h_ring], {"shared_name": "ring"}),
        Op("VAR_HANDLE", [], [h_acc], {"shared_name": "acc"}),
        Op("READ_VARIABLE", [h_ring], [ring]),
        Op("SPLIT_V", [ring, sizes, axis], [oldest, keep], {"num_splits": 2})
        if cut == "SPLIT_V" else
        Op("STRIDED_SLICE", [ring, Tensor((2,), "int32", data=np.array([0, FRAME])),
                             Tensor((2,), "int32", data=np.array([1, ring_n])),
                             Tensor((2,), "int32", data=np.array([1, 1]))], [keep]),
        Op("CONCATENATION", [keep, x], [new_ring], {"axis": 1}),
        Op("ASSIGN_VARIABLE", [h_ring, new_ring], []),
        Op("FULLY_CONNECTED", [new_ring, w, bias], [y]),
        Op("READ_VARIABLE", [h_acc], [acc]),
        Op("ADD", [acc, y], [acc2]),
        Op("ASSIGN_VARIABLE", [h_acc, acc2], []),
    ], [x], [y, acc2])
    return build_subgraphs([main, init])


STEPS = 30
RESETS = (15, 22)
# Float results: TFLite's own bound for float models (cli/run.py TFLITE_RTOL / ATOL):
# TFLite Micro sums the FULLY_CONNECTED in float32, the reference in float64.
RTOL, ATOL = 1e-4, 1e-5


def stream_inputs(dtype: str, steps: int = STEPS, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return [rng.normal(size=(1, FRAME)).astype(np.float32) for _ in range(steps)]
    return [rng.integers(-128, 128, (1, FRAME)).astype(np.int8) for _ in range(steps)]


def assert_same(got: list[np.ndarray], want: list[np.ndarray], step: int) -> None:
    for g, w in zip(got, want, strict=True):
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"step {step}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"step {step}")


class TflmStream:
    """A model in TFLite Micro's interpreter, invoked step after step on one state."""

    def __init__(self, model: bytes):
        from tflite_micro.python.tflite_micro import runtime

        self.interp = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
        root = tflite.Model.GetRootAs(model, 0)
        self.n_out = root.Subgraphs(0).OutputsLength()

    def step(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        for i, x in enumerate(inputs):
            self.interp.set_input(x, i)
        self.interp.invoke()
        return [np.array(self.interp.get_output(i)) for i in range(self.n_out)]

    def reset(self) -> None:
        self.interp.reset()


