"""SOFTMAX int8 -> int16 (keyword_scrambled's last layers) against TFLite Micro: the int8
kernel's fixed point with the int16 output's exponent and offset, exact."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Tensor, single_op_model
from tflm_oracle import assert_exact, q, rand_int8, run

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph


@pytest.mark.parametrize("scale, beta, shape", [(0.1, 1.0, (3, 10)), (0.02, 2.0, (2, 33)),
                                                (0.5, 1.0, (4, 2))])
def test_int8_to_int16_softmax_is_exact(scale: float, beta: float, shape: tuple) -> None:
    x = rand_int8(np.random.default_rng(len(shape) + shape[1]), shape)
    model = single_op_model("SOFTMAX", [q(shape, scale, 3)],
                            [Tensor(shape, "int16", scale=1 / 65536, zero_point=-32768)],
                            beta=beta)
    want = run(model, [x])
    got = run_graph(import_model(read_model(model)), [x])[0]
    assert_exact(want, got, f"SOFTMAX int8 -> int16, scale {scale}, beta {beta}")


def test_other_int16_output_quantization_is_one_clear_line() -> None:
    model = single_op_model("SOFTMAX", [q((1, 4), 0.1, 0)],
                            [Tensor((1, 4), "int16", scale=1 / 32768, zero_point=0)], beta=1.0)
    with pytest.raises(TFLiteError) as e:
        import_model(read_model(model), "m.tflite")
    assert "scale 1/65536 and zero point -32768" in str(e.value)
    assert len(str(e.value).splitlines()) == 1
