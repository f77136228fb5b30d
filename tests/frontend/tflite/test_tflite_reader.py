"""The .tflite reader: flatbuffer -> validated dataclasses, and its structural checks.

Well-formed models come from tests/tflite_models.py; the malformed ones a valid
builder cannot express (bad indices, lengths, versions) from `raw_model` below, which
writes the flatbuffer field by field.
"""

from __future__ import annotations

from typing import Any

import flatbuffers
import numpy as np
import pytest
import tflite
from model_zoo import MODELS_DIR
from tflite_models import Tensor, single_op_model

from toolchain.frontend.tflite.flatbuf import CheckedTable, FormatError, checked
from toolchain.frontend.tflite.reader import read_model

MLPERF = MODELS_DIR / "mlperf_tiny"


def raw_model(*, version: int = 3, shape: tuple[int, ...] = (2, 2),
              tensor_type: int = tflite.TensorType.FLOAT32, data: bytes | None = None,
              scales: list[float] | None = None, zero_points: list[int] | None = None,
              op_inputs: tuple[int, ...] = (0,), op_outputs: tuple[int, ...] = (1,),
              opcode_index: int = 0, options_type: int = 0, buffer_index: int | None = None,
              identifier: bytes = b"TFL3") -> bytes:
    """A one-operator (RELU) model whose every field is the caller's to spoil: tensor 0
    (`shape`, `tensor_type`, constant `data`, quantization) -> tensor 1."""
    b = flatbuffers.Builder(256)

    def ints(values: Any, prepend: str = "PrependInt32", size: int = 4) -> int:
        b.StartVector(size, len(values), size)
        for v in reversed(list(values)):
            getattr(b, prepend)(v)
        return b.EndVector()

    def tables(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    buffers = []
    tflite.BufferStart(b)
    buffers.append(tflite.BufferEnd(b))
    if data is not None:
        vec = ints(data, "PrependUint8", 1)
        tflite.BufferStart(b)
        tflite.BufferAddData(b, vec)
        buffers.append(tflite.BufferEnd(b))
    quant = None
    if scales is not None:
        sv = ints(scales, "PrependFloat32")
        zv = ints(zero_points or [], "PrependInt64", 8)
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, sv)
        tflite.QuantizationParametersAddZeroPoint(b, zv)
        quant = tflite.QuantizationParametersEnd(b)
    tensors = []
    for i in range(2):
        sh = ints(shape if i == 0 else (2, 2))
        name = b.CreateString(f"t{i}")
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, sh)
        tflite.TensorAddType(b, tensor_type if i == 0 else tflite.TensorType.FLOAT32)
        if i == 0:
            default = 1 if data is not None else 0
            tflite.TensorAddBuffer(b, default if buffer_index is None else buffer_index)
            if quant is not None:
                tflite.TensorAddQuantization(b, quant)
        tflite.TensorAddName(b, name)
        tensors.append(tflite.TensorEnd(b))
    ins, outs = ints(op_inputs), ints(op_outputs)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode_index)
    tflite.OperatorAddInputs(b, ins)
    tflite.OperatorAddOutputs(b, outs)
    if options_type:
        tflite.OperatorAddBuiltinOptionsType(b, options_type)
    op = tflite.OperatorEnd(b)
    tv, ov = tables(tensors), tables([op])
    si, so = ints([0] if data is None else []), ints([1])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tv)
    tflite.SubGraphAddInputs(b, si)
    tflite.SubGraphAddOutputs(b, so)
    tflite.SubGraphAddOperators(b, ov)
    sg = tflite.SubGraphEnd(b)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddBuiltinCode(b, tflite.BuiltinOperator.RELU)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, tflite.BuiltinOperator.RELU)
    code = tflite.OperatorCodeEnd(b)
    cv, sv_, bv = tables([code]), tables([sg]), tables(buffers)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, version)
    tflite.ModelAddOperatorCodes(b, cv)
    tflite.ModelAddSubgraphs(b, sv_)
    tflite.ModelAddBuffers(b, bv)
    b.Finish(tflite.ModelEnd(b), file_identifier=identifier)
    return bytes(b.Output())


def test_raw_model_is_valid() -> None:
    m = read_model(raw_model())
    assert [op.opcode for op in m.operators] == ["RELU"]
    assert m.tensors[0].shape == (2, 2) and m.tensors[0].data is None
    assert m.inputs == (0,) and m.outputs == (1,)


def test_single_op_model_fields() -> None:
    w = np.arange(4 * 3 * 3 * 2, dtype=np.int8).reshape(4, 3, 3, 2)
    x = Tensor((1, 5, 5, 2), "int8", scale=0.5, zero_point=-3, name="input")
    wt = Tensor(w.shape, "int8", scale=[0.1, 0.2, 0.3, 0.4], zero_point=[0] * 4,
                quantized_dimension=0, data=w)
    y = Tensor((1, 3, 3, 4), "int8", scale=0.25, zero_point=7)
    m = read_model(single_op_model("CONV_2D", [x, wt, None], [y], padding="VALID",
                                   stride_w=2, stride_h=1, fused_activation_function="RELU6"))
    op = m.operators[0]
    assert op.opcode == "CONV_2D" and op.options_type == "Conv2DOptions"
    assert op.inputs[2] == -1  # the omitted bias
    assert op.options["stride_w"] == 2 and op.options["stride_h"] == 1
    assert op.options["padding"] == tflite.Padding.VALID
    assert op.options["fused_activation_function"] == tflite.ActivationFunctionType.RELU6
    assert op.options["dilation_w_factor"] == 1  # schema default: the builder left it out
    tensors = {t.name: t for t in m.tensors}
    assert tensors["input"].quant.scales == (0.5,) and tensors["input"].quant.zero_points == (-3,)
    wq = m.tensors[op.inputs[1]]
    np.testing.assert_array_equal(wq.data, w)
    assert wq.quant.per_channel and wq.quant.axis == 0
    assert wq.quant.scales == tuple(float(np.float32(s)) for s in (0.1, 0.2, 0.3, 0.4))


