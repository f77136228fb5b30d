"""The depthwise row-pair microkernel (runtime_c/ukernel/dsp/mrt_dw_dsp.c, codegen/
depthwise_pairs.py, loops/depthwise.py) under QEMU, bit for bit against the numpy
reference and TFLite Micro's interpreter.

int8 3x3 depthwise layers of stride 1 (multipliers 1 and 2) over channel counts that are and
are not multiples of 4 (3 to 67: the staging reads whole words where a row is aligned,
value by value where it is not), SAME and VALID padding, odd and even heights (an odd
last row's partner goes to a scratch row), one row, one column, two rows, and biases
too large for the doubled records, and layers of 1 or 2 channels (their bias and
requantization constants broadcasts, the bias of one channel added in the epilogue).
The layers the kernel does not take (stride 2, dilation 2, 5x5, 3x1 and 1x3 windows,
multiplier 3) stay exact through the generated tiles. A chain of depthwise layers lets
the arena place a result over its dying operand (the row pairs' order,
schedule/overlap.py). One firmware holds
a group of layers, each with its own graph input and output; a group the kernel takes
must link its symbol, one it does not must not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from depthwise_models import reverse_row_pairs, run_depthwise

from toolchain.codegen import depthwise_asm
from toolchain.codegen.depthwise_pairs import (
    FILL_INLINE,
    FILL_SMALL_SYMBOL,
    FILL_SYMBOL,
    KERNEL_SYMBOL,
    KERNEL_X2_SYMBOL,
    QUAD_SYMBOL,
    QUAD_TAILS_SYMBOL,
    QUAD_TAILS_X2_SYMBOL,
    QUAD_X2_SYMBOL,
    STAGE_TWO_PAD,
    STAGE_TWO_SYMBOL,
)
from toolchain.schedule import depthwise_records
from toolchain.schedule.row_pair_records import store_row_pair_records

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]
KERNELS = {KERNEL_SYMBOL, KERNEL_X2_SYMBOL, QUAD_SYMBOL, QUAD_X2_SYMBOL, QUAD_TAILS_SYMBOL,
           QUAD_TAILS_X2_SYMBOL}

# (h, w, channels, multiplier, kh, kw, stride, dilation, padding)
TAKEN = {
    "channels": [(19, 6, c, 1, 3, 3, 1, 1, "SAME")
                 for c in (3, 4, 5, 7, 8, 13, 16, 31, 61, 64, 67)],
    "shapes": [(10, 10, 8, 1, 3, 3, 1, 1, "SAME"), (10, 10, 13, 1, 3, 3, 1, 1, "VALID"),
               (12, 7, 16, 1, 3, 3, 1, 1, "VALID"), (7, 9, 8, 1, 3, 3, 1, 1, "SAME"),
               (2, 20, 8, 1, 3, 3, 1, 1, "SAME"), (1, 40, 8, 1, 3, 3, 1, 1, "SAME"),
               (40, 1, 8, 1, 3, 3, 1, 1, "SAME"), (9, 2, 16, 1, 3, 3, 1, 1, "SAME"),
               (25, 5, 64, 1, 3, 3, 1, 1, "SAME"), (6, 6, 33, 1, 3, 3, 1, 1, "SAME")],
    # A depth multiplier of 2: output channels 2c and 2c + 1 read input channel c.
    "multiplier2": [(19, 6, c, 2, 3, 3, 1, 1, "SAME") for c in (3, 4, 13, 32, 33)]
    + [(10, 10, 13, 2, 3, 3, 1, 1, "VALID"), (7, 9, 8, 2, 3, 3, 1, 1, "SAME")],
}
# 4-row tiles (mrt_dw3_quad_s8) and every remainder of rows (0-3: a pair, a single row,
# both), odd channel counts, both multipliers, SAME and VALID.
QUADS = [(h, 6, c, m, 3, 3, 1, 1, pad)
         for h, c, m, pad in ((4, 7, 1, "SAME"), (5, 13, 2, "SAME"), (6, 3, 1, "SAME"),
                              (7, 5, 2, "SAME"), (8, 61, 1, "VALID"), (9, 3, 2, "VALID"),
                              (11, 31, 1, "SAME"), (13, 67, 1, "VALID"), (14, 9, 2, "SAME"))]
NOT_TAKEN = [(10, 10, 16, 1, 3, 3, 2, 1, "SAME"), (19, 6, 16, 1, 3, 3, 1, 2, "SAME"),
             (10, 10, 16, 1, 5, 5, 1, 1, "SAME"), (19, 6, 16, 1, 3, 1, 1, 1, "SAME"),
             (19, 6, 16, 1, 1, 3, 1, 1, "SAME"), (10, 10, 8, 3, 3, 3, 1, 1, "SAME")]
# 1 and 2 channels (multiplier 1), 1 input channel to 2 (multiplier 2): maps of under 256
# outputs, where the constants were once folded into per-pixel arrays.
FEW_CHANNELS = [(h, w, c, m, 3, 3, 1, 1, pad)
                for h, w, c, m, pad in ((19, 6, 1, 1, "SAME"), (19, 6, 2, 1, "SAME"),
                                        (10, 10, 1, 1, "SAME"), (10, 10, 2, 1, "SAME"),
                                        (19, 6, 1, 2, "SAME"), (10, 10, 1, 2, "SAME"),
                                        (7, 5, 1, 1, "VALID"), (9, 4, 2, 1, "VALID"),
                                        (6, 9, 1, 2, "VALID"), (13, 3, 2, 1, "SAME"))]


def _run(layers, board: str, tmp_path: Path, seed: int, chain: bool = False,
         big_bias: bool = False) -> set[str]:
    """tests/depthwise_models.py run_depthwise over the layers as they are."""
    return run_depthwise(layers, board, tmp_path, seed, chain, big_bias)


@pytest.mark.parametrize("group", sorted(TAKEN))
def test_row_pairs_on_cortex_m4(group: str, tmp_path: Path) -> None:
    symbols = _run(TAKEN[group], "cortex-m4", tmp_path, seed=len(group))
    x2 = group == "multiplier2"
    assert (QUAD_X2_SYMBOL if x2 else QUAD_SYMBOL) in symbols
    # Each its own section, dropped unless called.
    assert (QUAD_X2_SYMBOL in symbols) == x2 and (QUAD_SYMBOL in symbols) != x2
    # Maps of under 4 rows (group "shapes") keep the row pairs.
    assert (KERNEL_SYMBOL in symbols) == (group == "shapes")


def test_quads_and_their_remainders(tmp_path: Path) -> None:
    """4-row tiles over 4-14 rows (remainders of 0-3 rows: a pair, a single row or
    both, in the 3-slot layout), against the reference and TFLite Micro."""
    symbols = _run(QUADS, "cortex-m4", tmp_path, seed=21)
    assert QUAD_SYMBOL in symbols and QUAD_X2_SYMBOL in symbols
    # 4-row tiles by the tails kernels (the shift an SSAT immediate, by TBH on s)
    assert QUAD_TAILS_SYMBOL in symbols and QUAD_TAILS_X2_SYMBOL in symbols
    assert KERNEL_SYMBOL not in symbols and KERNEL_X2_SYMBOL not in symbols


def test_one_and_two_channels(tmp_path: Path) -> None:
    """1 and 2 channels take the 4-row kernels' tails too, bit-exact: their records are
    repeated over the row (schedule/row_pair_records.py), so the dispatch calls the tails
    kernels alone (not linking the others); now, of up to 3 output channels, the layer's
    own assembly tiles (codegen/depthwise_asm.py, tests/codegen/test_depthwise_asm.py)."""
    symbols = _run(FEW_CHANNELS, "cortex-m4", tmp_path, seed=17)
    assert not {QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL} & symbols
    assert any(s.startswith(f"{depthwise_asm.STEM}_") for s in symbols)
    assert not {QUAD_SYMBOL, QUAD_X2_SYMBOL} & symbols


def test_row_pairs_where_three_slots_do_not_fit(tmp_path: Path) -> None:
    """13 columns of 64 channels: the 4-row tiles' 3 slots of staged rows (11.25 KB)
    pass QUAD_STACK_BYTES, the row pairs' 2 (7.5 KB) do not."""
    symbols = _run([(6, 13, 64, 1, 3, 3, 1, 1, "SAME")], "cortex-m4", tmp_path, seed=22)
    assert KERNEL_SYMBOL in symbols and QUAD_SYMBOL not in symbols


