"""The DSP int8 dot microkernels (runtime_c/ukernel/dsp, codegen/dot_ukernel.py) on every
DSP board under QEMU, bit for bit against the numpy reference.

Each case is a one-operator int8 .tflite model whose packed reduction a microkernel
takes: dense layers (4-row tiles; with 3 or more tiles their input is paired once and
read by the staged variant), 1x1 convolutions over 64 and 16 channels (one pixel x 4
channels per tile) and over 32 and 20 with 3 or more tiles a pixel (two pixels staged
together, the weights' rows interleaved: the 2x4 tile, the last pixel of an odd row
alone), 3x3 convolutions over 64 and 32 channels (one call of the runs variant per
tile, a run per window row; the window's border regions still generated code) and one
over 16 channels with 12 outputs, whose window is staged once per pair of pixels and
read by one 2x4 call per tile, at the border too (5x5 windows over 32 and 12 channels
as well; with 13 outputs the last channel is a call of its own against its zero-padded
group; with 7 outputs the window's tile is one dense-rows call, loops/dense_rows.py,
where the 2x4 kernel does not take it); and a 10x4 window over one
input channel, whose rows start at odd
bytes, gathered into the staged buffer value by value for two pixels.
Each must call its microkernel (the symbol is in the gc-sectioned image) and give the
reference's outputs exactly; a dense layer too short for a call must not call it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import Tensor, single_op_model

from toolchain import pipeline
from toolchain.emu.run import run_image
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.loops.dense_rows import DENSE_ROWS_SYMBOL
from toolchain.loops.rules import UKERNELS
from toolchain.module import read_module
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs
from toolchain.reference import run_graph
from toolchain.target import load_board

SYMBOL = UKERNELS["dsp"].symbol
DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]


def _q(shape, scale: float, zp: int) -> Tensor:
    return Tensor(shape, "int8", scale=scale, zero_point=zp)


def _weights(rng, shape, channels: int, axis: int) -> tuple[Tensor, Tensor]:
    scales = list(rng.uniform(0.002, 0.01, channels))
    w = Tensor(shape, "int8", scale=scales, zero_point=[0] * channels,
               quantized_dimension=axis, data=rng.integers(-127, 128, shape))
    bias = Tensor((channels,), "int32", scale=[0.05 * s for s in scales],
                  zero_point=[0] * channels, data=rng.integers(-3000, 3000, channels))
    return w, bias


def dense(rng, units: int, depth: int):
    w, bias = _weights(rng, (units, depth), units, 0)
    model = single_op_model("FULLY_CONNECTED", [_q((1, depth), 0.05, -7), w, bias],
                            [_q((1, units), 0.2, 3)], fused_activation_function="NONE")
    return model, rng.integers(-128, 128, (1, depth)).astype(np.int8)


def conv(rng, k: int, cin: int, cout: int, hw: tuple[int, int]):
    w, bias = _weights(rng, (cout, k, k, cin), cout, 0)
    shape = (1, *hw, cin)
    model = single_op_model("CONV_2D", [_q(shape, 0.05, 9), w, bias],
                            [_q((1, *hw, cout), 0.3, -2)], padding="SAME", stride_h=1,
                            stride_w=1, dilation_h_factor=1, dilation_w_factor=1,
                            fused_activation_function="RELU")
    return model, rng.integers(-128, 128, shape).astype(np.int8)


def window_conv(rng, cout: int, hw: tuple[int, int]):
    """kws_ref_model's first layer, smaller: one input channel, a 10x4 window, stride 2,
    SAME padding (4 rows above, 5 below, a column each side)."""
    w, bias = _weights(rng, (cout, 10, 4, 1), cout, 0)
    shape = (1, *hw, 1)
    out = (1, -(-hw[0] // 2), -(-hw[1] // 2), cout)
    model = single_op_model("CONV_2D", [_q(shape, 0.05, -128), w, bias],
                            [_q(out, 0.3, -128)], padding="SAME", stride_h=2,
                            stride_w=2, dilation_h_factor=1, dilation_w_factor=1,
                            fused_activation_function="RELU")
    return model, rng.integers(-128, 128, shape).astype(np.int8)


RUNS = UKERNELS["dsp"].runs_symbol
STAGED = UKERNELS["dsp"].staged_symbol  # the input paired once per pixel (Nest.stage)
TWO = UKERNELS["dsp"].two_pixel_symbol  # two pixels staged together, weights interleaved
ONE = UKERNELS["dsp"].one_pixel_symbol  # an odd dim's last pixel against those weights
TWO_ROW = UKERNELS["dsp"].row_calls[-1][1]  # one channel past the last group, two pixels
# name: (model and input, the microkernel its tiles call)
CASES = {
    # Dense layers take the dense-rows kernel (loops/dense_rows.py; more cases in
    # tests/codegen/test_dense_rows.py): 17, 18 and 19 steps, its pairs' 4-step passes
    # entered at the start or the second half, an odd last step
    "dense-68": (lambda rng: dense(rng, 16, 68), DENSE_ROWS_SYMBOL),
    "dense-72": (lambda rng: dense(rng, 16, 72), DENSE_ROWS_SYMBOL),
    "dense-76": (lambda rng: dense(rng, 16, 76), DENSE_ROWS_SYMBOL),
    # 3 tiles a pixel, pixels two at a time along the rows of 5 (the last one alone:
    # the one-pixel call against the same interleaved rows)
    "pointwise-2x4": (lambda rng: conv(rng, 1, 32, 12, (3, 5)), (TWO, ONE)),
    # 61 input channels padded to 64 (schedule/pad_channels.py), rows of 7
    "pointwise-2x4-61": (lambda rng: conv(rng, 1, 61, 12, (3, 7)), (TWO, ONE)),
    # pairs along the rows of 4, none alone; 7 rows
    "pointwise-2x4-even": (lambda rng: conv(rng, 1, 24, 16, (7, 4)), TWO),
    # 5 steps: the 2x4 loop's 4 steps a pass, entered at its last; 7 rows of pixels
    "pointwise-2x4-odd": (lambda rng: conv(rng, 1, 20, 16, (7, 2)), TWO),
    # one tile a pixel: not staged (two tiles are, loops/tables.py STAGE_MIN_TILES_PIXELS)
    "pointwise-64": (lambda rng: conv(rng, 1, 64, 4, (3, 5)), SYMBOL),
    "pointwise-16": (lambda rng: conv(rng, 1, 16, 4, (3, 5)), SYMBOL),  # 4 steps: least
    "pointwise-2x4-8": (lambda rng: conv(rng, 1, 64, 8, (3, 5)), (TWO, ONE)),
    # a run per window row: 3 x 16 and 3 x 8 steps (8 per tap: the least)
    "conv3x3-64": (lambda rng: conv(rng, 3, 64, 4, (4, 4)), RUNS),
    "conv3x3-32": (lambda rng: conv(rng, 3, 32, 4, (4, 5)), RUNS),  # 1 tile: not staged
    # 3 tiles a pixel: the window of two pixels staged, one 2x4 call over its 9 x 4
    # steps; its SAME border kept in RAM (schedule/pad_channels.py
    # _keeps_word_border: half the 7x8 bordered map is border), so every pixel pairs
    "conv3x3-staged": (lambda rng: conv(rng, 3, 16, 12, (5, 6)), TWO),
    # the same on 13x15, whose border (under a quarter of the map) stays fused: its
    # taps outside the input staged as the pad value, border pixels included, a pixel
    # of each row of 15 alone
    "conv3x3-staged-border": (lambda rng: conv(rng, 3, 16, 12, (13, 15)), (TWO, ONE)),
    # 13 channels padded to 16 in the window (its reads checked: no interior), rows of 7
    "conv3x3-13-staged": (lambda rng: conv(rng, 3, 13, 8, (5, 7)), (TWO, ONE)),
    # 2x4 tiles over 17 x 9 steps (entering the 4-step pass at its last step)
    "conv3x3-68-staged": (lambda rng: conv(rng, 3, 68, 12, (3, 4)), TWO),
    # a 5x5 window of whole words, staged once per pixel as the 3x3 (its 25 x 8 steps
    # were a packed loop per tap, 0.55 MAC per instruction on cortex-m4, now 1.1)
    "conv5x5-staged": (lambda rng: conv(rng, 5, 32, 12, (5, 6)), TWO),
    # 3 steps a tap, too few for a call per tap, but the staged window is one call
    "conv5x5-12-staged": (lambda rng: conv(rng, 5, 12, 12, (5, 6)), TWO),
    # 13 outputs: 3 groups of 4 in 2x4 calls and the last channel one row's call
    # (its group padded with zero rows, schedule/paired.py; more cases in
    # tests/codegen/test_dot_ukernel_channel_tail.py)
    "conv5x5-13-outputs": (lambda rng: conv(rng, 5, 16, 13, (5, 6)), (TWO, TWO_ROW)),
    # 2 tiles: a window is staged from 2 (loops/tables.py STAGE_MIN_WINDOW_TILES)
    "conv5x5-8-outputs": (lambda rng: conv(rng, 5, 16, 8, (5, 6)), TWO),
    "conv3x3-13-rows": (lambda rng: conv(rng, 3, 16, 13, (5, 6)), (TWO, TWO_ROW)),
    "conv5x5-7-rows": (lambda rng: conv(rng, 5, 32, 7, (5, 6)), DENSE_ROWS_SYMBOL),
    # rows of 4 taps at odd bytes: the window gathered into the staged buffer value by
    # value (the pad value outside the input), two pixels' in one call over 10 steps.
    # Such a layer now takes the im2col kernel (codegen/first_layers.py) where its
    # records fit the flash room; this one is built without them (FIRST_LAYER_OFF).
    "conv10x4-gathered": (lambda rng: window_conv(rng, 12, (13, 10)), TWO),
}
FIRST_LAYER_OFF = {"conv10x4-gathered"}


def _build_and_run(model: bytes, x: np.ndarray, board: str, out: Path):
    result = compile_graph(import_model(read_model(model)), load_board(board), out,
                           log=lambda _: None)
    module = read_module(result.module)
    run = run_image(result.board, result.elf, encode_inputs(module.inputs, [x]),
                    count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    with open(result.elf, "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    return decode_outputs(module.outputs, run.outputs)[0], symbols


@pytest.mark.parametrize("board", DSP_BOARDS)
@pytest.mark.parametrize("name", CASES)
def test_microkernel_matches_the_reference(name: str, board: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    make, wanted = CASES[name]
    if name in FIRST_LAYER_OFF:
        monkeypatch.setattr(pipeline, "store_first_layer_records", lambda *args: 0)
    model, x = make(np.random.default_rng(sum(map(ord, name))))
    got, symbols = _build_and_run(model, x, board, tmp_path / "fw")
    for symbol in (wanted,) if isinstance(wanted, str) else wanted:
        assert symbol in symbols, f"{name} on {board} does not call {symbol}"
    want = run_graph(import_model(read_model(model)), [x])[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_short_reduction_stays_generated_code(tmp_path: Path) -> None:
    # 3 steps of 4 (1,200 points: not cold): a call would cost more than it saves
    # (loops/rules.py UKERNELS).
    model, x = dense(np.random.default_rng(3), 100, 12)
    got, symbols = _build_and_run(model, x, "cortex-m4", tmp_path / "fw")
    assert SYMBOL not in symbols
    want = run_graph(import_model(read_model(model)), [x])[0]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("case", ["pointwise-8", "dense-8"])
def test_two_step_reductions(case: str, tmp_path: Path) -> None:
    """A packed loop of 2 steps (8 channels) is written out where its tile reads at most
    2 paired weight rows a step (a 1x1 convolution over 8 channels: 2 pixels x 2
    channels), and stays a loop with 4 rows (a dense layer's 4-row tile, which written
    out spills): both bit-exact on cortex-m4."""
    from toolchain.loops.rules import packed_written_out

    assert packed_written_out(2, 2) and not packed_written_out(2, 4)
    assert not packed_written_out(3, 1)
    rng = np.random.default_rng(8)
    model, x = conv(rng, 1, 8, 16, (6, 8)) if case == "pointwise-8" else dense(rng, 128, 8)
    got, _ = _build_and_run(model, x, "cortex-m4", tmp_path / "fw")
    want = run_graph(import_model(read_model(model)), [x])[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
