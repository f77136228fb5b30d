"""`minirt-run --stream`: N inferences on one state in one QEMU run (a TFLite model's
resource variables, or explicit state fed back with --feedback), every step printed,
saved and checked; `minirt-build` shows the state as its own RAM row; stream options
that cannot work are one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_state_models import streaming_model

from toolchain.cli import build, run, size

# Explicit state, ONNX style: input 1 is the state, output 1 its new value
# (s' = s / 2 + x), output 0 = 2 s'.
FEEDBACK_MODEL = """func.func @main(%x: tensor<3xf32>, %s: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %half = stablehlo.constant dense<0.5> : tensor<3xf32>
  %0 = stablehlo.multiply %s, %half : tensor<3xf32>
  %1 = stablehlo.add %0, %x : tensor<3xf32>
  %2 = stablehlo.add %1, %1 : tensor<3xf32>
  return %2, %1 : tensor<3xf32>, tensor<3xf32>
}
"""  # noqa: E501
STEPS = 5


def _feedback_inputs(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS, 3)).astype(np.float32)
    s = rng.normal(size=(STEPS, 3)).astype(np.float32)  # only step 0's is used
    path = tmp_path / "in.npz"
    np.savez(path, input_0=x, input_1=s)
    return path, x, s


def _expected_feedback(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    state, out = s[0], []
    for k in range(STEPS):
        state = (state * np.float32(0.5) + x[k]).astype(np.float32)
        out.append(2 * state)
    return np.stack(out)


@pytest.mark.parametrize("where", [["--reference"], ["--board", "x86-64"],
                                   ["--board", "cortex-m4"]])
def test_feedback_streams_explicit_state(where, tmp_path: Path, capsys) -> None:
    model = tmp_path / "fb.mlir"
    model.write_text(FEEDBACK_MODEL)
    inputs, x, s = _feedback_inputs(tmp_path)
    out = tmp_path / "out.npz"
    code = run.main([str(model), *where, "-o", str(tmp_path / "fw"), "--stream",
                     str(STEPS), "--inputs", str(inputs), "--feedback", "output_1=1",
                     "--check", "--save-outputs", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    saved = np.load(out)
    assert saved["output_0"].shape == (STEPS, 3)
    np.testing.assert_allclose(saved["output_0"], _expected_feedback(x, s), rtol=1e-6)
    assert f"step {STEPS - 1}:" in text
    if where[0] == "--board":
        assert f"the outputs of all {STEPS} steps match the reference" in text


def test_stream_of_resource_variables_with_a_reset(tmp_path: Path, capsys) -> None:
    model = tmp_path / "s.tflite"
    model.write_bytes(streaming_model("int8"))
    code = run.main([str(model), "--board", "cortex-m4", "-o", str(tmp_path / "fw"),
                     "--stream", "6", "--reset-at", "3", "--check"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "step 3: (state reset before it)" in text
    assert "the outputs of all 6 steps match the reference" in text


def test_build_shows_the_state_row(tmp_path: Path, capsys) -> None:
    model = tmp_path / "s.tflite"
    model.write_bytes(streaming_model("int8"))
    assert build.main(["--board", "cortex-m4", str(model), "-o", str(tmp_path / "fw")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["state", "0", "32"] in rows
    assert size.main([str(tmp_path / "fw")]) == 0
    out = capsys.readouterr().out
    assert "state 32 B" in out and any(r.split()[:4] == ["state", "0", "0.00", "%"]
                                       for r in out.splitlines())


@pytest.mark.parametrize("extra, message", [
    (["--reset-at", "2"], "--reset-at and --feedback go with --stream N"),
    (["--stream", "3", "--reset-at", "3"], "--reset-at 3: a reset goes before step 1 to 2"),
    (["--stream", "999"], "--stream takes 1 to 256 steps"),
    (["--stream", "3", "--feedback", "nope=1"], "the model has no output 'nope'"),
    (["--stream", "3", "--feedback", "0"], "give OUTPUT=INPUT"),
    (["--stream", "4", "--inputs", "IN"], "holds 5 steps (its leading axis), --stream asks for 4"),
    (["--stream", "3", "--profile"], "--stream runs the semihosting image"),
])
def test_bad_stream_options_are_one_line_errors(extra, message, tmp_path: Path,
                                                capsys) -> None:
    model = tmp_path / "fb.mlir"
    model.write_text(FEEDBACK_MODEL)
    inputs, _, _ = _feedback_inputs(tmp_path)
    extra = [str(inputs) if a == "IN" else a for a in extra]
    code = run.main([str(model), "--reference", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err


def _onnx_rnn_cell(path: Path) -> None:
    """The feedback model in ONNX, its state named: h_out = h_in / 2 + x, y = 2 h_out."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    vec = [3]
    graph = helper.make_graph(
        [helper.make_node("Mul", ["h_in", "half"], ["a"]),
         helper.make_node("Add", ["a", "x"], ["h_out"]),
         helper.make_node("Add", ["h_out", "h_out"], ["y"])],
        "cell",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, vec)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, vec),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, vec)],
        [numpy_helper.from_array(np.full(3, 0.5, np.float32), "half")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


@pytest.mark.parametrize("where", [["--reference"], ["--board", "x86-64"]])
def test_feedback_by_name_on_an_onnx_model(where, tmp_path: Path, capsys) -> None:
    model = tmp_path / "cell.onnx"
    _onnx_rnn_cell(model)
    inputs, x, s = _feedback_inputs(tmp_path)
    out = tmp_path / "out.npz"
    code = run.main([str(model), *where, "-o", str(tmp_path / "fw"), "--stream",
                     str(STEPS), "--inputs", str(inputs), "--feedback", "h_out=h_in",
                     "--check", "--save-outputs", str(out)])
    assert code == 0, capsys.readouterr()
    np.testing.assert_allclose(np.load(out)["output_0"], _expected_feedback(x, s), rtol=1e-6)


def test_quantizing_a_stateful_model(tmp_path: Path, capsys) -> None:
    """fp16 weights work (the summary's reference runs one inference from the boot
    state); int8 calibration of state is refused in one line, nothing written."""
    model = tmp_path / "s.tflite"
    model.write_bytes(streaming_model("float32"))
    assert build.main(["--board", "cortex-m4", str(model), "--quantize", "fp16",
                       "-o", str(tmp_path / "fp16")]) == 0
    calib = tmp_path / "calib.npz"
    np.savez(calib, input_0=np.zeros((4, 1, 4), np.float32))
    capsys.readouterr()
    code = build.main(["--board", "cortex-m4", str(model), "--quantize", "int8",
                       "--calibration", str(calib), "-o", str(tmp_path / "int8")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "keeps state between inferences" in err[0]
    assert not (tmp_path / "int8").exists()

