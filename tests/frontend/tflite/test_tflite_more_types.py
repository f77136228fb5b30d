"""The element types issue 19 point 1 added to existing TFLite rows (TRANSPOSE_CONV
float32 / int8, float32 DIV, int16 ABS / PRELU / RSQRT / SQUARED_DIFFERENCE, int32
SQUARED_DIFFERENCE / PAD, int64 MAXIMUM / MINIMUM, int64 / bool data movement, uint8
QUANTIZE / DEQUANTIZE, hybrid EMBEDDING_LOOKUP, int8 ADD_N / DIV, int16 BATCH_MATMUL,
INT4 weights) on
full-range seeded inputs against TFLite Micro's interpreter, in the numpy reference and
in firmware under QEMU.

Integer and bool results must match exactly. Float results: numpy.isclose(rtol=1e-5,
atol=1e-5): TRANSPOSE_CONV sums its taps in another order than TFLite Micro's scatter
(float32 rounding of each partial sum differs in the last bits).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from quant.tflm_oracle import assert_exact
from tflite_models import OPTIONS_TABLE, Op, Tensor, build_model, run_tflm, single_op_model

from toolchain.frontend.tflite import import_model, read_model
from toolchain.reference import run_graph

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

for _op, _table in {"SQUARED_DIFFERENCE": None, "ABS": None, "PRELU": None, "RSQRT": None,
                    "EMBEDDING_LOOKUP": None, "ADD_N": None,
                    "BATCH_MATMUL": "BatchMatMulOptions"}.items():
    OPTIONS_TABLE.setdefault(_op, _table)

RTOL, ATOL = 1e-5, 1e-5


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def full(t: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Seeded values over the whole range of an integer type (normal floats)."""
    if t == "float32":
        return rng(seed).standard_normal(shape).astype(np.float32)
    info = np.iinfo(t)
    return rng(seed).integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(t)


def _transpose_conv(t: str, padding: str, stride: int, act: str, seed: int
                    ) -> tuple[bytes, list[np.ndarray]]:
    r = rng(seed)
    ih, iw, cin, cout, k = 5, 4, 3, 4, 3
    oh = ih * stride if padding == "SAME" else (ih - 1) * stride + k
    ow = iw * stride if padding == "SAME" else (iw - 1) * stride + k
    shape = Tensor((4,), "int32", data=np.array([1, oh, ow, cout]))
    if t == "float32":
        w = Tensor((cout, k, k, cin), "float32", data=r.standard_normal((cout, k, k, cin)))
        b = Tensor((cout,), "float32", data=r.standard_normal(cout))
        x, y = Tensor((1, ih, iw, cin), "float32"), Tensor((1, oh, ow, cout), "float32")
    else:
        scales = list(r.uniform(0.003, 0.02, cout))
        w = Tensor((cout, k, k, cin), "int8", scale=scales, zero_point=[0] * cout,
                   data=r.integers(-127, 128, (cout, k, k, cin)))
        b = Tensor((cout,), "int32", scale=[0.04 * s for s in scales], zero_point=[0] * cout,
                   data=r.integers(-3000, 3000, cout))
        x = Tensor((1, ih, iw, cin), "int8", scale=0.04, zero_point=-7)
        y = Tensor((1, oh, ow, cout), "int8", scale=0.09, zero_point=5)
    model = single_op_model("TRANSPOSE_CONV", [shape, w, x, b], [y], padding=padding,
                            stride_h=stride, stride_w=stride, fused_activation_function=act)
    return model, [full(t, (1, ih, iw, cin), seed + 1)]


