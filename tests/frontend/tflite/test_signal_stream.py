"""The Signal library's stateful ops (signal_stream.py: Delay, Framer, Stacker,
OverlapAdd; the spectral subtraction's noise estimate) and the FFTs of every type
against TFLite Micro, exactly where integer: several invocations of one TFLite Micro
interpreter, reset midway (MicroInterpreter::Reset), against minirt's reference
running the imported model on one state the same way (StateRunner: the Signal ops'
state is graph state, initial and reset values those of TFLite Micro's kernels)."""

from __future__ import annotations

import numpy as np
import pytest
from micro_speech_pipeline import reference_invocations, tflm_invocations
from tflite_models import Tensor, single_op_model

from toolchain.frontend.tflite.reader import read_model

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def _int16(rng: np.random.Generator, shape: tuple[int, ...], amplitude: int = 32768):
    return rng.integers(-amplitude, amplitude, size=shape).astype(np.int16)


def _check_invocations(model: bytes, invocations: list[list[np.ndarray]],
                       valid_output: int | None = None, resets: tuple[int, ...] = ()
                       ) -> None:
    """Every invocation's outputs equal, both sides reset before each step of `resets`
    (by default before the middle step of a run of 4 or more). With `valid_output`,
    output 0 is compared only where TFLite Micro says it is valid (it leaves an invalid
    frame unwritten)."""
    if not resets and len(invocations) >= 4:
        resets = (len(invocations) // 2,)
    want = tflm_invocations(model, invocations, resets)
    got = reference_invocations(read_model(model), invocations, resets=resets)
    for k, (w, g) in enumerate(zip(want, got)):
        for j, (a, b) in enumerate(zip(w, g)):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, j, a.dtype, b.dtype)
            if j == 0 and valid_output is not None and not w[valid_output].all():
                continue
            assert np.array_equal(a, b), (f"invocation {k}, output {j}", a, b)
    if valid_output is not None:  # the test reaches valid frames
        assert any(bool(w[valid_output].all()) for w in want)


@pytest.mark.parametrize("length,fft_length,amplitude", [
    (512, 512, 32768), (512, 512, 3000), (256, 256, 20000), (32, 32, 32768)])
def test_irfft_int16(length: int, fft_length: int, amplitude: int) -> None:
    """Radix 4 (512), 4 and a 2 (256): full-scale spectra whose butterflies wrap."""
    x = Tensor((2, fft_length + 2), "int16")
    model = single_op_model("CUSTOM:SignalIrfft", [x], [Tensor((2, fft_length), "int16")],
                            T=7, fft_length=fft_length)
    rng = np.random.default_rng(length + amplitude)
    _check_invocations(model, [[_int16(rng, (2, fft_length + 2), amplitude)]])


@pytest.mark.parametrize("delay_length", [0, 3, 40])
def test_delay(delay_length: int) -> None:
    x = Tensor((2, 16), "int16")
    model = single_op_model("CUSTOM:SignalDelay", [x], [Tensor((2, 16), "int16")],
                            delay_length=delay_length)
    rng = np.random.default_rng(delay_length)
    _check_invocations(model, [[_int16(rng, (2, 16))] for _ in range(5)])


@pytest.mark.parametrize("size,step,frames,prefill", [
    (8, 4, 2, True), (8, 4, 2, False), (5, 2, 1, False), (5, 2, 3, True), (6, 6, 1, False)])
def test_framer(size: int, step: int, frames: int, prefill: bool) -> None:
    x = Tensor((2, frames * step), "int16")
    model = single_op_model("CUSTOM:SignalFramer", [x],
                            [Tensor((2, frames, size), "int16"), Tensor((), "bool")],
                            frame_size=size, frame_step=step, prefill=prefill)
    rng = np.random.default_rng(size * step)
    _check_invocations(model, [[_int16(rng, (2, frames * step))] for _ in range(6)], 1)


