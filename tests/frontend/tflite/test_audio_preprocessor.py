"""micro_speech's audio preprocessors (audio_preprocessor_int8 / _float.tflite, the
Signal library's ops plus int32 builtins) imported and run by minirt's reference on
frames of the example wav clips, against TFLite Micro: exact for the int8 features;
the float file's features too (its only float op multiplies an int16 converted to
float by 5 / 128: a product of at most 18 significant bits, exact in float32)."""

from __future__ import annotations

import numpy as np
import pytest
from micro_speech_pipeline import (
    FEATURES,
    MODELS,
    TESTDATA,
    frames,
    read_wav,
    reference_features,
    tflm_features,
    tflm_scores,
)

from toolchain.frontend.tflite.importer import load_tflite
from toolchain.reference import run_graph
from toolchain.reference.state import StateRunner

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

CLIPS = sorted(p.name for p in TESTDATA.glob("*.wav"))
PREPROCESSORS = ["audio_preprocessor_int8.tflite", "audio_preprocessor_float.tflite"]


def _first_invocation(preprocessor: str, frame: np.ndarray) -> np.ndarray:
    """TFLite Micro's output for `frame` from a fresh interpreter (the initial state)."""
    return tflm_features(MODELS / preprocessor, frame.reshape(-1), 1)[0]


@pytest.mark.parametrize("preprocessor", PREPROCESSORS)
def test_first_frame_of_every_clip(preprocessor: str) -> None:
    graph = load_tflite(MODELS / preprocessor)
    for clip in CLIPS:
        frame = frames(read_wav(TESTDATA / clip), 1)[0]
        want = _first_invocation(preprocessor, frame)
        got = StateRunner(graph).step([frame])[0]  # from the boot state
        assert got.dtype == want.dtype and got.shape == (FEATURES,)
        assert np.array_equal(got, want), (clip, got, want)


@pytest.mark.parametrize("preprocessor", PREPROCESSORS)
def test_any_frame_from_the_initial_state(preprocessor: str) -> None:
    """One runner reset before each frame: the reset state is TFLite Micro's fresh one."""
    graph = load_tflite(MODELS / preprocessor)
    assert graph.states  # the spectral subtraction's noise estimate
    audio = read_wav(TESTDATA / "yes_1000ms.wav")
    runner = StateRunner(graph)
    for k in (5, 17, 30, 48):
        frame = frames(audio)[k]
        runner.reset()
        assert np.array_equal(runner.step([frame])[0],
                              _first_invocation(preprocessor, frame)), k


@pytest.mark.parametrize("clip", ["yes_1000ms.wav", "noise_1000ms.wav"])
def test_noise_estimate_carried_matches_over_a_second(clip: str) -> None:
    """The spectral subtraction's state carried from frame to frame (graph state, in
    the reference's StateRunner): all 49 frames equal TFLite Micro's, one
    interpreter kept across them; the state makes them differ from first invocations."""
    audio = read_wav(TESTDATA / clip)
    path = MODELS / "audio_preprocessor_int8.tflite"
    want = tflm_features(path, audio)
    got = reference_features(path, audio)
    assert want.shape == (49, FEATURES)
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]
    fresh = np.stack([_first_invocation(path.name, f) for f in frames(audio)[1:4]])
    assert not np.array_equal(fresh, want[1:4])  # the state matters


@pytest.mark.parametrize("clip,label", [("yes_1000ms.wav", 2), ("no_1000ms.wav", 3)])
def test_keyword_scores_from_our_features(clip: str, label: int) -> None:
    """wav -> 49 x 40 features -> keyword scores, all in minirt's reference (the state
    carried), equals TFLite Micro's whole pipeline, and names the clip's word
    (micro_speech's labels: silence, unknown, yes, no)."""
    audio = read_wav(TESTDATA / clip)
    features = reference_features(MODELS / "audio_preprocessor_int8.tflite", audio)
    keyword = load_tflite(MODELS / "micro_speech_quantized.tflite")
    ours = run_graph(keyword, [features.reshape(1, -1)])[0]
    want = tflm_scores(MODELS / "micro_speech_quantized.tflite",
                       tflm_features(MODELS / "audio_preprocessor_int8.tflite", audio))
    assert ours.dtype == want.dtype and np.array_equal(ours, want), (ours, want)
    assert int(np.argmax(ours)) == label, ours
