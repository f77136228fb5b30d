"""An activation table after a depthwise layer, as TFLite's converter writes it (its own
HARD_SWISH / LOGISTIC / TANH operator, which fusion puts in the layer's epilogue), split
off again where only the plain layer takes the depthwise row-pair microkernel
(schedule/split_tail.py): the layer takes the microkernel on the DSP boards, stays one
dispatch elsewhere, and the firmware is bit-exact with TFLite Micro."""

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

# activation -> its output's (scale, zero point): TFLite Micro's fixed ones for LOGISTIC
# and TANH, any for HARD_SWISH.
ACTIVATIONS = {"HARD_SWISH": (0.02, -90), "LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}


def _model(tmp_path: Path, activation: str, h: int, w: int, channels: int,
           multiplier: int = 1, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    op, x, y = int8_layer_op(rng, "depthwise", h, w, channels, channels * multiplier,
                             3, 3, name="dw")
    scale, zero = ACTIVATIONS[activation]
    z = Tensor(y.shape, "int8", scale=scale, zero_point=zero, name="act")
    path = tmp_path / f"dw_{activation}_{h}x{w}x{channels}x{multiplier}.tflite"
    path.write_bytes(build_model([op, Op(activation, [y], [z])], [x], [z]))
    return path


def _steps(path: Path, board: str) -> list[Kernel]:
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board(board))
    return [s.kernel for s in program.steps if isinstance(s.kernel, Kernel)]


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_the_layer_takes_the_row_pair_kernel_on_dsp_boards(tmp_path: Path,
                                                           activation: str) -> None:
    path = _model(tmp_path, activation, 9, 5, 13)
    for board in ("cortex-m4", "cortex-m7", "cortex-m33"):
        kernels = _steps(path, board)
        assert [k.combine is not None for k in kernels] == [True, False], board
        layer, tail = kernels
        assert layer.records >= 0, board  # the row-pair records: the microkernel's own
        assert tail.name.endswith("_tail") and layer.result.dtype.name == "i8"


def test_no_split_without_the_microkernel(tmp_path: Path) -> None:
    path = _model(tmp_path, "HARD_SWISH", 9, 5, 13)
    for board in ("cortex-m3", "x86-64"):
        kernels = _steps(path, board)
        assert len(kernels) == 1 and kernels[0].records < 0, board


# (board, activation, h, w, channels, multiplier): odd channel counts, a map one 4-row
# tile does not cover, a depth multiplier of 2.
CASES = [
    ("cortex-m4", "HARD_SWISH", 9, 5, 13, 1),
    ("cortex-m4", "LOGISTIC", 6, 7, 7, 2),
    ("cortex-m4", "TANH", 5, 11, 3, 1),
    ("cortex-m7", "HARD_SWISH", 7, 6, 5, 1),
    ("cortex-m33", "LOGISTIC", 10, 4, 9, 1),
]


@pytest.mark.parametrize("board,activation,h,w,channels,multiplier", CASES)
def test_split_layers_are_exact(tmp_path: Path, board: str, activation: str, h: int,
                                w: int, channels: int, multiplier: int) -> None:
    path = _model(tmp_path, activation, h, w, channels, multiplier, seed=h * w)
    x = np.random.default_rng(channels).integers(-128, 128, (1, h, w, channels),
                                                 dtype=np.int8)
    (want,), _ = run_tflm(path.read_bytes(), [x])
    run = minirt.build(path, board, out_dir=tmp_path / board).run([x], check=True)
    assert np.array_equal(np.asarray(run.outputs[0]).reshape(want.shape), want)


def test_a_split_tail_is_read_through_by_its_readers() -> None:
    """mobilenet_block_int8 (test_converter_models.py checks it exact): its depthwise
    layer's HARD_SWISH, split off for the microkernel, is read by the SE block's MEAN
    and MUL, which take the table lookup in their own loads instead of a pass of its
    own; the layer keeps the microkernel. The first layer (1x1 12 -> 36) keeps its
    HARD_SWISH in its epilogue: the im2col kernel looks it up itself."""
    path = (Path(__file__).parents[1] / "frontend" / "tflite" / "data" / "converter"
            / "mobilenet_block_int8.tflite")
    kernels = _steps(path, "cortex-m4")
    assert not any(k.name.endswith("_tail") for k in kernels), [k.name for k in kernels]
    with_records = sorted(k.domain for k in kernels if k.records >= 0)
    assert with_records == [(1, 16, 16, 36, 1, 1, 12), (1, 16, 16, 36, 3, 3, 1)]
