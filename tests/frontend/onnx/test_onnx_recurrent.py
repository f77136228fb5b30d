"""LSTM, GRU and RNN (toolchain/frontend/onnx/recurrent.py) against onnxruntime on
models of several shapes: every direction, both layouts, the optional inputs (B,
sequence_lens given at run time, initial_h, initial_c, P), clip, input_forget,
linear_before_reset, activations with their alpha and beta, and every output.

Tolerance: numpy.isclose(rtol=1e-4, atol=1e-5): each step's state goes through the
next step's dot products and activations, so onnxruntime's different summation order
and tanh / sigmoid approximations compound over the sequence (float32 throughout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import import_bytes, merge, run_firmware, run_ort

from toolchain.cli.run import compare
from toolchain.frontend.onnx.errors import OnnxError
from toolchain.frontend.onnx.recurrent import MAX_UNROLLED_STEPS
from toolchain.loader import load_graph
from toolchain.reference import run_graph

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
F32 = TensorProto.FLOAT


def _model(op: str, seq: int, batch: int, size: int, hidden: int, *, direction: str =
           "forward", layout: int = 0, bias: bool = True, lens: bool = False,
           initial: bool = True, peepholes: bool = False, **attrs: Any
           ) -> tuple[bytes, list[np.ndarray]]:
    """A one-node model of `op` (weights as initializers) and random inputs for it."""
    rng = np.random.default_rng(seq * 100 + batch * 10 + size + hidden)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op] * hidden
    inits = [numpy_helper.from_array(rng.uniform(-0.6, 0.6, s).astype(np.float32), n)
             for n, s in (("W", (dirs, g, size)), ("R", (dirs, g, hidden)),
                          ("B", (dirs, 2 * g)), ("P", (dirs, 3 * hidden)))]
    vi = helper.make_tensor_value_info
    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = [vi("X", F32, x_shape)]
    data = [rng.uniform(-2, 2, x_shape).astype(np.float32)]
    names = ["X", "W", "R", "B" if bias else ""]
    if lens:
        inputs.append(vi("lens", TensorProto.INT32, [batch]))
        data.append(rng.integers(1, seq + 1, batch).astype(np.int32))
    names.append("lens" if lens else "")
    for n in ("h0", "c0") if op == "LSTM" else ("h0",):
        if initial:
            inputs.append(vi(n, F32, state))
            data.append(rng.uniform(-1, 1, state).astype(np.float32))
        names.append(n if initial else "")
    if op == "LSTM":
        names.append("P" if peepholes else "")
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, names, outs, name="cell", hidden_size=hidden,
                            direction=direction, layout=layout, **attrs)
    y = (batch, seq, dirs, hidden) if layout else (seq, dirs, batch, hidden)
    shapes = {"Y": y, "Y_h": state, "Y_c": state}
    graph = helper.make_graph([node], "g", inputs, [vi(o, F32, shapes[o]) for o in outs],
                              [i for i in inits if i.name in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model.SerializeToString(), data


def _check(tmp_path: Path, model: bytes, data: list[np.ndarray],
           layout_0: bytes | None = None) -> None:
    """minirt's reference against onnxruntime; a layout-1 model against onnxruntime on
    `layout_0` (the same weights in layout 0: onnxruntime has no batch-major recurrent
    kernels) with the inputs and outputs transposed, which is what layout 1 means."""
    path = tmp_path / "cell.onnx"
    path.write_bytes(model)
    got = run_graph(load_graph(path), data)
    if layout_0 is None:
        want = run_ort(model, data)
    else:
        batch_first = [np.swapaxes(d, 0, 1) if d.ndim == 3 else d for d in data]
        want = run_ort(layout_0, batch_first)
        if want is not None:
            want = [np.transpose(w, (2, 0, 1, 3)) if w.ndim == 4 else np.swapaxes(w, 0, 1)
                    for w in want]
    if want is None:
        pytest.skip("onnxruntime is not installed")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert np.isclose(g, w, rtol=1e-4, atol=1e-5).all(), np.abs(g - w).max()


# Sequence lengths of both forms: unrolled, and a `while`.
SEQ = [MAX_UNROLLED_STEPS, MAX_UNROLLED_STEPS + 3]


@pytest.mark.parametrize("op", sorted(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("seq", SEQ)
def test_directions_and_layouts(tmp_path: Path, op: str, direction: str, layout: int,
                                seq: int) -> None:
    shape = (op, seq, 3, 4, 6)
    model, data = _model(*shape, direction=direction, layout=layout, peepholes=op == "LSTM")
    layout_0 = (_model(*shape, direction=direction, peepholes=op == "LSTM")[0]
                if layout else None)
    _check(tmp_path, model, data, layout_0)


@pytest.mark.parametrize("op", sorted(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("seq", SEQ)
def test_sequence_lengths_given_at_run_time(tmp_path: Path, op: str, direction: str,
                                            seq: int) -> None:
    """Steps past a batch entry's length keep its state and write zeros to Y."""
    _check(tmp_path, *_model(op, seq, 4, 3, 5, direction=direction, lens=True))


