"""TFLite Micro's 16x8 integration tests (../shared/models/tflm/integration_tests/seanet):
single-layer SEANet models with int16 activations and int8 weights, and TFLite Micro's
own outputs for them (the golden CSVs), compared exactly.

Every model whose input and golden CSVs are in ../shared runs on the numpy reference
(about a second for all of them) and as cortex-m4 firmware under QEMU, all the models of
one operator merged into one image so that each operator costs one build (under ten
seconds in all). bench/tflm_int16.py builds each model on its own and counts its
instructions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model, load_tflite
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph
from toolchain.testing.difftest import run_side_by_side
from toolchain.testing.tflm_seanet import SEANET, seanet_cases

CASES = seanet_cases()
needs_seanet = pytest.mark.skipif(
    not SEANET.is_dir(), reason=f"{SEANET} is absent (the shared TFLite Micro models)")
def _ids() -> list[str]:
    return [c.name for c in CASES]


@needs_seanet
@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_reference_matches_tflite_micro_golden(case) -> None:
    graph = load_tflite(case.model)
    got = run_graph(graph, case.inputs(graph))[0]
    assert got.dtype == np.int16
    want = case.golden()
    diff = np.flatnonzero(got.reshape(-1) != want)
    assert diff.size == 0, f"{diff.size} of {want.size} outputs differ, first at {diff[:5]}"


@needs_seanet
@pytest.mark.parametrize("op", sorted({c.op for c in CASES}))
def test_cortex_m4_firmware_matches_tflite_micro_golden(op: str, tmp_path: Path) -> None:
    cases = [c for c in CASES if c.op == op]
    graphs = [load_tflite(c.model) for c in cases]
    inputs = [x for c, g in zip(cases, graphs, strict=True) for x in c.inputs(g)]
    outputs = run_side_by_side(graphs, inputs, "cortex-m4", tmp_path / "fw")
    for case, got in zip(cases, outputs, strict=True):
        assert np.array_equal(got.reshape(-1), case.golden()), case.name


@needs_seanet
def test_cases_cover_the_checkable_models() -> None:
    """125 of the 127 models have their input and golden as int16 CSVs in ../shared; the
    two QUANTIZE models' int32 side (quantize0's input, quantize1's golden) was not
    copied, so they import but cannot be checked."""
    models = sorted(SEANET.glob("*/*.tflite"))
    assert len(models) == 127
    assert len(CASES) == 125
    for path in models:
        load_tflite(path)  # every one imports


def test_unsupported_int16_operator_is_one_clear_line() -> None:
    """An int16 operator without a 16x8 kernel is refused by name and type (HARD_SWISH:
    TFLite Micro has no int16 kernel for it either)."""
    tflite_models = pytest.importorskip("tflite_models")
    t = tflite_models.Tensor
    model = tflite_models.single_op_model(
        "HARD_SWISH", [t((1, 4), "int16", scale=0.01, zero_point=0)],
        [t((1, 4), "int16", scale=0.02, zero_point=0)])
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "hs16.tflite")
    assert str(e.value) == ("hs16.tflite: operator 0 (HARD_SWISH): int16 HARD_SWISH is not "
                            "supported yet")


# ------------------------------------------------------------------ corners beyond seanet
# The seanet layers all have VALID padding and no fused activation; these 16x8 models
# cover SAME padding (TRANSPOSE_CONV's leading padding, CONV_2D's zero border), fused
# clamps and non-zero zero points, against TFLite Micro's interpreter on random inputs.


def _synthetic() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    tm = pytest.importorskip("tflite_models")
    pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not "
                        "installed")
    t = tm.Tensor
    rng = np.random.default_rng(16)

    def i16(shape, scale, zp=0):
        return t(shape, "int16", scale=scale, zero_point=zp)

    def filt(shape):
        scales = list(rng.uniform(0.002, 0.02, shape[0]))
        return t(shape, "int8", scale=scales, zero_point=[0] * shape[0], quantized_dimension=0,
                 data=rng.integers(-127, 128, shape))

    def bias(n, scales):
        return t((n,), "int64", scale=scales, zero_point=[0] * n,
                 data=rng.integers(-(1 << 20), 1 << 20, n))

    def x16(shape, high=32768):
        return rng.integers(-high, high, shape).astype(np.int16)

    cases = {}
    w = filt((5, 3, 3, 4))
    cases["conv_same_stride2_relu"] = (tm.single_op_model(
        "CONV_2D", [i16((1, 9, 8, 4), 0.002), w, bias(5, [0.002 * s for s in w.scale])],
        [i16((1, 5, 4, 5), 0.0005)], padding="SAME", stride_h=2, stride_w=2,
        dilation_h_factor=1, dilation_w_factor=1, fused_activation_function="RELU"),
        [x16((1, 9, 8, 4), 3000)])
    w = filt((3, 4, 3, 2))
    shape = t((4,), "int32", data=np.array([1, 10, 9, 3]))
    cases["transpose_conv_same_stride2"] = (tm.single_op_model(
        "TRANSPOSE_CONV", [shape, w, i16((1, 5, 5, 2), 0.003),
                           bias(3, [0.003 * s for s in w.scale])],
        [i16((1, 10, 9, 3), 0.004)], padding="SAME", stride_h=2, stride_w=2),
        [x16((1, 5, 5, 2))])
    cases["leaky_relu_zero_points"] = (tm.single_op_model(
        "LEAKY_RELU", [i16((2, 50), 0.001, 120)], [i16((2, 50), 0.0007, -300)], alpha=0.2),
        [x16((2, 50))])
    cases["add_relu_zero_points"] = (tm.single_op_model(
        "ADD", [i16((3, 7), 0.001, 5), i16((1, 7), 0.0013, -7)], [i16((3, 7), 0.002, 11)],
        fused_activation_function="RELU"), [x16((3, 7)), x16((1, 7))])
    # Sums beyond int32: 576 taps of +-127 against inputs of +-32767 with the same signs
    # (|acc| ~ 2.4e9), so the accumulator must be the kernels' int64.
    big = np.where(rng.random((2, 3, 3, 64)) < 0.5, -127, 127)
    wbig = t(big.shape, "int8", scale=[0.01, 0.012], zero_point=[0, 0], quantized_dimension=0,
             data=big)
    xbig = (np.sign(big[0]) * 32767)[None].astype(np.int16)
    xbig[0, 0, 0, :5] = rng.integers(-32768, 32768, 5)
    cases["conv_int64_accumulator"] = (tm.single_op_model(
        "CONV_2D", [i16((1, 3, 3, 64), 0.001), wbig, bias(2, [1e-5, 1.2e-5])],
        [i16((1, 1, 1, 2), 1.0)], padding="VALID", stride_h=1, stride_w=1,
        dilation_h_factor=1, dilation_w_factor=1), [xbig])
    shape = t((4,), "int32", data=np.array([1, 3, 3, 2]))
    cases["transpose_conv_int64_accumulator"] = (tm.single_op_model(
        "TRANSPOSE_CONV", [shape, wbig, i16((1, 1, 1, 64), 0.001)], [i16((1, 3, 3, 2), 0.5)],
        padding="VALID", stride_h=1, stride_w=1), [np.full((1, 1, 1, 64), -32768, np.int16)])
    cases["quantize_int16_to_int8"] = (tm.single_op_model(
        "QUANTIZE", [i16((4, 64), 0.0006)], [t((4, 64), "int8", scale=0.09, zero_point=-5)]),
        [x16((4, 64))])
    cases["quantize_int8_to_int16"] = (tm.single_op_model(
        "QUANTIZE", [t((4, 64), "int8", scale=0.03, zero_point=7)], [i16((4, 64), 0.0001)]),
        [rng.integers(-128, 128, (4, 64)).astype(np.int8)])
    # An INT32 bias: TFLite Micro's int32 instance of the kernel (wrapping sums, the int32
    # double-rounding requantization).
    w = filt((4, 2, 3, 3))
    cases["conv_int32_bias"] = (tm.single_op_model(
        "CONV_2D", [i16((1, 6, 7, 3), 0.003), w,
                    t((4,), "int32", scale=[0.003 * s for s in w.scale], zero_point=[0] * 4,
                      data=rng.integers(-(1 << 20), 1 << 20, 4))],
        [i16((1, 5, 5, 4), 0.01)], padding="VALID", stride_h=1, stride_w=1,
        dilation_h_factor=1, dilation_w_factor=1), [x16((1, 6, 7, 3))])
    cases["quantize_float_to_int16"] = (tm.single_op_model(
        "QUANTIZE", [t((3, 80), "float32")], [i16((3, 80), 0.0007, 3)]),
        [np.concatenate([rng.normal(0, 8, (3, 70)), np.full((3, 10), 0.00035 * 7)],
                        axis=1).astype(np.float32)])
    cases["dequantize_int16"] = (tm.single_op_model(
        "DEQUANTIZE", [i16((3, 80), 0.00071, -4)], [t((3, 80), "float32")]), [x16((3, 80))])
    cases["leaky_relu_int8"] = (tm.single_op_model(
        "LEAKY_RELU", [t((3, 90), "int8", scale=0.05, zero_point=-9)],
        [t((3, 90), "int8", scale=0.03, zero_point=20)], alpha=0.3),
        [rng.integers(-128, 128, (3, 90)).astype(np.int8)])
    # Scales whose multipliers differ formed in float32 (the 16-bit kernel's Prepare) and
    # in double (the int8 one's): 3 of these 256 outputs did, before int8 took a table.
    cases["leaky_relu_int8_double_multipliers"] = (tm.single_op_model(
        "LEAKY_RELU", [t((1, 256), "int8", scale=0.03, zero_point=0)],
        [t((1, 256), "int8", scale=0.01, zero_point=0)], alpha=1.7),
        [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)])
    cases["leaky_relu_float"] = (tm.single_op_model(
        "LEAKY_RELU", [t((3, 90), "float32")], [t((3, 90), "float32")], alpha=0.3),
        [rng.normal(0, 3, (3, 90)).astype(np.float32)])
    return cases


INT64 = ["conv_int64_accumulator", "transpose_conv_int64_accumulator"]
SYNTHETIC = [*INT64, "quantize_int16_to_int8", "quantize_int8_to_int16", "conv_same_stride2_relu",
             "transpose_conv_same_stride2", "leaky_relu_zero_points", "add_relu_zero_points",
             "leaky_relu_int8", "leaky_relu_int8_double_multipliers", "leaky_relu_float",
             "conv_int32_bias",
             "quantize_float_to_int16", "dequantize_int16"]


@pytest.mark.parametrize("name", SYNTHETIC)
def test_16x8_corners_match_tflite_micro(name: str) -> None:
    from tflite_models import run_tflm

    model, inputs = _synthetic()[name]
    want = run_tflm(model, inputs)[0][0]
    got = run_graph(import_model(read_model(model)), inputs)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_16x8_corners_on_cortex_m4(tmp_path: Path) -> None:
    """The corner models above as one cortex-m4 image, against TFLite Micro's interpreter;
    among them the i64 convolutions (the seanet layers' sums all fit int32, so they
    accumulate in int32) compiled for a 32-bit core."""
    from tflite_models import run_tflm

    cases = [_synthetic()[name] for name in SYNTHETIC]
    graphs = [import_model(read_model(model)) for model, _ in cases]
    assert all(n.outputs[0].type.dtype.name == "i64" for g in graphs[:len(INT64)]
               for n in g.nodes if n.op == "convolution")
    inputs = [x for _, xs in cases for x in xs]
    outputs = run_side_by_side(graphs, inputs, "cortex-m4", tmp_path / "fw")
    for name, (model, xs), got in zip(SYNTHETIC, cases, outputs, strict=True):
        assert np.array_equal(got, run_tflm(model, xs)[0][0]), name
