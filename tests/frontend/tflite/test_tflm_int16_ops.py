"""The 16x8 operators beyond the seanet layers (DEPTHWISE_CONV_2D, FULLY_CONNECTED, the
pools, MUL, MEAN, RELU, RELU6, LOGISTIC, TANH, data movement), each against TFLite
Micro's own interpreter on seeded random inputs, exactly: several shapes, per-channel and
per-tensor weights, both bias types, fused activations. One cortex-m4 image (and one
riscv32 image) holds one model per operator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph
from toolchain.testing.difftest import run_side_by_side

tm = pytest.importorskip("tflite_models")
pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

T = tm.Tensor
Case = tuple[bytes, list[np.ndarray]]


def _i16(shape, scale, zp=0) -> T:
    return T(shape, "int16", scale=scale, zero_point=zp)


class _Maker:
    """Seeded weights and inputs for the 16x8 models."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def filt(self, shape, axis: int = 0, per_channel: bool = True) -> T:
        n = shape[axis]
        data = self.rng.integers(-127, 128, shape)
        if not per_channel:
            return T(shape, "int8", scale=0.01, zero_point=0, data=data)
        return T(shape, "int8", scale=list(self.rng.uniform(0.002, 0.02, n)),
                 zero_point=[0] * n, quantized_dimension=axis, data=data)

    def bias(self, n: int, in_scale: float, w: T, dtype: str = "int64") -> T:
        ws = w.scale if isinstance(w.scale, list) else [w.scale] * n
        return T((n,), dtype, scale=[in_scale * s for s in ws], zero_point=[0] * n,
                 data=self.rng.integers(-(1 << 18), 1 << 18, n))

    def x16(self, shape, high: int = 32768) -> np.ndarray:
        return self.rng.integers(-high, high, shape).astype(np.int16)


def _depthwise(m: _Maker) -> dict[str, Case]:
    cases = {}
    for name, (xs, k, mult, opts) in {
        "depthwise_valid": ((1, 7, 6, 3), (3, 3), 1, dict(padding="VALID", stride_h=1,
                                                          stride_w=1)),
        "depthwise_same_stride2_mult2_relu6": (
            (1, 9, 8, 4), (3, 3), 2, dict(padding="SAME", stride_h=2, stride_w=2,
                                          fused_activation_function="RELU6")),
        "depthwise_dilated": ((1, 10, 9, 2), (3, 2), 3, dict(padding="SAME", stride_h=1,
                                                             stride_w=1, dilation_h_factor=2,
                                                             dilation_w_factor=2)),
    }.items():
        c = xs[3] * mult
        opts = dict(dict(dilation_h_factor=1, dilation_w_factor=1), **opts)
        w = m.filt((1, *k, c), axis=3)
        sx = 0.002
        xt = _i16(xs, sx)
        out_shape = _conv_out(xs, k, opts)
        model = tm.single_op_model("DEPTHWISE_CONV_2D", [xt, w, m.bias(c, sx, w)],
                                   [_i16((*out_shape, c), 0.004)], depth_multiplier=mult,
                                   **opts)
        cases[name] = (model, [m.x16(xs)])
    return cases


