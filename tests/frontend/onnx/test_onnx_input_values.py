"""--input-value NAME=VALUE on .onnx models: a pinned input becomes an initializer, so
shape operands given as graph inputs fold, and the firmware's inputs are the others;
every bad pin is one line naming the option and the input (toolchain/frontend/onnx/
reader.py, toolchain/graph/pinned_inputs.py, toolchain/cli/build.py).

Tolerance against onnxruntime: numpy.isclose(rtol=1e-5, atol=1e-6), README's --check
bound (a Reshape and an Add: one float rounding each, in the same order)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx_models import build, node, run_ort

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli
from toolchain.frontend.onnx.errors import OnnxError
from toolchain.loader import load_graph
from toolchain.reference import run_graph

X = np.arange(12, dtype=np.float32).reshape(2, 6) / 7
SHAPE = np.array([3, 4], np.int64)


def _reshape_add() -> bytes:
    """y = reshape(x, shape) + b: x first, the shape operand a graph input between."""
    return build([node("Reshape", ["x", "shape"], ["r"]), node("Add", ["r", "b"], ["y"])],
                 inputs={"x": X, "shape": SHAPE, "b": np.ones((3, 4), np.float32)},
                 outputs=["y"], dims={"shape": ["n"]},
                 output_types={"y": (np.float32, [3, 4])})


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "reshape.onnx"
    path.write_bytes(_reshape_add())
    return path


def test_a_pinned_shape_operand_folds_and_leaves_the_inputs(model: Path) -> None:
    graph = load_graph(model, input_values={"shape": np.array([3, 4])})
    assert graph.input_names == ["x", "b"]
    b = np.full((3, 4), 0.5, np.float32)
    (got,) = run_graph(graph, [X, b])
    want = run_ort(model.read_bytes(), [X, SHAPE, b])
    expected = want[0] if want is not None else X.reshape(3, 4) + b
    assert np.isclose(got, expected, rtol=1e-5, atol=1e-6).all()


def test_without_the_pin_the_shape_operand_is_refused(model: Path) -> None:
    with pytest.raises(OnnxError, match=r"node 'r' \(Reshape\): input 1 \(shape\) must be a "
                       r"constant: it is the model's input 'shape'; give its value with "
                       r"--input-value shape=VALUE$"):
        load_graph(model, input_shapes={"shape": (2,)})


@pytest.mark.parametrize(("options", "message"), [
    (["--input-value", "shap=3,4"],
     "reshape.onnx: --input-value names shap, which is no input of the model (its "
     "inputs: x, shape, b)"),
    (["--input-value", "shape=3.5,4"],
     "reshape.onnx: --input-value shape: a value of float64 shape (2,), but input 'shape' "
     "is declared i64 [n]"),
    (["--input-value", "shape=3,4", "--input-value", "shape=12"],
     "minirt-build: error: --input-value gives input 'shape' twice"),
    (["--input-value", "shape=3,4", "--input-shape", "shape=2"],
     "reshape.onnx: input 'shape' is given both --input-shape and --input-value (a value "
     "sets the shape: give only --input-value)"),
    (["--input-value", "shape"],
     "minirt-build: error: --input-value shape: expected NAME=VALUE, e.g. sr=16000, "
     "axes=0,2 or shape=shape.npy"),
    (["--input-value", "shape=3;4"],
     "minirt-build: error: --input-value shape=3;4: '3;4' is not a number, a comma list "
     "of numbers or an .npy file"),
    (["--input-value", "shape=missing.npy"],
     "minirt-build: error: --input-value shape=missing.npy: cannot read missing.npy: "),
])
def test_a_bad_pin_is_one_line(model: Path, capsys, options: list[str], message: str) -> None:
    rc = build_cli.main(["--dump-ir", str(model), *options])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert err.endswith(message) or err.startswith(message), err


def test_a_value_from_an_npy_file(model: Path, tmp_path: Path, capsys) -> None:
    np.save(tmp_path / "shape.npy", np.array([3, -1], np.int32))  # int32: converted
    assert build_cli.main(["--dump-ir", str(model), "--input-value",
                           f"shape={tmp_path / 'shape.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "(%arg0: tensor<2x6xf32>, %arg1: tensor<3x4xf32>) -> (tensor<3x4xf32>)" in out


def test_minirt_run_takes_the_other_inputs_and_stamps_the_value(model: Path, tmp_path: Path,
                                                               capsys) -> None:
    """The firmware's inputs omit the pinned one (input_0 is x, input_1 is b); the value
    is part of the build stamp, so another value rebuilds."""
    b = np.full((3, 4), 2.0, np.float32)
    np.savez(tmp_path / "in.npz", input_0=X, input_1=b)
    out = tmp_path / "fw"
    rc = run_cli.main([str(model), "--board", "x86-64", "--check", "--inputs",
                       str(tmp_path / "in.npz"), "--save-outputs", str(tmp_path / "out.npz"),
                       "-o", str(out), "--input-value", "shape=3,4"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "check: outputs match the reference" in captured.out
    got = np.load(tmp_path / "out.npz")["output_0"]
    assert np.isclose(got, X.reshape(3, 4) + b, rtol=1e-5, atol=1e-6).all()
    stamp = json.loads((out / "build.json").read_text())["stamp"]
    assert stamp["input_values"]["shape"]["shape"] == [2]
    rc = run_cli.main([str(model), "--board", "x86-64", "-o", str(out),
                       "--input-value", "shape=3,-1"])
    captured = capsys.readouterr()
    assert rc == 0 and "building" in captured.err, captured.err
