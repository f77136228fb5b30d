"""Build small `.tflite` flatbuffers in memory, for tests: one operator, or a short chain.

The models are written with the `tflite` package's generated builder functions
(`tflite.ModelStart`, `tflite.OperatorStart`, `tflite.Conv2DOptionsStart`, ...) over a
`flatbuffers.Builder`; no TensorFlow. A tensor is described by a `Tensor` (shape, dtype,
quantization, and `data` when it is a constant); an operator by its opcode name, its
input and output tensors and its options as keyword-style names:

    x = Tensor((1, 8, 8, 3), "int8", scale=0.05, zero_point=-3)
    w = Tensor((4, 3, 3, 3), "int8", scale=[0.01] * 4, zero_point=[0] * 4,
               quantized_dimension=0, data=weights)
    b = Tensor((4,), "int32", scale=[0.0005] * 4, zero_point=[0] * 4, data=bias)
    y = Tensor((1, 8, 8, 4), "int8", scale=0.1, zero_point=5)
    buf = single_op_model("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=1,
                          stride_h=1, fused_activation_function="RELU")

Option names are the schema's field names in snake_case (`stride_w`, `depth_multiplier`,
`filter_height`, `keep_dims`, `new_shape`, ...); `padding` takes "SAME" / "VALID" and
`fused_activation_function` takes "NONE", "RELU", "RELU_N1_TO_1", "RELU6" (or the
schema's integer values). A `None` in an operator's inputs is an omitted optional input
(tensor index -1), e.g. a FULLY_CONNECTED without bias. A custom operator is named
`CUSTOM:<code>` (`CUSTOM:SignalWindow`); its options become a flexbuffer map in the
operator's custom_options, as TFLite Micro's Signal library reads them.

`run_tflm(model, inputs)` runs a model in TFLite Micro's own interpreter (the
`tflite-micro` wheel) and returns its outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite
from flatbuffers import flexbuffers

# numpy dtype name -> the schema's TensorType value.
TENSOR_TYPES: dict[str, int] = {
    "float32": tflite.TensorType.FLOAT32,
    "int32": tflite.TensorType.INT32,
    "int8": tflite.TensorType.INT8,
    "int16": tflite.TensorType.INT16,
    "int64": tflite.TensorType.INT64,
    "uint8": tflite.TensorType.UINT8,
    "uint32": tflite.TensorType.UINT32,
    "uint64": tflite.TensorType.UINT64,
    "bool": tflite.TensorType.BOOL,
    # Packed two to a byte, the first element in the low nibble (the data is given as
    # int8 values in [-8, 7]).
    "int4": tflite.TensorType.INT4,
}

CUSTOM_PREFIX = "CUSTOM:"

# Opcode name -> the options table that goes with it (None: the op takes no options, or
# the interpreter ignores them). The table's builder functions are looked up by name in
# the `tflite` package: `<Table>Start`, `<Table>Add<Field>`, `<Table>End`.
OPTIONS_TABLE: dict[str, str | None] = {
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "RESHAPE": "ReshapeOptions",
    "SOFTMAX": "SoftmaxOptions",
    "PAD": "PadOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "CONCATENATION": "ConcatenationOptions",
    "LOGISTIC": None,
    "TANH": None,
    "RELU": None,
    "RELU6": None,
    "RELU_N1_TO_1": None,
    "HARD_SWISH": "HardSwishOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "TRANSPOSE": "TransposeOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "EXP": None,
    # Options-less ops minirt has no converter for: the unsupported-op tests use them.
    "SIN": None,
    "ELU": None,
    # TFLite's complex-number parts (not in TFLite Micro): the unsupported-op tests' examples.
    "REAL": None,
    "IMAG": None,
    "SQUEEZE": "SqueezeOptions",
    "QUANTIZE": "QuantizeOptions",
    "DENSIFY": "DensifyOptions",
    "DEQUANTIZE": "DequantizeOptions",
    "DIV": "DivOptions",
    "MINIMUM": None,
    "MAXIMUM": None,
    "CAST": None,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "SVDF": "SVDFOptions",
}

# An opcode `CUSTOM:name` is a custom operator with custom_code `name` (e.g.
# `CUSTOM:ethos-u`, what Vela leaves in a model it compiled for an Ethos-U NPU).
CUSTOM_PREFIX = "CUSTOM:"

# Option values given by name rather than number.
_ENUMS: dict[str, type] = {
    "padding": tflite.Padding,
    "fused_activation_function": tflite.ActivationFunctionType,
}


@dataclass
class Tensor:
    """One tensor of the model: a constant when `data` is given, else an activation.

    `scale` / `zero_point` are a number (per-tensor) or a sequence (per-channel along
    `quantized_dimension`); leave both None for an unquantized tensor.
    """

    shape: Sequence[int]
    dtype: str = "int8"
    scale: float | Sequence[float] | None = None
    zero_point: int | Sequence[int] | None = None
    quantized_dimension: int = 0
    data: np.ndarray | None = None
    name: str = ""
    is_variable: bool = False  # state an operator keeps between invocations (LSTM, SVDF)
    # A sparse constant: `data` is then its compressed buffer (any bytes) and the tensor
    # gets a `sparsity` table (a traversal order over its dimensions).
    sparse: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in TENSOR_TYPES:
            raise ValueError(f"unsupported tensor dtype {self.dtype!r}")
        self.shape = tuple(int(d) for d in self.shape)
        if self.data is not None:
            data = np.asarray(self.data)
            if self.sparse:
                self.data = data
            elif data.shape != self.shape:
                raise ValueError(f"constant {self.name!r}: data shape {data.shape} is not "
                                 f"the tensor shape {self.shape}")
            elif self.dtype == "int4":
                self.data = data.astype(np.int8)
            else:
                self.data = data.astype(self.dtype)
        if (self.scale is None) != (self.zero_point is None):
            raise ValueError("give both scale and zero_point, or neither")


@dataclass
class Op:
    """One operator: opcode name, input and output tensors (None = omitted input)."""

    opcode: str
    inputs: Sequence[Tensor | None]
    outputs: Sequence[Tensor]
    options: dict[str, Any] | bytes = field(default_factory=dict)  # bytes: raw custom options


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _vector(builder: flatbuffers.Builder, values: np.ndarray, prepend: str) -> int:
    builder.StartVector(values.dtype.itemsize, len(values), values.dtype.itemsize)
    for v in reversed(values.tolist()):
        getattr(builder, prepend)(v)
    return builder.EndVector()


def _bytes_vector(builder: flatbuffers.Builder, data: bytes) -> int:
    # 16-byte alignment: TFLite Micro reads constants in place, as int32 / float arrays.
    builder.StartVector(1, len(data), 16)
    builder.head = builder.head - len(data)
    builder.Bytes[builder.head:builder.head + len(data)] = data
    return builder.EndVector()


def _quantization(builder: flatbuffers.Builder, t: Tensor) -> int | None:
    if t.scale is None:
        return None
    scales = np.atleast_1d(np.asarray(t.scale, dtype=np.float32))
    zps = np.atleast_1d(np.asarray(t.zero_point, dtype=np.int64))
    scale_vec = _vector(builder, scales, "PrependFloat32")
    zp_vec = _vector(builder, zps, "PrependInt64")
    tflite.QuantizationParametersStart(builder)
    tflite.QuantizationParametersAddScale(builder, scale_vec)
    tflite.QuantizationParametersAddZeroPoint(builder, zp_vec)
    tflite.QuantizationParametersAddQuantizedDimension(builder, t.quantized_dimension)
    return tflite.QuantizationParametersEnd(builder)


def _sparsity(builder: flatbuffers.Builder, t: Tensor) -> int:
    """A sparsity table with the identity traversal order (what marks a tensor sparse)."""
    order = _vector(builder, np.arange(len(t.shape), dtype=np.int32), "PrependInt32")
    tflite.SparsityParametersStart(builder)
    tflite.SparsityParametersAddTraversalOrder(builder, order)
    return tflite.SparsityParametersEnd(builder)


def _options(builder: flatbuffers.Builder, opcode: str, options: dict[str, Any]) -> tuple[int, int]:
    """Write the op's options table; returns (BuiltinOptions type, offset) or (0, 0).
    A custom operator (`CUSTOM:name`) has none."""
    if opcode.startswith(CUSTOM_PREFIX) and not options:
        return 0, 0
    if opcode not in OPTIONS_TABLE:
        raise ValueError(f"opcode {opcode!r} is not in tests/tflite_models.OPTIONS_TABLE")
    table = OPTIONS_TABLE[opcode]
    if table is None:
        if options:
            raise ValueError(f"{opcode} takes no options, got {sorted(options)}")
        return 0, 0
    # Vectors must be written before the table starts.
    values: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, (list, tuple, np.ndarray)):
            values[key] = _vector(builder, np.asarray(value, dtype=np.int32), "PrependInt32")
        elif isinstance(value, str):
            values[key] = getattr(_ENUMS[key], value)
        else:
            values[key] = value
    getattr(tflite, f"{table}Start")(builder)
    for key, value in values.items():
        adder = getattr(tflite, f"{table}Add{_camel(key)}", None)
        if adder is None:
            raise ValueError(f"{table} has no field {key!r}")
        adder(builder, value)
    return getattr(tflite.BuiltinOptions, table), getattr(tflite, f"{table}End")(builder)


def pack_int4(values: np.ndarray) -> bytes:
    """int4 values, two to a byte, the first in the low nibble (TFLite's INT4 layout)."""
    flat = np.asarray(values, np.int64).reshape(-1) & 0xF
    if flat.size % 2:
        flat = np.append(flat, 0)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()


def build_model(ops: Sequence[Op], inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> bytes:
    """A one-subgraph model running `ops` in order, from graph `inputs` to `outputs`.

    Tensors are identified by object identity: pass the same `Tensor` object wherever
    the same tensor is meant. Constants (tensors with `data`) get their own buffers.
    """
    tensors: list[Tensor] = []
    index: dict[int, int] = {}

    def idx(t: Tensor | None) -> int:
        if t is None:
            return -1
        if id(t) not in index:
            index[id(t)] = len(tensors)
            tensors.append(t)
        return index[id(t)]

    for t in inputs:
        idx(t)
    for op in ops:
        for t in [*op.inputs, *op.outputs]:
            idx(t)
    for t in outputs:
        idx(t)

    opcodes = sorted({op.opcode for op in ops})
    b = flatbuffers.Builder(1024)

    # Buffers: 0 is the conventional empty buffer, then one per constant.
    buffer_of: dict[int, int] = {}
    buffer_offsets = []
    tflite.BufferStart(b)
    buffer_offsets.append(tflite.BufferEnd(b))
    for i, t in enumerate(tensors):
        if t.data is None:
            continue
        raw = pack_int4(t.data) if t.dtype == "int4" else np.ascontiguousarray(t.data).tobytes()
        data_vec = _bytes_vector(b, raw)
        tflite.BufferStart(b)
        tflite.BufferAddData(b, data_vec)
        buffer_of[i] = len(buffer_offsets)
        buffer_offsets.append(tflite.BufferEnd(b))

    tensor_offsets = []
    for i, t in enumerate(tensors):
        name = b.CreateString(t.name or f"t{i}")
        shape = _vector(b, np.asarray(t.shape, dtype=np.int32), "PrependInt32")
        quant = _quantization(b, t)
        sparsity = _sparsity(b, t) if t.sparse else None
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, TENSOR_TYPES[t.dtype])
        tflite.TensorAddBuffer(b, buffer_of.get(i, 0))
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if t.is_variable:
            tflite.TensorAddIsVariable(b, True)
        if sparsity is not None:
            tflite.TensorAddSparsity(b, sparsity)
        tensor_offsets.append(tflite.TensorEnd(b))

    op_offsets = []
    for op in ops:
        op_inputs = _vector(b, np.asarray([idx(t) for t in op.inputs], dtype=np.int32),
                            "PrependInt32")
        op_outputs = _vector(b, np.asarray([idx(t) for t in op.outputs], dtype=np.int32),
                             "PrependInt32")
        custom = op.opcode.startswith(CUSTOM_PREFIX)
        opt_type, opt = (0, 0) if custom else _options(b, op.opcode, op.options)
        # A custom op's options: a dict written as a flexbuffer map, or raw bytes as given.
        raw = op.options if isinstance(op.options, bytes) else None
        custom_options = (_bytes_vector(b, raw if raw is not None else
                                        flexbuffers.Dumps(op.options)) if custom else None)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, opcodes.index(op.opcode))
        tflite.OperatorAddInputs(b, op_inputs)
        tflite.OperatorAddOutputs(b, op_outputs)
        if opt_type:
            tflite.OperatorAddBuiltinOptionsType(b, opt_type)
            tflite.OperatorAddBuiltinOptions(b, opt)
        if custom_options is not None:
            tflite.OperatorAddCustomOptions(b, custom_options)
        op_offsets.append(tflite.OperatorEnd(b))

    def table_vector(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    tensors_vec = table_vector(tensor_offsets)
    ops_vec = table_vector(op_offsets)
    sg_inputs = _vector(b, np.asarray([idx(t) for t in inputs], dtype=np.int32), "PrependInt32")
    sg_outputs = _vector(b, np.asarray([idx(t) for t in outputs], dtype=np.int32),
                         "PrependInt32")
    sg_name = b.CreateString("main")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, sg_inputs)
    tflite.SubGraphAddOutputs(b, sg_outputs)
    tflite.SubGraphAddOperators(b, ops_vec)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)

    code_offsets = []
    for name in opcodes:
        custom_code = (b.CreateString(name[len(CUSTOM_PREFIX):])
                       if name.startswith(CUSTOM_PREFIX) else None)
        code = (tflite.BuiltinOperator.CUSTOM if custom_code is not None
                else getattr(tflite.BuiltinOperator, name))
        tflite.OperatorCodeStart(b)
        if custom_code is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_code)
        # Codes above 127 live only in builtin_code; the deprecated byte then holds 127
        # (PLACEHOLDER_FOR_GREATER_OP_CODES), as the schema asks.
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))

    codes_vec = table_vector(code_offsets)
    subgraphs_vec = table_vector([subgraph])
    buffers_vec = table_vector(buffer_offsets)
    description = b.CreateString("minirt test model")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, description)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def single_op_model(opcode: str, inputs: Sequence[Tensor | None], outputs: Sequence[Tensor],
                    **options: Any) -> bytes:
    """A model of one operator; its non-constant inputs are the graph inputs, in order."""
    graph_inputs = [t for t in inputs if t is not None and t.data is None]
    return build_model([Op(opcode, inputs, outputs, options)], graph_inputs, outputs)