def _cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """name -> (one-operator model, its inputs)."""
    def i16(shape, scale):
        return Tensor(shape, "int16", scale=scale, zero_point=0)

    cases = {}
    for t in ("float32", "int8"):
        for padding, stride, act in (("SAME", 2, "NONE"), ("VALID", 2, "RELU"),
                                     ("SAME", 1, "RELU6"), ("VALID", 3, "NONE")):
            cases[f"transpose_conv_{t}_{padding}_{stride}_{act}"] = _transpose_conv(
                t, padding, stride, act, len(cases))
    divisor = rng(5).uniform(0.25, 4, (3, 4)).astype(np.float32) * \
        rng(6).choice([-1, 1], (3, 4)).astype(np.float32)
    cases["div_float32_relu"] = (single_op_model(
        "DIV", [Tensor((2, 3, 4), "float32"), Tensor((3, 4), "float32")],
        [Tensor((2, 3, 4), "float32")], fused_activation_function="RELU"),
        [full("float32", (2, 3, 4), 7), divisor])
    x16 = full("int16", (4, 50), 8)
    x16[0, :3] = [-32768, 32767, 0]
    cases["abs_int16_plain"] = (single_op_model("ABS", [Tensor((4, 50), "int16")],
                                                [Tensor((4, 50), "int16")]), [x16])
    cases["abs_int16_rescaled"] = (single_op_model("ABS", [i16((4, 50), 0.001)],
                                                   [i16((4, 50), 0.0013)]), [x16])
    cases["abs_int16_saturating"] = (single_op_model("ABS", [i16((4, 50), 0.001)],
                                                     [i16((4, 50), 0.0004)]), [x16])
    # Every int16 RSQRT takes (TFLite Micro fails the inference on negative ones).
    for k, (s_in, s_out) in enumerate(((0.001, 0.002), (0.25, 0.0001), (3e-5, 0.5))):
        cases[f"rsqrt_int16_every_value_{k}"] = (single_op_model(
            "RSQRT", [i16((128, 256), s_in)], [i16((128, 256), s_out)]),
            [np.arange(1 << 15, dtype=np.int16).reshape(128, 256)])
    alpha = Tensor((6,), "int8", scale=0.01, zero_point=-3, data=rng(9).integers(-128, 128, 6))
    cases["prelu_int16"] = (single_op_model("PRELU", [i16((2, 5, 6), 0.002), alpha],
                                            [i16((2, 5, 6), 0.0017)]),
                            [full("int16", (2, 5, 6), 10)])
    cases["squared_difference_int16"] = (single_op_model(
        "SQUARED_DIFFERENCE", [i16((3, 8), 0.001), i16((3, 8), 0.0016)], [i16((3, 8), 0.1)]),
        [full("int16", (3, 8), 11), full("int16", (3, 8), 12)])
    cases["squared_difference_int32_wraps"] = (single_op_model(
        "SQUARED_DIFFERENCE", [Tensor((3, 8), "int32"), Tensor((8,), "int32")],
        [Tensor((3, 8), "int32")]), [full("int32", (3, 8), 13), full("int32", (8,), 14)])
    for op in ("MAXIMUM", "MINIMUM"):
        cases[f"{op.lower()}_int64"] = (single_op_model(
            op, [Tensor((3, 4), "int64"), Tensor((4,), "int64")], [Tensor((3, 4), "int64")]),
            [full("int64", (3, 4), 15), full("int64", (4,), 16)])
    cases["pad_int32"] = (single_op_model(
        "PAD", [Tensor((2, 3), "int32"), Tensor((2, 2), "int32", data=np.array([[1, 2], [0, 1]]))],
        [Tensor((5, 4), "int32")]), [full("int32", (2, 3), 17)])
    cases["concatenation_int64"] = (single_op_model(
        "CONCATENATION", [Tensor((2, 3), "int64"), Tensor((2, 2), "int64")],
        [Tensor((2, 5), "int64")], axis=-1, fused_activation_function="NONE"),
        [full("int64", (2, 3), 18), full("int64", (2, 2), 19)])
    cases["strided_slice_bool"] = (single_op_model(
        "STRIDED_SLICE", [Tensor((4, 6), "bool"), Tensor((2,), "int32", data=np.array([3, 1])),
                          Tensor((2,), "int32", data=np.array([0, 6])),
                          Tensor((2,), "int32", data=np.array([-1, 2]))],
        [Tensor((3, 3), "bool")]), [rng(20).integers(0, 2, (4, 6)).astype(bool)])
    u8 = np.arange(256, dtype=np.uint8).reshape(16, 16)
    cases["quantize_uint8_to_int8"] = (single_op_model(
        "QUANTIZE", [Tensor((16, 16), "uint8", scale=0.05, zero_point=131)],
        [Tensor((16, 16), "int8", scale=0.03, zero_point=-4)]), [u8])
    cases["quantize_int8_to_uint8_flip"] = (single_op_model(
        "QUANTIZE", [Tensor((16, 16), "int8", scale=0.05, zero_point=-3)],
        [Tensor((16, 16), "uint8", scale=0.05, zero_point=125)]), [u8.view(np.int8)])
    cases["dequantize_uint8"] = (single_op_model(
        "DEQUANTIZE", [Tensor((16, 16), "uint8", scale=0.0173, zero_point=131)],
        [Tensor((16, 16), "float32")]), [u8])
    table = Tensor((5, 2, 3), "int8", scale=0.0625, zero_point=0,
                   data=rng(21).integers(-128, 128, (5, 2, 3)))
    cases["embedding_lookup_hybrid"] = (single_op_model(
        "EMBEDDING_LOOKUP", [Tensor((4,), "int32"), table], [Tensor((4, 2, 3), "float32")]),
        [np.array([4, 0, 2, 4], np.int32)])
    every = (np.repeat(np.arange(-128, 128), 256).astype(np.int8).reshape(256, 256),
             np.tile(np.arange(-128, 128), 256).astype(np.int8).reshape(256, 256))
    for k, (s1, z1, s2, z2, so, zo, act) in enumerate((
            (0.05, 3, 0.02, -4, 0.1, 2, "NONE"), (0.5, -20, 0.003, 7, 0.9, 0, "RELU"),
            (0.0123, -128, 0.0456, 127, 0.0789, -128, "RELU6"))):
        # Every pair of int8 values, the divisor's zero point (a real zero) included.
        cases[f"div_int8_every_pair_{k}"] = (single_op_model(
            "DIV", [Tensor((256, 256), "int8", scale=s1, zero_point=z1),
                    Tensor((256, 256), "int8", scale=s2, zero_point=z2)],
            [Tensor((256, 256), "int8", scale=so, zero_point=zo)],
            fused_activation_function=act), list(every))
    cases["div_int8_broadcast"] = (single_op_model(
        "DIV", [Tensor((2, 3, 5), "int8", scale=0.03, zero_point=-6),
                Tensor((5,), "int8", scale=0.02, zero_point=1)],
        [Tensor((2, 3, 5), "int8", scale=0.2, zero_point=-1)],
        fused_activation_function="NONE"), [full("int8", (2, 3, 5), 27), full("int8", (5,), 28)])
    # INT4 weights (an odd count: the last byte half used), per channel for the
    # convolutions, per tensor for FULLY_CONNECTED (what TFLite Micro takes).
    w4 = rng(29).integers(-8, 8, (3, 3, 3, 5))
    cases["conv_2d_int4_weights"] = (single_op_model(
        "CONV_2D", [Tensor((1, 6, 5, 5), "int8", scale=0.05, zero_point=-2),
                    Tensor((3, 3, 3, 5), "int4", scale=[0.02, 0.03, 0.05],
                           zero_point=[0, 0, 0], data=w4),
                    Tensor((3,), "int32", scale=[0.001, 0.0015, 0.0025], zero_point=[0] * 3,
                           data=np.array([-50, 7, 300]))],
        [Tensor((1, 3, 3, 3), "int8", scale=0.1, zero_point=4)], padding="SAME", stride_h=2,
        stride_w=2, dilation_h_factor=1, dilation_w_factor=1,
        fused_activation_function="RELU"), [full("int8", (1, 6, 5, 5), 30)])
    cases["depthwise_int4_weights"] = (single_op_model(
        "DEPTHWISE_CONV_2D", [Tensor((1, 5, 5, 3), "int8", scale=0.05, zero_point=1),
                              Tensor((1, 3, 3, 3), "int4", scale=[0.02, 0.03, 0.04],
                                     zero_point=[0, 0, 0], quantized_dimension=3,
                                     data=rng(31).integers(-8, 8, (1, 3, 3, 3)))],
        [Tensor((1, 5, 5, 3), "int8", scale=0.05, zero_point=0)], padding="SAME",
        stride_h=1, stride_w=1, dilation_h_factor=1, dilation_w_factor=1, depth_multiplier=1,
        fused_activation_function="NONE"), [full("int8", (1, 5, 5, 3), 32)])
    cases["fully_connected_int4_weights"] = (single_op_model(
        "FULLY_CONNECTED", [Tensor((2, 7), "int8", scale=0.05, zero_point=3),
                            Tensor((5, 7), "int4", scale=0.03, zero_point=0,
                                   data=rng(33).integers(-8, 8, (5, 7)))],
        [Tensor((2, 5), "int8", scale=0.1, zero_point=-1)],
        fused_activation_function="NONE"), [full("int8", (2, 7), 34)])
    q8 = Tensor((3, 7), "int8", scale=0.04, zero_point=-9)
    cases["add_n_int8_three"] = (single_op_model(
        "ADD_N", [q8, Tensor((3, 7), "int8", scale=0.04, zero_point=-9),
                  Tensor((3, 7), "int8", scale=0.04, zero_point=-9)],
        [Tensor((3, 7), "int8", scale=0.09, zero_point=4)]),
        [full("int8", (3, 7), 22), full("int8", (3, 7), 23), full("int8", (3, 7), 24)])
    # 64-deep sums of products up to 2**30: beyond int32, the kernel's int64 accumulator.
    big = np.full((2, 3, 64), 32767, np.int16)
    big[1] = full("int16", (3, 64), 25)
    cases["batch_matmul_int16_int64_sums"] = (single_op_model(
        "BATCH_MATMUL", [i16((2, 3, 64), 0.002), i16((2, 64, 5), 0.003)],
        [i16((2, 3, 5), 40.0)], adj_x=False, adj_y=False),
        [big, np.concatenate([np.full((1, 64, 5), 32767, np.int16),
                              full("int16", (1, 64, 5), 26)])])
    return cases


