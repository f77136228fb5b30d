"""Which 16x8 depthwise layers the kernel plan takes (toolchain/loops/depthwise16.py):
3x3 windows of stride 1 or 2, SAME or VALID, multiplier 1 or 2, the int16 range or a
ReLU as the clamp, on targets with the DSP extension; not a dilated or 5x5 window, a
ReLU6, or an int8 layer. And the schedule that calls it (rows blocked by 2, or 1 at
stride 2; bottom-up on request)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from depthwise16_models import dw16_op
from tflite_models import build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise import X, Y
from toolchain.loops.depthwise16 import (
    depthwise16_plan,
    depthwise16_schedule,
    has_depthwise16,
)
from toolchain.pipeline import prepare_graph, schedule_for_target
from toolchain.target import load_board


def _kernel(tmp_path: Path, op_x_y: tuple) -> Kernel:
    op, x, y = op_x_y
    path = tmp_path / "one.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    graph = prepare_graph(load_graph(path))
    program = schedule_for_target(graph, load_board("cortex-m4").target_info)
    (k,) = [s.kernel for s in program.steps if isinstance(s.kernel, Kernel)
            and len(s.kernel.domain) == 7]
    return k


@pytest.mark.parametrize("layer, row, stride, mult, relu", [
    ((10, 10, 16, 1, 1, "SAME", "NONE"), -1, 1, 1, False),
    ((10, 10, 7, 2, 1, "VALID", "RELU"), 0, 1, 2, True),
    ((9, 7, 13, 1, 2, "SAME", "NONE"), -1, 2, 1, False),
    ((10, 10, 16, 2, 2, "SAME", "RELU"), 0, 2, 2, True),  # even: SAME's border bottom-right
])
def test_takes(tmp_path: Path, layer: tuple, row: int, stride: int, mult: int,
               relu: bool) -> None:
    k = _kernel(tmp_path, dw16_op(np.random.default_rng(0), layer, "L"))
    plan = depthwise16_plan(k)
    assert plan is not None
    assert (plan.row, plan.col, plan.stride, plan.depth_multiplier, plan.relu) == \
        (row, row, stride, mult, relu)
    (nest,) = depthwise16_schedule(k).nests
    assert nest.depthwise16 and not nest.reverse
    assert nest.block(Y) == (2 if stride == 1 else 1) and nest.block(X) == k.domain[X]
    assert depthwise16_schedule(k, reverse=True).nests[0].reverse


@pytest.mark.parametrize("layer, window, dilation", [
    ((12, 12, 16, 1, 1, "SAME", "NONE"), 3, 2),
    ((12, 12, 16, 1, 1, "SAME", "NONE"), 5, 1),
    ((12, 12, 16, 1, 1, "SAME", "RELU6"), 3, 1),
])
def test_refuses(tmp_path: Path, layer: tuple, window: int, dilation: int) -> None:
    op = dw16_op(np.random.default_rng(0), layer, "L", window=window, dilation=dilation)
    assert depthwise16_plan(_kernel(tmp_path, op)) is None


def test_refuses_int8(tmp_path: Path) -> None:
    op = int8_layer_op(np.random.default_rng(0), "depthwise", 10, 10, 16, 16, 3, 3, 1, 1,
                       padding="SAME", name="L", in_scale=0.05, in_zp=-3)
    assert depthwise16_plan(_kernel(tmp_path, op)) is None


def test_dsp_targets_only() -> None:
    assert has_depthwise16(load_board("cortex-m4").target_info)
    assert not has_depthwise16(load_board("cortex-m3").target_info)
    assert not has_depthwise16(load_board("riscv32").target_info)
