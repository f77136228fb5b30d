"""TFLite SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (float32 and int8: exact) and float32
BATCH_MATMUL (numpy.isclose rtol=1e-5, atol=1e-6: TFLite sums the K products in another
order) against TFLite Micro's interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import const, q
from test_tflite_more_ops import check_close, check_exact, rng, run_both
from tflite_models import OPTIONS_TABLE, Tensor

OPTIONS_TABLE.update({"SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
                      "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
                      "BATCH_MATMUL": "BatchMatMulOptions"})


def space_to_batch(x: np.ndarray, block: tuple[int, int], pads: list, value: object
                   ) -> np.ndarray:
    """numpy's SPACE_TO_BATCH_ND (NHWC): pad, cut into blocks, block offsets first."""
    bh, bw = block
    x = np.pad(x, [[0, 0], *pads, [0, 0]], constant_values=value)
    n, h, w, c = x.shape
    y = x.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return y.reshape(bh * bw * n, h // bh, w // bw, c)


def test_space_to_batch_nd_int8() -> None:
    x = rng(50).integers(-128, 128, (2, 4, 3, 2)).astype(np.int8)
    check_exact("SPACE_TO_BATCH_ND", [q((2, 4, 3, 2), 0.1, 7), const([2, 3]),
                                      const([[0, 0], [0, 0]])], q((12, 2, 1, 2), 0.1, 7), [x])


def test_space_to_batch_nd_padding_is_the_zero_point() -> None:
    """TFLite Micro's padding bytes are uninitialized memory (it memsets an output_offset
    it never sets), so only the moved values are compared with it; the padding must be
    the output's zero point, TFLite's meaning."""
    x = rng(50).integers(-128, 128, (2, 4, 3, 2)).astype(np.int8)
    pads = [[1, 1], [2, 1]]
    want, got = run_both("SPACE_TO_BATCH_ND", [q((2, 4, 3, 2), 0.1, 7), const([2, 3]),
                                               const(pads)], q((12, 3, 2, 2), 0.1, 7), [x])
    moved = space_to_batch(np.ones(x.shape, bool), (2, 3), pads, False)
    np.testing.assert_array_equal(got[moved], want[moved])
    np.testing.assert_array_equal(got, space_to_batch(x, (2, 3), pads, 7))


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


@pytest.mark.parametrize("adj", [(False, False), (True, True)])
@pytest.mark.parametrize("quant", [((0.05, 3), (0.02, -7), (0.1, -10)),
                                   ((0.01, -128), (0.03, 0), (0.2, 5))])
def test_batch_matmul_int8(adj: tuple, quant: tuple) -> None:
    adj_x, adj_y = adj
    (sa, za), (sb, zb), (so, zo) = quant
    shape_a = (2, 6, 3) if adj_x else (2, 3, 6)
    shape_b = (4, 6) if adj_y else (6, 4)
    r = rng(54)
    a = r.integers(-128, 128, shape_a).astype(np.int8)
    b = r.integers(-128, 128, shape_b).astype(np.int8)
    got = check_exact("BATCH_MATMUL", [q(shape_a, sa, za), q(shape_b, sb, zb)],
                      q((2, 3, 4), so, zo), [a, b], adj_x=adj_x, adj_y=adj_y)
    assert len(np.unique(got)) > 5
