"""toolchain/quant/tflm16_softmax.py: the int16 SOFTMAX tables, Prepare and numpy mirror,
against TFLite Micro."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Tensor
from tflm_oracle import run_single

from toolchain.quant import tflm16_softmax

Q15 = 2.0 ** -15


@pytest.mark.parametrize("scale, beta", [(0.001, 1.0), (0.00002, 1.0), (0.003, 0.4)])
def test_mirror_matches_tflite_micro(scale: float, beta: float) -> None:
    x = np.random.default_rng(5).integers(-32768, 32768, (64, 50)).astype(np.int16)
    want = run_single("SOFTMAX", [Tensor(x.shape, "int16", scale=scale, zero_point=0)],
                      Tensor(x.shape, "int16", scale=Q15, zero_point=0), [x], beta=beta)
    p = tflm16_softmax.softmax_params(scale, 0, Q15, 0, beta)
    assert np.array_equal(tflm16_softmax.softmax(x, p), want)


def test_the_tables_span_their_functions() -> None:
    p = tflm16_softmax.softmax_params(0.001, 0, Q15, 0, 1.0)
    assert p.exp_lut.shape == p.reciprocal_lut.shape == (513,)
    # exp over [-10, 0] in steps of 2 / 65535: e**-10 is about 1, e**0 is 32767.
    assert 0 <= p.exp_lut[0] <= 2 and p.exp_lut[-1] == 32767
    assert np.all(np.diff(p.exp_lut) >= 0)
    # 1 / (1 + x) over [0, 1]: from 1 (32767) down to 1/2 (16384).
    assert p.reciprocal_lut[0] == 32767 and abs(p.reciprocal_lut[-1] - 16384) <= 1


def test_lookup_interpolates_between_entries() -> None:
    lut = np.arange(513, dtype=np.int64) * 128 - 32768
    v = np.array([-32768, -32705, 0, 100, 32767])
    assert np.array_equal(tflm16_softmax.lut_lookup(v, lut), v)


@pytest.mark.parametrize("args, message", [
    ((0.001, 1, Q15, 0, 1.0), "zero points of 0"),
    ((0.001, 0, 1 / 256, 0, 1.0), "scale 2"),
])
def test_what_tflite_micro_refuses_is_refused(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tflm16_softmax.softmax_params(*args)
