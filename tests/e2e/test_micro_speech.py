"""micro_speech end to end on cortex-m4 firmware (issue 19): every wav clip of the
example's testdata through the int8 audio preprocessor image in stream mode (one
emulator run per clip, one step per 20 ms frame, the spectral subtraction's noise
estimate kept in the image's state region), every step's 40 features exactly TFLite
Micro's (one interpreter over the clip); then, for the one-second clips, the keyword
model's image on the 49 x 40 stacked features, its scores exactly TFLite Micro's and
its label TFLite Micro's and micro_speech_test.cc's. A 1 s clip is 49 frames, well
inside the stream's 256 steps; the 30 ms clips are one frame (features only)."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.testing.micro_speech import (
    EXPECTED_LABELS,
    FEATURES,
    FRAMES,
    KEYWORD_MODEL,
    MICRO_SPEECH,
    PREPROCESSOR,
    TESTDATA,
    Firmware,
    build_firmware,
    label,
    read_wav,
    run_clip,
    tflm_features,
    tflm_scores,
)

if not MICRO_SPEECH.is_dir():
    pytest.skip(f"{MICRO_SPEECH} is absent (micro_speech's models and clips live in the "
                "shared store ../shared, not in this repository)", allow_module_level=True)
pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

CLIPS = sorted(p.name for p in TESTDATA.glob("*.wav"))
BOARD = "cortex-m4"


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Firmware:
    return build_firmware(BOARD, tmp_path_factory.mktemp("micro_speech"))


def test_every_clip_is_tested() -> None:
    """The four one-second clips the example's test classifies, and the 30 ms ones."""
    assert set(EXPECTED_LABELS) <= set(CLIPS) and len(CLIPS) == 6


@pytest.mark.parametrize("clip", CLIPS)
def test_clip_matches_tflite_micro_step_for_step(firmware: Firmware, clip: str) -> None:
    audio = read_wav(TESTDATA / clip)
    run = run_clip(firmware, audio)
    want = tflm_features(PREPROCESSOR, audio)
    assert run.features.shape == want.shape == (len(want), FEATURES)
    assert run.features.dtype == want.dtype == np.int8
    for k, (got, expected) in enumerate(zip(run.features, want, strict=True)):
        assert np.array_equal(got, expected), (f"{clip}: frame {k}", got, expected)
    assert run.frame_instructions and run.frame_instructions > 0
    if clip not in EXPECTED_LABELS:
        assert len(want) == 1 and run.scores is None  # 30 ms: one frame, no keyword
        return
    assert len(want) == FRAMES
    scores = tflm_scores(KEYWORD_MODEL, want)
    assert run.scores is not None and run.scores.dtype == scores.dtype
    assert np.array_equal(run.scores, scores), (clip, run.scores, scores)
    assert label(run.scores) == label(scores) == EXPECTED_LABELS[clip], (clip, run.scores)


def test_the_noise_estimate_is_carried(firmware: Firmware) -> None:
    """The stream's state matters: frame by frame from a fresh state each (49 separate
    first invocations) differs from the clip's features, which the test above checks."""
    audio = read_wav(TESTDATA / "noise_1000ms.wav")
    carried = tflm_features(PREPROCESSOR, audio)
    fresh = np.stack([tflm_features(PREPROCESSOR, audio[k * 320:k * 320 + 480], 1)[0]
                      for k in range(1, 6)])
    assert not np.array_equal(fresh, carried[1:6])