def _unet_step() -> tuple[bytes, list[np.ndarray]]:
    """An int8 U-Net decoder step: an encoder CONV_2D (stride 2), the TRANSPOSE_CONV that
    brings it back to full size, the skip connection's CONCATENATION, a last CONV_2D."""
    r = rng(40)

    def act(shape, scale, zp):
        return Tensor(shape, "int8", scale=scale, zero_point=zp)

    def conv_weights(o, i, scale_in):
        scales = list(r.uniform(0.005, 0.02, o))
        w = Tensor((o, 3, 3, i), "int8", scale=scales, zero_point=[0] * o,
                   data=r.integers(-127, 128, (o, 3, 3, i)))
        b = Tensor((o,), "int32", scale=[scale_in * s for s in scales], zero_point=[0] * o,
                   data=r.integers(-500, 500, o))
        return w, b

    x = act((1, 8, 8, 4), 0.05, -3)
    down = act((1, 4, 4, 6), 0.25, -10)
    up = act((1, 8, 8, 4), 0.4, 2)  # the skip's scale, so CONCATENATION needs no rescale
    skip = act((1, 8, 8, 4), 0.4, 2)
    cat = act((1, 8, 8, 8), 0.4, 2)
    y = act((1, 8, 8, 3), 4.0, 0)
    w1, b1 = conv_weights(6, 4, 0.05)
    wt, bt = conv_weights(4, 6, 0.25)
    w0, b0 = conv_weights(4, 4, 0.05)
    w2, b2 = conv_weights(3, 8, 0.4)
    conv = dict(padding="SAME", dilation_h_factor=1, dilation_w_factor=1)
    ops = [Op("CONV_2D", [x, w0, b0], [skip], dict(conv, stride_h=1, stride_w=1,
                                                   fused_activation_function="RELU")),
           Op("CONV_2D", [x, w1, b1], [down], dict(conv, stride_h=2, stride_w=2,
                                                   fused_activation_function="RELU")),
           Op("TRANSPOSE_CONV", [Tensor((4,), "int32", data=np.array([1, 8, 8, 4])), wt,
                                 down, bt], [up], dict(padding="SAME", stride_h=2,
                                                       stride_w=2)),
           Op("CONCATENATION", [skip, up], [cat], dict(axis=3,
                                                       fused_activation_function="NONE")),
           Op("CONV_2D", [cat, w2, b2], [y], dict(conv, stride_h=1, stride_w=1,
                                                  fused_activation_function="NONE"))]
    return build_model(ops, [x], [y]), [full("int8", (1, 8, 8, 4), 41)]


