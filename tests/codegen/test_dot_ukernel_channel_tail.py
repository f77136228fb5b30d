"""Output channels past the last whole group of 4 in the DSP 2x4 staged window
(issue 21): schedule/paired.py pads the weights' last group with zero rows, and
codegen/dot_ukernel.py takes those channels in one call of their rows (1 or 2 of them:
runtime_c's mrt_dot_s16_paired_2x1i or 2x2i, 1x1i or 1x2i for an odd dim's last pixel)
or one 2x4 call whose padded rows' sums are dropped (3 of them).

Every case is an int8 model of several CONV_2D layers (SAME, 32 input channels) built
for cortex-m4 (one case for cortex-m7 and cortex-m33 too) and run under QEMU: its
outputs must be the numpy reference's and TFLite Micro's exactly, and the image must
hold the microkernels the tails call.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.kernel.paired import from_paired_rows
from toolchain.loops.rules import UKERNELS
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

DSP = UKERNELS["dsp"]
(_, TWO_ROWS, ONE_ROWS), (_, TWO_ROW, ONE_ROW) = DSP.row_calls  # 2 rows, 1 row
TWO, ONE = DSP.two_pixel_symbol, DSP.one_pixel_symbol

# name: (window (kh, kw), map (h, w), output channels, symbols the image must hold).
# The odd channel counts of bench/shapes.py's cout families (remainders 1 and 3 beside
# a multiple of 4) and 10, 30 (remainder 2); rows of 6 pixels pair up, rows of 5 leave a
# last pixel alone (the one-pixel calls).
CASES = {
    "3x3": ((3, 3), (7, 6), (9, 10, 13, 31, 63, 67), (TWO, TWO_ROW, TWO_ROWS)),
    "5x5": ((5, 5), (7, 6), (9, 13, 31, 63, 67), (TWO, TWO_ROW)),
    "1x7": ((1, 7), (7, 6), (9, 13, 31, 63, 67), (TWO, TWO_ROW)),
    "3x3-odd-row": ((3, 3), (5, 5), (13, 30, 31),
                    (TWO, TWO_ROW, TWO_ROWS, ONE, ONE_ROW, ONE_ROWS)),
}


def _model(kernel: tuple[int, int], hw: tuple[int, int], couts: tuple[int, ...],
           seed: int) -> tuple[bytes, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, cout in enumerate(couts):
        op, x, y = int8_layer_op(rng, "conv", *hw, 32, cout, *kernel, name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    return build_model(ops, xs, ys), inputs


# Every case on cortex-m4; the case that calls all six kernels on the other DSP boards.
BOARD_CASES = [("cortex-m4", name) for name in CASES] + \
    [(board, "3x3-odd-row") for board in ("cortex-m7", "cortex-m33")]


@pytest.mark.parametrize(("board", "name"), BOARD_CASES)
def test_channel_tails_are_exact(board: str, name: str, tmp_path: Path) -> None:
    kernel, hw, couts, symbols = CASES[name]
    model, inputs = _model(kernel, hw, couts, sum(map(ord, name)))
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    build = minirt.build(path, board, out_dir=tmp_path / "fw")
    run = build.run(inputs, check=True)  # raises minirt.Mismatch against the reference
    want, _ = run_tflm(model, inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), \
            f"{name} on {board}: L{i} ({couts[i]} outputs) != TFLite Micro"
    with open(build.elf, "rb") as f:
        held = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    for symbol in symbols:
        assert symbol in held, f"{name} on {board} does not call {symbol}"


def test_the_last_group_is_padded_with_zero_rows() -> None:
    """31 output channels: the constant holds 32 interleaved rows, the 32nd zero, the
    others the layer's weights; the kernel reads it as 32 rows over 31 channels."""
    model, _ = _model((3, 3), (7, 6), (31,), 0)
    graph = prepare_graph(import_model(read_model(model)))
    weights = next(np.asarray(n.attrs["value"]) for n in graph.nodes
                   if n.op == "constant" and np.asarray(n.attrs["value"]).shape == (31, 3, 3, 32))
    program = schedule_for_board(graph, load_board("cortex-m4"), "auto")
    (step,) = [s for s in program.steps if getattr(s.kernel, "interleaved", ())]
    (j,) = step.kernel.interleaved
    const = program.constants[step.buffers[j].index]
    assert const.shape == (32, 3, 3, 32) and step.kernel.operands[j].shape == const.shape
    rows = from_paired_rows(const)
    assert np.array_equal(rows[:31], weights) and not rows[31:].any()
