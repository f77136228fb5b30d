"""TFLite Micro's six LSTM and SVDF models (../shared/models/tflm) against its own
interpreter: the first inference on seeded random inputs, the model's outputs and the
output of every UNIDIRECTIONAL_SEQUENCE_LSTM / SVDF inside it (read back from an
interpreter that keeps all tensors); then inference after inference on one state (the
variable tensors TFLite Micro keeps between invocations), with a reset between. Exact
for integers, numpy.isclose for float (float32 sums in another order and another libm's
exp / tanh).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from model_zoo import MODELS_DIR

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402
from toolchain.graph.ir import Graph, Tensor  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.reference.state import StateRunner  # noqa: E402

TFLM = MODELS_DIR / "tflm"
MODELS = [
    "examples/mnist_lstm/trained_lstm.tflite",
    "examples/mnist_lstm/trained_lstm_int8.tflite",
    "examples/dtln/dtln_noise_suppression.tflite",
    "xtensa_examples/micro_speech_lstm/micro_speech_lstm.tflite",
    "models/keyword_scrambled.tflite",
    "models/keyword_scrambled_8bit.tflite",
]
RECURRENT = ("UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF")


def _by_name(graph: Graph, name: str) -> Tensor:
    for node in graph.nodes:
        for t in node.outputs:
            if t.name == name:
                return t
    raise AssertionError(f"no graph tensor is named {name!r}")


def _random_input(rng: np.random.Generator, t: Tensor) -> np.ndarray:
    dt = t.type.dtype.np_dtype
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=t.type.shape).astype(dt)
    return rng.random(t.type.shape).astype(dt)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if np.issubdtype(got.dtype, np.integer):
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        assert bad.size == 0, f"{what}: {bad.size} of {got.size} differ, first at {bad[:5]}"
    else:
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (what,
                                                              np.abs(got - want).max())


@pytest.mark.parametrize("name", MODELS, ids=[Path(m).stem for m in MODELS])
def test_model_and_its_recurrent_layers_match_tflite_micro(name: str) -> None:
    path = TFLM / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared TFLite Micro models)")
    from tflite_micro.python.tflite_micro import runtime

    info = read_model(path.read_bytes())
    layers = [(op.opcode, op.outputs[0]) for op in info.operators if op.opcode in RECURRENT]
    assert layers, "the model has no recurrent layer"
    # keyword_scrambled's tensors have no names: each gets one, to be found by it.
    info = replace(info, tensors=tuple(replace(t, name=f"t{t.index}:{t.name}")
                                       for t in info.tensors))
    graph = import_model(info, str(path))
    n_out, n_all = len(graph.user_outputs), len(graph.outputs)
    graph.outputs.extend(_by_name(graph, info.tensors[i].name) for _, i in layers)
    rng = np.random.default_rng(7)
    inputs = [_random_input(rng, t) for t in graph.user_inputs]
    interp = runtime.Interpreter.from_file(
        str(path), arena_size=8 << 20,
        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    for k, x in enumerate(inputs):
        interp.set_input(x, k)
    interp.invoke()
    ours = run_graph(graph, inputs + [s.initial for s in graph.states])
    for k in range(n_out):
        _same(ours[k], interp.get_output(k), f"output {k}")
    for (opcode, index), got in zip(layers, ours[n_all:], strict=True):
        want = np.array(interp.GetTensor(index, 0)["tensor_data"]).reshape(got.shape)
        _same(got, want, f"{opcode} output tensor {index}")


STEPS, RESET_AT = 6, 4


@pytest.mark.parametrize("name", MODELS, ids=[Path(m).stem for m in MODELS])
def test_state_carries_over_inferences_as_in_tflite_micro(name: str) -> None:
    """The state each inference leaves is what the next one reads, and a reset puts it
    back to TFLite Micro's reset value (MicroInterpreter::Reset)."""
    path = TFLM / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared TFLite Micro models)")
    from tflite_micro.python.tflite_micro import runtime

    graph = import_model(read_model(path.read_bytes()), str(path))
    assert graph.states, "the recurrent state is not kept between inferences"
    runner = StateRunner(graph)
    interp = runtime.Interpreter.from_file(str(path), arena_size=8 << 20)
    rng = np.random.default_rng(11)
    for step in range(STEPS):
        if step == RESET_AT:
            interp.reset()
            runner.reset()
        inputs = [_random_input(rng, t) for t in graph.user_inputs]
        for k, x in enumerate(inputs):
            interp.set_input(x, k)
        interp.invoke()
        ours = runner.step(inputs)
        for k, got in enumerate(ours):
            _same(got, interp.get_output(k), f"step {step}, output {k}")