CASES = _cases()
CASES["unet_decoder_step_int8"] = _unet_step()


def _compare(name: str, want: np.ndarray, got: np.ndarray) -> None:
    if want.dtype == np.float32:
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)
    else:
        assert_exact(want, got, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_tflite_micro(name: str) -> None:
    model, xs = CASES[name]
    want, _ = run_tflm(model, xs)
    got = run_graph(import_model(read_model(model)), xs)
    _compare(name, want[0], got[0])


def test_transpose_conv_int8_filter_zero_point_refused() -> None:
    """TFLite Micro's int8 kernel ignores a filter zero point: a model with one is
    refused with one line rather than computed two ways."""
    from toolchain.frontend.tflite import TFLiteError

    shape = Tensor((4,), "int32", data=np.array([1, 4, 4, 2]))
    w = Tensor((2, 3, 3, 1), "int8", scale=[0.01, 0.01], zero_point=[0, 3],
               data=np.ones((2, 3, 3, 1)))
    model = single_op_model("TRANSPOSE_CONV", [shape, w, Tensor((1, 2, 2, 1), "int8",
                                                                  scale=0.1, zero_point=0)],
                            [Tensor((1, 4, 4, 2), "int8", scale=0.1, zero_point=0)],
                            padding="SAME", stride_h=2, stride_w=2)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "tc.tflite")
    assert str(e.value) == ("tc.tflite: operator 0 (TRANSPOSE_CONV): the filter has non-zero "
                            "zero points; TFLite Micro's int8 kernel ignores them")


