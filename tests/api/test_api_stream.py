"""minirt.Build.stream: steps on one state in one QEMU run from Python, checked against
the reference's stream (docs/commands.md "Stream mode")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_state_models import TflmStream, assert_same, stream_inputs, streaming_model

import minirt


def test_stream_of_a_stateful_model_with_a_reset(tmp_path: Path) -> None:
    model = tmp_path / "s.tflite"
    model.write_bytes(streaming_model("int8"))
    build = minirt.build(model, "x86-64", out_dir=tmp_path / "fw")
    assert build.size.ram["state"] == 32
    xs = stream_inputs("int8", 6)
    runs = build.stream([[x] for x in xs], resets=[4], check=True)
    tflm = TflmStream(model.read_bytes())
    for k, run in enumerate(runs):
        if k == 4:
            tflm.reset()
        assert_same(run.outputs, tflm.step([xs[k]]), k)
    assert runs[-1].instructions and runs[0].reference is not None


def test_feedback_of_explicit_state(tmp_path: Path) -> None:
    model = tmp_path / "fb.mlir"
    model.write_text("""func.func @main(%x: tensor<2xf32>, %s: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = stablehlo.add %s, %x : tensor<2xf32>
  return %0, %0 : tensor<2xf32>, tensor<2xf32>
}
""")  # noqa: E501
    build = minirt.build(model, "x86-64", out_dir=tmp_path / "fw", stream=True)
    ones, start = np.ones(2, np.float32), np.full(2, 10, np.float32)
    runs = build.stream([[ones, start]] * 3, feedback=["1=input_1"], check=True)
    assert [r.outputs[0][0] for r in runs] == [11, 12, 13]
    with pytest.raises(minirt.InputError, match="the model has no input 'input_9'"):
        build.stream([[ones, start]] * 2, feedback=["1=input_9"])
