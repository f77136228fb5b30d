"""toolchain/quant/tflm16_lut.py: the int16 LOGISTIC / TANH Prepare, the computed sigmoid
table and the numpy mirror of the kernels, against TFLite Micro on every int16 input."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Tensor
from tflm_oracle import run_single

from toolchain.quant import tflm16_lut

EVERY = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
Q15 = 2.0 ** -15


def _i16(scale: float) -> Tensor:
    return Tensor((256, 256), "int16", scale=scale, zero_point=0)


def test_the_table_is_sigmoid_of_i_over_24_in_q16() -> None:
    t = tflm16_lut.sigmoid_table()
    assert t.shape == (256,) and t[0] == 32768 and t[-1] == 65535
    assert np.all(np.diff(t) >= 0)
    # Within 1.5 of the function: the midpoint correction moves an entry by at most ~1.
    assert np.abs(t[:-1] - 65536 / (1 + np.exp(-np.arange(255) / 24))).max() < 1.5


@pytest.mark.parametrize("op, scale", [("LOGISTIC", 2.0 ** -12), ("LOGISTIC", 0.0013),
                                       ("TANH", 2.0 ** -11), ("TANH", 0.0007)])
def test_mirror_matches_tflite_micro_on_every_input(op: str, scale: float) -> None:
    p = getattr(tflm16_lut, f"{op.lower()}_params")(scale, 0, Q15, 0)
    want = run_single(op, [_i16(scale)], _i16(Q15), [EVERY])
    assert np.array_equal(tflm16_lut.lut_activation(EVERY, p, op), want)


def test_power_of_two_scales_take_the_kernels_own_multiplier() -> None:
    assert tflm16_lut.logistic_params(2.0 ** -12, 0, Q15, 0) == tflm16_lut.SigmoidLutParams(3, 0)
    assert tflm16_lut.tanh_params(2.0 ** -11, 0, Q15, 0) == tflm16_lut.SigmoidLutParams(6, 0)
    # LOGISTIC takes only shift 0 as a power of two; 2**-11 is scaled like any other.
    p = tflm16_lut.logistic_params(2.0 ** -11, 0, Q15, 0)
    assert p.left_shift > 0 and 16384 <= p.multiplier <= 32767


@pytest.mark.parametrize("args, message", [
    ((0.001, 3, Q15, 0), "zero points of 0"),
    ((0.001, 0, 0.001, 0), "output scale must be 2**-15"),
    ((4.0, 0, Q15, 0), "too large"),
])
def test_what_tflite_micro_refuses_is_refused(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("*", r"\*")):
        tflm16_lut.logistic_params(*args)
