"""The im2col first-layer kernel (codegen/first_layers.py, schedule/first_layer_records.py,
runtime_c/ukernel/dsp/mrt_im2col_dsp.c) under QEMU, bit for bit against the numpy
reference and TFLite Micro's interpreter.

int8 convolutions over 1 to 4 input channels: 1x1, 3x3, 5x5 and 1x7 windows, stride
2, dilation 2, SAME and VALID padding, output channel counts of every remainder modulo 8
(the unrolled loops' entries), windows of one chunk of staged words and of several
(first, middle and last loops), maps narrower than the window, and 1x1 over one channel
(a table of every input's outputs). Layers it does not take (windows over 5 and 8 input
channels, 1x1 over 31 or 32 to few outputs, biases
too large for the doubled sums, `--optimize size`, riscv32) stay exact through the
generated tiles. One firmware holds a group of layers, each with its own graph input
and output.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from checked_build import build_and_check
from tflite_models import Op, build_model, int8_layer_op

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]
PREFIX = "mrt_i2c_"

# (h, w, cin, cout, kh, kw, stride, dilation, padding)
TAKEN = {
    "3x3": [(19, 6, c, 32, 3, 3, 1, 1, "SAME") for c in (1, 2, 3)]
    + [(10, 10, 3, 17, 3, 3, 1, 1, "VALID"), (7, 9, 1, 5, 3, 3, 1, 1, "SAME"),
       (8, 5, 1, 10, 3, 3, 1, 1, "SAME"), (6, 7, 2, 6, 3, 3, 1, 1, "SAME")],
    "5x5 and 1x7": [(10, 10, c, 16, 5, 5, 1, 1, "SAME") for c in (1, 2, 3)]
    + [(19, 6, c, 32, 1, 7, 1, 1, "SAME") for c in (1, 2, 3)]
    + [(12, 9, 3, 7, 5, 5, 1, 1, "VALID")],
    "strided and dilated": [(10, 10, c, 16, k, k, 2, 1, "SAME") for c in (1, 3) for k in (3, 5)]
    + [(19, 6, c, 16, 3, 3, 1, 2, "SAME") for c in (1, 2, 3)]
    + [(11, 8, 2, 9, 3, 3, 2, 1, "VALID"), (10, 4, 1, 64, 10, 4, 2, 1, "SAME")],
    # One channel: a table of the 256 inputs' outputs, copied by words (32) or bytes (5).
    "1x1 and small maps": [(19, 6, c, 32, 1, 1, 1, 1, "SAME") for c in (1, 2, 3)]
    + [(7, 5, 1, 5, 1, 1, 1, 1, "SAME"), (10, 10, 1, 12, 1, 1, 2, 1, "VALID"),
       (3, 2, 2, 3, 5, 5, 1, 1, "SAME"), (1, 12, 1, 1, 3, 3, 1, 1, "SAME"),
       (6, 1, 3, 4, 1, 7, 1, 1, "SAME"),
       # a row of windows over 2 KB of stack: a call of the channel loop per pixel
       (3, 110, 1, 8, 3, 3, 1, 1, "SAME")],
    # 4 channels too: their packed steps were slower (first_layer_records MAX_CHANNELS).
    "4 channels": [(19, 6, 4, 32, k, k, 1, 1, "SAME") for k in (1, 3)]
    + [(10, 10, 4, 16, 3, 3, 2, 1, "SAME"), (19, 6, 4, 16, 3, 3, 1, 2, "SAME"),
       (6, 9, 4, 9, 1, 7, 1, 1, "VALID")],
    # 1x1 layers up to 32 channels (first_layer_records takes_pointwise): 8 to 32 MACs
    # an output paid a call and a generated requantization per tile of 4.
    "1x1 over 5-16 channels": [(19, 6, c, 32, 1, 1, 1, 1, "SAME") for c in (5, 8, 13, 16)]
    + [(7, 5, 12, 9, 1, 1, 2, 1, "VALID")],
}
NOT_TAKEN = [(19, 6, 8, 32, 3, 3, 1, 1, "SAME"), (10, 10, 5, 16, 3, 3, 2, 1, "SAME"),
             (19, 6, 31, 8, 1, 1, 1, 1, "SAME"), (19, 6, 32, 16, 1, 1, 1, 1, "SAME")]


def _run(layers, board: str, tmp_path: Path, seed: int, big_bias: bool = False,
         optimize: str | None = None) -> set[str]:
    """Builds the layers (independent) for `board`, checks the outputs against the
    reference and TFLite Micro, and returns the linked image's symbols. `big_bias`:
    every other channel's bias beyond +-2**30."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (h, w, ci, co, kh, kw, s, d, pad) in enumerate(layers):
        op, x, y = int8_layer_op(rng, "conv", h, w, ci, co, kh, kw, s, d, padding=pad,
                                 name=f"L{i}")
        if big_bias:
            bias = op.inputs[2]
            data = np.asarray(bias.data, dtype=np.int64)
            data[::2] += np.where(data[::2] < 0, -1, 1) * ((1 << 30) + 12345)
            op = Op(op.opcode, [op.inputs[0], op.inputs[1],
                                dataclasses.replace(bias, data=data.astype(np.int32))],
                    op.outputs, op.options)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = build_model(ops, xs, ys)
    extra = {"optimize": optimize} if optimize else {}
    return build_and_check(model, xs, board, tmp_path, rng, "first", **extra)


def _loops(symbols: set[str]) -> set[str]:
    return {s for s in symbols if s.startswith(PREFIX)}


@pytest.mark.parametrize("group", sorted(TAKEN))
def test_first_layers_on_cortex_m4(group: str, tmp_path: Path) -> None:
    loops = _loops(_run(TAKEN[group], "cortex-m4", tmp_path, seed=len(group)))
    assert loops
    if group == "5x5 and 1x7":  # 5x5 over 3 channels: 38 words, 8 chunks
        assert {"mrt_i2c_first5_s8", "mrt_i2c_mid5_s8"} <= loops


@pytest.mark.parametrize("board", DSP_BOARDS[1:])
def test_first_layers_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    layers = [g[i] for g in TAKEN.values() for i in range(0, len(g), 2)]
    assert _loops(_run(layers, board, tmp_path, seed=7))


def test_layers_it_does_not_take_stay_exact(tmp_path: Path) -> None:
    assert not _loops(_run(NOT_TAKEN, "cortex-m4", tmp_path, seed=11))


def test_biases_too_large_to_double(tmp_path: Path) -> None:
    """A bias beyond +-2**30: twice the sum might not be an int32, so the layer keeps
    the generated tiles, exact."""
    layers = TAKEN["3x3"][:2]
    assert not _loops(_run(layers, "cortex-m4", tmp_path, seed=9, big_bias=True))


def test_optimize_size_keeps_the_int8_weights(tmp_path: Path) -> None:
    """The records are flash beyond the int8 weights: none under --optimize size."""
    layers = TAKEN["3x3"][:2]
    assert not _loops(_run(layers, "cortex-m4", tmp_path, seed=10, optimize="size"))


def test_riscv_keeps_the_generated_tiles(tmp_path: Path) -> None:
    """No DSP extension: the same layers through the generated code, still exact."""
    assert not _loops(_run(TAKEN["3x3"][:3], "riscv32", tmp_path, seed=5))
