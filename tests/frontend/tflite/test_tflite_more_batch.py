"""TFLite SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (float32 and int8: exact) and float32
BATCH_MATMUL (numpy.isclose rtol=1e-5, atol=1e-6: TFLite sums the K products in another
order) against TFLite Micro's interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import const, q
from test_tflite_more_ops import check_close, check_exact, rng
from tflite_models import OPTIONS_TABLE, Tensor, single_op_model

from toolchain.frontend.tflite import import_model, read_model

OPTIONS_TABLE.update({"SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
                      "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
                      "BATCH_MATMUL": "BatchMatMulOptions"})


@pytest.mark.parametrize("pads", [[[0, 0], [0, 0]], [[1, 1], [2, 1]]])
def test_space_to_batch_nd_int8(pads: list) -> None:
    x = rng(50).integers(-128, 128, (2, 4, 3, 2)).astype(np.int8)
    h, w = 4 + sum(pads[0]), 3 + sum(pads[1])
    check_exact("SPACE_TO_BATCH_ND", [q((2, 4, 3, 2), 0.1, 0), const([2, 3]), const(pads)],
                q((12, h // 2, w // 3, 2), 0.1, 0), [x])


def test_space_to_batch_nd_padding_an_offset_int8_is_refused() -> None:
    model = single_op_model("SPACE_TO_BATCH_ND", [q((1, 2, 2, 1), 0.1, 7), const([2, 2]),
                                                  const([[1, 1], [0, 0]])],
                            [q((4, 2, 1, 1), 0.1, 7)])
    with pytest.raises(Exception, match="never sets"):
        import_model(read_model(model))


@pytest.mark.parametrize("crops", [[[0, 0], [0, 0]], [[1, 0], [0, 2]]])
def test_batch_to_space_nd(crops: list) -> None:
    x = rng(51).standard_normal((12, 2, 3, 2)).astype(np.float32)
    h, w = 2 * 2 - sum(crops[0]), 3 * 3 - sum(crops[1])
    check_exact("BATCH_TO_SPACE_ND", [Tensor((12, 2, 3, 2), "float32"), const([2, 3]),
                                      const(crops)], Tensor((2, h, w, 2), "float32"), [x])


@pytest.mark.parametrize("adj", [(False, False), (True, False), (False, True)])
def test_batch_matmul_broadcast(adj: tuple) -> None:
    adj_x, adj_y = adj
    sa = (2, 1, 5, 4) if adj_x else (2, 1, 4, 5)
    sb = (3, 6, 5) if adj_y else (3, 5, 6)
    a = rng(52).standard_normal(sa).astype(np.float32)
    b = rng(53).standard_normal(sb).astype(np.float32)
    check_close("BATCH_MATMUL", [Tensor(sa, "float32"), Tensor(sb, "float32")],
                Tensor((2, 3, 4, 6), "float32"), [a, b], adj_x=adj_x, adj_y=adj_y)
