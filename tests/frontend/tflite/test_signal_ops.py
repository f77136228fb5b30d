"""The Signal library's custom ops (toolchain/frontend/tflite/signal_ops.py), one op per
model built with tests/tflite_models.py, against TFLite Micro's own kernels: seeded
inputs over the full range of each type (wrapping int16 stores, uint32 / uint64 values
past 2**31 / 2**63), compared exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, run_tflm, single_op_model

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph
from toolchain.reference.state import StateRunner

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

PREPROCESSOR = (Path(__file__).resolve().parents[3].parent / "shared/models/tflm/examples/"
                "micro_speech/models/audio_preprocessor_int8.tflite")


def _ours(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """One inference from the boot state (the stateful ops' state is graph state)."""
    return StateRunner(import_model(read_model(model))).step(inputs)


def _check(model: bytes, inputs: list[np.ndarray], compare: slice = slice(None)) -> None:
    want, _ = run_tflm(model, inputs)
    got = _ours(model, inputs)
    assert len(got) == len(want)
    for k, (w, g) in enumerate(zip(want, got)):
        w, g = np.asarray(w), np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype)
        bad = np.flatnonzero(w.reshape(-1)[compare] != g.reshape(-1)[compare])
        assert bad.size == 0, (f"output {k}: {bad.size} elements differ, first at "
                               f"{bad[0]}: TFLite Micro {w.reshape(-1)[compare][bad[0]]}, "
                               f"ours {g.reshape(-1)[compare][bad[0]]}")


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _int16(rng: np.random.Generator, shape: tuple[int, ...], amplitude: int = 32768):
    return rng.integers(-amplitude, amplitude, size=shape).astype(np.int16)


def _uint(rng: np.random.Generator, n: int, bits: int, dt: str) -> np.ndarray:
    """Values spread over every bit length up to `bits` (plus 0, 1, 2 and the maximum)."""
    lengths = rng.integers(0, bits + 1, size=n)
    values = [int(rng.integers(0, 1 << 62)) % (1 << int(b)) if b else 0 for b in lengths]
    values[:4] = [0, 1, 2, (1 << bits) - 1]
    return np.array(values, dtype=np.uint64).astype(dt)


def _preprocessor_constant(index: int) -> np.ndarray:
    return read_model(PREPROCESSOR.read_bytes()).tensors[index].data


@pytest.mark.parametrize("shift,amplitude", [(12, 32768), (0, 32768), (3, 400)])
def test_window(shift: int, amplitude: int) -> None:
    rng = _rng(shift)
    x = Tensor((2, 64), "int16")
    w = Tensor((64,), "int16", data=_int16(rng, (64,)))
    model = single_op_model("CUSTOM:SignalWindow", [x, w], [Tensor((2, 64), "int16")],
                            shift=shift)
    _check(model, [_int16(rng, (2, 64), amplitude)])


@pytest.mark.parametrize("amplitude", [0, 1, 300, 16384, 32767])
def test_fft_auto_scale(amplitude: int) -> None:
    x = Tensor((100,), "int16")
    model = single_op_model("CUSTOM:SignalFftAutoScale", [x],
                            [Tensor((100,), "int16"), Tensor((), "int32")])
    _check(model, [_int16(_rng(amplitude), (100,), amplitude + 1)])


@pytest.mark.parametrize("where,tail", [(10, 300), (10, -3), (98, -5), (99, 0), (0, 40)])
def test_fft_auto_scale_after_int16_min(where: int, tail: int) -> None:
    """-32768 wraps the library's running maximum: the values after its last occurrence
    decide the scale (a negative one right after it: no scaling)."""
    x = _int16(_rng(where), (100,), 20000)
    x[where] = -32768
    x[where + 1:] = np.clip(x[where + 1:], -abs(tail) - 1, abs(tail) + 1) // 1
    if where + 1 < 100:
        x[where + 1] = tail
    model = single_op_model("CUSTOM:SignalFftAutoScale", [Tensor((100,), "int16")],
                            [Tensor((100,), "int16"), Tensor((), "int32")])
    _check(model, [x])


