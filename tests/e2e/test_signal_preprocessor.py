"""micro_speech's int8 audio preprocessor (TFLite Micro's Signal ops, built from integer
graph ops) as firmware under QEMU, bit for bit against TFLite Micro on a frame of the
"yes" clip from the initial state: cortex-m4 (Thumb-2, soft 64-bit arithmetic for the
uint64 filterbank and square root) and x86-64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from micro_speech_pipeline import MODELS, TESTDATA, frames, read_wav, tflm_features

from toolchain.emu.run import run_image
from toolchain.module import read_module
from toolchain.pipeline import build_model, decode_outputs, encode_inputs

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_preprocessor_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    path = MODELS / "audio_preprocessor_int8.tflite"
    frame = frames(read_wav(TESTDATA / "yes_1000ms.wav"))[20]
    want = tflm_features(path, frame.reshape(-1), 1)[0]
    result = build_model(path, board, tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [frame]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    assert got.dtype == np.int8 and np.array_equal(got, want), (got, want)