@pytest.mark.parametrize("op", sorted(GATES))
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (1, 2, 8, 16), (12, 1, 3, 2)])
def test_shapes_without_optional_inputs(tmp_path: Path, op: str,
                                        shape: tuple[int, int, int, int]) -> None:
    _check(tmp_path, *_model(op, *shape, bias=False, initial=False))


@pytest.mark.parametrize(("op", "attrs"), [
    ("LSTM", {"clip": 0.5}),
    ("LSTM", {"input_forget": 1}),
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh"],
              "activation_alpha": [0.3, 0.05, 0.8], "activation_beta": [0.4, 1.2]}),
    ("GRU", {"linear_before_reset": 1}),
    ("GRU", {"clip": 0.7, "activations": ["Sigmoid", "Softsign", "Sigmoid", "Elu"],
             "direction": "bidirectional", "activation_alpha": [0.5]}),
    ("RNN", {"activations": ["Relu"]}),
    ("RNN", {"activations": ["Affine", "ThresholdedRelu"], "direction": "bidirectional",
             "activation_alpha": [0.7, 0.2], "activation_beta": [-0.1]}),
    ("RNN", {"activations": ["Softplus"], "clip": 1.5}),
])
def test_attributes(tmp_path: Path, op: str, attrs: dict) -> None:
    attrs = dict(attrs)
    direction = attrs.pop("direction", "forward")
    _check(tmp_path, *_model(op, 4, 2, 3, 5, direction=direction, peepholes=op == "LSTM",
                             **attrs))


def test_gru_linear_before_reset_without_bias(tmp_path: Path) -> None:
    _check(tmp_path, *_model("GRU", 3, 2, 3, 4, bias=False, linear_before_reset=1))


def test_an_unknown_activation_is_one_line(tmp_path: Path) -> None:
    model, _ = _model("RNN", 2, 1, 2, 2, activations=["Gaussian"])
    path = tmp_path / "cell.onnx"
    path.write_bytes(model)
    with pytest.raises(OnnxError, match=r"node 'cell' \(RNN\): activation 'Gaussian' is "
                                        "not one of"):
        load_graph(path)


@pytest.mark.parametrize("op", sorted(GATES))
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_a_long_sequence_is_a_while(tmp_path: Path, op: str, direction: str) -> None:
    """Past MAX_UNROLLED_STEPS the steps are one `while` per direction, sequence_lens,
    peepholes and clip too."""
    model, data = _model(op, MAX_UNROLLED_STEPS + 12, 3, 4, 5, direction=direction,
                         lens=True, peepholes=op == "LSTM", clip=3.0)
    path = tmp_path / "cell.onnx"
    path.write_bytes(model)
    graph = load_graph(path)
    loops = [n for n in graph.nodes if n.op == "while"]
    assert len(loops) == (2 if direction == "bidirectional" else 1)
    _check(tmp_path, model, data)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_both_forms_on_the_board(tmp_path: Path, board: str) -> None:
    """An unrolled GRU and a looped bidirectional LSTM (sequence_lens at run time) in one
    firmware, against the numpy reference with minirt-run --check's rule."""
    short, short_data = _model("GRU", MAX_UNROLLED_STEPS, 2, 3, 4, direction="reverse",
                               linear_before_reset=1)
    long, long_data = _model("LSTM", MAX_UNROLLED_STEPS + 5, 2, 3, 4,
                             direction="bidirectional", lens=True, peepholes=True)
    graph = merge([import_bytes(short), import_bytes(long)])
    data = short_data + long_data
    want = run_graph(graph, data)
    got = run_firmware(graph, board, tmp_path / "fw", data)
    assert not compare(got, want), compare(got, want)
