"""TFLite state (frontend/tflite/state.py, variables.py): resource variables with a
CALL_ONCE init subgraph, a SPLIT_V / CONCATENATION ring buffer and variable tensors,
imported and run step by step on the reference against TFLite Micro's interpreter
(its own step-by-step invoke and Reset)."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Op, Tensor
from tflite_state_models import (
    RESETS,
    Subgraph,
    TflmStream,
    assert_same,
    build_subgraphs,
    resource,
    stream_inputs,
    streaming_model,
)

from toolchain.frontend.tflite import ops
from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference.state import StateRunner

pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                    reason="tflite-micro is not installed")

@pytest.mark.parametrize("cut", ["SPLIT_V", "STRIDED_SLICE"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_streaming_model_matches_tflm_over_30_steps_with_resets(dtype, cut):
    model = streaming_model(dtype, cut=cut)
    graph = import_model(read_model(model))
    tflm, ref = TflmStream(model), StateRunner(graph)
    for k, x in enumerate(stream_inputs(dtype)):
        if k in RESETS:
            tflm.reset()
            ref.reset()
        assert_same(ref.step([x]), tflm.step([x]), k)


def test_state_values_boot_from_the_init_subgraph_and_reset_to_the_zero_point():
    graph = import_model(read_model(streaming_model("int8")))
    ring, acc = graph.states
    assert (ring.key, acc.key) == ("ring", "acc")
    assert (acc.initial == 7).all()  # what the init subgraph assigns
    assert (acc.reset == -5).all() and (ring.reset == -3).all()  # each one's zero point
    assert len(graph.user_inputs) == 1 and len(graph.user_outputs) == 2
    assert [t.type.shape for t in graph.inputs[1:]] == [(1, 12), (1, 3)]


@pytest.mark.parametrize("buffer", [None, np.array([[9, 8, 7, 6]])])
def test_variable_tensor_is_state(buffer):
    """An is_variable tensor read by an operator: state keyed by its tensor index, of
    TFLite Micro's reset value (the zero point), which it also starts from whatever
    buffer the file gives (AllocateTensors ends with a Reset)."""
    x = Tensor((1, 4), "int8", scale=0.1, zero_point=2, name="x")
    v = Tensor((1, 4), "int8", scale=0.1, zero_point=-4, name="v", data=buffer)
    y = Tensor((1, 4), "int8", scale=0.2, zero_point=1, name="y")
    model = build_subgraphs([Subgraph([Op("ADD", [x, v], [y])], [x], [y], variables=[v])])
    graph = import_model(read_model(model))
    assert [s.key for s in graph.states] == ["tensor:1"]
    tflm, ref = TflmStream(model), StateRunner(graph)
    for k, xs in enumerate(stream_inputs("int8", 4)):
        assert_same(ref.step([xs]), tflm.step([xs]), k)


def test_split_matches_tflm():
    x = Tensor((2, 6), "float32", name="x")
    axis = Tensor((), "int32", data=np.array(1), name="axis")
    parts = [Tensor((2, 2), "float32", name=f"p{i}") for i in range(3)]
    model = build_subgraphs([Subgraph([Op("SPLIT", [axis, x], parts, {"num_splits": 3})],
                                      [x], parts)])
    xs = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert_same(StateRunner(import_model(read_model(model))).step([xs]),
                TflmStream(model).step([xs]), 0)


def _one_variable(ops_before: list[Op], sizes: tuple[int, int] = (4, 8)) -> bytes:
    h = resource("h")
    ring = Tensor((1, 12), "float32", name="ring")
    a, b = Tensor((1, 4), "float32", name="a"), Tensor((1, 8), "float32", name="b")
    splits = Tensor((2,), "int32", data=np.array(sizes), name="sizes")
    axis = Tensor((), "int32", data=np.array(1), name="axis")
    init = Subgraph([], [], [], name="init")
    main = Subgraph([*ops_before, Op("VAR_HANDLE", [], [h], {"shared_name": "v"}),
                     Op("READ_VARIABLE", [h], [ring]),
                     Op("SPLIT_V", [ring, splits, axis], [a, b], {"num_splits": 2})],
                    [], [a, b])
    return build_subgraphs([main, init])


@pytest.mark.parametrize("build, message", [
    (lambda: _one_variable([], sizes=(4, 9)), "split sizes [4, 9] do not add up"),
    (lambda: _one_variable([Op("READ_VARIABLE", [resource("loose")],
                               [Tensor((1, 12), "float32")])]),
     "not a resource a VAR_HANDLE before it created"),
])
def test_bad_state_models_are_one_line_errors(build, message):
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(build()), "m.tflite")
    text = str(e.value)
    assert message in text and "\n" not in text.strip() and text.startswith("m.tflite")


@pytest.mark.parametrize("index, message", [
    (0, "CALL_ONCE inside an init subgraph is not supported"),
    (7, "subgraph 7 does not exist: the model has 2"),
    (-1, "subgraph -1 does not exist"),
])
def test_call_once_of_a_bad_subgraph_is_a_one_line_error(index, message):
    main = Subgraph([Op("CALL_ONCE", [], [], {"init_subgraph_index": index})], [], [])
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(build_subgraphs([main, Subgraph([], [], [], name="init")])),
                     "m.tflite")
    assert message in str(e.value) and "\n" not in str(e.value).strip()


def test_call_once_after_a_variable_access_is_refused():
    h = resource("h")
    ring = Tensor((1, 12), "float32", name="ring")
    main = Subgraph([Op("VAR_HANDLE", [], [h], {"shared_name": "v"}),
                     Op("READ_VARIABLE", [h], [ring]),
                     Op("CALL_ONCE", [], [], {"init_subgraph_index": 1})], [], [ring])
    with pytest.raises(TFLiteError, match="CALL_ONCE after a variable was read"):
        import_model(read_model(build_subgraphs([main, Subgraph([], [], [], name="init")])))


def test_any_converter_can_keep_state(monkeypatch):
    """OpContext.read_state / write_state from an operator converter of its own (the way
    a stateful op, an LSTM or a filter bank's noise estimate, keeps its state): here
    EXP made a running sum, out = state + x, whose sum starts at 1 and resets to 0."""
    def running_sum(ctx):
        x = ctx.input(0)
        total = ctx.node("add", [ctx.read_state("sum", x.type, np.ones(x.type.shape,
                                                                        np.float32)), x])
        ctx.write_state("sum", total)
        assert ctx.read_state("sum", x.type) is total  # a read after the write sees it
        return total

    monkeypatch.setitem(ops.OPS, "EXP", ops.OpRow(running_sum, None, 1, 1))
    x, y = Tensor((3,), "float32", name="x"), Tensor((3,), "float32", name="y")
    graph = import_model(read_model(build_subgraphs([Subgraph([Op("EXP", [x], [y])],
                                                              [x], [y])])))
    (state,) = graph.states
    assert state.key == "sum" and (state.reset == 0).all()
    ref, ones = StateRunner(graph), np.ones(3, np.float32)
    assert [ref.step([ones])[0][0] for _ in range(3)] == [2, 3, 4]
    ref.reset()
    assert ref.step([ones])[0][0] == 1
