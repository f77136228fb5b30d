"""An ONNX If whose condition is known at build time is replaced by the branch it takes
(toolchain/frontend/onnx/control.py): a model that branches on a sample-rate input
builds once that input is pinned with --input-value, and computes what onnxruntime
computes at that rate. Tolerance: numpy.isclose(rtol=1e-5, atol=1e-6), README's --check
bound (one float multiply or add: rounded alike)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import run_ort

from toolchain.frontend.onnx.errors import OnnxError
from toolchain.loader import load_graph
from toolchain.reference import run_graph

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def _branching(path: Path) -> Path:
    """y = x * 2 when sr == 16000, else x + k (k an initializer of the else branch)."""
    f, vi = TensorProto.FLOAT, helper.make_tensor_value_info
    two = numpy_helper.from_array(np.float32(2), "two")
    then = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"], name="double")],
                             "then", [], [vi("t", f, [2, 3])], [two])
    k = numpy_helper.from_array(np.float32(0.5), "k")
    other = helper.make_graph([helper.make_node("Add", ["x", "k"], ["e"], name="shift")],
                              "else", [], [vi("e", f, [2, 3])], [k])
    rate = numpy_helper.from_array(np.array([16000], np.int64), "rate")
    graph = helper.make_graph(
        [helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="is16k"),
         helper.make_node("Squeeze", ["is16k"], ["cond"], name="cond"),
         helper.make_node("If", ["cond"], ["y"], name="by_rate", then_branch=then,
                          else_branch=other)],
        "g", [vi("x", f, [2, 3]), vi("sr", TensorProto.INT64, [1])], [vi("y", f, [2, 3])],
        [rate])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize(("sr", "op", "not_taken"), [(16000, "multiply", "add"),
                                                     (8000, "add", "multiply")])
def test_a_pinned_condition_takes_its_branch(tmp_path: Path, sr: int, op: str,
                                             not_taken: str) -> None:
    path = _branching(tmp_path / "rate.onnx")
    graph = load_graph(path, input_values={"sr": np.array(sr)})
    ops = {n.op for n in graph.nodes}
    assert op in ops and not_taken not in ops and "if" not in ops
    (got,) = run_graph(graph, [X])
    want = run_ort(path.read_bytes(), [X, np.array([sr], np.int64)])
    expected = want[0] if want is not None else (X * 2 if sr == 16000 else X + 0.5)
    assert np.isclose(got, expected, rtol=1e-5, atol=1e-6).all()


@pytest.mark.parametrize("sr", [16000, 8000])
def test_a_condition_known_at_run_time_only_is_the_graphs_if(tmp_path: Path, sr: int
                                                              ) -> None:
    """Unpinned, both branches are regions of one `if` (the else branch's initializer
    and the enclosing x read inside), and the rate picks one when the model runs."""
    path = _branching(tmp_path / "rate.onnx")
    graph = load_graph(path)
    (node,) = [n for n in graph.nodes if n.op == "if"]
    assert len(node.regions) == 2
    rate = np.array([sr], np.int64)
    (got,) = run_graph(graph, [X, rate])
    want = run_ort(path.read_bytes(), [X, rate])
    expected = want[0] if want is not None else (X * 2 if sr == 16000 else X + 0.5)
    assert np.isclose(got, expected, rtol=1e-5, atol=1e-6).all()


def test_branches_of_different_shapes_are_refused_in_one_line(tmp_path: Path) -> None:
    f, vi = TensorProto.FLOAT, helper.make_tensor_value_info
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"], name="same")],
                             "then", [], [vi("t", f, [2, 3])])
    other = helper.make_graph([helper.make_node("Transpose", ["x"], ["e"], name="turn")],
                              "else", [], [vi("e", f, [3, 2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then,
                          else_branch=other)],
        "g", [vi("x", f, [2, 3]), vi("c", TensorProto.BOOL, [])], [vi("y", f, ["a", "b"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "pick.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxError, match=r"node 'pick' \(If\): its branches return "
                                        "different types"):
        load_graph(path)