def run_tflm(model: bytes, inputs: Sequence[np.ndarray], *,
             keep_tensors: bool = False) -> tuple[list[np.ndarray], Any]:
    """Run `model` once in TFLite Micro's interpreter; returns (outputs, interpreter).

    With `keep_tensors` the interpreter preserves every tensor, so intermediate values
    can be read back with `tensor_value(interpreter, index)` afterwards.
    """
    from tflite_micro.python.tflite_micro import runtime

    config = (runtime.InterpreterConfig.kPreserveAllTensors if keep_tensors
              else runtime.InterpreterConfig.kAllocationRecording)
    interp = runtime.Interpreter.from_bytes(model, arena_size=max(len(model) * 10, 1 << 20),
                                            intrepreter_config=config)
    for i, x in enumerate(inputs):
        interp.set_input(x, i)
    interp.invoke()
    model_obj = tflite.Model.GetRootAs(model, 0)
    n_out = model_obj.Subgraphs(0).OutputsLength()
    return [np.array(interp.get_output(i)) for i in range(n_out)], interp


def tensor_value(interp: Any, index: int) -> np.ndarray:
    """Tensor `index` of subgraph 0 after a `run_tflm(..., keep_tensors=True)`."""
    return np.array(interp.GetTensor(index, 0)["tensor_data"])