@pytest.mark.parametrize("length,fft_length,amplitude", [
    (480, 512, 32768), (480, 512, 2000), (200, 256, 32768), (64, 64, 32768), (30, 32, 9000)])
def test_rfft_int16(length: int, fft_length: int, amplitude: int) -> None:
    """Radix-4 stages (512: 256 = 4**4), a radix-2 one (256: 128 = 4**3 * 2), full-scale
    inputs whose butterflies wrap."""
    x = Tensor((2, length), "int16")
    model = single_op_model("CUSTOM:SignalRfft", [x], [Tensor((2, fft_length + 2), "int16")],
                            T=7, fft_length=fft_length)
    _check(model, [_int16(_rng(length), (2, length), amplitude)])


def test_energy() -> None:
    """Only bins [start_index, end_index) are compared: TFLite Micro leaves the others
    unwritten (whatever its arena held), minirt writes 0 there."""
    x = Tensor((514,), "int16")
    model = single_op_model("CUSTOM:SignalEnergy", [x], [Tensor((257,), "uint32")],
                            start_index=5, end_index=241)
    _check(model, [_int16(_rng(1), (514,))], slice(5, 241))


def test_filter_bank() -> None:
    """micro_speech's 40-channel mel configuration on full-range uint32 spectra."""
    consts = [Tensor(d.shape, "int16", data=d) for d in
              (_preprocessor_constant(i) for i in (13, 12, 11, 10, 9))]
    x = Tensor((257,), "uint32")
    model = single_op_model("CUSTOM:SignalFilterBank", [x, *consts],
                            [Tensor((40,), "uint64")], num_channels=40)
    _check(model, [_uint(_rng(2), 257, 32, "uint32")])


@pytest.mark.parametrize("scale_bits", [0, 3, 17])
def test_filter_bank_square_root(scale_bits: int) -> None:
    x, bits = Tensor((300,), "uint64"), Tensor((), "int32")
    model = single_op_model("CUSTOM:SignalFilterBankSquareRoot", [x, bits],
                            [Tensor((300,), "uint32")])
    _check(model, [_uint(_rng(scale_bits), 300, 64, "uint64"), np.int32(scale_bits)])


SPECTRAL = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983,
                min_signal_remaining=819, num_channels=40, one_minus_smoothing=15975,
                smoothing=409, smoothing_bits=10, spectral_subtraction_bits=14)


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_first_invocation(clamping: bool) -> None:
    """From TFLite Micro's initial (zero) noise estimate; inputs under 2**22 keep the
    signal scaled up by 2**10 inside uint32, larger ones wrap there in both."""
    x = Tensor((40,), "uint32")
    model = single_op_model("CUSTOM:SignalFilterBankSpectralSubtraction", [x],
                            [Tensor((40,), "uint32"), Tensor((40,), "uint32")],
                            clamping=clamping, **SPECTRAL)
    _check(model, [_uint(_rng(3), 40, 32, "uint32")])


def test_pcan() -> None:
    """micro_speech's gain table, noise estimates of every bit length."""
    lut = _preprocessor_constant(8)
    x, noise = Tensor((200,), "uint32"), Tensor((200,), "uint32")
    model = single_op_model("CUSTOM:SignalPCAN", [x, noise, Tensor(lut.shape, "int16", data=lut)],
                            [Tensor((200,), "uint32")], snr_shift=6)
    rng = _rng(4)
    _check(model, [_uint(rng, 200, 20, "uint32"), _uint(rng, 200, 32, "uint32")])


@pytest.mark.parametrize("bits,scale", [(3, 64), (0, 1 << 10), (8, 7)])
def test_filter_bank_log(bits: int, scale: int) -> None:
    x = Tensor((300,), "uint32")
    model = single_op_model("CUSTOM:SignalFilterBankLog", [x], [Tensor((300,), "int16")],
                            input_correction_bits=bits, output_scale=scale)
    _check(model, [_uint(_rng(bits), 300, 32, "uint32")])


