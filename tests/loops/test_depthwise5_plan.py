"""loops/depthwise5.py: which kernels the 5x5 depthwise microkernels take (the plan),
read from TFLite layers as the importer and the passes make them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.loops.depthwise5 import depthwise5_plan, depthwise5_schedule, takes_depthwise5
from toolchain.loops.requant_lanes import match_requant
from toolchain.loops.tables import LANE_KIND
from toolchain.pipeline import prepare_graph, schedule_for_board, schedule_for_target
from toolchain.target import load_board, load_target


def _kernel(tmp_path: Path, kind: str, h: int, w: int, cin: int, cout: int, k: int,
            stride: int = 1, dilation: int = 1, padding: str = "SAME") -> Kernel:
    """The layer's one contraction kernel, as scheduled for cortex-m4."""
    rng = np.random.default_rng(h * w + cin)
    op, x, y = int8_layer_op(rng, kind, h, w, cin, cout, k, k, stride, dilation,
                             padding=padding, name="L0")
    path = tmp_path / "m.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    program = schedule_for_target(prepare_graph(load_graph(path)),
                                  load_board("cortex-m4").target_info)
    (kernel,) = [s.kernel for s in program.steps
                 if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    return kernel


# (h, w, channels, multiplier, stride, padding) -> (row, col) offsets of the plan
TAKEN = {(10, 10, 13, 1, 1, "SAME"): (-2, -2), (10, 10, 13, 1, 1, "VALID"): (0, 0),
         (9, 7, 8, 2, 1, "SAME"): (-2, -2), (10, 10, 16, 1, 2, "SAME"): (-1, -1),
         (13, 12, 31, 2, 2, "VALID"): (0, 0), (12, 12, 2, 1, 1, "SAME"): (-2, -2),
         # one input channel (its bias in the epilogue, its index the reduced channel)
         (10, 10, 1, 1, 1, "SAME"): (-2, -2), (9, 7, 1, 2, 1, "VALID"): (0, 0),
         (10, 10, 1, 1, 2, "SAME"): (-1, -1), (13, 11, 1, 2, 2, "VALID"): (0, 0)}


@pytest.mark.parametrize("shape", sorted(TAKEN))
def test_the_plan_of_5x5_layers(tmp_path: Path, shape) -> None:
    h, w, c, m, stride, padding = shape
    k = _kernel(tmp_path, "depthwise", h, w, c, c * m, 5, stride, padding=padding)
    plan = depthwise5_plan(k)
    assert plan is not None
    assert (plan.row, plan.col) == TAKEN[shape]
    assert (plan.depth_multiplier, plan.stride) == (m, stride)
    nest = depthwise5_schedule(k).nests[0]
    assert nest.depthwise5 and nest.block(2) == k.domain[2] and nest.block(1) == 2


@pytest.mark.parametrize("kind,k,stride,dilation,channels", [
    ("depthwise", 3, 1, 1, 13),   # the 3x3 row pairs' (loops/depthwise.py)
    ("depthwise", 5, 1, 2, 13),   # dilated: the staged pairs are of consecutive rows
    ("depthwise", 5, 3, 1, 13),   # stride 3
    ("conv", 5, 1, 1, 8),         # a convolution reduces over its input channels too
])
def test_kernels_it_does_not_take(tmp_path: Path, kind: str, k: int, stride: int,
                                  dilation: int, channels: int) -> None:
    cout = channels if kind == "depthwise" else 16
    kernel = _kernel(tmp_path, kind, 12, 12, channels, cout, k, stride, dilation)
    assert depthwise5_plan(kernel) is None


# (h, w, channels, stride) -> whether cortex-m55 takes the kernel (a folded kernel):
# every layer of stride 1; of stride 2 only channels that are no whole vectors of 16
# (loops/depthwise5.py KERNEL_OUTPUT_COST against LANES_OUTPUT_COST).
M55_TAKES = {(10, 10, 16, 1): True, (10, 10, 61, 1): True, (10, 10, 64, 1): True,
             (14, 14, 48, 1): True, (10, 10, 16, 2): False, (10, 10, 64, 2): False,
             (10, 10, 61, 2): True, (12, 11, 13, 2): True, (10, 10, 1, 1): True,
             (10, 10, 1, 2): True}


@pytest.mark.parametrize("shape", sorted(M55_TAKES))
def test_which_5x5_layers_cortex_m55_takes(tmp_path: Path, shape) -> None:
    h, w, c, stride = shape
    k = _kernel(tmp_path, "depthwise", h, w, c, c, 5, stride)  # folded (cortex-m4's)
    assert takes_depthwise5(k, load_target("cortex-m55")) == M55_TAKES[shape]
    for board in ("cortex-m4", "cortex-m7", "cortex-m33"):  # DSP only: always
        assert takes_depthwise5(k, load_target(board))
    assert not takes_depthwise5(k, load_target("riscv32"))


@pytest.mark.parametrize("optimize,lanes", [("auto", False), ("size", True)])
def test_cortex_m55_keeps_lanes_without_flash_records(tmp_path: Path, optimize: str,
                                                      lanes: bool) -> None:
    """Under --optimize size no records are bound in flash, which the kernel needs: the
    16-channel layer keeps its requantization unfolded for Helium's lanes."""
    rng = np.random.default_rng(3)
    op, x, y = int8_layer_op(rng, "depthwise", 10, 10, 16, 16, 5, 5, name="L0")
    path = tmp_path / "m.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    board = load_board("cortex-m55")
    program = schedule_for_board(prepare_graph(load_graph(path)), board, optimize)
    (step,) = [s for s in program.steps
               if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    # Unfolded: TFLite's two rounding steps, which the lanes run in vectors.
    assert (match_requant(step.kernel) is not None) == lanes
    schedule = step.schedule or choose_schedule(step.kernel, board.target_info)
    assert (schedule.nests[0].dot == LANE_KIND) == lanes
    assert schedule.nests[0].depthwise5 != lanes