@pytest.mark.parametrize("left,right,step", [(0, 0, 1), (2, 1, 1), (1, 2, 2), (3, 0, 4)])
def test_stacker(left: int, right: int, step: int) -> None:
    channels = 4
    size = channels * (left + right + 1)
    model = single_op_model("CUSTOM:SignalStacker", [Tensor((channels,), "int16")],
                            [Tensor((size,), "int16"), Tensor((), "bool")],
                            num_channels=channels, stacker_left_context=left,
                            stacker_right_context=right, stacker_step=step)
    rng = np.random.default_rng(left * 10 + right)
    _check_invocations(model, [[_int16(rng, (channels,))] for _ in range(8)], 1)


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_overlap_add(dtype: str) -> None:
    """int16 saturates (full-scale frames overflow); float adds (its sums of a few
    float32 values in the same order are exact to the bit, so compared exactly)."""
    x = Tensor((2, 3, 8), dtype)
    model = single_op_model("CUSTOM:SignalOverlapAdd", [x], [Tensor((2, 12), dtype)],
                            T=7 if dtype == "int16" else 0, frame_step=4)
    rng = np.random.default_rng(len(dtype))

    def frame() -> np.ndarray:
        if dtype == "int16":
            return _int16(rng, (2, 3, 8))
        return rng.standard_normal((2, 3, 8)).astype(np.float32)

    _check_invocations(model, [[frame()] for _ in range(4)])


def _int32(rng: np.random.Generator, shape: tuple[int, ...], amplitude: int = 1 << 31):
    return rng.integers(-amplitude, amplitude, size=shape).astype(np.int32)


@pytest.mark.parametrize("fft_length,amplitude", [(512, 1 << 31), (256, 1 << 20), (32, 1 << 31)])
def test_int32_rfft_and_irfft(fft_length: int, amplitude: int) -> None:
    """kiss_fft's 32-bit fixed point (Q31 twiddles, int64 products), full scale."""
    rng = np.random.default_rng(fft_length)
    rfft = single_op_model("CUSTOM:SignalRfft", [Tensor((2, fft_length - 8), "int32")],
                           [Tensor((2, fft_length + 2), "int32")], T=2,
                           fft_length=fft_length)
    _check_invocations(rfft, [[_int32(rng, (2, fft_length - 8), amplitude)]])
    irfft = single_op_model("CUSTOM:SignalIrfft", [Tensor((2, fft_length + 2), "int32")],
                            [Tensor((2, fft_length), "int32")], T=2, fft_length=fft_length)
    _check_invocations(irfft, [[_int32(rng, (2, fft_length + 2), amplitude)]])


@pytest.mark.parametrize("op,width,out", [("Rfft", 400, 514), ("Irfft", 514, 512)])
def test_float_rfft_and_irfft(op: str, width: int, out: int) -> None:
    """float32: the graph's fft against kiss_fft's float butterflies, which sum in
    another order; elements compare like numpy.isclose(rtol=1e-5, atol=1e-5) for unit-
    scale inputs: float32 sums of 512 terms round differently by a few ulps of the
    spectrum's largest values (observed: 5.7e-6 on |X| up to 50)."""
    from micro_speech_pipeline import tflm_invocations

    rng = np.random.default_rng(width)
    model = single_op_model(f"CUSTOM:Signal{op}", [Tensor((2, width), "float32")],
                            [Tensor((2, out), "float32")], T=0, fft_length=512)
    x = rng.standard_normal((2, width)).astype(np.float32)
    want = tflm_invocations(model, [[x]])[0][0]
    got = reference_invocations(read_model(model), [[x]])[0][0]
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_noise_estimate_over_invocations(clamping: bool) -> None:
    """The noise estimate carried over 6 invocations (inputs of 12 to 24 bits), with
    and without clamping it to the signal."""
    model = single_op_model("CUSTOM:SignalFilterBankSpectralSubtraction",
                            [Tensor((40,), "uint32")],
                            [Tensor((40,), "uint32"), Tensor((40,), "uint32")],
                            clamping=clamping, alternate_one_minus_smoothing=15401,
                            alternate_smoothing=983, min_signal_remaining=819,
                            num_channels=40, one_minus_smoothing=15975, smoothing=409,
                            smoothing_bits=10, spectral_subtraction_bits=14)
    rng = np.random.default_rng(int(clamping))
    frames = [[(rng.integers(0, 1 << 12, 40) << rng.integers(0, 12, 40)).astype(np.uint32)]
              for _ in range(6)]
    _check_invocations(model, frames)
