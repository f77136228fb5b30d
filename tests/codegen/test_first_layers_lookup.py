"""The im2col first-layer kernel with an activation's table after the requantization
(schedule/first_layer_records.py `_lookup`, codegen/first_layers.py, the _lut loops of
runtime_c/ukernel/dsp/mrt_im2col_dsp.c) under QEMU, bit for bit against the numpy
reference and TFLite Micro's interpreter.

TFLite's converter writes HARD_SWISH, LOGISTIC, TANH and LEAKY_RELU after a convolution
as operators of their own; the importer makes each an int8 lookup in a 256-entry table
and fusion puts it in the layer's epilogue (mobilenet_block_int8's 1x1 16x16 12 -> 36
with its HARD_SWISH, which missed this kernel: 0.35 MAC per instruction). The sweep: the
converter's shape, single chunks of 1 to 6 staged words (1x1 over 1-12 channels, 3x3 and
1x3 windows), odd tap counts, output channel counts of several remainders modulo 8,
stride 2 and VALID padding, a padded copy (SAME 3x3), a 1x1 window over one channel (the
table composed into the records' rows), and windows of several chunks (the last looks
up: 1x1 over 16 channels, 3x3 over 2 and 3).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from checked_build import build_and_check
from tflite_models import Op, Tensor, build_model, int8_layer_op

# The activations' output quantizations, as the converter writes them (LOGISTIC and
# TANH at the scales TFLite Micro requires).
ACTIVATIONS = {
    "HARD_SWISH": (0.03, -60),
    "LOGISTIC": (1 / 256, -128),
    "TANH": (1 / 128, 0),
    "LEAKY_RELU": (0.04, -20),
}
# (h, w, cin, cout, kh, kw, stride, padding, activation): staged words in the comments
# (an odd channel count is padded to a word first, 5 -> 8, 11 -> 12). Outputs of more
# than 256 elements: smaller ones get their biases and requantization broadcast to the
# output's shape, which this kernel does not read (as without a table).
TAKEN = [
    (16, 16, 12, 36, 1, 1, 1, "SAME", "HARD_SWISH"),  # mobilenet_block_int8's: 6
    (9, 7, 11, 13, 1, 1, 1, "SAME", "LOGISTIC"),  # 6, the last lane 0
    (14, 10, 8, 9, 1, 1, 2, "VALID", "TANH"),  # 4, stride 2
    (7, 6, 5, 7, 1, 1, 1, "SAME", "LEAKY_RELU"),  # 4
    (7, 6, 2, 7, 1, 3, 1, "SAME", "LEAKY_RELU"),  # 3
    (8, 7, 3, 8, 1, 1, 1, "SAME", "HARD_SWISH"),  # 2
    (6, 9, 2, 10, 1, 1, 1, "SAME", "LOGISTIC"),  # 1
    (10, 10, 1, 16, 3, 3, 1, "SAME", "HARD_SWISH"),  # 5, the padded copy
    (7, 6, 3, 12, 1, 3, 1, "SAME", "TANH"),  # 5
    (7, 5, 1, 12, 1, 1, 1, "SAME", "HARD_SWISH"),  # a table of the 256 inputs
]
LOOPS = {f"mrt_i2c_only{n}_lut_s8" for n in (1, 2, 3, 4, 5, 6)}
# Several chunks: 8 words (4 + 4), 9 (5 + 4), 14 (5 + 5 + 4), 1x7 over 3 channels
# (11 words: 4 + 4 + 3), 1x5 over 4 (10 words: 5 + 5).
CHUNKED = [(9, 8, 16, 21, 1, 1, 1, "SAME", "HARD_SWISH"),
           (8, 6, 2, 16, 3, 3, 1, "SAME", "LOGISTIC"),
           (10, 10, 3, 11, 3, 3, 2, "SAME", "TANH"),
           (12, 6, 3, 9, 1, 7, 1, "SAME", "LEAKY_RELU"),
           (8, 10, 4, 10, 1, 5, 1, "SAME", "HARD_SWISH")]


def _run(layers, board: str, tmp_path: Path, seed: int) -> set[str]:
    """Builds the layers (each a convolution then its activation, independent) for
    `board`, checks the outputs against the reference and TFLite Micro, and returns the
    linked image's symbols."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (h, w, ci, co, kh, kw, s, pad, act) in enumerate(layers):
        op, x, y = int8_layer_op(rng, "conv", h, w, ci, co, kh, kw, s, 1, padding=pad,
                                 name=f"L{i}_conv")
        scale, zero = ACTIVATIONS[act]
        out = Tensor(y.shape, "int8", scale=scale, zero_point=zero, name=f"L{i}")
        options = {"alpha": 0.2} if act == "LEAKY_RELU" else {}
        ops += [op, Op(act, [y], [out], options)]
        xs.append(x)
        ys.append(out)
    model = build_model(ops, xs, ys)
    return build_and_check(model, xs, board, tmp_path, rng, "lookup")


def _loops(symbols: set[str]) -> set[str]:
    return {s for s in symbols if s.startswith("mrt_i2c_")}


def test_layers_with_a_table_on_cortex_m4(tmp_path: Path) -> None:
    """Every single chunk's _lut loop is called, and no other (the table layer copies
    rows), so none of these layers kept the generated tiles."""
    assert _loops(_run(TAKEN, "cortex-m4", tmp_path, seed=21)) == LOOPS


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_layers_with_a_table_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    loops = _loops(_run(TAKEN[::2] + CHUNKED[::2], board, tmp_path, seed=22))
    assert {f"mrt_i2c_only{n}_lut_s8" for n in (6, 4, 3, 1, 5)} <= loops
    assert {"mrt_i2c_last4_lut_s8", "mrt_i2c_last5_lut_s8"} <= loops


def test_several_chunks_with_a_table(tmp_path: Path) -> None:
    """The last chunk's _lut loop requantizes and looks up; the first and middle ones
    are those of a layer without a table."""
    loops = _loops(_run(CHUNKED, "cortex-m4", tmp_path, seed=23))
    assert {"mrt_i2c_last5_lut_s8", "mrt_i2c_last4_lut_s8", "mrt_i2c_last3_lut_s8",
            "mrt_i2c_first5_s8",
            "mrt_i2c_mid5_s8", "mrt_i2c_first4_s8"} <= loops
    assert not any(s.startswith("mrt_i2c_last") and "_lut" not in s for s in loops)


def test_riscv_keeps_the_generated_tiles(tmp_path: Path) -> None:
    """No DSP extension: the same layers through the generated code, still exact."""
    assert not _loops(_run(TAKEN[:3], "riscv32", tmp_path, seed=24))
