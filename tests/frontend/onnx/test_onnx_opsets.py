"""Models of opsets 7 to 12: converted to opset 13 by onnx's version converter and
imported (toolchain/frontend/onnx/reader.py), checked against onnxruntime running the
model as written, at its own opset. An op the converter cannot convert is one line
naming it.

Tolerance: numpy.isclose(rtol=1e-5, atol=1e-6), README's --check bound: each case is
one op whose float result onnxruntime and the reference round alike (a BatchNormalization
or a ReduceMean sums in its own order: within that bound at these sizes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_models import randn, run_ort

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.loader import load_graph
from toolchain.reference import run_graph

X = randn((1, 2, 3, 4), 3)


def _model(nodes: list, opset: int, outputs: int = 1, inits: dict | None = None) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None)
            for i in range(outputs)]
    tensors = [onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()]
    model = helper.make_model(helper.make_graph(nodes, "old", [x], outs, tensors),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return onnx.shape_inference.infer_shapes(model).SerializeToString()


def _n(op: str, inputs: list[str], outputs: int = 1, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [f"y{i}" for i in range(outputs)], name=op, **attrs)


CHANNEL = {k: np.array(v, np.float32) for k, v in
           {"s": [1.5, 0.5], "b": [0.1, -0.2], "m": [0.3, -0.1], "v": [2.0, 0.5]}.items()}
SCALES = {"sc": np.array([1, 1, 2, 3], np.float32)}
FRACTION = {"sf": np.array([1, 1, 1.5, 2.5], np.float32)}

# name -> (opset, nodes, outputs, initializers)
CASES = {
    "upsample_7_attribute_scales": (7, [_n("Upsample", ["x"], mode="nearest",
                                          scales=[1.0, 1.0, 2.0, 3.0])], 1, None),
    "upsample_9_scales_input": (9, [_n("Upsample", ["x", "sc"], mode="nearest")], 1, SCALES),
    "upsample_9_linear": (9, [_n("Upsample", ["x", "sc"], mode="linear")], 1, SCALES),
    "upsample_9_fractional": (9, [_n("Upsample", ["x", "sf"], mode="nearest")], 1, FRACTION),
    "upsample_9_linear_fractional": (9, [_n("Upsample", ["x", "sf"], mode="linear")], 1,
                                     FRACTION),
    "slice_9_attributes": (9, [_n("Slice", ["x"], starts=[0, 1, -3], ends=[1, 3, 100],
                                  axes=[1, 2, 3])], 1, None),
    "split_11_attribute": (11, [_n("Split", ["x"], 2, axis=3, split=[1, 3])], 2, None),
    "split_7_equal": (7, [_n("Split", ["x"], 2, axis=1)], 2, None),
    "reduce_sum_11_axes": (11, [_n("ReduceSum", ["x"], axes=[1, 3], keepdims=1)], 1, None),
    "reduce_mean_11_axes": (11, [_n("ReduceMean", ["x"], axes=[-1], keepdims=0)], 1, None),
    "reduce_max_12_axes": (12, [_n("ReduceMax", ["x"], axes=[2])], 1, None),
    "batch_norm_9": (9, [_n("BatchNormalization", ["x", "s", "b", "m", "v"],
                            epsilon=1e-3)], 1, CHANNEL),
    "batch_norm_7": (7, [_n("BatchNormalization", ["x", "s", "b", "m", "v"])], 1, CHANNEL),
    "softmax_11_flattens": (11, [_n("Softmax", ["x"], axis=1)], 1, None),
    "unsqueeze_11_axes": (11, [_n("Unsqueeze", ["x"], axes=[0, 5])], 1, None),
    "squeeze_11_axes": (11, [_n("Squeeze", ["x"], axes=[0])], 1, None),
    "pad_10_attributes": (10, [_n("Pad", ["x"], pads=[0, 0, 1, 2, 0, 0, 0, 1],
                                  value=0.5)], 1, None),
    "clip_10_attributes": (10, [_n("Clip", ["x"], min=-0.5, max=0.25)], 1, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_older_opset_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    opset, nodes, outputs, inits = CASES[name]
    data = _model(nodes, opset, outputs, inits)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(data)
    got = run_graph(load_graph(path), [X])
    want = run_ort(data, [X])
    if want is None:
        pytest.skip("onnxruntime is not installed")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, name
        assert np.isclose(g, w, rtol=1e-5, atol=1e-6).all(), f"{name}: {g} vs {w}"


def test_an_op_the_converter_cannot_convert_is_named(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cast5.onnx"
    path.write_bytes(_model([_n("Cast", ["x"], to=TensorProto.FLOAT)], 5))
    assert build_cli.main(["--dump-ir", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: not a valid ONNX model: it uses opset 5, and onnx's version converter "
        "cannot convert its Cast nodes from opset 5 to 13 (no adapter)"]


def test_an_older_opset_runs_as_firmware(tmp_path: Path, capsys) -> None:
    """An opset-9 Upsample (a Resize after conversion) built and run with --check."""
    path = tmp_path / "up.onnx"
    path.write_bytes(_model(CASES["upsample_9_scales_input"][1], 9, 1, SCALES))
    rc = run_cli.main([str(path), "--board", "x86-64", "--check", "-o", str(tmp_path / "fw")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "check: outputs match the reference" in captured.out