def test_bad_options_are_one_line() -> None:
    """Options out of range or missing: one line naming the operator."""
    x = Tensor((480,), "int16")
    model = single_op_model("CUSTOM:SignalRfft", [x], [Tensor((482,), "int16")], T=7,
                            fft_length=480)
    with pytest.raises(TFLiteError, match=r"operator 0 \(CUSTOM:SignalRfft\): fft_length "
                       "must be a power of two"):
        import_model(read_model(model))
    model = single_op_model("CUSTOM:SignalWindow", [x, Tensor((480,), "int16",
                            data=np.zeros(480))], [Tensor((480,), "int16")])
    with pytest.raises(TFLiteError, match=r"CUSTOM:SignalWindow\): its custom options lack "
                       "shift"):
        import_model(read_model(model))


@pytest.mark.parametrize("garbage", [b"\xff" * 4, b"\x00" * 4, b"\x01\x02\x03\x04"])
def test_damaged_custom_options_are_one_line(garbage: bytes) -> None:
    """The flexbuffer bytes overwritten in place: whatever they decode to (an error, a
    scalar, a map without the key), one line naming the operator, no traceback."""
    from flatbuffers import flexbuffers

    x = Tensor((8,), "int16")
    model = single_op_model("CUSTOM:SignalWindow", [x, Tensor((8,), "int16", data=np.ones(8))],
                            [Tensor((8,), "int16")], shift=12)
    options = bytes(flexbuffers.Dumps({"shift": 12}))
    assert model.count(options) == 1
    at = model.index(options) + len(options) - len(garbage)
    damaged = model[:at] + garbage + model[at + len(garbage):]
    with pytest.raises(TFLiteError) as err:
        import_model(read_model(damaged))
    assert "\n" not in str(err.value)
    assert "operator 0 (CUSTOM:SignalWindow): " in str(err.value)


@pytest.mark.parametrize("options,message", [
    ({"shift": 40}, "option shift is 40; an integer in \\[0, 31\\]"),
    ({"shift": "12"}, "option shift is 'a non-numeric value'; an integer"),
])
def test_option_values_out_of_range_are_refused(options: dict, message: str) -> None:
    x = Tensor((8,), "int16")
    model = single_op_model("CUSTOM:SignalWindow", [x, Tensor((8,), "int16", data=np.ones(8))],
                            [Tensor((8,), "int16")], **options)
    with pytest.raises(TFLiteError, match=message):
        import_model(read_model(model))


def _window_with_options(raw: bytes) -> bytes:
    x = Tensor((8,), "int16")
    op = Op("CUSTOM:SignalWindow", [x, Tensor((8,), "int16", data=np.full(8, 4096))],
            [Tensor((8,), "int16")], raw)  # type: ignore[arg-type]
    return build_model([op], [x], op.outputs)


def test_options_are_read_key_by_key() -> None:
    """Only the wanted keys are read (a whole decode of a hostile map could expand its
    shared references without bound): other entries, whatever they hold, are left."""
    from flatbuffers import flexbuffers

    fbb = flexbuffers.Builder()
    with fbb.Map():
        with fbb.Vector("filler"):
            for _ in range(64):
                fbb.Int(1)
        fbb.Int("shift", 3)
    graph = import_model(read_model(_window_with_options(bytes(fbb.Finish()))))
    x = np.arange(8, dtype=np.int16) * 100
    assert np.array_equal(run_graph(graph, [x])[0], (x.astype(np.int32) * 4096 >> 3)
                          .clip(-32768, 32767).astype(np.int16))


def test_a_non_scalar_option_is_refused() -> None:
    from flatbuffers import flexbuffers

    fbb = flexbuffers.Builder()
    with fbb.Map(), fbb.Vector("shift"):
        fbb.Int(1)
    with pytest.raises(TFLiteError, match="option shift is 'a non-numeric value'"):
        import_model(read_model(_window_with_options(bytes(fbb.Finish()))))
