"""ONNX's float8 / float4 casts and Q/DQ against onnx's own reference implementation
(onnx.reference.ReferenceEvaluator), on a sweep of f32 values, bit for bit: on minirt's
reference and in firmware on cortex-m4 and x86-64.

One model casts the sweep to each float8 type with `saturate` 1 and 0, to FLOAT8E8M0
with each `round_mode` and `saturate`, and to FLOAT4E2M1, each cast back to FLOAT; and
quantizes and dequantizes it through FLOAT8E4M3FN, FLOAT8E5M2 and FLOAT4E2M1. The sweep
(tests/small_float_values.py) holds every value of E4M3FN, E5M2 and E8M0 with the ties
between them and their neighbours, the overflow thresholds, NaN, inf, zeros, negatives
and f32 subnormals.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_models import import_bytes, run_firmware
from small_float_values import sweep

from toolchain.reference import run_graph
from toolchain.small_floats import FORMATS

FLOAT8 = {"E4M3FN": TensorProto.FLOAT8E4M3FN, "E4M3FNUZ": TensorProto.FLOAT8E4M3FNUZ,
          "E5M2": TensorProto.FLOAT8E5M2, "E5M2FNUZ": TensorProto.FLOAT8E5M2FNUZ}
X = np.unique(np.concatenate([
    sweep(FORMATS["f8E4M3FN"], random=64), sweep(FORMATS["f8E5M2"], random=64, seed=1),
    sweep(FORMATS["f8E8M0FNU"], random=64, seed=2)]).view(np.uint32)).view(np.float32)


def _model() -> bytes:
    nodes, outs = [], []

    def cast_back(name: str, to: int, **attrs) -> None:
        nodes.append(helper.make_node("Cast", ["x"], [name], to=to, **attrs))
        nodes.append(helper.make_node("Cast", [name], [name + "_f"], to=TensorProto.FLOAT))
        outs.append(name + "_f")

    for label, code in FLOAT8.items():
        for sat in (1, 0):
            cast_back(f"{label}_s{sat}", code, saturate=sat)
    for mode in ("up", "down", "nearest"):
        for sat in (1, 0):
            cast_back(f"E8M0_{mode}_s{sat}", TensorProto.FLOAT8E8M0, round_mode=mode,
                      saturate=sat)
    cast_back("F4", TensorProto.FLOAT4E2M1)
    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "q_scale"),
             numpy_helper.from_array(np.array(0.5, np.float32), "dq_scale")]
    for label, code in (("E4M3FN", TensorProto.FLOAT8E4M3FN),
                        ("E5M2", TensorProto.FLOAT8E5M2), ("F4", TensorProto.FLOAT4E2M1)):
        inits.append(helper.make_tensor(f"zp_{label}", code, [], [0.0]))
        nodes.append(helper.make_node("QuantizeLinear", ["x", "q_scale", f"zp_{label}"],
                                      [f"q_{label}"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"q_{label}", "dq_scale"],
                                      [f"dq_{label}"]))
        outs.append(f"dq_{label}")
    graph = helper.make_graph(
        nodes, "small_floats", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [X.size]) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.fixture(scope="module")
def model() -> tuple[bytes, list[np.ndarray]]:
    data = _model()
    return data, ReferenceEvaluator(onnx.load_model_from_string(data)).run(None, {"x": X})


def _check(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g, np.float32), np.asarray(w, np.float32)
        same = (g.view(np.uint32) == w.view(np.uint32)) | (
            np.isnan(g) & np.isnan(w) & (np.signbit(g) == np.signbit(w)))
        assert same.all(), (f"output {k}: {(~same).sum()} differ; at x={X[~same][0]!r} got "
                            f"{g[~same][0]!r}, want {w[~same][0]!r}")


def test_small_float_casts_on_the_reference(model) -> None:
    data, want = model
    _check(run_graph(import_bytes(data), [X]), want)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_small_float_casts_on_the_board(model, board: str, tmp_path) -> None:
    data, want = model
    _check(run_firmware(import_bytes(data), board, tmp_path / "fw", [X]), want)
