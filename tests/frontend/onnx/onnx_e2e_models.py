"""The end-to-end ONNX models: an MLP, a CNN (examples/onnx/make_cnn.py, docs/formats.md's
example) and a QDQ-quantized CNN, written with onnx.helper like a quantizer writes them
(int8 activations per tensor, int8 weights per output channel, int32 biases), or made
by onnxruntime's own quantizer (quantize_static) where it is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
from onnx_models import build, node, randn
from onnx_qdq_cases import Q

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "onnx" / "make_cnn.py"
CNN_INPUT = (1, 1, 12, 12)


def mlp() -> bytes:
    """784 -> 32 -> 16 -> 10 with Relu, Gemm with transB as PyTorch's Linear exports."""
    consts = {"w1": randn((32, 64), 1, 0.2), "b1": randn((32,), 2, 0.1),
              "w2": randn((16, 32), 3, 0.2), "b2": randn((16,), 4, 0.1),
              "w3": randn((10, 16), 5, 0.3), "b3": randn((10,), 6, 0.1)}
    nodes = [node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1), node("Relu", ["h1"], ["r1"]),
             node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1), node("Relu", ["h2"], ["r2"]),
             node("Gemm", ["r2", "w3", "b3"], ["y"], transB=1)]
    return build(nodes, {"x": randn((2, 64), 0)}, ["y"], consts)


def cnn() -> bytes:
    """docs/formats.md's example (a dynamic batch 'N': pin it with --input-shape)."""
    spec = importlib.util.spec_from_file_location("make_cnn", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_cnn().SerializeToString()


def _float_cnn_nodes() -> tuple[list, dict]:
    consts = {"w1": randn((6, 3, 3, 3), 11, 0.3), "b1": randn((6,), 12, 0.1),
              "w2": randn((8, 6, 3, 3), 13, 0.2), "b2": randn((8,), 14, 0.1),
              "w3": randn((5, 8), 15, 0.4), "b3": randn((5,), 16, 0.1)}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"]),
             node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             node("Relu", ["c2"], ["r2"]), node("GlobalAveragePool", ["r2"], ["g"]),
             node("Flatten", ["g"], ["f"]), node("Gemm", ["f", "w3", "b3"], ["y"], transB=1)]
    return nodes, consts


QDQ_INPUT = (1, 3, 10, 10)


def float_cnn() -> bytes:
    nodes, consts = _float_cnn_nodes()
    return build(nodes, {"x": randn(QDQ_INPUT, 0)}, ["y"], consts)


def qdq_cnn_by_hand() -> bytes:
    """float_cnn in QDQ form, with scales chosen from the float model's ranges on the
    calibration inputs (x within +-4, relu1 up to 5.9, relu2 up to 8.5, the pooled mean
    up to 3.3, the output within +-1.9)."""
    _, c = _float_cnn_nodes()
    g = Q()
    x = g.qdq("x", "xq", 0.032, 0)
    # weights per channel within +-63 (onnx_qdq_cases.REDUCED: onnxruntime, the oracle,
    # saturates wider ones on CPUs without VNNI), biases int32 at input scale x weight
    # scale
    from onnx_qdq_cases import REDUCED, _weights

    def layer(op, src, w, b, in_scale, axis=0, **attrs):
        _, ws, _ = _weights(c[w], True, axis, REDUCED)
        ins = [src, g.weights(w, c[w], True, axis, REDUCED),
               g.bias(b, c[b], np.float32(in_scale) * ws)]
        g.nodes.append(node(op, ins, [f"{w}_out"], **attrs))
        return f"{w}_out"

    y = layer("Conv", x, "w1", "b1", 0.032, pads=[1, 1, 1, 1])
    g.nodes.append(node("Relu", [y], ["r1"]))
    r1 = g.qdq("r1", "r1q", 0.024, -128)
    g.nodes.append(node("MaxPool", [r1], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    p1 = g.qdq("p1", "p1q", 0.024, -128)
    y = layer("Conv", p1, "w2", "b2", 0.024, pads=[1, 1, 1, 1])
    g.nodes.append(node("Relu", [y], ["r2"]))
    r2 = g.qdq("r2", "r2q", 0.034, -128)
    g.nodes.append(node("GlobalAveragePool", [r2], ["gp"]))
    gp = g.qdq("gp", "gq", 0.013, -128)
    g.nodes.append(node("Flatten", [gp], ["f"]))
    f = g.qdq("f", "gq2", 0.013, -128)
    y = layer("Gemm", f, "w3", "b3", 0.013, transB=1)
    g.dequantize(g.quantize(y, "yq", 0.015, 0), "yq")
    g.nodes.append(node("Identity", ["yq_dq"], ["y"]))
    return build(g.nodes, {"x": randn(QDQ_INPUT, 0)}, ["y"], g.consts)


def qdq_cnn_by_onnxruntime(tmp: Path) -> bytes:
    """float_cnn quantized by onnxruntime's quantize_static (QDQ, int8 activations,
    per-channel int8 weights within +-63: reduce_range, which onnxruntime's own int8
    convolutions need on CPUs without VNNI to be exact, onnx_qdq_cases.REDUCED),
    calibrated on 16 seeded inputs."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter([{"x": randn(QDQ_INPUT, 100 + i)} for i in range(16)])

        def get_next(self):
            return next(self.samples, None)

    src, dst = tmp / "float_cnn.onnx", tmp / "qdq_cnn.onnx"
    src.write_bytes(float_cnn())
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    per_channel=True, reduce_range=True)
    return dst.read_bytes()


def output_scale(data: bytes) -> float:
    """The scale of the DequantizeLinear that writes the model's output."""
    model = onnx.load_model_from_string(data)
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    n = producers[model.graph.output[0].name]
    while n.op_type != "DequantizeLinear":
        n = producers[n.input[0]]
    return float(init[n.input[1]])


__all__ = ["CNN_INPUT", "QDQ_INPUT", "cnn", "float_cnn", "mlp", "output_scale",
           "qdq_cnn_by_hand", "qdq_cnn_by_onnxruntime"]
