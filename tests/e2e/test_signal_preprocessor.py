"""TFLite Micro's Signal ops as firmware under QEMU, streamed (`--stream`: one emulator
run of many inferences on the state the image keeps), step for step against one TFLite
Micro interpreter invoked and reset (MicroInterpreter::Reset) the same way, and against
the reference's StateRunner: micro_speech's audio preprocessor (the spectral
subtraction's noise estimate) on cortex-m4 (Thumb-2, soft 64-bit arithmetic for the
uint64 filterbank and square root), x86-64, riscv32 and cortex-m0plus (Thumb-1); a
chain of the streaming ops and both FFT directions, and a Framer without prefill, a
Stacker and a float OverlapAdd, on cortex-m4 and x86-64. Every stateful Signal op is
in one of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from micro_speech_pipeline import MODELS, TESTDATA, frames, read_wav, tflm_invocations
from tflite_models import Op, Tensor, build_model

from toolchain.pipeline import build_model as build_model_fw
from toolchain.stream import reference_stream, run_firmware_stream

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def _stream(path: Path, board: str, steps: list[list[np.ndarray]], resets: tuple[int, ...],
            out_dir: Path) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
    """(firmware outputs, TFLite Micro outputs) of every step; the firmware also equals
    the reference on every step and every output (invalid frames included)."""
    result = build_model_fw(path, board, out_dir, log=lambda _: None)
    assert result.graph.states  # the Signal ops' state is the image's
    run = run_firmware_stream(result.board, result.out_dir, steps, result.graph,
                              resets=resets, log=lambda _: None)
    ref = reference_stream(result.graph, steps, frozenset(resets))
    for k, (got, want) in enumerate(zip(run.outputs, ref, strict=True)):
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.dtype == w.dtype and np.array_equal(g, w), (f"step {k} output {j}", g, w)
    return run.outputs, tflm_invocations(path.read_bytes(), steps, resets)


@pytest.mark.parametrize("board,kind", [("cortex-m4", "int8"), ("x86-64", "int8"),
                                        ("riscv32", "int8"), ("cortex-m0plus", "int8"),
                                        ("cortex-m4", "float")])
def test_preprocessor_stream_matches_tflite_micro(board: str, kind: str,
                                                  tmp_path: Path) -> None:
    """8 frames of the "yes" clip, reset before the 6th: int8 exactly; float exactly too
    (its features are int16 logs times 5 / 128, a product float32 holds exactly)."""
    path = MODELS / f"audio_preprocessor_{kind}.tflite"
    steps = [[f] for f in frames(read_wav(TESTDATA / "yes_1000ms.wav"))[18:26]]
    got, want = _stream(path, board, steps, (5,), tmp_path / "fw")
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g[0].dtype == w[0].dtype and np.array_equal(g[0], w[0]), (k, g[0], w[0])
    # The reset matters: step 5 is the first invocation, unlike step 5 without a reset.
    unreset = tflm_invocations(path.read_bytes(), steps)
    assert not np.array_equal(unreset[5][0], want[5][0])


def _stream_chain() -> bytes:
    """Framer (prefill) -> Window -> Rfft -> Irfft -> OverlapAdd -> Delay, int16: three
    streaming ops and both fixed-point FFT directions in one firmware."""
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


def _framer_stacker() -> bytes:
    """Framer (6 every 4, no prefill: its first frame is invalid) of a (1, 4) row, a
    Stacker (4 channels, 2 left, 1 right, step 2) of a (4,) input and a float32
    OverlapAdd (2 frames of 8 every 4) beside them: int16, int32 and float32 state."""
    x, frames_, valid = Tensor((1, 4), "int16"), Tensor((1, 1, 6), "int16"), Tensor((), "bool")
    y, stacked, ready = Tensor((4,), "int16"), Tensor((16,), "int16"), Tensor((), "bool")
    z, added = Tensor((1, 2, 8), "float32"), Tensor((1, 8), "float32")
    ops = [Op("CUSTOM:SignalFramer", [x], [frames_, valid],
              {"frame_size": 6, "frame_step": 4, "prefill": False}),
           Op("CUSTOM:SignalStacker", [y], [stacked, ready],
              {"num_channels": 4, "stacker_left_context": 2, "stacker_right_context": 1,
               "stacker_step": 2}),
           Op("CUSTOM:SignalOverlapAdd", [z], [added], {"T": 0, "frame_step": 4})]
    return build_model(ops, [x, y, z], [frames_, valid, stacked, ready, added])


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_streaming_chain_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    """10 loud steps, reset before steps 4 and 7: the overlap-add's tail, the delay's
    samples and the framer's held samples all carry over and all reset."""
    path = tmp_path / "chain.tflite"
    path.write_bytes(_stream_chain())
    rng = np.random.default_rng(8)
    steps = [[rng.integers(-20000, 20000, (1, 320)).astype(np.int16)] for _ in range(10)]
    got, want = _stream(path, board, steps, (4, 7), tmp_path / "fw")
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g[0].dtype == np.int16 and np.array_equal(g[0], w[0]), (k, g[0], w[0])
    assert all(np.any(w[0] != 0) for w in want)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_framer_stacker_float_overlap_add_stream(board: str, tmp_path: Path) -> None:
    """12 steps, reset before step 7: frames and stacks wherever TFLite Micro says they
    are valid (it leaves invalid ones unwritten), the valid flags everywhere, and the
    float overlap-add exactly (sums of two float32 values in TFLite Micro's order)."""
    path = tmp_path / "framer_stacker.tflite"
    path.write_bytes(_framer_stacker())
    rng = np.random.default_rng(9)
    steps = [[rng.integers(-32768, 32768, (1, 4)).astype(np.int16),
              rng.integers(-32768, 32768, (4,)).astype(np.int16),
              rng.standard_normal((1, 2, 8)).astype(np.float32)] for _ in range(12)]
    got, want = _stream(path, board, steps, (7,), tmp_path / "fw")
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g[4].dtype == np.float32 and np.array_equal(g[4], w[4]), (k, g[4], w[4])
        assert bool(g[1]) == bool(w[1]) and bool(g[3]) == bool(w[3]), k
        for data, flag in ((0, 1), (2, 3)):
            if bool(w[flag]):
                assert np.array_equal(g[data], w[data]), (k, data, g[data], w[data])
    flags = [(bool(w[1]), bool(w[3])) for w in want]
    # Invalid and valid steps on both, and the reset makes them invalid again.
    assert flags[0] == (False, False) and flags[7] == (False, False)
    assert any(f[0] for f in flags) and any(f[1] for f in flags)
