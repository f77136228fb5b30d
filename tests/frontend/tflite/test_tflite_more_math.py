"""TFLite elementwise math (issue 19 point 1): float32 ABS..COS, SQUARE,
SQUARED_DIFFERENCE, ELU, PRELU, LOG_SOFTMAX, L2_NORMALIZATION and the int8 ABS / ELU
tables, single-op models against TFLite Micro's interpreter.

Float tolerance: numpy.isclose(rtol=1e-5, atol=1e-6) — exp / log / sin / cos / sqrt come
from minirt's math library, not the C library TFLite Micro calls, and reductions sum in
another order. int8 results must match exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import const, q
from test_tflite_more_ops import check_close, check_exact, rng
from tflite_models import OPTIONS_TABLE, Tensor, single_op_model

from toolchain.frontend.tflite import import_model, read_model

OPTIONS_TABLE.update({
    "ABS": None, "NEG": None, "FLOOR": None, "CEIL": None, "SQRT": None, "RSQRT": None,
    "COS": None, "LOG": None, "SQUARE": None, "SQUARED_DIFFERENCE": None, "PRELU": None,
    "LOG_SOFTMAX": None, "L2_NORMALIZATION": "L2NormOptions",
})

# Inputs per operator: in the function's domain, away from poles.
UNARY_INPUTS = {
    "ABS": (-4, 4), "NEG": (-4, 4), "FLOOR": (-4, 4), "CEIL": (-4, 4), "SQRT": (0, 9),
    "RSQRT": (0.05, 9), "EXP": (-8, 8), "LOG": (0.01, 50), "SIN": (-7, 7), "COS": (-7, 7),
    "SQUARE": (-5, 5), "ELU": (-6, 3),
}


@pytest.mark.parametrize("opcode", sorted(UNARY_INPUTS))
def test_unary_float(opcode: str) -> None:
    lo, hi = UNARY_INPUTS[opcode]
    x = rng(10).uniform(lo, hi, (3, 4, 5)).astype(np.float32)
    if opcode in ("FLOOR", "CEIL"):
        x[0, 0, :3] = [-2.0, 0.0, 3.0]  # integers stay themselves
    check_close(opcode, [Tensor((3, 4, 5), "float32")], Tensor((3, 4, 5), "float32"), [x])


def test_squared_difference_broadcast() -> None:
    r = rng(11)
    a, b = r.standard_normal((2, 3, 4)).astype(np.float32), r.standard_normal((3, 1)).astype(
        np.float32)
    check_close("SQUARED_DIFFERENCE", [Tensor((2, 3, 4), "float32"), Tensor((3, 1), "float32")],
                Tensor((2, 3, 4), "float32"), [a, b])


def test_prelu_per_channel_alpha() -> None:
    r = rng(12)
    x = r.standard_normal((1, 4, 4, 3)).astype(np.float32)
    alpha = Tensor((1, 1, 3), "float32", data=np.array([[[0.1, -0.5, 2.0]]], np.float32))
    check_close("PRELU", [Tensor((1, 4, 4, 3), "float32"), alpha],
                Tensor((1, 4, 4, 3), "float32"), [x])


def test_log_softmax() -> None:
    x = (rng(13).standard_normal((3, 7)) * 4).astype(np.float32)
    check_close("LOG_SOFTMAX", [Tensor((3, 7), "float32")], Tensor((3, 7), "float32"), [x])


def test_l2_normalization_with_a_zero_row() -> None:
    x = rng(14).standard_normal((1, 3, 8)).astype(np.float32)
    x[0, 1] = 0.0  # the epsilon keeps the zero row zero
    check_close("L2_NORMALIZATION", [Tensor((1, 3, 8), "float32")],
                Tensor((1, 3, 8), "float32"), [x], fused_activation_function="NONE")


@pytest.mark.parametrize("quant", [((0.05, -3), (0.05, -3)), ((0.05, 10), (0.03, -128)),
                                   ((0.2, -128), (0.1, 0))])
def test_abs_int8(quant: tuple) -> None:
    (s1, z1), (s2, z2) = quant
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    check_exact("ABS", [q((16, 16), s1, z1)], q((16, 16), s2, z2), [x])


@pytest.mark.parametrize("quant", [((0.05, 20), (0.04, 30)), ((0.1, -5), (0.02, 127))])
def test_elu_int8(quant: tuple) -> None:
    (s1, z1), (s2, z2) = quant
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    check_exact("ELU", [q((4, 64), s1, z1)], q((4, 64), s2, z2), [x])


def test_neg_of_int8_is_refused() -> None:
    """TFLite Micro's NEG takes float32 only."""
    model = single_op_model("NEG", [q((3,), 0.1, 0)], [q((3,), 0.1, 0)])
    with pytest.raises(Exception, match="int8 NEG is not supported"):
        import_model(read_model(model))


@pytest.mark.parametrize("quant", [((0.05, -128), (0.02, -100)), ((0.003, -20), (0.5, 3)),
                                   ((1.5, -128), (0.004, -128))])
def test_rsqrt_int8(quant: tuple) -> None:
    """Every input at or above the input zero point (TFLite Micro fails the inference
    below it): its Newton-iteration inverse square root, bit for bit."""
    (s1, z1), (s2, z2) = quant
    x = np.arange(z1, 128, dtype=np.int64).astype(np.int8)
    check_exact("RSQRT", [q(x.shape, s1, z1)], q(x.shape, s2, z2), [x])


@pytest.mark.parametrize("quant", [((0.05, 3), (0.05, 3), (0.1, -128)),
                                   ((0.02, -10), (0.07, 20), (0.3, -100))])
def test_squared_difference_int8(quant: tuple) -> None:
    (s1, z1), (s2, z2), (so, zo) = quant
    r = rng(15)
    a = r.integers(-128, 128, (3, 8)).astype(np.int8)
    b = r.integers(-128, 128, (8,)).astype(np.int8)
    got = check_exact("SQUARED_DIFFERENCE", [q((3, 8), s1, z1), q((8,), s2, z2)],
                      q((3, 8), so, zo), [a, b])
    assert len(np.unique(got)) > 10  # not all saturated


@pytest.mark.parametrize("quant", [((0.05, 3), (0.01, 0), (0.04, -5)),
                                   ((0.1, -20), (0.004, 50), (0.03, 10))])
def test_prelu_int8(quant: tuple) -> None:
    (s1, z1), (sa, za), (so, zo) = quant
    x = rng(16).integers(-128, 128, (1, 4, 4, 3)).astype(np.int8)
    alpha = const(np.array([[[-60, 25, 127]]], np.int8), "int8", scale=sa, zero_point=za)
    got = check_exact("PRELU", [q((1, 4, 4, 3), s1, z1), alpha], q((1, 4, 4, 3), so, zo), [x])
    assert len(np.unique(got)) > 10


@pytest.mark.parametrize("zp", [0, -20])
def test_l2_normalization_int8(zp: int) -> None:
    """Rows of every size of sum: all-zero-point (sum 0), one step away (sum 1), small and
    large sums; TFLite Micro's fixed-point inverse square root, bit for bit."""
    x = rng(17).integers(-128, 128, (6, 16)).astype(np.int64)
    x[0] = zp
    x[1] = zp
    x[1, 3] = zp + 1
    x[2] = zp + rng(18).integers(-2, 3, 16)
    x[3] = np.where(np.arange(16) % 2, 127, -128)
    got = check_exact("L2_NORMALIZATION", [q((6, 16), 0.05, zp)], q((6, 16), 1 / 128, 0),
                      [x.astype(np.int8)], fused_activation_function="NONE")
    assert len(np.unique(got)) > 10
