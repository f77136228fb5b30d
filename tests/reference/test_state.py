"""reference/state.py: a graph's state carried from one inference to the next, reset to
its reset values, and outputs fed back into inputs."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, StateVar
from toolchain.graph.verify import verify_graph
from toolchain.reference.state import StateRunner, run_stream
from toolchain.types import TensorType, dtype

F32 = dtype("f32")


def _accumulator() -> Graph:
    """out = state + x; the new state is out (one StateVar: boot 10, reset 0)."""
    g = Graph("acc")
    x = g.add_input(TensorType((2,), F32))
    s = g.add_input(TensorType((2,), F32), "state:acc")
    out = g.add("add", [x, s], [TensorType((2,), F32)]).output
    g.outputs = [out, out]
    g.states = [StateVar("acc", np.full(2, 10, np.float32), np.zeros(2, np.float32))]
    return g


def test_state_lives_on_between_steps_and_resets():
    g = _accumulator()
    assert g.user_inputs == g.inputs[:1] and g.user_outputs == g.outputs[:1]
    r = StateRunner(g)
    ones = np.ones(2, np.float32)
    assert r.step([ones])[0].tolist() == [11, 11]
    assert r.step([ones])[0].tolist() == [12, 12]
    r.reset()
    assert r.step([ones])[0].tolist() == [1, 1]


def test_run_stream_resets_before_the_given_steps():
    steps = [[np.ones(2, np.float32)]] * 4
    outs = run_stream(_accumulator(), steps, frozenset({2}))
    assert [o[0][0] for o in outs] == [11, 12, 1, 2]


def test_feedback_feeds_an_output_into_the_next_steps_input():
    """A graph with its state as explicit input / output (ONNX style): y = x + 1."""
    g = Graph("explicit")
    x = g.add_input(TensorType((2,), F32))
    one = g.add("constant", [], [TensorType((), F32)], {"value": np.float32(1)}).output
    b = g.add("broadcast_in_dim", [one], [TensorType((2,), F32)],
              {"dims": (), "shape": (2,)}).output
    g.outputs = [g.add("add", [x, b], [TensorType((2,), F32)]).output]
    steps = [[np.full(2, 5, np.float32)], [np.zeros(2, np.float32)],
             [np.zeros(2, np.float32)]]
    outs = run_stream(g, steps, feedback=[(0, 0)])
    assert [o[0][0] for o in outs] == [6, 7, 8]


def test_verify_refuses_a_state_of_two_types():
    g = _accumulator()
    verify_graph(g)
    g.states[0] = StateVar("acc", np.zeros(3, np.float32), np.zeros(2, np.float32))
    with pytest.raises(CompileError, match="state 'acc'"):
        verify_graph(g)