@pytest.mark.parametrize("reverse", [False, True])
def test_quads_of_twelve_columns_over_61_and_64_channels(
        reverse: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """odd_cnn_int8's 12x12x61 (3 slots 10,248 B) and vww_96's 12x12x64 (10,752 B):
    past STACK_BYTES, within QUAD_STACK_BYTES, so 4-row tiles, top-down and bottom-up
    (odd_cnn's layer is placed over its input), and a VALID map of 63 channels."""
    if reverse:
        reverse_row_pairs(monkeypatch)
    layers = [(12, 12, 61, 1, 3, 3, 1, 1, "SAME"), (12, 12, 64, 1, 3, 3, 1, 1, "SAME"),
              (9, 12, 63, 1, 3, 3, 1, 1, "VALID")]
    symbols = _run(layers, "cortex-m4", tmp_path, seed=23 + reverse)
    assert QUAD_TAILS_SYMBOL in symbols and KERNEL_SYMBOL not in symbols


@pytest.mark.parametrize("board", DSP_BOARDS[1:])
def test_row_pairs_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    layers = TAKEN["channels"][::3] + TAKEN["shapes"][::2] + TAKEN["multiplier2"][::3]
    symbols = _run(layers + QUADS[::2], board, tmp_path, seed=7)
    assert {QUAD_SYMBOL, QUAD_X2_SYMBOL, KERNEL_SYMBOL} <= symbols


def test_biases_too_large_to_double(tmp_path: Path) -> None:
    """Where a bias is beyond +-2**29 twice the sum might not be an int32: the records
    keep the layer's own weights and the kernel the 64-bit requantization (SMLAL)."""
    layers = [(19, 6, 8, 1, 3, 3, 1, 1, "SAME"), (10, 10, 13, 1, 3, 3, 1, 1, "VALID"),
              (9, 6, 13, 2, 3, 3, 1, 1, "SAME"), (2, 20, 8, 1, 3, 3, 1, 1, "SAME")]
    symbols = _run(layers, "cortex-m4", tmp_path, seed=9, big_bias=True)
    # The 4-row layout's layers run as pairs of rows there (its 4-row code is doubled).
    assert {QUAD_SYMBOL, QUAD_X2_SYMBOL, KERNEL_SYMBOL} <= symbols


# A 4-row tile's two new pairs in adjacent slots, staged by one call (mrt_dw_stage_two_
# pairs3_s8): both maps of the sweep over odd and even channel counts, rows whose length
# leaves every remainder after the passes of 8 values (a pass of 4, 1-3 single values:
# 7 columns), aligned and unaligned rows, both multipliers, SAME and VALID.
STAGED_IN_TWOS = [(h, w, c, m, 3, 3, 1, 1, pad)
                  for h, w, c, m, pad in ((10, 10, 7, 1, "SAME"), (10, 10, 12, 1, "SAME"),
                                          (10, 10, 13, 1, "SAME"), (10, 10, 31, 1, "VALID"),
                                          (19, 6, 7, 1, "SAME"), (19, 6, 8, 1, "SAME"),
                                          (19, 6, 13, 1, "VALID"), (13, 7, 1, 1, "SAME"),
                                          (9, 7, 3, 1, "SAME"), (10, 7, 5, 1, "VALID"),
                                          (12, 7, 7, 1, "SAME"), (10, 10, 7, 2, "SAME"),
                                          (19, 6, 4, 2, "VALID"), (8, 7, 5, 2, "SAME"))]


@pytest.mark.parametrize("reverse", [False, True], ids=["top-down", "bottom-up"])
def test_pairs_staged_two_at_a_time(reverse: bool, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every 4-row tile stages its two new pairs by one call where its rows are inside
    the input (bottom-up, SAME: the top tile's pairs read the row above the map, staged
    pair by pair), bit-exact with the reference and TFLite Micro."""
    if reverse:
        reverse_row_pairs(monkeypatch)
    symbols = _run(STAGED_IN_TWOS, "cortex-m4", tmp_path, seed=23 + reverse)
    assert {STAGE_TWO_SYMBOL, QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL} <= symbols


# Maps of 4q + 2 rows, q even: the first two rows, then the 4-row tiles, every pair staged
# two at a time (the top and bottom pairs by the pad-row stagers where SAME reads outside
# the input); q odd, and bottom-up, keep the usual order.
TWO_ROWS_FIRST = [(h, w, c, m, 3, 3, 1, 1, pad)
                  for h, w, c, m, pad in ((10, 10, 7, 1, "SAME"), (10, 10, 12, 1, "SAME"),
                                          (10, 10, 13, 1, "VALID"), (18, 6, 5, 1, "SAME"),
                                          (18, 7, 3, 1, "VALID"), (10, 9, 1, 1, "SAME"),
                                          (10, 10, 2, 2, "SAME"), (18, 5, 7, 2, "SAME"),
                                          (14, 6, 8, 1, "SAME"), (6, 10, 9, 1, "SAME"))]


@pytest.mark.parametrize("reverse", [False, True], ids=["top-down", "bottom-up"])
def test_two_rows_first(reverse: bool, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Bit-exact with the reference and TFLite Micro in either order."""
    if reverse:
        reverse_row_pairs(monkeypatch)
    symbols = _run(TWO_ROWS_FIRST, "cortex-m4", tmp_path, seed=31 + reverse)
    assert ({STAGE_TWO_PAD["a"], STAGE_TWO_PAD["d"]} <= symbols) != reverse


def test_two_rows_first_in_a_chain(tmp_path: Path) -> None:
    """Each 10x10 layer's result may start over its dying operand (the arena's overlap
    walk models the row pairs top-down, which this order keeps)."""
    symbols = _run([(10, 10, 16, 1, 3, 3, 1, 1, "SAME")] * 4, "cortex-m4", tmp_path, seed=5,
                   chain=True)
    assert STAGE_TWO_PAD["a"] in symbols


def test_row_pairs_bottom_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nest run in reverse (a result placed above its operand: the last row pair
    first, staged from the bottom): forced on every row-pair layer, still exact."""
    reverse_row_pairs(monkeypatch)
    symbols = _run(TAKEN["shapes"] + QUADS, "cortex-m4", tmp_path, seed=13)
    assert {QUAD_SYMBOL, QUAD_X2_SYMBOL, KERNEL_SYMBOL} <= symbols


def test_records_made_on_the_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the build-time records (schedule/row_pair_records.py) the dispatch makes
    them on its stack, doubled or not as a loop over the channels finds: still exact."""
    monkeypatch.setattr(depthwise_records, "STORES", tuple(
        s for s in depthwise_records.STORES if s is not store_row_pair_records))
    layers = TAKEN["shapes"][:4] + QUADS[1:3] + FEW_CHANNELS[::4]
    assert QUAD_SYMBOL in _run(layers, "cortex-m4", tmp_path / "a", seed=15)
    assert QUAD_SYMBOL in _run(layers, "cortex-m4", tmp_path / "b", seed=16,
                               big_bias=True)


def test_layers_it_does_not_take_stay_exact(tmp_path: Path) -> None:
    symbols = _run(NOT_TAKEN, "cortex-m4", tmp_path, seed=11)
    assert not KERNELS & symbols


def test_a_chain_of_depthwise_layers(tmp_path: Path) -> None:
    """Each layer's input dies at it, so the arena may start its result over it (below
    it, or above it with the row pairs run bottom-up)."""
    layers = [(19, 6, 16, 1, 3, 3, 1, 1, "SAME")] * 4 + [(25, 5, 64, 1, 3, 3, 1, 1, "SAME")]
    assert QUAD_SYMBOL in _run(layers[:4], "cortex-m4", tmp_path / "a", seed=3, chain=True)
    assert QUAD_SYMBOL in _run([layers[4]] * 3, "cortex-m4", tmp_path / "b", seed=4,
                               chain=True)


def test_riscv_keeps_the_generated_tiles(tmp_path: Path) -> None:
    """No DSP extension: the same layers through the generated code, still exact."""
    assert not KERNELS & _run(TAKEN["shapes"][:3], "riscv32", tmp_path, seed=5)


# 1-9 channels over the sweep's maps (19x6, 10x10) and others, multipliers 1 and 2, SAME
# and VALID: records of up to ROW_RECORDS_BYTES repeated over the row (10x10 over 8
# channels: 3,840 B; over 9, 4,320 B, and 19x6 over 8 to 16, 4,608 B, are not), the
# tails kernel alone, both pad columns by one fill call (1-3 channels: the dispatch's
# stores), the 4-row tiles unrolled up to
# UNROLL_TILES (41 and 38 rows: 10 and 9 tiles, a loop); maps of 4q + 1 rows stage a
# pair of pad rows (by 4 values a pass from 4 on: 1x3, 1x2, 3x3 values a row).
OVER_ROW = [(h, w, c, m, 3, 3, 1, 1, pad)
            for h, w, c, m, pad in ((19, 6, 1, 1, "SAME"), (19, 6, 3, 1, "VALID"),
                                    (19, 6, 4, 1, "SAME"), (19, 6, 7, 1, "SAME"),
                                    (19, 6, 8, 2, "VALID"), (19, 6, 2, 2, "SAME"),
                                    (10, 10, 8, 1, "SAME"), (10, 10, 9, 1, "SAME"),
                                    (10, 10, 7, 1, "VALID"), (10, 10, 4, 1, "SAME"),
                                    (10, 10, 4, 2, "SAME"), (10, 10, 1, 2, "VALID"),
                                    (10, 10, 3, 2, "SAME"), (10, 10, 6, 1, "SAME"),
                                    (13, 9, 5, 1, "SAME"), (7, 11, 2, 2, "SAME"),
                                    (41, 3, 2, 1, "SAME"), (38, 4, 3, 2, "VALID"),
                                    (9, 1, 3, 1, "SAME"), (13, 1, 2, 1, "SAME"),
                                    (17, 3, 3, 1, "SAME"))]


@pytest.mark.parametrize("reverse", [False, True], ids=["top-down", "bottom-up"])
def test_few_channels_with_records_over_the_row(reverse: bool, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Bit-exact with the reference and TFLite Micro, in either order of the tiles."""
    if reverse:
        reverse_row_pairs(monkeypatch)
    symbols = _run(OVER_ROW, "cortex-m4", tmp_path, seed=41 + reverse)
    assert {QUAD_TAILS_SYMBOL, QUAD_TAILS_X2_SYMBOL, FILL_SYMBOL, FILL_SMALL_SYMBOL} <= symbols


# Maps of 4q + 3 output rows over 1-4 channels (rows of up to REST_TWO_BYTES): the 3-row
# remainder's two new pairs by one two-pair call, rows c and d pad rows on SAME (rows h
# and h + 1: the pad_cd stager), row d on VALID (row h_in); rows of 1-24 bytes (passes of
# 8 values, one of 4, 1-3 single values), one column, both multipliers; and the pad
# columns of 1-3 channels (up to FILL_INLINE words a column) stored by the dispatch. One
# row, and 3 rows (no 4-row tile before the remainder), too.
REST_TWO = [(h, w, c, m, 3, 3, 1, 1, pad)
            for h, w, c, m, pad in ((19, 6, 1, 1, "SAME"), (19, 6, 3, 1, "SAME"),
                                    (11, 5, 3, 1, "SAME"), (7, 1, 1, 1, "SAME"),
                                    (15, 1, 3, 1, "SAME"), (11, 8, 3, 1, "SAME"),
                                    (9, 7, 2, 1, "VALID"), (13, 3, 4, 1, "VALID"),
                                    (21, 5, 1, 1, "VALID"), (19, 6, 2, 2, "SAME"),
                                    (7, 4, 1, 2, "SAME"), (9, 5, 3, 2, "VALID"),
                                    (3, 5, 2, 1, "SAME"), (1, 7, 2, 1, "SAME"),
                                    (11, 7, 4, 1, "SAME"), (10, 9, 1, 1, "SAME"))]


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_remainder_pairs_staged_two_at_a_time(board: str, tmp_path: Path) -> None:
    """Bit-exact with the reference and TFLite Micro on every DSP board; the pad_cd and
    pad_d stagers are linked (called), and no fill call where every layer has 1-3
    channels."""
    symbols = _run(REST_TWO, board, tmp_path, seed=51)
    assert {STAGE_TWO_PAD["cd"], STAGE_TWO_PAD["d"], QUAD_TAILS_SYMBOL} <= symbols
    # (a column's words: 3 slots of the input channels)
    few = [layer for layer in REST_TWO if 3 * layer[2] <= FILL_INLINE]
    assert not {FILL_SYMBOL, FILL_SMALL_SYMBOL} & _run(few, board, tmp_path / "few", seed=52)


def test_remainder_pairs_bottom_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bottom-up the remainder comes first, its pairs staged one by one as before: exact."""
    reverse_row_pairs(monkeypatch)
    symbols = _run(REST_TWO[::2], "cortex-m4", tmp_path, seed=53)
    assert STAGE_TWO_PAD["cd"] not in symbols and QUAD_TAILS_SYMBOL in symbols
