"""micro_speech, TFLite Micro's keyword-spotting example
(../shared/models/tflm/examples/micro_speech), end to end: a 16 kHz wav clip -> the
int8 audio preprocessor frame by frame (30 ms windows every 20 ms: 49 frames of 40
int8 features for one second) -> the keyword model's 4 int8 scores -> a label.

TFLite Micro's pipeline (the oracle: one interpreter kept across a clip's frames, as
micro_speech_test.cc's GenerateFeatures does) and minirt's firmware pipeline (the
preprocessor as a stream image, one emulator run per clip, then the keyword model's
image on the stacked features), for tests/e2e/test_micro_speech.py and
bench/micro_speech.py.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolchain.link.build_result import BuildResult
from toolchain.pipeline import build_model, run_firmware
from toolchain.stream import run_firmware_stream

REPO = Path(__file__).resolve().parents[2]
MICRO_SPEECH = REPO.parent / "shared" / "models" / "tflm" / "examples" / "micro_speech"
MODELS = MICRO_SPEECH / "models"
TESTDATA = MICRO_SPEECH / "testdata"
PREPROCESSOR = MODELS / "audio_preprocessor_int8.tflite"
KEYWORD_MODEL = MODELS / "micro_speech_quantized.tflite"

SAMPLE_RATE = 16000
WINDOW = 480  # 30 ms at 16 kHz: one preprocessor invocation
STRIDE = 320  # 20 ms between invocations
FEATURES = 40  # per frame
FRAMES = 49  # one second of audio: (16000 - 480) // 320 + 1
# The keyword model's outputs, in order (micro_model_settings.h's kCategoryLabels).
LABELS = ("silence", "unknown", "yes", "no")
# The label micro_speech_test.cc expects for each one-second clip (noise is silence).
EXPECTED_LABELS = {"yes_1000ms.wav": "yes", "no_1000ms.wav": "no",
                   "silence_1000ms.wav": "silence", "noise_1000ms.wav": "silence"}


def read_wav(path: Path) -> np.ndarray:
    """The int16 samples of a 16 kHz mono wav file."""
    with wave.open(str(path)) as w:
        if w.getframerate() != SAMPLE_RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: not 16 kHz mono 16-bit")
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def frames(audio: np.ndarray, count: int = FRAMES) -> list[np.ndarray]:
    """The preprocessor's (1, 480) input frames, every 20 ms (at most `count`)."""
    n = min(count, (len(audio) - WINDOW) // STRIDE + 1)
    return [audio[k * STRIDE:k * STRIDE + WINDOW].reshape(1, WINDOW) for k in range(n)]


def tflm_features(preprocessor: Path, audio: np.ndarray, count: int = FRAMES) -> np.ndarray:
    """TFLite Micro's features: one interpreter (its state kept) over the frames."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_file(str(preprocessor))
    out = []
    for frame in frames(audio, count):
        interp.set_input(frame, 0)
        interp.invoke()
        out.append(np.array(interp.get_output(0)))
    return np.stack(out)


def tflm_scores(keyword_model: Path, features: np.ndarray) -> np.ndarray:
    """TFLite Micro's keyword model scores (int8) for (49, 40) int8 features."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_file(str(keyword_model))
    interp.set_input(features.reshape(1, -1).astype(np.int8), 0)
    interp.invoke()
    return np.array(interp.get_output(0))


def label(scores: np.ndarray) -> str:
    """The label of the highest score (the first of equal ones, as the example's loop)."""
    return LABELS[int(np.argmax(np.asarray(scores).reshape(-1)))]


@dataclass
class Firmware:
    """The two images of the pipeline, built for one board."""

    preprocessor: BuildResult
    keyword: BuildResult


@dataclass
class ClipRun:
    """One clip through the firmware pipeline: every frame's features, the scores (None
    for a clip shorter than a second) and the instructions of one frame (the last) and
    of the keyword model's inference."""

    features: np.ndarray
    scores: np.ndarray | None
    frame_instructions: int | None
    keyword_instructions: int | None


def build_firmware(board: str, out_dir: Path) -> Firmware:
    """Builds the int8 preprocessor (a stream image: it keeps the spectral subtraction's
    noise estimate) and the keyword model for `board` under `out_dir`."""
    quiet = lambda _: None  # noqa: E731
    return Firmware(build_model(PREPROCESSOR, board, out_dir / "preprocessor", log=quiet),
                    build_model(KEYWORD_MODEL, board, out_dir / "keyword", log=quiet))


def run_clip(firmware: Firmware, audio: np.ndarray) -> ClipRun:
    """The clip's frames through the preprocessor image in one emulator run (one step a
    frame, the state kept from the boot state on, as a fresh TFLite Micro interpreter),
    then, for a full second, the stacked features through the keyword image."""
    pre = firmware.preprocessor
    steps = [[f] for f in frames(audio)]
    stream = run_firmware_stream(pre.board, pre.out_dir, steps, pre.graph, log=lambda _: None)
    features = np.stack([out[0] for out in stream.outputs])
    if len(features) < FRAMES:
        return ClipRun(features, None, stream.instructions, None)
    kw = firmware.keyword
    run = run_firmware(kw.board, kw.out_dir, [features.reshape(1, -1)], kw.graph,
                       log=lambda _: None)
    return ClipRun(features, run.outputs[0], stream.instructions, run.instructions)


__all__ = ["EXPECTED_LABELS", "FEATURES", "FRAMES", "KEYWORD_MODEL", "LABELS",
           "MICRO_SPEECH", "MODELS", "PREPROCESSOR", "TESTDATA", "ClipRun", "Firmware",
           "build_firmware", "frames", "label", "read_wav", "run_clip", "tflm_features",
           "tflm_scores"]
