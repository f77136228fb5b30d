"""First layers (1-3 input channels) on the DSP boards, bit for bit: since issue 21's
im2col kernel (codegen/first_layers.py, tests/codegen/test_first_layers_im2col.py) they
take it wherever its records fit the flash room; elsewhere the window rows merged over
their padded row (schedule/window_rows.py) and the staged window's rows read without
per-value tests where they are inside the input (codegen/dot_ukernel.py
_stage_gathered). Every combination of 1, 2, 3 input channels x 3x3, 5x5, 10x4, 1x7
windows x stride 1, 2 x SAME, VALID padding, the output channels a sample of 1..67,
against minirt's reference and TFLite Micro's interpreter on random int8 inputs (the
extremes -128 and 127 forced at the map's corners, where the border is)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt

H, W = 12, 9  # room for a 10x4 window, VALID, stride 2
WINDOWS = ((3, 3), (5, 5), (10, 4), (1, 7))
COUTS = (1, 3, 4, 5, 8, 13, 16, 29, 32, 61, 64, 67)
CASES = [(cin, window, stride, padding, COUTS[i % len(COUTS)])
         for i, (cin, window, stride, padding) in enumerate(itertools.product(
             (1, 2, 3), WINDOWS, (1, 2), ("SAME", "VALID")))]
GROUP = 12  # layers per firmware, so 48 layers are 4 builds a board


def _inputs(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.integers(-128, 128, shape).astype(np.int8)
    x[0, 0, 0, :], x[0, -1, -1, :] = -128, 127
    x[0, 0, -1, :], x[0, -1, 0, :] = 127, -128
    return x


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m33"])
@pytest.mark.parametrize("part", range(len(CASES) // GROUP))
def test_first_layers_bit_exact(board: str, part: int, tmp_path: Path) -> None:
    if board != "cortex-m4" and part:
        pytest.skip("cortex-m33 runs the first group only (the same code as cortex-m4)")
    rng = np.random.default_rng(100 + part)
    ops, xs, ys = [], [], []
    for i, (cin, (kh, kw), stride, padding, cout) in enumerate(
            CASES[part * GROUP:(part + 1) * GROUP]):
        op, x, y = int8_layer_op(rng, "conv", H, W, cin, cout, kh, kw, stride,
                                 padding=padding, name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = tmp_path / "first.tflite"
    model.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(model, board, out_dir=tmp_path / "fw")
    inputs = [_inputs(rng, x.shape) for x in xs]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch unless bit-exact
    want, _ = run_tflm(model.read_bytes(), inputs)
    for case, a, b in zip(CASES[part * GROUP:], want, run.outputs):
        assert a.shape == b.shape and np.array_equal(a, b), case
