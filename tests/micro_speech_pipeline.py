"""micro_speech's pipeline for tests: a wav clip -> the audio preprocessor frame by
frame (30 ms windows every 20 ms: 49 frames of 40 features for one second) -> the
keyword model's scores, computed by TFLite Micro (the oracle) and by minirt's reference.

TFLite Micro keeps the preprocessor's state (the spectral subtraction's noise
estimate) inside one interpreter across frames; minirt keeps it as graph state
(Graph.states), which the reference's StateRunner carries from frame to frame as the
firmware's stream mode does. Both sides take the same `resets` (step indices before
which the state is reset: MicroInterpreter::Reset, StateRunner.reset). The clips,
frames and TFLite Micro's side come from toolchain/testing/micro_speech.py, which the
firmware pipeline (tests/e2e/test_micro_speech.py, bench/micro_speech.py) shares.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import ModelInfo, read_model
from toolchain.reference.state import run_stream
from toolchain.testing.micro_speech import (
    FEATURES,
    FRAMES,
    MODELS,
    TESTDATA,
    frames,
    read_wav,
    tflm_features,
    tflm_scores,
)


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
