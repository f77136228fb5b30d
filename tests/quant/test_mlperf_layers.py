"""The whole chain, exact, on the four int8 MLPerf Tiny models, layer by layer.

Each model is read with the `tflite` package; its operators are applied in order with
toolchain.quant's functions (parameters derived from the tensors' scales and zero points,
as TFLite Micro's Prepare does), each op fed *our* previous outputs. Every intermediate
tensor is compared exactly with TFLite Micro's (`GetTensor` with all tensors preserved),
and the final output with the .npz beside the model: classifier outputs saturate after
SOFTMAX, so only the layers prove the arithmetic. The .npz inputs and fresh seeded random
inputs are both used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite
from model_zoo import MODELS_DIR
from tflite_models import run_tflm, tensor_value
from tflm_oracle import assert_exact

from toolchain.quant import tflm
from toolchain.quant import tflm_activations as act

MLPERF = MODELS_DIR / "mlperf_tiny"
INT8_MODELS = ["ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "vww_96_int8"]

OPCODE_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
ACTIVATION = {tflite.ActivationFunctionType.NONE: "NONE",
              tflite.ActivationFunctionType.RELU: "RELU",
              tflite.ActivationFunctionType.RELU_N1_TO_1: "RELU_N1_TO_1",
              tflite.ActivationFunctionType.RELU6: "RELU6"}
PADDING = {tflite.Padding.SAME: "SAME", tflite.Padding.VALID: "VALID"}
NUMPY_TYPES = {tflite.TensorType.INT8: np.int8, tflite.TensorType.INT32: np.int32,
               tflite.TensorType.FLOAT32: np.float32, tflite.TensorType.INT64: np.int64}


class Model:
    """Subgraph 0 of a .tflite: tensors' quantization, constants, operators."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.model = tflite.Model.GetRootAs(data, 0)
        self.graph = self.model.Subgraphs(0)

    def tensor(self, index: int) -> Any:
        return self.graph.Tensors(index)

    def scale_zp(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        quant = self.tensor(index).Quantization()
        return quant.ScaleAsNumpy(), quant.ZeroPointAsNumpy()

    def scale(self, index: int) -> float:
        return float(self.scale_zp(index)[0][0])

    def zp(self, index: int) -> int:
        return int(self.scale_zp(index)[1][0])

    def shape(self, index: int) -> tuple[int, ...]:
        return tuple(int(d) for d in self.tensor(index).ShapeAsNumpy())

    def constant(self, index: int) -> np.ndarray | None:
        t = self.tensor(index)
        buf = self.model.Buffers(t.Buffer())
        if buf.DataLength() == 0:
            return None
        raw = buf.DataAsNumpy().tobytes()
        return np.frombuffer(raw, dtype=NUMPY_TYPES[t.Type()]).reshape(self.shape(index))

    def opcode(self, op: Any) -> str:
        code = self.model.OperatorCodes(op.OpcodeIndex())
        return OPCODE_NAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]


def _options(op: Any, cls: type) -> Any:
    table = op.BuiltinOptions()
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    return opts


def _conv_like(m: Model, op: Any, x: np.ndarray, depthwise: bool) -> np.ndarray:
    i, w_i, b_i, o = op.Inputs(0), op.Inputs(1), op.Inputs(2), op.Outputs(0)
    opts = _options(op, tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions)
    mult, shifts = tflm.conv_params(m.scale(i), m.scale_zp(w_i)[0], m.scale(o))
    lo, hi = tflm.activation_range(ACTIVATION[opts.FusedActivationFunction()], m.scale(o),
                                   m.zp(o))
    kw = dict(strides=(opts.StrideH(), opts.StrideW()), padding=PADDING[opts.Padding()],
              dilations=(opts.DilationHFactor(), opts.DilationWFactor()), input_zp=m.zp(i),
              output_zp=m.zp(o), multipliers=mult, shifts=shifts, act_min=lo, act_max=hi)
    bias = m.constant(b_i) if b_i >= 0 else None
    if depthwise:
        return tflm.depthwise_conv2d(x, m.constant(w_i), bias,
                                     depth_multiplier=opts.DepthMultiplier(), **kw)
    return tflm.conv2d(x, m.constant(w_i), bias, **kw)