def test_vector_options_and_missing_options_table() -> None:
    x = Tensor((1, 3, 1, 2), "float32")
    y = Tensor((3, 2), "float32")
    m = read_model(single_op_model("SQUEEZE", [x], [y], squeeze_dims=[0, -2]))
    assert m.operators[0].options["squeeze_dims"] == (0, -2)
    # An operator without its options table reads the schema's defaults.
    m = read_model(single_op_model("RELU", [x], [x]))
    assert m.operators[0].options_type == "NONE" and m.operators[0].options == {}


@pytest.mark.parametrize("name", ["ad01_int8", "kws_ref_model", "vww_96_float"])
def test_shared_models(name: str) -> None:
    path = MLPERF / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"shared model {path} not found; ../shared/models lives beside the repo")
    m = read_model(path.read_bytes())
    assert m.subgraph_count == 1 and len(m.inputs) == 1 and len(m.outputs) == 1
    for op in m.operators:
        for i in op.inputs:
            t = m.tensors[i]
            if t.data is not None and t.type != "INT8":
                assert t.data.shape == t.shape
    per_channel = any(t.quant is not None and t.quant.per_channel for t in m.tensors)
    if name == "vww_96_float":
        assert m.tensors[m.inputs[0]].type == "FLOAT32" and not per_channel
    else:
        assert m.tensors[m.inputs[0]].type == "INT8"
        # Convolution filters are quantized per channel; dense layers per tensor.
        assert per_channel == (name == "kws_ref_model")


# Each spoiled field and the words the error must contain.
MALFORMED = [
    ({"identifier": b"XXXX"}, "file identifier"),
    ({"version": 2}, "schema version 2"),
    ({"op_inputs": (7,)}, "operator 0 refers to tensor 7"),
    ({"op_outputs": (-1,)}, "operator 0 refers to tensor -1"),
    ({"opcode_index": 3}, "opcode index 3"),
    ({"shape": (2, -2)}, "negative dimension"),
    ({"tensor_type": 99}, "unknown element type 99"),
    ({"data": bytes(12)}, "holds 12 bytes of data, but its shape [2, 2] of FLOAT32 needs 16"),
    ({"buffer_index": 5}, "refers to buffer 5, but the model has 1"),
    ({"scales": [0.5, 0.25], "zero_points": [0]}, "2 quantization scales but 1 zero points"),
    ({"options_type": 250}, "unknown builtin options type 250"),
]


@pytest.mark.parametrize("spoil,words", MALFORMED, ids=[w.split()[0] for _, w in MALFORMED])
def test_structural_errors(spoil: dict, words: str) -> None:
    with pytest.raises(FormatError, match=words.replace("[", r"\[").replace("]", r"\]")):
        read_model(raw_model(**spoil))


def test_short_files() -> None:
    for n in range(8):
        with pytest.raises(FormatError, match=f"the file has {n} bytes"):
            read_model(bytes(n))


def test_checked_table_refuses_reads_outside_the_buffer() -> None:
    data = raw_model()
    model = checked(tflite.Model.GetRootAs(data, 0))
    tab = model._tab
    assert isinstance(tab, CheckedTable)
    with pytest.raises(FormatError, match="outside"):
        tab.Get(flatbuffers.number_types.Int32Flags, len(data) - 2)
    with pytest.raises(FormatError, match="outside"):
        tab.Indirect(len(data))
    # A table whose vtable link points before the file's start.
    bad = bytearray(data)
    root = int.from_bytes(bad[:4], "little")
    bad[root:root + 4] = (root + 1000).to_bytes(4, "little", signed=True)
    with pytest.raises(FormatError, match="vtable"):
        read_model(bytes(bad))


def test_vector_longer_than_the_file() -> None:
    """A vector claiming more elements than bytes left is refused before any element is
    read (so no claimed length can make the reader allocate or loop)."""
    data = bytearray(raw_model())
    model = tflite.Model.GetRootAs(bytes(data), 0)
    off = model._tab.Offset(12)  # Model.buffers (schema field 4)
    start = model._tab.Pos + off
    vec = start + int.from_bytes(data[start:start + 4], "little")
    data[vec:vec + 4] = (0x7FFFFFF0).to_bytes(4, "little")
    with pytest.raises(FormatError, match="vector"):
        read_model(bytes(data))


def test_table_offset_past_the_end() -> None:
    """An element of a vector of tables pointing past the file (even past 4 GiB, which
    the flatbuffers runtime itself rejects with a TypeError) is a FormatError."""
    data = bytearray(raw_model())
    model = tflite.Model.GetRootAs(bytes(data), 0)
    vec = model._tab.Vector(model._tab.Offset(8))  # Model.subgraphs, element 0
    for offset in (len(data), 0xFFFFFFF0):
        data[vec:vec + 4] = offset.to_bytes(4, "little")
        with pytest.raises(FormatError, match="table at byte"):
            read_model(bytes(data))
