"""REDUCE_MAX, REDUCE_MIN, SLICE, REVERSE_V2, ROUND, SHAPE, BROADCAST_ARGS,
EMBEDDING_LOOKUP, DYNAMIC_UPDATE_SLICE and L2_POOL_2D against TFLite Micro's interpreter:
all but L2_POOL_2D move, pick or round stored values, so their results must match
exactly."""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import const, q
from test_tflite_more_ops import check_close, check_exact, rng
from tflite_models import OPTIONS_TABLE, Tensor

OPTIONS_TABLE.update({
    "REDUCE_MAX": "ReducerOptions", "REDUCE_MIN": "ReducerOptions", "SLICE": None,
    "REVERSE_V2": None, "ROUND": None, "SHAPE": "ShapeOptions", "BROADCAST_ARGS": None,
    "EMBEDDING_LOOKUP": None, "DYNAMIC_UPDATE_SLICE": None, "L2_POOL_2D": "Pool2DOptions",
    "REDUCE_ALL": "ReducerOptions",
})


@pytest.mark.parametrize("opcode", ["REDUCE_MAX", "REDUCE_MIN"])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reduce_extremes(opcode: str, keep_dims: bool) -> None:
    x = rng(70).integers(-128, 128, (3, 4, 5)).astype(np.int8)
    out = (3, 1, 1) if keep_dims else (3,)
    check_exact(opcode, [q((3, 4, 5), 0.1, 3), const([1, -1])], q(out, 0.1, 3), [x],
                keep_dims=keep_dims)
    f = rng(71).standard_normal((3, 4, 5)).astype(np.float32)
    check_exact(opcode, [Tensor((3, 4, 5), "float32"), const([0])],
                Tensor((1, 4, 5) if keep_dims else (4, 5), "float32"), [f],
                keep_dims=keep_dims)


def test_slice_with_minus_one_size() -> None:
    x = rng(72).integers(-128, 128, (4, 5, 6)).astype(np.int8)
    check_exact("SLICE", [q((4, 5, 6), 0.1, 0), const([1, 0, 2]), const([2, -1, 3])],
                q((2, 5, 3), 0.1, 0), [x])


def test_reverse_v2() -> None:
    x = rng(73).standard_normal((3, 4)).astype(np.float32)
    got = check_exact("REVERSE_V2", [Tensor((3, 4), "float32"), const([1])],
                      Tensor((3, 4), "float32"), [x])
    np.testing.assert_array_equal(got, x[:, ::-1])


def test_round_ties_to_even() -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.7], np.float32)
    got = check_exact("ROUND", [Tensor((8,), "float32")], Tensor((8,), "float32"), [x])
    np.testing.assert_array_equal(got, np.round(x))


def test_shape() -> None:
    check_exact("SHAPE", [Tensor((2, 7, 3), "float32"), ], Tensor((3,), "int32"),
                [np.zeros((2, 7, 3), np.float32)], out_type=2)


def test_broadcast_args() -> None:
    check_exact("BROADCAST_ARGS", [Tensor((3,), "int32"), Tensor((2,), "int32")],
                Tensor((3,), "int32"), [np.array([5, 1, 4], np.int32),
                                        np.array([3, 1], np.int32)])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_embedding_lookup(dtype: str) -> None:
    table = rng(74).integers(-100, 100, (6, 4)).astype(dtype)
    quant = {"scale": 0.1, "zero_point": 0} if dtype == "int8" else {}
    check_exact("EMBEDDING_LOOKUP", [Tensor((5,), "int32"), const(table, dtype, **quant)],
                Tensor((5, 4), dtype, **quant), [np.array([5, 0, 2, 2, 1], np.int32)])


@pytest.mark.parametrize("start", [[1, 2], [3, 4], [-2, 1]])
def test_dynamic_update_slice_clamps(start: list) -> None:
    x = rng(75).standard_normal((4, 5)).astype(np.float32)
    u = rng(76).standard_normal((2, 2)).astype(np.float32)
    check_exact("DYNAMIC_UPDATE_SLICE", [Tensor((4, 5), "float32"), Tensor((2, 2), "float32"),
                                         Tensor((2,), "int32")], Tensor((4, 5), "float32"),
                [x, u, np.array(start, np.int32)])


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_l2_pool_2d_float(padding: str) -> None:
    """float32 (numpy.isclose rtol=1e-5, atol=1e-6: minirt's own sqrt and sum order)."""
    x = rng(77).standard_normal((1, 5, 6, 2)).astype(np.float32)
    out = (1, 3, 3, 2) if padding == "SAME" else (1, 2, 2, 2)
    check_close("L2_POOL_2D", [Tensor((1, 5, 6, 2), "float32")], Tensor(out, "float32"), [x],
                padding=padding, stride_h=2, stride_w=2, filter_height=3, filter_width=3,
                fused_activation_function="RELU6")


@pytest.mark.parametrize("keep_dims", [False, True])
def test_reduce_all(keep_dims: bool) -> None:
    x = rng(78).random((3, 4, 2)) > 0.2
    x[0] = True  # one all-true row
    check_exact("REDUCE_ALL", [Tensor((3, 4, 2), "bool"), const([1, 2])],
                Tensor((3, 1, 1) if keep_dims else (3,), "bool"), [x], keep_dims=keep_dims)