def apply(m: Model, op: Any, values: dict[int, np.ndarray]) -> np.ndarray:
    """One operator with toolchain.quant's functions; inputs come from `values`."""
    name = m.opcode(op)
    i, o = op.Inputs(0), op.Outputs(0)
    x = values[i]
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return _conv_like(m, op, x, depthwise=name == "DEPTHWISE_CONV_2D")
    if name == "FULLY_CONNECTED":
        w_i, b_i = op.Inputs(1), op.Inputs(2)
        opts = _options(op, tflite.FullyConnectedOptions)
        mult, shifts = tflm.fully_connected_params(m.scale(i), m.scale_zp(w_i)[0], m.scale(o))
        lo, hi = tflm.activation_range(ACTIVATION[opts.FusedActivationFunction()],
                                       m.scale(o), m.zp(o))
        out = tflm.fully_connected(x, m.constant(w_i), m.constant(b_i) if b_i >= 0 else None,
                                   input_zp=m.zp(i), output_zp=m.zp(o), multipliers=mult,
                                   shifts=shifts, filter_zp=m.zp(w_i), act_min=lo, act_max=hi)
        return out.reshape(m.shape(o))
    if name == "AVERAGE_POOL_2D":
        opts = _options(op, tflite.Pool2DOptions)
        lo, hi = tflm.activation_range(ACTIVATION[opts.FusedActivationFunction()],
                                       m.scale(o), m.zp(o))
        return tflm.average_pool(x, filter_size=(opts.FilterHeight(), opts.FilterWidth()),
                                 strides=(opts.StrideH(), opts.StrideW()),
                                 padding=PADDING[opts.Padding()], act_min=lo, act_max=hi)
    if name == "ADD":
        i2 = op.Inputs(1)
        opts = _options(op, tflite.AddOptions)
        p = tflm.add_params(m.scale(i), m.zp(i), m.scale(i2), m.zp(i2), m.scale(o), m.zp(o),
                            ACTIVATION[opts.FusedActivationFunction()])
        return tflm.add(x, values[i2], p)
    if name == "RESHAPE":
        return x.reshape(m.shape(o))
    if name == "SOFTMAX":
        opts = _options(op, tflite.SoftmaxOptions)
        return act.softmax(x, act.softmax_params(m.scale(i), opts.Beta()))
    raise AssertionError(f"{name}: no function for this op in the layer-by-layer test")


def _model_path(name: str) -> Path:
    path = MLPERF / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"MLPerf Tiny model not found ({path.resolve()}); "
                    "the shared model folder lives beside the repo")
    return path


def check_layers(m: Model, x: np.ndarray) -> np.ndarray:
    """Run the model both ways; every operator output must match. Returns our output."""
    (tflm_out,), interp = run_tflm(m.data, [x], keep_tensors=True)
    values = {m.graph.Inputs(0): x}
    for k in range(m.graph.OperatorsLength()):
        op = m.graph.Operators(k)
        values[op.Outputs(0)] = apply(m, op, values)
    for k in range(m.graph.OperatorsLength()):
        op = m.graph.Operators(k)
        index = op.Outputs(0)
        assert_exact(tensor_value(interp, index).reshape(m.shape(index)), values[index],
                     f"operator {k} ({m.opcode(op)}), tensor {index}")
    ours = values[m.graph.Outputs(0)]
    assert_exact(tflm_out, ours, "model output")
    return ours


@pytest.mark.parametrize("name", INT8_MODELS)
def test_every_layer_exact_on_the_npz_cases(name: str) -> None:
    m = Model(_model_path(name).read_bytes())
    cases = np.load(MLPERF / f"{name}.npz")
    inputs = sorted(k for k in cases.files if k.startswith("input_"))
    assert inputs, f"{name}.npz has no input_<case>_0 arrays"
    for key in inputs:
        case = key.split("_")[1]
        ours = check_layers(m, cases[key])
        assert_exact(cases[f"output_{case}_0"], ours, f"{name} case {case} vs .npz")


@pytest.mark.parametrize("name", INT8_MODELS)
def test_every_layer_exact_on_random_inputs(name: str) -> None:
    m = Model(_model_path(name).read_bytes())
    rng = np.random.default_rng(sum(map(ord, name)))
    shape = m.shape(m.graph.Inputs(0))
    for _ in range(2):
        check_layers(m, rng.integers(-128, 128, size=shape).astype(np.int8))
