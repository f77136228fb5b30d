"""micro_speech's int8 audio preprocessor (TFLite Micro's Signal ops, built from integer
graph ops) as firmware under QEMU, bit for bit against TFLite Micro on a frame of the
"yes" clip from the initial state: cortex-m4 (Thumb-2, soft 64-bit arithmetic for the
uint64 filterbank and square root), x86-64, riscv32 and cortex-m0plus (Thumb-1). And a
chain of the streaming ops and both FFT directions, the same way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from micro_speech_pipeline import MODELS, TESTDATA, frames, read_wav, tflm_features
from tflite_models import Op, Tensor, build_model, run_tflm

from toolchain.emu.run import run_image
from toolchain.module import read_module
from toolchain.pipeline import build_model as build_model_fw
from toolchain.pipeline import decode_outputs, encode_inputs

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


@pytest.mark.parametrize("board,kind", [("cortex-m4", "int8"), ("x86-64", "int8"),
                                        ("riscv32", "int8"), ("cortex-m0plus", "int8"),
                                        ("cortex-m4", "float")])
def test_preprocessor_firmware_matches_tflite_micro(board: str, kind: str,
                                                    tmp_path: Path) -> None:
    """int8 exactly; float exactly too: its features are int16 logs times 5 / 128, a
    product float32 holds exactly."""
    path = MODELS / f"audio_preprocessor_{kind}.tflite"
    frame = frames(read_wav(TESTDATA / "yes_1000ms.wav"))[20]
    want = tflm_features(path, frame.reshape(-1), 1)[0]
    result = build_model_fw(path, board, tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [frame]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


def _stream_chain() -> bytes:
    """Framer (prefill) -> Window -> Rfft -> Irfft -> OverlapAdd -> Delay, int16: every
    streaming op and both fixed-point FFT directions in one firmware."""
    rng = np.random.default_rng(7)
    x = Tensor((1, 320), "int16")
    frames_, valid = Tensor((1, 1, 480), "int16"), Tensor((), "bool")
    window = Tensor((480,), "int16", data=rng.integers(0, 4096, 480))
    windowed, spectrum = Tensor((1, 1, 480), "int16"), Tensor((1, 1, 514), "int16")
    back, added, delayed = (Tensor((1, 1, 512), "int16"), Tensor((1, 320), "int16"),
                            Tensor((1, 320), "int16"))
    ops = [Op("CUSTOM:SignalFramer", [x], [frames_, valid],
              {"frame_size": 480, "frame_step": 320, "prefill": True}),
           Op("CUSTOM:SignalWindow", [frames_, window], [windowed], {"shift": 12}),
           Op("CUSTOM:SignalRfft", [windowed], [spectrum], {"T": 7, "fft_length": 512}),
           Op("CUSTOM:SignalIrfft", [spectrum], [back], {"T": 7, "fft_length": 512}),
           Op("CUSTOM:SignalOverlapAdd", [back], [added], {"T": 7, "frame_step": 320}),
           Op("CUSTOM:SignalDelay", [added], [delayed], {"delay_length": 7})]
    return build_model(ops, [x], [delayed])


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_streaming_chain_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    """The first invocation (the ops' initial state) of a loud signal."""
    model = _stream_chain()
    path = tmp_path / "chain.tflite"
    path.write_bytes(model)
    frame = np.random.default_rng(8).integers(-20000, 20000, (1, 320)).astype(np.int16)
    want = run_tflm(model, [frame])[0][0]
    result = build_model_fw(path, board, tmp_path / "fw", log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [frame]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module.outputs, run.outputs)[0]
    assert np.any(want != 0)
    assert got.dtype == np.int16 and np.array_equal(got, want), (got, want)
