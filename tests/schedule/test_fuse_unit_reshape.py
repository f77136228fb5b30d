"""A Conv1D as TFLite's converter writes it (RESHAPE to [1, 1, w, c], CONV_2D 1xK, RESHAPE
back, a PAD between layers): the reshapes only add or drop unit dims, so fusion reads
through them even where the convolution's load is padded (schedule/fuse.py), and no
reshape is copied in RAM; where the dropped dim is not always 0 (a 3x3 window over a
map one row high) the reshape stays a dispatch. Bit-exact with TFLite Micro."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, int8_layer_op, run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def _i32(values: list) -> Tensor:
    a = np.asarray(values, dtype=np.int32)
    return Tensor(a.shape, "int32", data=a)


def _like(t: Tensor, shape: tuple[int, ...], name: str) -> Tensor:
    return Tensor(shape, "int8", scale=t.scale, zero_point=t.zero_point, name=name)


def _conv1d_model(tmp_path: Path) -> tuple[Path, tuple[int, ...]]:
    """[1, 21, 10] -> conv 1x3 stride 2 SAME -> 12 channels -> PAD 2 each side ->
    conv 1x5 dilation 2 VALID -> 7 channels, with the converter's reshapes between."""
    rng = np.random.default_rng(5)
    c1, x1, y1 = int8_layer_op(rng, "conv", 1, 21, 10, 12, 1, 3, stride=2, name="c1")
    x = _like(x1, (1, 21, 10), "x")
    y1_3d = _like(y1, (1, 11, 12), "y1_3d")
    padded = _like(y1, (1, 15, 12), "padded")
    c2, x2, y2 = int8_layer_op(rng, "conv", 1, 15, 12, 7, 1, 5, dilation=2,
                               padding="VALID", name="c2",
                               in_scale=float(y1.scale), in_zp=int(y1.zero_point))
    ops = [Op("RESHAPE", [x, _i32([1, 1, 21, 10])], [x1], {"new_shape": [1, 1, 21, 10]}),
           c1,
           Op("RESHAPE", [y1, _i32([1, 11, 12])], [y1_3d], {"new_shape": [1, 11, 12]}),
           Op("PAD", [y1_3d, _i32([[0, 0], [2, 2], [0, 0]])], [padded]),
           Op("RESHAPE", [padded, _i32([1, 1, 15, 12])], [x2],
              {"new_shape": [1, 1, 15, 12]}),
           c2]
    path = tmp_path / "conv1d.tflite"
    path.write_bytes(build_model(ops, [x], [y2]))
    return path, (1, 21, 10)


def _row_window_model(tmp_path: Path) -> tuple[Path, tuple[int, ...]]:
    """[1, 5, 8] reshaped to [1, 1, 5, 8] under a 3x3 SAME window: its rows -1 and 1
    are padding, so the reshape's dropped dim is not always 0."""
    rng = np.random.default_rng(6)
    conv, x1, y = int8_layer_op(rng, "conv", 1, 5, 8, 6, 3, 3, name="c")
    x = _like(x1, (1, 5, 8), "x")
    ops = [Op("RESHAPE", [x, _i32([1, 1, 5, 8])], [x1], {"new_shape": [1, 1, 5, 8]}), conv]
    path = tmp_path / "row_window.tflite"
    path.write_bytes(build_model(ops, [x], [y]))
    return path, (1, 5, 8)


def _kernels(path: Path, board: str) -> list[Kernel]:
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board(board))
    return [s.kernel for s in program.steps if isinstance(s.kernel, Kernel)]


def test_conv1d_reshapes_and_pad_fuse_into_the_convolutions(tmp_path: Path) -> None:
    path, _ = _conv1d_model(tmp_path)
    for board in ("cortex-m4", "x86-64"):
        names = [k.name for k in _kernels(path, board)]
        # A padded copy of an input may stay (a staged window); a reshape alone may not.
        assert not any(n.endswith("_reshape") for n in names), names
        assert sum("convolution" in n for n in names) == 2, names


def test_a_padded_unit_dim_that_moves_keeps_its_reshape(tmp_path: Path) -> None:
    path, _ = _row_window_model(tmp_path)
    names = [k.name for k in _kernels(path, "cortex-m4")]
    assert names[0].endswith("_reshape") and len(names) == 2, names


@pytest.mark.parametrize("make", [_conv1d_model, _row_window_model])
@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_exact_with_tflite_micro(tmp_path: Path, make, board: str) -> None:
    path, shape = make(tmp_path)
    x = np.random.default_rng(1).integers(-128, 128, shape, dtype=np.int8)
    (want,), _ = run_tflm(path.read_bytes(), [x])
    run = minirt.build(path, board, out_dir=tmp_path / board).run([x], check=True)
    assert np.array_equal(np.asarray(run.outputs[0]).reshape(want.shape), want)
