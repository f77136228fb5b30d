"""Writes examples/onnx/cnn.onnx: a small image classifier as PyTorch exports one
(NCHW, a dynamic batch dimension 'N', Conv + BatchNormalization + Relu, MaxPool,
GlobalAveragePool, Flatten, Gemm, Softmax), built with onnx.helper and seeded weights.

    python examples/onnx/make_cnn.py [OUT.onnx]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def make_cnn(seed: int = 0) -> onnx.ModelProto:
    """The model: input 'input' [N, 1, 12, 12] -> 'probs' [N, 4]."""
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    init = {
        "conv1.w": weights(8, 1, 3, 3), "conv1.b": weights(8, scale=0.1),
        "bn.scale": 1 + weights(8, scale=0.1), "bn.bias": weights(8, scale=0.1),
        "bn.mean": weights(8, scale=0.1), "bn.var": (1 + np.abs(weights(8))).astype(np.float32),
        "conv2.w": weights(16, 8, 3, 3, scale=0.15), "conv2.b": weights(16, scale=0.1),
        "fc.w": weights(4, 16), "fc.b": weights(4, scale=0.1),
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"],
          "bn1"),
        n("Relu", ["b1"], ["r1"], "relu1"),
        n("MaxPool", ["r1"], ["p1"], "pool1", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], "conv2", pads=[1, 1, 1, 1],
          strides=[2, 2]),
        n("Relu", ["c2"], ["r2"], "relu2"),
        n("GlobalAveragePool", ["r2"], ["g"], "gap"),
        n("Flatten", ["g"], ["f"], "flatten"),
        n("Gemm", ["f", "fc.w", "fc.b"], ["logits"], "fc", transB=1),
        n("Softmax", ["logits"], ["probs"], "softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, ["N", 1, 12, 12])],
        [helper.make_tensor_value_info("probs", onnx.TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(v, k) for k, v in init.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="minirt example")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("cnn.onnx")
    onnx.save(make_cnn(), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
