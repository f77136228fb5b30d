"""int8 depthwise 3x3 layers on the DSP boards (cortex-m4, m7, m33) under QEMU, bit for
bit against the numpy reference, over odd shapes: channels 1, 3, 7, 13, 61, 64 and 67,
channel multipliers 1 and 2, stride 1 and 2, SAME and VALID padding, on a 7x6 map (a
window interior of 5x4 or less, borders on every side).

Their tiles depend on the channel count (loops/rules.py: a tile of several channels
only where it spans them all, Budget.block_unshared), so each count is its own
schedule; one firmware per board and stride holds all its layers, each with its own
graph input and output.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

import minirt

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]
CHANNELS = (1, 3, 7, 13, 61, 64, 67)
MULTIPLIERS = (1, 2)
PADDINGS = ("SAME", "VALID")
H, W = 7, 6


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("board", DSP_BOARDS)
def test_depthwise_3x3_matches_the_reference(board: str, stride: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(stride)
    ops, xs, ys = [], [], []
    for i, (c, m, pad) in enumerate(itertools.product(CHANNELS, MULTIPLIERS, PADDINGS)):
        op, x, y = int8_layer_op(rng, "depthwise", H, W, c, c * m, 3, 3, stride,
                                 padding=pad, name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = tmp_path / "depthwise.tflite"
    model.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(model, board, out_dir=tmp_path / "b")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch on any difference
    assert len(run.outputs) == len(ys)
