"""SVDF against TFLite Micro's interpreter, first inference (the state at its initial
value: zero, or an int8 state's zero point).

float32 (numpy.isclose: float32 sums in another order), and int8 with an int16 or an
int8 state, exact: ranks 1 to 3, several memory sizes, and
states whose scale is small enough that the new activations clamp (and, with an int8
state's zero point, wrap as TFLite Micro's store does).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from recurrent_models import (  # noqa: E402
    SvdfCase,
    minirt_first_inference,
    svdf_model,
    tflm_first_inference,
)
from tflite_models import Tensor  # noqa: E402

from toolchain.frontend.tflite.errors import TFLiteError  # noqa: E402
from toolchain.frontend.tflite.importer import import_model  # noqa: E402
from toolchain.frontend.tflite.reader import read_model  # noqa: E402

CASES = [
    SvdfCase("float", "float32", 1, 6, 4, 1, 3),
    SvdfCase("float", "float32", 2, 5, 3, 2, 4, activation="NONE", seed=1),
    SvdfCase("float", "float32", 3, 4, 2, 3, 1, activation="RELU6", seed=2),
    SvdfCase("int8", "int16", 1, 8, 4, 1, 8),
    SvdfCase("int8", "int16", 2, 6, 3, 2, 5, state_scale=0.001, seed=1),
    SvdfCase("int8", "int16", 3, 5, 5, 1, 1, seed=2),
    SvdfCase("int8", "int8", 1, 8, 4, 1, 8, state_scale=0.5),
    SvdfCase("int8", "int8", 2, 7, 3, 2, 4, state_scale=0.05, seed=1),
    SvdfCase("int8", "int8", 2, 4, 4, 1, 2, activation="NONE", state_scale=2.0, seed=2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_svdf_first_inference_matches_tflite_micro(case: SvdfCase) -> None:
    model, x = svdf_model(case)
    want = tflm_first_inference(model, x)
    got = minirt_first_inference(model, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    if case.kind == "float":
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6), np.abs(got - want).max()
    else:
        assert np.array_equal(got, want), (got, want)


def test_int8_outputs_are_not_all_clamped() -> None:
    """The int8 cases' outputs spread over the int8 range rather than sit at its ends."""
    model, x = svdf_model(CASES[3])
    got = minirt_first_inference(model, x)
    assert len(np.unique(got)) > got.size // 2


@pytest.mark.parametrize("kind, state", [("float", "float32"), ("int8", "int16")])
def test_svdf_without_bias_is_one_clear_line(kind: str, state: str) -> None:
    """TFLite Micro's SVDF reads its bias unconditionally (a missing one crashes its
    interpreter): refused by name."""
    model, _ = svdf_model(SvdfCase(kind, state, 1, 4, 2, 1, 2, bias=False))
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "svdf.tflite")
    message = str(e.value)
    assert "svdf.tflite" in message and "SVDF" in message and "needs its bias" in message
    assert len(message.splitlines()) == 1, message


BROKEN = [
    ({4: Tensor((1, 10), "int16", scale=0.01, zero_point=0, is_variable=True)},
     "the state has shape [1, 10]; [1, 32] is expected"),
    ({4: Tensor((1, 32), "int16", scale=0.01, zero_point=0)}, "must be a variable tensor"),
    ({2: Tensor((4, 8), "int8", scale=0.002, zero_point=0, data=np.ones((4, 8), np.int8))},
     "the time weights must be a constant INT16 tensor"),
    ({3: Tensor((4,), "int32", scale=0.5, zero_point=0, data=np.ones(4, np.int32))},
     "is not the state's scale times the time weights'"),
]


@pytest.mark.parametrize("replace, words", BROKEN, ids=[w for _, w in BROKEN])
def test_a_broken_svdf_is_one_clear_line(replace: dict, words: str) -> None:
    model, _ = svdf_model(SvdfCase("int8", "int16", 1, 6, 4, 1, 8), replace=replace)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "svdf.tflite")
    message = str(e.value)
    assert message.startswith("svdf.tflite") and words in message, message
    assert len(message.splitlines()) == 1, message
