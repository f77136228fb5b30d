"""The stride-2 depthwise 3x3 kernels (runtime_c/ukernel/dsp/mrt_dw_s2_dsp.c shared by
every layer, and a layer's own assembly calls, codegen/depthwise_s2_asm.py, where its
records are doubled and its code fits the room; codegen/depthwise_s2.py,
loops/depthwise.py's `RowPairPlan.stride`) under QEMU, bit for bit against the numpy
reference and TFLite Micro's interpreter.

int8 3x3 depthwise layers of stride 2, multiplier 1, over channel counts that are and
are not multiples of 4 (3 to 67: the staging reads words, or single values past the last
whole word), SAME padding (even sizes: no pad above and left; odd: one) and VALID, odd
and even output heights (an odd last row alone, its pairs in slots 0 and 1; every parity
of the number of two-row calls, top-down and bottom-up), one output
row, one output column, rows too wide for one band of staged columns (each band over
all its rows before the next, and in row order: every band of two rows before the next
two rows, the order a result placed over its operand takes); biases too large
for the doubled records (the kernel's other requantization, each call staging its
pairs); records made on the stack; the calls run bottom-up; a chain of layers (the arena
may place a result over its operand). Layers of stride 2 the kernel does not take
(multiplier 2, 1 or 2 channels, rows that would need bands of under 3 columns) stay
exact through the generated tiles. One firmware holds a group of layers, each with its
own graph input and output.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from depthwise_models import reverse_row_pairs, run_depthwise

from toolchain.codegen import depthwise_s2_asm
from toolchain.codegen.depthwise_s2 import KERNEL_S2_SYMBOL
from toolchain.loops.depthwise import banded_row_order
from toolchain.schedule import depthwise_records, row_pair_records
from toolchain.schedule.row_pair_records import store_row_pair_records

# (h, w, channels, multiplier, padding)
CHANNELS = [(10, 10, c, 1, pad) for c, pad in ((3, "SAME"), (8, "VALID"), (13, "SAME"),
                                               (16, "SAME"), (31, "VALID"), (61, "SAME"),
                                               (64, "SAME"), (67, "VALID"))]
SHAPES = [(20, 20, 8, 1, "SAME"), (19, 6, 13, 1, "SAME"), (19, 6, 16, 1, "VALID"),
          (9, 11, 7, 1, "SAME"), (12, 7, 5, 1, "VALID"), (2, 9, 8, 1, "SAME"),
          (3, 3, 8, 1, "VALID"), (11, 2, 8, 1, "SAME"), (1, 12, 4, 1, "SAME"),
          (14, 1, 4, 1, "SAME")]
# Rows too wide for one band of staged columns (loops/depthwise.py `RowPairPlan.band`):
# 2 or more bands of output columns, the first and last with pad columns (SAME of odd
# width: one on each side), each all its rows before the next (`banded_row_order`: every
# band of two rows before the next two, test_bands_in_row_order).
BANDS = [(10, 40, 32, 1, "SAME"), (9, 45, 24, 1, "SAME"), (11, 43, 20, 1, "VALID"),
         (12, 12, 64, 1, "SAME"), (7, 30, 61, 1, "SAME")]
# Output heights 2-8, so 1-4 calls of two rows with and without an odd last row: the
# even pairs alternate slots 0 and 2 with the call's parity (codegen/depthwise_s2.py),
# the phase set by an odd last row, the two new pairs staged together, a last pair below
# the input filled with the pad pair (SAME maps of 4q and 4q + 2 rows, of 4q + 1 and
# 4q + 3 with a pad row above); channel counts of every remainder mod 4 (the channel
# loop: four channels a pass from 3 on, entered at the tile (4 - r) mod 4 of the pass:
# 12, 7, 6, 21 and 9; two a pass for 1 and 2, entered at the second or first).
PARITIES = [(4, 9, 7, 1, "SAME"), (5, 8, 6, 1, "SAME"), (7, 12, 21, 1, "VALID"),
            (9, 7, 12, 1, "VALID"), (11, 11, 23, 1, "VALID"), (12, 10, 19, 1, "SAME"),
            (13, 10, 9, 1, "SAME"), (17, 5, 15, 1, "VALID"), (15, 6, 10, 1, "SAME"),
            (8, 8, 2, 1, "SAME"), (6, 5, 1, 1, "VALID")]
# The layers' own assembly calls (codegen/depthwise_s2_asm.py) over 1-67 channels (past
# 32, maps whose code fits loops/depthwise.py's ASM_S2_ROOM_BYTES):
# every column written out (few tiles, or up to 4 channels under 6 columns), loops of
# 3 columns (up to 4 channels: 20x20x2, 21x21x4) or of one (more channels; inner widths
# of every remainder mod 3 after a loop of 3), SAME of even sizes (a pad column right of
# the last output column: its products in the edge's records) and odd ones (one on each
# side), VALID, odd heights (row y alone), one output column (a left edge alone, a right
# one alone), two edge columns and no inner one (3x3 SAME).
OWN_SWEEP = [(10, 10, 1, 1, "SAME"), (20, 20, 2, 1, "SAME"), (9, 9, 3, 1, "VALID"),
             (7, 7, 4, 1, "SAME"), (21, 21, 4, 1, "SAME"), (13, 12, 6, 1, "VALID"),
             (15, 15, 9, 1, "SAME"), (16, 16, 17, 1, "SAME"), (11, 11, 33, 1, "SAME"),
             (6, 13, 47, 1, "VALID"), (6, 6, 40, 1, "SAME"), (5, 3, 67, 1, "VALID"),
             (5, 1, 12, 1, "SAME"), (11, 2, 8, 1, "SAME"), (3, 3, 5, 1, "SAME"),
             (9, 3, 2, 1, "SAME"), (16, 16, 3, 1, "SAME"), (18, 18, 4, 1, "VALID")]
NOT_TAKEN = [(10, 10, 8, 2, "SAME"), (6, 6, 128, 1, "SAME")]  # the last: bands of 2
# columns (MIN_BAND). Small outputs (1-2 channels on 10x10) are taken: their per-channel
# constants stay broadcasts (passes/fold.py), so their requantization folds to records.
SMALL = [(10, 10, 1, 1, "SAME"), (10, 10, 2, 1, "SAME"), (9, 9, 2, 1, "VALID")]


SHARED, OWN = "shared", "own"  # runtime_c's mrt_dw3_s2_s8, the layers' own assembly


def _run(layers, board: str, tmp_path: Path, seed: int, chain: bool = False,
         big_bias: bool = False, optimize: str = "auto") -> set[str]:
    """tests/depthwise_models.py run_depthwise over (h, w, c, multiplier, padding)
    layers of a 3x3 window at stride 2; which stride-2 kernels ran: SHARED and / or
    OWN (codegen/depthwise_s2_asm.py's calls)."""
    symbols = run_depthwise([(h, w, c, m, 3, 3, 2, 1, pad) for h, w, c, m, pad in layers],
                            board, tmp_path, seed, chain, big_bias, optimize)
    ran = {OWN} if any(s.startswith(depthwise_s2_asm.STEM + "_") for s in symbols) else set()
    return ran | ({SHARED} if KERNEL_S2_SYMBOL in symbols else set())


def _shared_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the builds under `monkeypatch` run every stride-2 layer by the shared
    kernel (no layer's own assembly calls)."""
    monkeypatch.setattr(row_pair_records, "asm_s2_tiles", lambda *a, **kw: False)


@pytest.mark.parametrize("kernel", [OWN, SHARED])
@pytest.mark.parametrize("group", ["channels", "shapes", "bands"])
def test_stride2_on_cortex_m4(group: str, kernel: str, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every group by the layers' own assembly calls where the flash room takes them,
    and by the shared kernel alone."""
    if kernel == SHARED:
        _shared_only(monkeypatch)
    layers = {"channels": CHANNELS, "shapes": SHAPES, "bands": BANDS}[group]
    ran = _run(layers, "cortex-m4", tmp_path, seed=len(group))
    assert kernel in ran if kernel == OWN else ran == {SHARED}


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_stride2_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    """(cortex-m55 takes Helium lanes for these layers: 0.79 MAC/instruction on 20x20x16,
    loops/rules.py _lanes_beat_row_pairs.)"""
    layers = CHANNELS[::2] + SHAPES[::3] + BANDS[::2]
    assert OWN in _run(layers, board, tmp_path, seed=7)


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m7", "cortex-m33"])
def test_own_calls_over_1_to_67_channels(board: str, tmp_path: Path) -> None:
    """The layers' own assembly calls, exact on each DSP board, where the shared kernel
    serves none of the layers."""
    assert _run(OWN_SWEEP, board, tmp_path, seed=31) == {OWN}


def test_many_channels_with_their_edges_unfolded(tmp_path: Path) -> None:
    """Layers whose own calls' code with the edge columns folded would pass
    ASM_S2_ROOM_BYTES (10x10x64: 5 output columns, 3 call kinds; 20x20x48 in two bands
    of 5 columns) take them with every column an inner one (loops/depthwise.py
    asm_s2_folds): exact."""
    assert _run([(10, 10, 64, 1, "SAME"), (20, 20, 48, 1, "SAME")], "cortex-m4", tmp_path,
                seed=35) == {OWN}


def test_own_calls_not_under_optimize_size(tmp_path: Path) -> None:
    """Under --optimize size no records are bound (schedule/row_pair_records.py), so no
    layer takes its own calls: the shared kernel, exact."""
    assert _run(OWN_SWEEP[:4], "cortex-m4", tmp_path, seed=33, optimize="size") == {SHARED}


def test_biases_too_large_to_double(tmp_path: Path) -> None:
    """Twice the sum might not be an int32: the records keep the layer's own weights,
    the kernel the 64-bit requantization (SMLAL), each call staging its three pairs."""
    layers = [CHANNELS[2], CHANNELS[4], SHAPES[1], SHAPES[5], BANDS[1]]
    assert _run(layers, "cortex-m4", tmp_path, seed=9, big_bias=True)


def test_records_made_on_the_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the build-time records (schedule/row_pair_records.py) the dispatch makes
    them on its stack, doubled or not as a loop over the channels finds: still exact."""
    monkeypatch.setattr(depthwise_records, "STORES", tuple(
        s for s in depthwise_records.STORES if s is not store_row_pair_records))
    layers = [CHANNELS[1], SHAPES[1], SHAPES[3]]
    assert _run(layers, "cortex-m4", tmp_path / "a", seed=15) == {SHARED}
    assert _run(layers, "cortex-m4", tmp_path / "b", seed=16, big_bias=True) == {SHARED}


def test_bottom_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nest run in reverse (a result placed above its operand: the last rows first,
    staged from the bottom), forced on every row-pair layer, doubled records or not."""
    reverse_row_pairs(monkeypatch)
    layers = CHANNELS[:3] + SHAPES[:6] + BANDS[:2]
    assert OWN in _run(layers, "cortex-m4", tmp_path / "a", seed=13)
    assert _run(layers[2:6] + BANDS[1:3], "cortex-m4", tmp_path / "b", seed=14, big_bias=True)


@pytest.mark.parametrize("kernel", [OWN, SHARED])
@pytest.mark.parametrize("bottom_up", [False, True])
def test_slot_parities(bottom_up: bool, kernel: str, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every parity of the number of two-row calls, with and without an odd last row and
    a last pair below the input, top-down and bottom-up (the last rows first), by the
    layers' own calls and by the shared kernel."""
    if bottom_up:
        reverse_row_pairs(monkeypatch)
    if kernel == SHARED:
        _shared_only(monkeypatch)
    layers = PARITIES + BANDS[3:]  # bands whose last two rows' third pair is the pad pair
    assert kernel in _run(layers, "cortex-m4", tmp_path, seed=17 + bottom_up)


def _bands_in_row_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the builds under `monkeypatch` run every banded stride-2 nest in row order
    (loops/depthwise.py `banded_row_order`), as where the arena starts the result over
    its operand (schedule/program.py `_looser`)."""
    from toolchain.codegen import image
    chosen = image.choose_schedule

    def in_row_order(k, target):
        s = chosen(k, target)
        rows = [banded_row_order(n) for n in s.nests]
        return s if None in rows else replace(s, nests=tuple(rows))

    monkeypatch.setattr(image, "choose_schedule", in_row_order)


@pytest.mark.parametrize("bottom_up", [False, True])
def test_bands_in_row_order(bottom_up: bool, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Bands run every two rows in turn (each band's call staging its three pairs) where
    the arena places a result over its operand, top-down and bottom-up, doubled records
    or not; the same layers' bands each over all their rows in the other tests."""
    if bottom_up:
        reverse_row_pairs(monkeypatch)
    _bands_in_row_order(monkeypatch)
    assert OWN in _run(BANDS, "cortex-m4", tmp_path / "a", seed=21 + bottom_up)
    assert _run(BANDS[1:4], "cortex-m4", tmp_path / "b", seed=23 + bottom_up, big_bias=True)


def test_a_chain_of_banded_layers(tmp_path: Path) -> None:
    """Banded layers whose input dies at them: the arena may start a result over its
    operand, in row order (`banded_row_order`), or place it apart, the bands each over
    all their rows."""
    layers = [(48, 48, 32, 1, "SAME"), (24, 24, 32, 1, "SAME"), (12, 12, 32, 1, "VALID")]
    assert OWN in _run(layers, "cortex-m4", tmp_path, seed=5, chain=True)


def test_a_chain_of_layers(tmp_path: Path) -> None:
    """Each layer's input dies at it, so the arena may start its result over it."""
    layers = [(48, 48, 16, 1, "SAME"), (24, 24, 16, 1, "SAME"), (12, 12, 16, 1, "VALID")]
    assert OWN in _run(layers, "cortex-m4", tmp_path, seed=3, chain=True)


def test_small_outputs(tmp_path: Path) -> None:
    assert OWN in _run(SMALL, "cortex-m4", tmp_path, seed=12)


def test_layers_it_does_not_take_stay_exact(tmp_path: Path) -> None:
    assert not _run(NOT_TAKEN, "cortex-m4", tmp_path, seed=11)