# One image of every case per board, run under QEMU (a U-Net-style decoder step among
# them: int8 and float TRANSPOSE_CONV with SAME padding and stride 2).
FIRMWARE = ["transpose_conv_int8_SAME_2_NONE", "transpose_conv_float32_VALID_2_RELU",
            "transpose_conv_int8_VALID_3_NONE", "div_float32_relu", "abs_int16_rescaled",
            "prelu_int16", "squared_difference_int16", "squared_difference_int32_wraps",
            "maximum_int64", "pad_int32", "concatenation_int64", "strided_slice_bool",
            "quantize_uint8_to_int8", "dequantize_uint8", "embedding_lookup_hybrid",
            "add_n_int8_three", "batch_matmul_int16_int64_sums", "div_int8_broadcast",
            "conv_2d_int4_weights", "fully_connected_int4_weights", "depthwise_int4_weights",
            "abs_int16_plain", "minimum_int64", "transpose_conv_float32_SAME_1_RELU6",
            "quantize_int8_to_uint8_flip", "rsqrt_int16_every_value_0",
            "unet_decoder_step_int8"]


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    from toolchain.testing.difftest import run_side_by_side

    cases = [CASES[n] for n in FIRMWARE]
    graphs = [import_model(read_model(model)) for model, _ in cases]
    inputs = [x for _, xs in cases for x in xs]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    assert len(outputs) == len(cases)
    for name, (model, xs), got in zip(FIRMWARE, cases, outputs, strict=True):
        _compare(name, run_tflm(model, xs)[0][0], got)
