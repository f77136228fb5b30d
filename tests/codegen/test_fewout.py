"""The few-output pixel-tile kernel (codegen/fewout.py, schedule/fewout_records.py,
runtime_c/ukernel/dsp/mrt_fewout_dsp.c) under QEMU, bit for bit against the numpy
reference and TFLite Micro's interpreter.

int8 convolutions to 1-7 output channels (odd counts: the last channel's 4-pixel tiles,
even: channel pairs only) over 32, 13 (padded to 16 by schedule/pad_channels.py), 8,
16, 64 and 3 input channels (staged as 4), 3x3, 5x5 and 1x7 windows, SAME and VALID
padding, maps of odd and even widths (an odd last pixel computed as both pixels of its
tile), one row, one column, maps smaller than the window, and the two requantization
forms of the imported graph (per channel, and per tensor with the bias and zero point
outside the sum on small maps: schedule/fewout_form.py). Layers it does not take
(stride 2, dilation 2, 8 outputs, 1x1, 3x3 over 3 channels to 5, 3x3 VALID to 1-2,
a 3x3 map to one output, biases too large for the doubled sums, `--optimize size`,
riscv32) stay exact through the other kernels. One
firmware holds a group of layers, each with its own graph input and output.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from checked_build import build_and_check
from tflite_models import Op, build_model, int8_layer_op

import minirt

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]
SYMBOL = "mrt_fo_conv_s8"

# (h, w, cin, cout, kh, kw, stride, dilation, padding)
TAKEN = {
    "3x3": [(19, 6, 32, c, 3, 3, 1, 1, "SAME") for c in (1, 2, 3, 5, 7)]
    + [(10, 10, 13, 3, 3, 3, 1, 1, "SAME"), (9, 7, 16, 5, 3, 3, 1, 1, "VALID"),
       (5, 5, 8, 2, 3, 3, 1, 1, "SAME"), (6, 11, 64, 4, 3, 3, 1, 1, "SAME")],
    "5x5 and 1x7": [(19, 6, 32, c, 5, 5, 1, 1, "SAME") for c in (1, 2, 7)]
    + [(19, 6, 32, c, 1, 7, 1, 1, "SAME") for c in (1, 3, 5)]
    + [(12, 9, 13, 7, 5, 5, 1, 1, "VALID"), (10, 10, 12, 6, 1, 7, 1, 1, "SAME")],
    "3 channels": [(19, 6, 3, c, 3, 3, 1, 1, "SAME") for c in (1, 2, 3)]
    + [(8, 8, 3, 5, 5, 5, 1, 1, "SAME"), (8, 8, 3, 7, 1, 7, 1, 1, "SAME"),
       (10, 10, 3, 2, 1, 7, 1, 1, "VALID")],
    "small maps": [(1, 12, 32, 3, 3, 3, 1, 1, "SAME"), (7, 1, 16, 2, 3, 3, 1, 1, "SAME"),
                   (3, 5, 32, 1, 5, 5, 1, 1, "SAME"), (2, 3, 64, 7, 3, 3, 1, 1, "SAME"),
                   (4, 4, 8, 1, 3, 3, 1, 1, "SAME"), (5, 9, 32, 5, 1, 7, 1, 1, "VALID")],
    # 1-8 window rows (the ring's slots), 1-3 columns, maps narrower than the window
    "other windows": [(9, 5, 32, 1, 7, 1, 1, 1, "SAME"), (9, 5, 8, 3, 7, 1, 1, 1, "SAME"),
                      (6, 4, 12, 2, 8, 2, 1, 1, "SAME"), (5, 3, 20, 3, 2, 2, 1, 1, "SAME"),
                      (7, 7, 8, 5, 3, 1, 1, 1, "SAME"), (2, 9, 16, 7, 5, 3, 1, 1, "SAME"),
                      (10, 1, 24, 3, 3, 3, 1, 1, "SAME"), (4, 5, 40, 6, 1, 2, 1, 1, "SAME")],
}
NOT_TAKEN = [(10, 10, 32, 1, 3, 3, 2, 1, "SAME"), (10, 10, 32, 5, 3, 3, 2, 1, "SAME"),
             (19, 6, 13, 7, 5, 5, 2, 1, "SAME"), (19, 6, 32, 3, 3, 3, 1, 2, "SAME"),
             (19, 6, 32, 8, 3, 3, 1, 1, "SAME"), (19, 6, 32, 3, 1, 1, 1, 1, "SAME"),
             (8, 8, 3, 5, 3, 3, 1, 1, "SAME"), (21, 8, 16, 1, 3, 3, 1, 1, "VALID"),
             (21, 8, 32, 2, 3, 3, 1, 1, "VALID"), (3, 3, 32, 1, 3, 3, 1, 1, "SAME")]


def _run(layers, board: str, tmp_path: Path, seed: int, big_bias: bool = False,
         optimize: str | None = None, tuning_db: str | None = None) -> set[str]:
    """Builds the layers (independent) for `board`, checks the outputs against the
    reference and TFLite Micro, and returns the linked image's symbols. `big_bias`:
    every other channel's bias beyond +-2**30. `tuning_db`: minirt.build's."""
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
    if tuning_db is not None:
        extra["tuning_db"] = tuning_db

    def corners(inputs: list[np.ndarray]) -> None:
        for x in inputs:  # the extremes at the corners, where the border is
            x[0, 0, 0, :], x[0, -1, -1, :] = -128, 127

    return build_and_check(model, xs, board, tmp_path, rng, "fewout", corners, layers,
                           **extra)


@pytest.mark.parametrize("group", sorted(TAKEN))
def test_few_outputs_on_cortex_m4(group: str, tmp_path: Path) -> None:
    assert SYMBOL in _run(TAKEN[group], "cortex-m4", tmp_path, seed=len(group))


@pytest.mark.parametrize("board", DSP_BOARDS[1:])
def test_few_outputs_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    layers = [g[i] for g in TAKEN.values() for i in range(0, len(g), 3)]
    assert SYMBOL in _run(layers, board, tmp_path, seed=7)


def test_layers_it_does_not_take_stay_exact(tmp_path: Path) -> None:
    # The rules alone: the shipped tuning database sends some of these layers (3x3
    # 19x6 32->8, measured faster there) to this kernel (toolchain/tunedb).
    assert SYMBOL not in _run(NOT_TAKEN, "cortex-m4", tmp_path, seed=11, tuning_db="none")


def test_biases_too_large_to_double(tmp_path: Path) -> None:
    """A bias beyond +-2**30: twice the sum might not be an int32, so the layer keeps
    the other kernels, exact."""
    layers = [TAKEN["3x3"][1], TAKEN["5x5 and 1x7"][1]]
    assert SYMBOL not in _run(layers, "cortex-m4", tmp_path, seed=9, big_bias=True)


def test_optimize_size_keeps_the_int8_weights(tmp_path: Path) -> None:
    """The records are flash beyond the int8 weights: none under --optimize size."""
    layers = TAKEN["3x3"][:2]
    assert SYMBOL not in _run(layers, "cortex-m4", tmp_path, seed=10, optimize="size")


def test_riscv_keeps_the_generated_tiles(tmp_path: Path) -> None:
    """No DSP extension: the same layers through the generated code, still exact."""
    assert SYMBOL not in _run(TAKEN["3x3"][:3], "riscv32", tmp_path, seed=5)


def test_profile_charges_the_kernel_to_its_dispatch(tmp_path: Path) -> None:
    """The runtime's -Oz build outlines parts of mrt_fo_conv_s8 (OUTLINED_FUNCTION_*);
    the profile charges them with the rest of the call to the layer's dispatch
    (emu/profile.py), none to `other`, as bench/shapes.py counts a layer."""
    rng = np.random.default_rng(4)
    op, x, y = int8_layer_op(rng, "conv", 19, 6, 32, 1, 3, 3, 1, padding="SAME", name="L0")
    path = tmp_path / "one.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    build = minirt.build(path, "cortex-m4", out_dir=tmp_path / "b")
    profile = build.profile([rng.integers(-128, 128, x.shape).astype(np.int8)])
    (layer,) = [r for r in profile.rows if r.kind == "dispatch"]
    (other,) = [r for r in profile.rows if r.name == "other"]
    assert other.instructions == 0
    # the kernel's loops: under 1.25 instructions a MAC, and most of them in the call
    assert layer.macs / 1.25 < layer.instructions < 1.25 * layer.macs
    assert layer.callee_instructions > 0.9 * layer.instructions


# The odd last channel's tiles (mrt_fo_ones_s8: two pixels a tile, four steps an LDM):
# 1 and 3 outputs; runs of 0 and 2 mod 4 words (12, 20 and 3 channels: the two steps by
# LDRD first, a run of exactly 2 words), one pass and several (64 channels), odd widths
# (the lone last pixel), VALID and SAME, and a stride-2 layer beside them (not this
# kernel's: it stays exact through the staged tiles).
ONE_CHANNEL = [(19, 6, 32, 1, 3, 3, 1, 1, "SAME"), (19, 6, 32, 3, 5, 5, 1, 1, "SAME"),
               (19, 6, 32, 1, 1, 7, 1, 1, "SAME"), (9, 7, 12, 1, 3, 3, 1, 1, "SAME"),
               (8, 5, 20, 3, 1, 7, 1, 1, "SAME"), (7, 9, 13, 1, 5, 5, 1, 1, "VALID"),
               (6, 5, 3, 1, 3, 1, 1, 1, "SAME"), (5, 6, 64, 1, 5, 5, 1, 1, "SAME"),
               (5, 7, 64, 3, 3, 3, 1, 1, "SAME"), (11, 9, 12, 3, 3, 3, 2, 1, "SAME")]


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m33"])
def test_one_channel_tiles(board: str, tmp_path: Path) -> None:
    symbols = _run(ONE_CHANNEL, board, tmp_path, seed=21)
    assert {SYMBOL, "mrt_fo_ones_s8"} <= symbols
