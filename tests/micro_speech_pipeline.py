"""micro_speech's pipeline for tests: a wav clip -> the audio preprocessor frame by
frame (30 ms windows every 20 ms: 49 frames of 40 features for one second) -> the
keyword model's scores, computed by TFLite Micro (the oracle) and by minirt's reference.

TFLite Micro keeps the preprocessor's state (the spectral subtraction's noise
estimate) inside one interpreter across frames; minirt keeps it as graph state
(Graph.states), which the reference's StateRunner carries from frame to frame as the
firmware's stream mode does. Both sides take the same `resets` (step indices before
which the state is reset: MicroInterpreter::Reset, StateRunner.reset).
"""

from __future__ import annotations

import wave
from collections.abc import Collection
from pathlib import Path

import numpy as np

from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import ModelInfo, read_model
from toolchain.reference.state import run_stream

MICRO_SPEECH = (Path(__file__).resolve().parents[1].parent / "shared/models/tflm/examples/"
                "micro_speech")
MODELS = MICRO_SPEECH / "models"
TESTDATA = MICRO_SPEECH / "testdata"
SAMPLE_RATE = 16000
WINDOW = 480  # 30 ms at 16 kHz
STRIDE = 320  # 20 ms
FEATURES = 40
FRAMES = 49  # one second of audio


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


def reference_invocations(model: ModelInfo, invocations: list[list[np.ndarray]],
                          path: str = "model.tflite", resets: Collection[int] = ()
                          ) -> list[list[np.ndarray]]:
    """minirt's reference outputs of `model` over successive invocations on one state
    (the model imported once; StateRunner carries its state), reset before each step
    in `resets`."""
    return run_stream(import_model(model, path), invocations, frozenset(resets))


def tflm_invocations(model: bytes, invocations: list[list[np.ndarray]],
                     resets: Collection[int] = ()) -> list[list[np.ndarray]]:
    """TFLite Micro's outputs of `model` over successive invocations of one interpreter,
    reset (MicroInterpreter::Reset) before each step in `resets`."""
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    n = read_model(model).outputs
    out = []
    for k, inputs in enumerate(invocations):
        if k in resets:
            interp.reset()
        for i, x in enumerate(inputs):
            interp.set_input(x, i)
        interp.invoke()
        out.append([np.array(interp.get_output(j)) for j in range(len(n))])
    return out


def reference_features(preprocessor: Path, audio: np.ndarray, count: int = FRAMES
                       ) -> np.ndarray:
    """minirt's reference features, the state carried from frame to frame."""
    model = read_model(preprocessor.read_bytes())
    runs = reference_invocations(model, [[f] for f in frames(audio, count)], str(preprocessor))
    return np.stack([r[0] for r in runs])


__all__ = ["FEATURES", "FRAMES", "MODELS", "TESTDATA", "frames", "read_wav",
           "reference_features", "reference_invocations", "tflm_features",
           "tflm_invocations", "tflm_scores"]
