"""loops/depthwise5.py: which kernels the 5x5 depthwise microkernels take (the plan),
read from TFLite layers as the importer and the passes make them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise5 import depthwise5_plan, depthwise5_schedule
from toolchain.pipeline import prepare_graph, schedule_for_target
from toolchain.target import load_board


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
         (13, 12, 31, 2, 2, "VALID"): (0, 0), (12, 12, 2, 1, 1, "SAME"): (-2, -2)}


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
