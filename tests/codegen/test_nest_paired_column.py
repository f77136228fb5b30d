"""Strided and dilated int8 windows whose rows end on an odd pixel (issue 21): each
row's last pixel, which took a one-pixel call, is paired with the next row's along the
dim outside (loops/paired_column.py, codegen/nest.py `_paired_column`).

Every case is an int8 model of several CONV_2D layers built for cortex-m4 and run
under QEMU: its outputs must be the numpy reference's and TFLite Micro's exactly. The
sweep holds odd input channel counts 5-15 (padded to whole words, or merged window
rows with the border kept), 8 and 16 channels, stride 2 (a 5-pixel row: one border
column, the rows beside it paired), dilation 2, odd map widths and heights (an odd
column of rows: its last pixel alone), VALID windows (no border: the odd row's last
pixel is no border pixel) and output channels past a group of four. COLUMNS says how
many of each case's layers have such a column, and the test checks it (the dilated
windows here have none: their rows' borders leave a pixel alone at both ends, which
the column does not take).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.loops.paired_column import paired_column
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

S2 = dict(kind="conv", kh=3, kw=3, stride=2)
D2 = dict(kind="conv", kh=3, kw=3, dilation=2)

CASES = {
    "s2-odd-channels": [dict(S2, h=10, w=10, cin=c, cout=16) for c in (5, 7, 9, 11, 13, 15)],
    "s2-maps": [dict(S2, h=10, w=10, cin=8, cout=16), dict(S2, h=9, w=11, cin=8, cout=12),
                dict(S2, h=13, w=9, cin=16, cout=10), dict(S2, h=10, w=10, cin=13, cout=6),
                dict(S2, h=11, w=11, cin=8, cout=16, padding="VALID"),
                dict(kind="conv", kh=5, kw=5, stride=2, h=10, w=10, cin=7, cout=16)],
    "d2-odd-widths": [dict(D2, h=9, w=7, cin=c, cout=16) for c in (5, 8, 13)]
    + [dict(D2, h=8, w=5, cin=9, cout=12), dict(D2, h=11, w=9, cin=15, cout=16)],
}
# The layers of each case whose nest has a paired column.
COLUMNS = {"s2-odd-channels": 6, "s2-maps": 3, "d2-odd-widths": 0}


@pytest.mark.parametrize("name", list(CASES))
def test_paired_columns_bit_exact(tmp_path: Path, name: str) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    layers = CASES[name]
    rng = np.random.default_rng(33)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(path, "cortex-m4", out_dir=tmp_path / "build")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({layers[i]}) differs from TFLite Micro"
    # The column is there: a two-pixel nest whose last pixels pair along the rows.
    assert _columns(path) == COLUMNS[name]


def _columns(path: Path) -> int:
    """How many of the model's nests on cortex-m4 have a paired column (the schedules
    --dump-schedule prints)."""
    program = schedule_for_board(prepare_graph(load_graph(str(path))), load_board("cortex-m4"))
    target = load_board("cortex-m4").target_info
    return sum(paired_column(nest) is not None
               for step in program.steps if isinstance(step.kernel, Kernel)
               for nest in (step.schedule or choose_schedule(step.kernel, target)).nests)