def int8_layer_op(rng: np.random.Generator, kind: str, h: int, w: int, cin: int, cout: int,
                  kh: int = 1, kw: int = 1, stride: int = 1, dilation: int = 1,
                  padding: str = "SAME", name: str = "y",
                  in_scale: float = 0.05, in_zp: int = -3) -> tuple[Op, Tensor, Tensor]:
    """One int8 layer as TFLite's converter writes it, with random weights and bias:
    `kind` "conv" (CONV_2D, OHWI weights), "depthwise" (DEPTHWISE_CONV_2D, multiplier
    cout // cin) or "dense" (FULLY_CONNECTED on a [1, cin] input; h, w, kh, kw unused).
    Per-channel weight scales (per-tensor for dense), bias at in_scale x weight scale;
    the output scale keeps about 3 standard deviations of the accumulator in range, so
    the outputs use the int8 range without all saturating. Returns (op, input, output);
    the output tensor is named `name`."""
    depth = kh * kw * (1 if kind == "depthwise" else cin)
    if kind == "dense":
        x = Tensor((1, cin), "int8", scale=in_scale, zero_point=in_zp, name=f"{name}_in")
        wshape, qdim = (cout, cin), 0
    else:
        x = Tensor((1, h, w, cin), "int8", scale=in_scale, zero_point=in_zp,
                   name=f"{name}_in")
        wshape, qdim = ((cout, kh, kw, cin), 0) if kind == "conv" else ((1, kh, kw, cout), 3)
    w_scale = rng.uniform(0.005, 0.02, cout).astype(np.float32)
    wdata = rng.integers(-127, 128, wshape).astype(np.int8)
    b_scale = (in_scale * w_scale).astype(np.float32)
    std = 74.0 * 74.0 * np.sqrt(depth)  # of sum(x * w) over uniform int8 x and w
    bias = rng.integers(-int(std), int(std) + 1, cout).astype(np.int32)
    out_scale = float(3 * std * in_scale * float(w_scale.mean()) / 128)
    if kind == "dense":  # per-tensor weights
        w_scale, b_scale = w_scale[:1], b_scale[:1]
    wt = Tensor(wshape, "int8", scale=list(w_scale), zero_point=[0] * len(w_scale),
                quantized_dimension=qdim, data=wdata, name=f"{name}_w")
    bt = Tensor((cout,), "int32", scale=list(b_scale), zero_point=[0] * len(b_scale),
                data=bias, name=f"{name}_b")
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh = (h - dilation * (kh - 1) - 1) // stride + 1
        ow = (w - dilation * (kw - 1) - 1) // stride + 1
    yshape = (1, cout) if kind == "dense" else (1, oh, ow, cout)
    y = Tensor(yshape, "int8", scale=out_scale, zero_point=int(rng.integers(-10, 11)),
               name=name)
    if kind == "dense":
        return Op("FULLY_CONNECTED", [x, wt, bt], [y]), x, y
    opts: dict[str, Any] = dict(padding=padding, stride_w=stride, stride_h=stride,
                                dilation_w_factor=dilation, dilation_h_factor=dilation)
    if kind == "depthwise":
        opts["depth_multiplier"] = cout // cin
        return Op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts), x, y
    return Op("CONV_2D", [x, wt, bt], [y], opts), x, y


def layer_counts(build, inputs: list[np.ndarray], n: int) -> list[int]:
    """The instructions of each layer L<i>'s dispatches of `build` (a minirt.Build) run on
    `inputs` under QEMU (minirt-run --profile), as bench/shapes.py counts them."""
    rows = [r for r in build.profile(inputs).rows if r.kind == "dispatch"]

    def names(row: object) -> set[str]:
        layer = getattr(row, "layer", None) or {}
        return {s["name"] for s in layer.get("sources", ())} | {str(layer.get("label", ""))}
    counts = [sum(r.instructions for r in rows if f"L{i}" in names(r)) for i in range(n)]
    assert all(counts), counts
    return counts
