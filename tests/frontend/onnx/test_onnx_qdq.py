"""Quantized ONNX models (onnx_qdq_cases.py) on the numpy reference against onnxruntime,
and the integer scheme against TFLite's kernels computed independently in numpy.

Tolerance against onnxruntime: integers within 1 (one LSB), where the real result lies
within float rounding of a rounding tie: onnxruntime requantizes an accumulator with a
float32 multiplier and rounds half to even, minirt uses TFLite's exact fixed-point
multiplier (ties away from zero), and table ops evaluate the float function with numpy
where onnxruntime has its own exp. QuantizeLinear and DequantizeLinear alone, data
movement and MaxPool are exact. Float outputs (DequantizeLinear, the uint8 QLinear
cases run in float) follow the float tolerance of test_onnx_ops.py, or one LSB of
their output scale.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx_models import import_bytes, run_ort
from onnx_qdq_cases import QDQ_CASES, X_Q, conv, gemm

from toolchain.graph.ir import Graph
from toolchain.quant import tflm
from toolchain.reference import run_graph

# Cases whose every output element must equal onnxruntime's (no requantization).
EXACT = {"maxpool", "reshape", "flatten", "transpose", "pad", "concat-same-scale",
         "quantize", "quantize-ties-half-even", "quantize-per-channel",
         "quantize-uint8-default", "dequantize", "dequantize-per-channel", "requantize"}


def dequantizes(graph: Graph) -> list[str]:
    """The nodes that turn integers into floats (a dequantize: the pattern left int8)."""
    return [f"{n.op}({n.inputs[0].type}) -> {n.outputs[0].type}" for n in graph.nodes
            if n.op == "convert" and n.outputs[0].type.dtype.is_float
            and n.inputs[0].type.dtype.is_integer]


@pytest.mark.parametrize("name", QDQ_CASES)
def test_reference_matches_onnxruntime(name: str) -> None:
    data, inputs, int8 = QDQ_CASES[name]()
    graph = import_bytes(data)
    if int8:
        assert not dequantizes(graph), f"{name} left int8: {dequantizes(graph)}"
    got = run_graph(graph, inputs)
    want = run_ort(data, inputs)
    if want is None:
        pytest.skip("onnxruntime (dev extra) is not installed")
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        if w.dtype.kind == "f":
            assert np.isclose(g, w, rtol=1e-5, atol=1e-5).all(), name
            continue
        diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
        assert diff.max() <= (0 if name in EXACT else 1), f"{name}: {diff.max()} LSB"


def test_quantize_rounds_half_to_even() -> None:
    """x / scale exactly k + 0.5: QuantizeLinear rounds to the even neighbour."""
    data, inputs, _ = QDQ_CASES["quantize-ties-half-even"]()
    got = run_graph(import_bytes(data), inputs)[0]
    want = np.clip(np.rint(inputs[0] / np.float32(0.125)), -128, 127).astype(np.int8)
    assert np.array_equal(got, want)
    assert got.reshape(-1)[40] == 0 and got.reshape(-1)[41] == 2  # 0.5 -> 0, 1.5 -> 2


def _input_q(x: np.ndarray) -> np.ndarray:
    s, z = X_Q
    return np.clip(np.rint(x / np.float32(s)) + z, -128, 127).astype(np.int8)


def test_conv_is_tflite_per_channel_convolution() -> None:
    """The QDQ Conv's int8 output equals TFLite's ConvPerChannel computed in numpy
    (toolchain/quant/tflm.py) with multipliers from in_scale * w_scale / out_scale:
    the integer scheme, exactly."""
    import onnx
    from onnx import numpy_helper

    data, inputs, _ = conv(pads=[1, 1, 1, 1])
    model = onnx.load_model_from_string(data)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    mult, shift = tflm.conv_params(X_Q[0], init["w_s"], 0.05)
    want = tflm.conv2d(_input_q(inputs[0]).transpose(0, 2, 3, 1),
                       init["w"].transpose(0, 2, 3, 1), init["b"], strides=(1, 1),
                       padding="SAME", input_zp=X_Q[1], output_zp=3, multipliers=mult,
                       shifts=shift).transpose(0, 3, 1, 2)
    got = run_graph(import_bytes(data), inputs)[0]
    assert np.array_equal(got, want)


def test_gemm_is_tflite_fully_connected() -> None:
    import onnx
    from onnx import numpy_helper

    data, inputs, _ = gemm()
    model = onnx.load_model_from_string(data)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    mult, shift = tflm.fully_connected_params(X_Q[0], init["w_s"], 0.04)
    want = tflm.fully_connected(_input_q(inputs[0]), init["w"], init["b"], input_zp=X_Q[1],
                                output_zp=-2, multipliers=mult, shifts=shift)
    assert np.array_equal(run_graph(import_bytes(data), inputs)[0], want)
