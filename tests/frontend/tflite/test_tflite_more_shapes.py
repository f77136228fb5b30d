"""TFLite data movement and index ops (issue 19 point 1): EXPAND_DIMS, BROADCAST_TO,
FILL, ZEROS_LIKE, PACK, UNPACK, GATHER, GATHER_ND, ARG_MAX, ARG_MIN, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, PADV2, MIRROR_PAD, CUMSUM against TFLite Micro's interpreter.

Everything but CUMSUM moves or picks stored values, so results must match exactly.
CUMSUM (float32) sums in another order than TFLite's running sum: numpy.isclose with
rtol=1e-5, atol=1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import const, q
from test_tflite_more_ops import check_close, check_exact, rng
from tflite_models import OPTIONS_TABLE, Op, Tensor, build_model, run_tflm

from toolchain.frontend.tflite import import_model, read_model
from toolchain.reference import run_graph

OPTIONS_TABLE.update({
    "EXPAND_DIMS": None, "BROADCAST_TO": None, "FILL": None, "ZEROS_LIKE": None,
    "PACK": "PackOptions", "UNPACK": "UnpackOptions", "GATHER": "GatherOptions",
    "GATHER_ND": None, "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "PADV2": None, "MIRROR_PAD": "MirrorPadOptions", "CUMSUM": "CumsumOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
})


def ints(shape: tuple[int, ...], seed: int, dtype: str = "int8") -> np.ndarray:
    return rng(seed).integers(-100, 100, shape).astype(dtype)


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_expand_dims(axis: int) -> None:
    out = [2, 3]
    out.insert(axis if axis >= 0 else len(out) + 1 + axis, 1)
    check_exact("EXPAND_DIMS", [q((2, 3), 0.1, 0), const([axis])], q(tuple(out), 0.1, 0),
                [ints((2, 3), 20)])


def test_broadcast_to_float() -> None:
    check_exact("BROADCAST_TO", [Tensor((3, 1), "float32"), const([2, 3, 4])],
                Tensor((2, 3, 4), "float32"), [rng(21).standard_normal((3, 1)).astype("f4")])


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8"])
def test_fill(dtype: str) -> None:
    check_exact("FILL", [const([2, 3]), Tensor((), dtype)], Tensor((2, 3), dtype),
                [np.array(7, dtype=dtype)])


def test_zeros_like() -> None:
    check_exact("ZEROS_LIKE", [Tensor((2, 5), "int32")], Tensor((2, 5), "int32"),
                [ints((2, 5), 22, "int32")])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_pack_int8(axis: int) -> None:
    out = [2, 3]
    out.insert(axis, 3)
    xs = [ints((2, 3), 23 + i) for i in range(3)]
    check_exact("PACK", [q((2, 3), 0.1, 0) for _ in xs], q(tuple(out), 0.1, 0), xs,
                axis=axis, values_count=3)


@pytest.mark.parametrize("axis", [0, -1])
def test_unpack(axis: int) -> None:
    x = rng(26).standard_normal((3, 4)).astype(np.float32)
    n = x.shape[axis]
    rest = (4,) if axis == 0 else (3,)
    inp, outs = Tensor((3, 4), "float32"), [Tensor(rest, "float32") for _ in range(n)]
    model = build_model([Op("UNPACK", [inp], outs, {"num": n, "axis": axis})], [inp], outs)
    want, _ = run_tflm(model, [x])
    got = run_graph(import_model(read_model(model)), [x])
    assert len(got) == n
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_int8(axis: int) -> None:
    shape = (4, 5, 6)
    idx = rng(27).integers(0, shape[axis], (2, 3)).astype(np.int32)
    out = shape[:axis] + (2, 3) + shape[axis + 1:]
    check_exact("GATHER", [q(shape, 0.1, 0), Tensor((2, 3), "int32")], q(out, 0.1, 0),
                [ints(shape, 28), idx], axis=axis)


def test_gather_float_constant_indices() -> None:
    check_exact("GATHER", [Tensor((5, 3), "float32"), const([4, 0, 4])],
                Tensor((3, 3), "float32"), [rng(29).standard_normal((5, 3)).astype("f4")],
                axis=0)


@pytest.mark.parametrize("depth", [1, 2])
def test_gather_nd(depth: int) -> None:
    shape = (4, 3, 5)
    idx = np.stack([rng(30 + d).integers(0, shape[d], (2, 3)) for d in range(depth)],
                   -1).astype(np.int32)
    out = (2, 3) + shape[depth:]
    check_exact("GATHER_ND", [q(shape, 0.1, 0), Tensor(idx.shape, "int32")], q(out, 0.1, 0),
                [ints(shape, 32), idx])


@pytest.mark.parametrize("opcode", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_int8_ties_pick_the_first(opcode: str, axis: int) -> None:
    x = rng(33).integers(-3, 3, (4, 5, 6)).astype(np.int8)  # many ties
    out = tuple(s for d, s in enumerate(x.shape) if d != axis % 3)
    check_exact(opcode, [q(x.shape, 0.1, 0), const([axis])], Tensor(out, "int32"), [x],
                output_type=2)


@pytest.mark.parametrize("opcode", ["ARG_MAX", "ARG_MIN"])
def test_arg_float(opcode: str) -> None:
    x = rng(34).standard_normal((3, 7)).astype(np.float32)
    check_exact(opcode, [Tensor((3, 7), "float32"), const([1])], Tensor((3,), "int32"), [x],
                output_type=2)


def test_depth_to_space_and_back() -> None:
    x = ints((1, 2, 3, 8), 35)
    check_exact("DEPTH_TO_SPACE", [q((1, 2, 3, 8), 0.1, 0)], q((1, 4, 6, 2), 0.1, 0), [x],
                block_size=2)
    y = ints((2, 4, 6, 3), 36)
    check_exact("SPACE_TO_DEPTH", [q((2, 4, 6, 3), 0.1, 0)], q((2, 2, 3, 12), 0.1, 0), [y],
                block_size=2)


@pytest.mark.parametrize("value", [None, -5])
def test_padv2_int8(value: int | None) -> None:
    x = ints((2, 3), 37)
    inputs = [q((2, 3), 0.1, 4), const([[1, 0], [2, 3]])]
    if value is not None:
        inputs.append(const(np.array([value], np.int8), "int8", scale=0.1, zero_point=4))
    check_exact("PADV2", inputs, q((3, 8), 0.1, 4), [x])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(mode: str) -> None:
    x = rng(38).standard_normal((3, 4)).astype(np.float32)
    mode_id = {"REFLECT": 0, "SYMMETRIC": 1}[mode]
    got = check_exact("MIRROR_PAD", [Tensor((3, 4), "float32"), const([[2, 1], [1, 2]])],
                      Tensor((6, 7), "float32"), [x], mode=mode_id)
    np.testing.assert_array_equal(got, np.pad(x, [[2, 1], [1, 2]], mode.lower()))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(exclusive: bool, reverse: bool) -> None:
    x = rng(39).standard_normal((3, 6)).astype(np.float32)
    check_close("CUMSUM", [Tensor((3, 6), "float32"), const([1])], Tensor((3, 6), "float32"),
                [x], exclusive=exclusive, reverse=reverse)


# ------------------------------------------------------------------ resizing

RESIZE_MODES = [(False, False), (True, False), (False, True)]  # (align_corners, half_pixel)


@pytest.mark.parametrize("modes", RESIZE_MODES)
@pytest.mark.parametrize("size", [(7, 5), (2, 3), (1, 9)])
def test_resize_nearest_neighbor_int8(modes: tuple, size: tuple) -> None:
    align, half = modes
    x = ints((2, 3, 4, 2), 40)
    check_exact("RESIZE_NEAREST_NEIGHBOR", [q((2, 3, 4, 2), 0.1, 0), const(list(size))],
                q((2, *size, 2), 0.1, 0), [x], align_corners=align, half_pixel_centers=half)


@pytest.mark.parametrize("modes", RESIZE_MODES)
@pytest.mark.parametrize("size", [(7, 5), (2, 3), (1, 9)])
def test_resize_bilinear_int8(modes: tuple, size: tuple) -> None:
    align, half = modes
    x = rng(41).integers(-128, 128, (2, 3, 4, 2)).astype(np.int8)
    check_exact("RESIZE_BILINEAR", [q((2, 3, 4, 2), 0.1, 0), const(list(size))],
                q((2, *size, 2), 0.1, 0), [x], align_corners=align, half_pixel_centers=half)


@pytest.mark.parametrize("modes", RESIZE_MODES)
def test_resize_float(modes: tuple) -> None:
    align, half = modes
    x = rng(42).standard_normal((1, 3, 4, 2)).astype(np.float32)
    for opcode in ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"):
        check_close(opcode, [Tensor((1, 3, 4, 2), "float32"), const([7, 6])],
                    Tensor((1, 7, 6, 2), "float32"), [x], align_corners=align,
                    half_pixel_centers=half)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("quant", [((0.05, 3), (0.2, -10)), ((0.02, -100), (0.3, 60))])
def test_cumsum_int8(exclusive: bool, reverse: bool, quant: tuple) -> None:
    """TFLite Micro's fixed-point running sum, including its start value (the input
    zero point, scaled once more)."""
    (s1, z1), (s2, z2) = quant
    x = rng(43).integers(-128, 128, (3, 6)).astype(np.int8)
    got = check_exact("CUMSUM", [q((3, 6), s1, z1), const([1])], q((3, 6), s2, z2), [x],
                      exclusive=exclusive, reverse=reverse)
    assert len(np.unique(got)) > 5