def _conv_out(xs, k, opts) -> tuple[int, int, int]:
    dims = []
    strides = (opts["stride_h"], opts["stride_w"])
    dilations = (opts["dilation_h_factor"], opts["dilation_w_factor"])
    for size, kk, s, dil in zip(xs[1:3], k, strides, dilations, strict=True):
        eff = (kk - 1) * dil + 1
        dims.append(-(-size // s) if opts["padding"] == "SAME" else (size - eff) // s + 1)
    return (xs[0], *dims)


def _fully_connected(m: _Maker) -> dict[str, Case]:
    cases = {}
    w = m.filt((6, 20))
    cases["fc_per_channel_int64_bias"] = (tm.single_op_model(
        "FULLY_CONNECTED", [_i16((3, 20), 0.003), w, m.bias(6, 0.003, w)],
        [_i16((3, 6), 0.02)], fused_activation_function="RELU"), [m.x16((3, 20))])
    w = m.filt((5, 12), per_channel=False)
    cases["fc_per_tensor_int32_bias_zero_points"] = (tm.single_op_model(
        "FULLY_CONNECTED", [_i16((2, 3, 4), 0.004, 17), w, m.bias(5, 0.004, w, "int32")],
        [_i16((2, 5), 0.03, -40)]), [m.x16((2, 3, 4))])
    w = m.filt((4, 300))
    cases["fc_no_bias_wide"] = (tm.single_op_model(
        "FULLY_CONNECTED", [_i16((1, 300), 0.001), w, None], [_i16((1, 4), 0.2)]),
        [m.x16((1, 300))])
    return cases


def _pools(m: _Maker) -> dict[str, Case]:
    x, y = _i16((1, 7, 9, 3), 0.003), _i16((1, 4, 5, 3), 0.003)
    return {
        "avgpool_same_relu": (tm.single_op_model(
            "AVERAGE_POOL_2D", [x], [y], padding="SAME", stride_h=2, stride_w=2,
            filter_height=3, filter_width=3, fused_activation_function="RELU"),
            [m.x16((1, 7, 9, 3))]),
        "avgpool_valid": (tm.single_op_model(
            "AVERAGE_POOL_2D", [_i16((2, 6, 6, 2), 0.01, 5)], [_i16((2, 3, 3, 2), 0.01, 5)],
            padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2),
            [m.x16((2, 6, 6, 2))]),
        "maxpool_same": (tm.single_op_model(
            "MAX_POOL_2D", [x], [y], padding="SAME", stride_h=2, stride_w=2,
            filter_height=3, filter_width=2, fused_activation_function="RELU6"),
            [m.x16((1, 7, 9, 3))]),
    }


def _elementwise(m: _Maker) -> dict[str, Case]:
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    cases = {
        "mul_broadcast_relu": (tm.single_op_model(
            "MUL", [_i16((2, 3, 5), 0.002), _i16((1, 5), 0.003)], [_i16((2, 3, 5), 0.001)],
            fused_activation_function="RELU"), [m.x16((2, 3, 5)), m.x16((1, 5))]),
        "mul_same_shape": (tm.single_op_model(
            "MUL", [_i16((4, 33), 0.0004), _i16((4, 33), 0.0009)], [_i16((4, 33), 0.00001)]),
            [m.x16((4, 33)), m.x16((4, 33))]),
        "relu": (tm.single_op_model("RELU", [_i16((3, 40), 0.002)], [_i16((3, 40), 0.0013)]),
                 [m.x16((3, 40))]),
        "relu6": (tm.single_op_model("RELU6", [_i16((3, 40), 0.0004)],
                                     [_i16((3, 40), 0.0004)]), [m.x16((3, 40))]),
        "mean_keep_dims": (tm.single_op_model(
            "MEAN", [_i16((1, 5, 6, 4), 0.002, 3), T((2,), "int32", data=np.array([1, 2]))],
            [_i16((1, 1, 1, 4), 0.001, -2)], keep_dims=True), [m.x16((1, 5, 6, 4))]),
        "sum_keep_dims": (tm.single_op_model(
            "SUM", [_i16((1, 5, 6, 4), 0.002, 3), T((2,), "int32", data=np.array([1, 2]))],
            [_i16((1, 1, 1, 4), 0.03, -2)], keep_dims=True), [m.x16((1, 5, 6, 4), 4000)]),
        "mean_one_axis": (tm.single_op_model(
            "MEAN", [_i16((3, 7, 5), 0.002), T((1,), "int32", data=np.array([-1]))],
            [_i16((3, 7), 0.0025)], keep_dims=False), [m.x16((3, 7, 5))]),
        "concatenation_reshape_transpose": (_concat_reshape(),
                                            [m.x16((2, 3)), m.x16((2, 5))]),
    }
    for name, shape, scale, beta in (("softmax_rows", (16, 40), 0.001, 1.0),
                                     ("softmax_beta", (2, 3, 10), 0.002, 0.7),
                                     ("softmax_narrow_scale", (4, 300), 0.00005, 1.0)):
        cases[name] = (tm.single_op_model(
            "SOFTMAX", [_i16(shape, scale)], [_i16(shape, 2.0 ** -15)], beta=beta),
            [m.x16(shape)])
    # Every int16 input: the table, its interpolation and the saturation all checked.
    for op, scale in (("LOGISTIC", 2.0 ** -12), ("LOGISTIC", 0.00071), ("TANH", 2.0 ** -12),
                      ("TANH", 2.0 ** -11), ("TANH", 0.0013), ("LOGISTIC", 0.0004)):
        cases[f"{op.lower()}_{scale:.5g}"] = (tm.single_op_model(
            op, [_i16((256, 256), scale)], [_i16((256, 256), 2.0 ** -15)]), [every])
    return cases


def _concat_reshape() -> bytes:
    a, b = _i16((2, 3), 0.01), _i16((2, 5), 0.01)
    joined = _i16((2, 8), 0.01)
    out = _i16((4, 4), 0.01)
    shape = T((2,), "int32", data=np.array([4, 4]))
    perm = T((2,), "int32", data=np.array([1, 0]))
    final = _i16((4, 4), 0.01)
    return tm.build_model([tm.Op("CONCATENATION", [a, b], [joined], dict(axis=1)),
                           tm.Op("RESHAPE", [joined, shape], [out], dict(new_shape=[4, 4])),
                           tm.Op("TRANSPOSE", [out, perm], [final])], [a, b], [final])


def _cases() -> dict[str, Case]:
    m = _Maker(1616)
    return {**_depthwise(m), **_fully_connected(m), **_pools(m), **_elementwise(m)}


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_matches_tflite_micro(name: str) -> None:
    model, inputs = CASES[name]
    want = tm.run_tflm(model, inputs)[0][0]
    got = run_graph(import_model(read_model(model), f"{name}.tflite"), inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.argwhere(got != want)
    assert not len(bad), (f"{name}: {len(bad)} of {want.size} differ; first at "
                          f"{tuple(bad[0])}: TFLite Micro {want[tuple(bad[0])]}, "
                          f"ours {got[tuple(bad[0])]}")


# One model per operator on the board.
ON_BOARD = ["depthwise_same_stride2_mult2_relu6", "fc_per_channel_int64_bias",
            "fc_per_tensor_int32_bias_zero_points", "avgpool_same_relu", "maxpool_same",
            "mul_broadcast_relu", "relu", "relu6", "mean_keep_dims", "sum_keep_dims",
            "concatenation_reshape_transpose",
            "logistic_0.00071", "tanh_0.0013", "softmax_beta"]


@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    """One image per board (riscv32: the int64 arithmetic on a core without Armv7-M's
    64-bit multiply-accumulate)."""
    cases = [CASES[name] for name in ON_BOARD]
    graphs = [import_model(read_model(model)) for model, _ in cases]
    inputs = [x for _, xs in cases for x in xs]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    for name, (model, xs), got in zip(ON_BOARD, cases, outputs, strict=True):
        want = tm.run_tflm(model, xs)[0][0]
        assert np.array_equal(got, want), name


@pytest.mark.parametrize("op, scales, message", [
    ("MUL", (0.01, 0.01, 0.02, 5), "the int16 output has zero point 5; TFLite Micro's 16x8 "
     "kernels require 0"),
    ("LOGISTIC", (0.001, 0.001), "the int16 output scale must be 2**-15 (TFLite Micro "
     "requires it)"),
])
def test_refusals_name_the_rule(op: str, scales: tuple, message: str) -> None:
    if op == "MUL":
        s1, s2, so, zo = scales
        model = tm.single_op_model(op, [_i16((4,), s1), _i16((4,), s2)], [_i16((4,), so, zo)])
    else:
        model = tm.single_op_model(op, [_i16((4,), scales[0])], [_i16((4,), scales[1])])
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "m.tflite")
    assert str(e.value) == f"m.tflite: operator 0 ({op}): {message}"
