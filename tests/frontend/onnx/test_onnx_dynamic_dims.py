"""Every dynamic input dimension of an ONNX model in one error, with --input-shape
options that pin them all (toolchain/frontend/onnx/dynamic_dims.py): a symbol shared by
inputs gets one value, from another input's pin, the model's own shapes, a batch name,
else a guess said to be one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from toolchain.frontend.onnx.errors import OnnxError
from toolchain.loader import load_graph


def _three_inputs(path: Path) -> Path:
    """a [N, 3, H, W] -> y [N, 3, 224, 224]; b [N, C] -> z [N, C]; c [?, 4] -> w [2, 4]
    (each a Relu): H, W and c's first dim are fixed by the outputs, C by nothing."""
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Relu", [i], [o]) for i, o in (("a", "y"), ("b", "z"), ("c", "w"))],
        "g", [vi("a", f, ["N", 3, "H", "W"]), vi("b", f, ["N", "C"]), vi("c", f, [None, 4])],
        [vi("y", f, ["N", 3, 224, 224]), vi("z", f, ["N", "C"]), vi("w", f, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())
    return path


def _message(path: Path, **kwargs) -> str:
    with pytest.raises(OnnxError) as e:
        load_graph(path, **kwargs)
    assert len(e.value.messages) == 1
    return e.value.messages[0]


def test_every_input_in_one_line_with_what_the_model_implies(tmp_path: Path) -> None:
    path = _three_inputs(tmp_path / "m.onnx")
    assert _message(path) == (
        "inputs with dynamic dimensions: 'a' [N, 3, H, W], 'b' [N, C], 'c' [?, 4]; minirt "
        "needs static shapes: pin them with --input-shape a=1x3x224x224 --input-shape b=1x1 "
        "--input-shape c=2x4 (N=1 as a batch; H=224 from the model's own shapes; W=224 from "
        "the model's own shapes; C=1 a guess: give its real size; c[0]=2 from the model's "
        "own shapes)")


def test_a_symbol_pinned_on_one_input_is_suggested_for_the_others(tmp_path: Path) -> None:
    path = _three_inputs(tmp_path / "m.onnx")
    assert _message(path, input_shapes={"b": (2, 7)}).startswith(
        "inputs with dynamic dimensions: 'a' [N, 3, H, W], 'c' [?, 4]; minirt needs static "
        "shapes: pin them with --input-shape a=2x3x224x224 --input-shape c=2x4 (N=2 from "
        "another input's pin;")
    # an --input-value's shape fixes its symbols too
    message = _message(path, input_values={"b": np.zeros((5, 3), np.float32)})
    assert "--input-shape a=5x3x224x224 " in message and "N=5 from another input's pin" in message


def test_the_suggestion_builds(tmp_path: Path) -> None:
    """Pasting the suggested options loads the model (the shapes the outputs declare)."""
    path = _three_inputs(tmp_path / "m.onnx")
    graph = load_graph(path, input_shapes={"a": (1, 3, 224, 224), "b": (1, 1), "c": (2, 4)})
    assert [t.type.shape for t in graph.outputs] == [(1, 3, 224, 224), (1, 1), (2, 4)]
