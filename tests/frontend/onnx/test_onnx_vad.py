"""The voice-activity model (vad_model.py: STFT as a strided Conv1d, magnitude, an If on
the sample rate, a Conv encoder, an LSTM carrying state across steps, a sigmoid head)
built with --input-value sr=16000, so the If folds to its 16 kHz branch, and run as a
VAD runs: 20 consecutive chunks, each step's state output fed back as the next step's
state input.

- numpy reference against onnxruntime doing the same 20 steps: numpy.isclose(rtol=1e-4,
  atol=1e-5), since the state feeds back 20 times through the LSTM's dot products and
  activations, so onnxruntime's summation order and tanh / sigmoid approximations
  compound (float32 throughout);
- firmware under QEMU (cortex-m4, x86-64) against the numpy reference with
  `minirt-run --check`'s rule (rtol=1e-5, atol=1e-6) on one step from a state the
  reference reached mid-stream;
- the 20 steps as firmware on cortex-m4 in one QEMU run, as a user runs it:
  `minirt-run --input-value sr=16000 --stream 20 --feedback state_out=state --check`,
  every step checked against the reference by minirt-run and the saved outputs against
  onnxruntime's stream (the bound above).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_models import run_firmware, run_ort
from vad_model import STATE_SHAPE, Step, audio_chunks, stream, vad_model

from toolchain.cli import run
from toolchain.cli.run import compare
from toolchain.graph.ir import Graph
from toolchain.loader import load_graph
from toolchain.reference import run_graph

STEPS = 20
SR = np.array(16000, np.int64)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vad") / "vad.onnx"
    path.write_bytes(vad_model())
    return path


def _pinned(path: Path) -> Graph:
    """The model as `minirt-build --input-value sr=16000` reads it."""
    return load_graph(path, input_values={"sr": np.asarray(SR)})


def _reference_step(graph: Graph) -> Step:
    def step(chunk: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prob, state_out = run_graph(graph, [chunk, state])
        return prob, state_out
    return step


def _ort_step(path: Path) -> Step | None:
    data = path.read_bytes()
    if run_ort(data, [audio_chunks(1)[0], SR, np.zeros(STATE_SHAPE, np.float32)]) is None:
        return None

    def step(chunk: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = run_ort(data, [chunk, SR, state])
        assert out is not None
        return out[0], out[1]
    return step


def test_the_if_folds_to_the_16k_branch(model_path: Path) -> None:
    graph = _pinned(model_path)
    assert [t.name for t in graph.inputs] == ["audio", "state"]
    assert not any(n.op == "if" for n in graph.walk())


def test_twenty_steps_with_state_feedback_match_onnxruntime(model_path: Path) -> None:
    ort_step = _ort_step(model_path)
    if ort_step is None:
        pytest.skip("onnxruntime is not installed")
    chunks = audio_chunks(STEPS)
    state = np.zeros(STATE_SHAPE, np.float32)
    got = stream(_reference_step(_pinned(model_path)), chunks, state)
    want = stream(ort_step, chunks, state)
    for k, ((p, s), (wp, ws)) in enumerate(zip(got, want)):
        assert np.isclose(p, wp, rtol=1e-4, atol=1e-5).all(), (k, p, wp)
        assert np.isclose(s, ws, rtol=1e-4, atol=1e-5).all(), (k, np.abs(s - ws).max())
    probs = np.array([p.item() for p, _ in got])
    # The state carries information: the stream differs from every chunk run alone.
    alone = [_reference_step(_pinned(model_path))(c, state)[0].item() for c in chunks]
    assert not np.allclose(probs, alone, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_one_step_on_the_board(model_path: Path, board: str, tmp_path: Path) -> None:
    chunks = audio_chunks(STEPS)
    reference = _reference_step(_pinned(model_path))
    # The state the stream has reached before chunk 8 (inside the voiced part).
    _, state = stream(reference, chunks[:8], np.zeros(STATE_SHAPE, np.float32))[-1]
    want = list(reference(chunks[8], state))
    got = run_firmware(_pinned(model_path), board, tmp_path / "fw", [chunks[8], state])
    assert not compare(got, want), compare(got, want)


def test_unpinned_both_rates_run_through_the_graphs_if(model_path: Path) -> None:
    """Without --input-value the If stays, both encoders compiled: sr is an input and
    8 kHz takes the other branch, as in onnxruntime (3 steps with feedback)."""
    ort_step = _ort_step(model_path)
    if ort_step is None:
        pytest.skip("onnxruntime is not installed")
    graph = load_graph(model_path)
    assert [t.name for t in graph.inputs] == ["audio", "sr", "state"]
    assert any(n.op == "if" for n in graph.nodes)
    data = model_path.read_bytes()
    chunks, state = audio_chunks(3), np.zeros(STATE_SHAPE, np.float32)
    for sr in (np.array(8000, np.int64), SR):
        def ours(chunk: np.ndarray, s: np.ndarray, sr: np.ndarray = sr
                 ) -> tuple[np.ndarray, np.ndarray]:
            prob, s_out = run_graph(graph, [chunk, sr, s])
            return prob, s_out

        def theirs(chunk: np.ndarray, s: np.ndarray, sr: np.ndarray = sr
                   ) -> tuple[np.ndarray, np.ndarray]:
            out = run_ort(data, [chunk, sr, s])
            assert out is not None
            return out[0], out[1]

        for (p, s), (wp, ws) in zip(stream(ours, chunks, state), stream(theirs, chunks, state)):
            assert np.isclose(p, wp, rtol=1e-4, atol=1e-5).all()
            assert np.isclose(s, ws, rtol=1e-4, atol=1e-5).all()


def test_twenty_steps_as_firmware_with_minirt_runs_feedback(model_path: Path,
                                                            tmp_path: Path, capsys) -> None:
    ort_step = _ort_step(model_path)
    if ort_step is None:
        pytest.skip("onnxruntime is not installed")
    chunks = audio_chunks(STEPS)
    state = np.zeros(STATE_SHAPE, np.float32)
    inputs, saved = tmp_path / "in.npz", tmp_path / "out.npz"
    # Every step's arrays on a leading step axis; only step 0's state is read.
    np.savez(inputs, input_0=np.stack(chunks), input_1=np.stack([state] * STEPS))
    code = run.main([str(model_path), "--board", "cortex-m4", "-o", str(tmp_path / "fw"),
                     "--input-value", "sr=16000", "--stream", str(STEPS), "--inputs",
                     str(inputs), "--feedback", "state_out=state", "--check",
                     "--save-outputs", str(saved)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert f"the outputs of all {STEPS} steps match the reference" in text
    want = stream(ort_step, chunks, state)
    got = np.load(saved)
    probs = got[sorted(got.files)[0]]
    assert probs.shape == (STEPS, 1, 1), got.files
    for k, (wp, _) in enumerate(want):
        assert np.isclose(probs[k], wp, rtol=1e-4, atol=1e-5).all(), (k, probs[k], wp)
