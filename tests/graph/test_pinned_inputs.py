"""Pinned inputs (toolchain/graph/pinned_inputs.py): a value checked against the input
it pins, and graph inputs made constants (the MLIR and TFLite path of --input-value)."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.graph.pinned_inputs import fit_pinned_value, pin_graph_inputs, value_digest
from toolchain.graph.verify import verify_graph
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

I64, F32, I8 = dtype("i64"), dtype("f32"), dtype("i8")


def test_a_value_takes_the_inputs_dtype_and_declared_shape() -> None:
    got = fit_pinned_value("sr", np.array(16000), I64, (1,))
    assert got.dtype == np.int64 and got.shape == (1,) and got[0] == 16000
    got = fit_pinned_value("axes", np.array([0, 2]), I64, ("n",))  # a dynamic dim: any size
    assert got.tolist() == [0, 2]
    assert fit_pinned_value("x", np.array([1, 2]), F32, None).dtype == np.float32
    assert fit_pinned_value("on", np.array([1, 0]), dtype("i1"), (2,)).tolist() == [True, False]


@pytest.mark.parametrize(("value", "dt", "dims", "message"), [
    (np.array([1.5, 2.0]), I64, (2,),
     "a value of float64 shape (2,), but input 'p' is declared i64 [2]"),
    (np.array([1, 2, 3]), I64, (2,),
     "a value of int64 shape (3,), but input 'p' is declared i64 [2]"),
    (np.array([[1, 2]]), I64, ("n",),
     "a value of int64 shape (1, 2), but input 'p' is declared i64 [n]"),
    (np.array([1, 300]), I8, (2,), "300 is outside i8's range -128..127 of input 'p'"),
    (np.array([1e300]), F32, (1,), "a value is outside f32's range of input 'p'"),
    (np.array([1, 2]), dtype("i1"), (2,), "input 'p' is boolean: give 0 or 1, not 2"),
])
def test_a_value_that_does_not_fit_says_both(value, dt, dims, message: str) -> None:
    with pytest.raises(ValueError) as e:
        fit_pinned_value("p", value, dt, dims)
    assert str(e.value) == message


def _two_input_add() -> Graph:
    g = Graph("main")
    a = g.add_input(TensorType((2,), F32))
    b = g.add_input(TensorType((2,), F32))
    g.outputs.append(g.add("add", [a, b], [TensorType((2,), F32)]).output)
    return g


def test_pinned_graph_input_becomes_a_constant_and_leaves_the_inputs() -> None:
    g = _two_input_add()
    pin_graph_inputs(g, {"input_1": np.array([10, 20])}, ["input_0", "input_1"])
    verify_graph(g)
    assert len(g.inputs) == 1 and g.nodes[0].op == "constant"
    (out,) = run_graph(g, [np.array([1, 2], np.float32)])
    assert out.tolist() == [11.0, 22.0]


def test_pinning_an_unknown_input_lists_the_inputs() -> None:
    with pytest.raises(ValueError, match=r"names x, which is no input of the model \(its "
                                         r"inputs: input_0, input_1\)"):
        pin_graph_inputs(_two_input_add(), {"x": np.array(1)}, ["input_0", "input_1"])


def test_the_digest_changes_with_the_value() -> None:
    a = value_digest({"sr": np.array([16000])})
    assert a == value_digest({"sr": np.array([16000])})
    assert a != value_digest({"sr": np.array([8000])})
    assert a["sr"]["shape"] == [1] and a["sr"]["dtype"] == "int64"
