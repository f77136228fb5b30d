"""UNIDIRECTIONAL_SEQUENCE_LSTM against TFLite Micro's interpreter, first inference.

Small seeded models (tests/recurrent_models.py) in every type TFLite Micro's kernel
takes: float32 (numpy.isclose: the gates' sums and exp / tanh are float32 in another
order and another libm), int8 with an int16 cell state and 16x8, exact. The cell scales
cover each path of the cell state's tanh input step (multiplier 3 << shift, and the
rounding right shift below 2**-12), with and without cell_clip; both time layouts.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from recurrent_models import (  # noqa: E402
    LstmCase,
    lstm_model,
    minirt_first_inference,
    tflm_first_inference,
)
from tflite_models import Tensor  # noqa: E402

from toolchain.frontend.tflite.errors import TFLiteError  # noqa: E402
from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402

CASES = [
    LstmCase("float", 1, 5, 3, 4),
    LstmCase("float", 2, 3, 4, 3, time_major=True, cell_clip=0.1, seed=1),
    LstmCase("float", 3, 1, 2, 5, seed=2),
    LstmCase("int8", 1, 6, 5, 4),
    LstmCase("int8", 2, 4, 3, 6, time_major=True, hidden_zp=-3, seed=1),
    LstmCase("int8", 3, 3, 7, 5, cell_scale=2.0 ** -12, cell_clip=0.5, hidden_zp=5, seed=2),
    LstmCase("int8", 2, 5, 4, 4, cell_scale=2.0 ** -9, seed=3),
    LstmCase("int8", 1, 4, 4, 3, cell_scale=2.0 ** -14, cell_clip=0.3, time_major=True,
             seed=4),
    LstmCase("int8", 1, 3, 3, 3, cell_scale=2.0 ** -15, cell_clip=10.0, hidden_zp=-128,
             seed=5),
    LstmCase("int16", 1, 5, 4, 4),
    LstmCase("int16", 2, 3, 3, 5, time_major=True, cell_scale=2.0 ** -12, cell_clip=0.4,
             seed=1),
    LstmCase("int16", 2, 4, 6, 3, cell_scale=2.0 ** -13, seed=2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lstm_first_inference_matches_tflite_micro(case: LstmCase) -> None:
    model, x = lstm_model(case)
    want = tflm_first_inference(model, x)
    got = minirt_first_inference(model, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    if case.kind == "float":
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6), np.abs(got - want).max()
    else:
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{len(bad)} of {want.size} differ, first at {bad[0]}: "
                               f"TFLite Micro {want[tuple(bad[0])]}, ours {got[tuple(bad[0])]}")


def test_int8_outputs_are_not_all_saturated() -> None:
    """The int8 cases are not all in the sigmoid's flat tails: outputs spread."""
    model, x = lstm_model(CASES[3])
    got = minirt_first_inference(model, x)
    assert len(np.unique(got)) > got.size // 3


@pytest.mark.parametrize("extra, words", [
    (dict(peephole=True), "peephole weights (inputs 9, 10, 11) are not supported"),
    (dict(projection=True), "projection weights (inputs 16) are not supported"),
    (dict(layer_norm=True), "layer normalisation coefficients"),
    (dict(variable_state=False), "must be a variable tensor"),
])
def test_what_tflite_micro_refuses_is_one_clear_line(extra: dict, words: str) -> None:
    model, _ = lstm_model(LstmCase("float", 1, 2, 2, 2), **extra)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "lstm.tflite")
    message = str(e.value)
    assert "lstm.tflite" in message and "UNIDIRECTIONAL_SEQUENCE_LSTM" in message
    assert words in message and len(message.splitlines()) == 1, message


BROKEN = [
    ({2: Tensor((3, 5), "float32", data=np.zeros((3, 5), np.float32))},
     "input 2 (weights) has shape [3, 5]; [2, 2] is expected"),
    ({2: Tensor((2, 2), "float32")}, "must be a constant FLOAT32 tensor"),
    ({13: None}, "input 13 is missing"),
    ({18: Tensor((1, 3), "float32", is_variable=True)}, "(a state) has"),
]


@pytest.mark.parametrize("replace, words", BROKEN, ids=[w for _, w in BROKEN])
def test_a_broken_lstm_is_one_clear_line(replace: dict, words: str) -> None:
    model, _ = lstm_model(LstmCase("float", 1, 2, 2, 2), replace=replace)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "lstm.tflite")
    message = str(e.value)
    assert message.startswith("lstm.tflite") and words in message, message
    assert len(message.splitlines()) == 1, message


def test_int8_lstm_with_float_weights_is_one_clear_line() -> None:
    model, _ = lstm_model(LstmCase("int8", 1, 2, 2, 3),
                          replace={6: Tensor((3, 3), "float32",
                                             data=np.zeros((3, 3), np.float32))})
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "lstm.tflite")
    assert "input 6 (weights) must be a constant INT8 tensor" in str(e.value)
    assert len(str(e.value).splitlines()) == 1
