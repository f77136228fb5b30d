"""One cortex-m4 image of several of issue 19's new TFLite builtins (comparisons,
SELECT_V2, int8 tables, gathers, ARG_MAX, integer RESIZE_BILINEAR, int8 CUMSUM,
BATCH_MATMUL, SQUARED_DIFFERENCE, RSQRT and L2_NORMALIZATION, float math), run
under QEMU against TFLite Micro: integer and bool outputs exact, float ones within
numpy.isclose(rtol=1e-5, atol=1e-6) (minirt's own exp / sin)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import test_tflite_more_batch  # noqa: F401  (their OPTIONS_TABLE entries)
import test_tflite_more_math  # noqa: F401
import test_tflite_more_ops  # noqa: F401
import test_tflite_more_shapes  # noqa: F401
from quant.tflm_oracle import const, q
from test_tflite_more_ops import rng
from tflite_models import Tensor, run_tflm, single_op_model

from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.testing.difftest import run_side_by_side


def _i8(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return rng(seed).integers(-128, 128, shape).astype(np.int8)


def _cases() -> list[tuple[bytes, list[np.ndarray]]]:
    f = rng(60).standard_normal((3, 5)).astype(np.float32)
    return [
        (single_op_model("GREATER", [q((4, 6), 0.05, -10), q((4, 6), 0.031, 7)],
                         [Tensor((4, 6), "bool")]), [_i8((4, 6), 61), _i8((4, 6), 62)]),
        (single_op_model("SELECT_V2", [Tensor((2, 1, 4), "bool"), q((3, 4), 0.1, 0),
                                       q((2, 3, 1), 0.1, 0)], [q((2, 3, 4), 0.1, 0)]),
         [rng(63).integers(0, 2, (2, 1, 4)).astype(bool), _i8((3, 4), 64), _i8((2, 3, 1), 65)]),
        (single_op_model("ABS", [q((16, 16), 0.05, 10)], [q((16, 16), 0.03, -128)]),
         [np.arange(-128, 128, dtype=np.int8).reshape(16, 16)]),
        (single_op_model("GATHER", [q((4, 5, 6), 0.1, 0), Tensor((2, 3), "int32")],
                         [q((4, 2, 3, 6), 0.1, 0)], axis=1),
         [_i8((4, 5, 6), 66), rng(67).integers(0, 5, (2, 3)).astype(np.int32)]),
        (single_op_model("ARG_MAX", [q((4, 5, 6), 0.1, 0), const([1])],
                         [Tensor((4, 6), "int32")], output_type=2),
         [rng(68).integers(-3, 3, (4, 5, 6)).astype(np.int8)]),
        (single_op_model("RESIZE_BILINEAR", [q((1, 3, 4, 2), 0.1, 0), const([7, 5])],
                         [q((1, 7, 5, 2), 0.1, 0)], half_pixel_centers=True),
         [_i8((1, 3, 4, 2), 69)]),
        (single_op_model("EXP", [Tensor((3, 5), "float32")], [Tensor((3, 5), "float32")]), [f]),
        (single_op_model("LOG_SOFTMAX", [Tensor((3, 5), "float32")],
                         [Tensor((3, 5), "float32")]), [f]),
        (single_op_model("CUMSUM", [q((3, 6), 0.02, -100), const([1])], [q((3, 6), 0.3, 60)],
                         exclusive=True), [_i8((3, 6), 70)]),
        (single_op_model("BATCH_MATMUL", [q((2, 3, 6), 0.05, 3), q((6, 4), 0.02, -7)],
                         [q((2, 3, 4), 0.1, -10)]), [_i8((2, 3, 6), 71), _i8((6, 4), 72)]),
        (single_op_model("SQUARED_DIFFERENCE", [q((3, 8), 0.02, -10), q((8,), 0.07, 20)],
                         [q((3, 8), 0.3, -100)]), [_i8((3, 8), 73), _i8((8,), 74)]),
        (single_op_model("RSQRT", [q((100,), 0.05, -128)], [q((100,), 0.02, -100)]),
         [np.arange(-128, -28, dtype=np.int64).astype(np.int8)]),
        (single_op_model("L2_NORMALIZATION", [q((6, 16), 0.05, -20)], [q((6, 16), 1 / 128, 0)],
                         fused_activation_function="NONE"), [_i8((6, 16), 75)]),
        (single_op_model("FLOOR_MOD", [Tensor((3, 5), "float32"), Tensor((5,), "float32")],
                         [Tensor((3, 5), "float32")]),
         [f * 4, np.array([-3.5, -2.0, 0.5, 2.0, 3.5], np.float32)]),
    ]


@pytest.mark.parametrize("board", ["cortex-m4"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    cases = _cases()
    graphs = [import_model(read_model(model)) for model, _ in cases]
    inputs = [x for _, xs in cases for x in xs]
    outputs = run_side_by_side(graphs, inputs, board, tmp_path / "fw")
    assert len(outputs) == len(cases)
    for k, ((model, xs), got) in enumerate(zip(cases, outputs, strict=True)):
        want = run_tflm(model, xs)[0][0]
        if want.dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(k))
        else:
            assert got.dtype == want.dtype and np.array_equal(got, want), k
