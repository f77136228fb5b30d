"""Tiny dense layers written out row by row, no call (issue 21).

A dense layer of a few inputs to a few outputs (the converter models' 16 -> 4 of an LSTM's
head, 16 -> 5 of a Conv1D keyword model) spent as much on a microkernel call's fixed
costs as on its MACs: on cortex-m4, 16 -> 4 with per-channel scales took 131
instructions in the 1x4 kernel's call for 64 MACs (0.49 MAC per instruction): the
kernel 76 (its frame, the input paired step by step, its loop), the generated side 55
(the sums' start copied to a stack array and read back, the call's arguments, 4
requantizations). Written out in the dispatch (codegen/tiny_dense.py) the input is
paired step by step, each row's sum runs from its start in a register over its paired
weight words (two SMLAD a step), and the sums go straight into the requantization:
103 instructions.

This file says which kernels take it (`tiny_dense_candidates`): a dense layer the
dense-rows kernel could take (loops/dense_rows.py dense_rows_dim: one pixel, rows one
after another, an input as stored or padded to whole words with 0), its weights paired,
in tiles of rows whose sums fit the registers (`fits`: measured bounds). Within
these bounds it is the rules' choice (bench/shapes.py and bench/converter_models.py:
docs/architecture.md "Tiny dense layers written out"); the others stay candidates for
the tuner.
"""

from __future__ import annotations

from toolchain.kernel.form import Kernel
from toolchain.loops.dense_rows import dense_rows_dim, weights_paired
from toolchain.loops.tables import DOT_WIDTH

__all__ = ["TINY_DENSE_KIND", "fits", "tile_rows", "tiny_dense_candidates"]

TINY_DENSE_KIND = "dsp_written"  # a nest's `dot` when codegen/tiny_dense.py writes it out
# Where it is faster than the calls (cortex-m4, per-tensor and per-channel scales, 8 to
# 128 inputs, 4 to 16 outputs, measured against the 1x4 and dense-rows calls): a tile's
# sums, two input pairs, two weight words and two pointers fit the registers up to 8
# rows, and there it is faster up to 16 steps (64 -> 8: 607 -> 567 instructions; 128 ->
# 8: 1,039 -> 1,125 slower); more rows spill a sum or two a step, which pays for up to
# 90 row steps (20 -> 16: 640 -> 573, 24 -> 12: 539 -> 468, 36 -> 9: 478 -> 427, 27 ->
# 12: 529 -> 521; 24 -> 16 602 -> 645 and 32 -> 12 557 -> 569 slower, 96 row steps).
HELD_ROWS = 8
HELD_MAX_STEPS = 16
TINY_MAX_ROWS = 16
SPILLED_MAX_ROW_STEPS = 90
# A tile's rows (`tile_rows`): up to HELD_ROWS all of them. More are split into tiles
# of these (the largest that divides them), whose sums fit the registers, the input
# paired again for each: past TINY_MAX_ROWS always (a squeeze-excite 9 -> 36: 6 tiles
# of 6, 1,144 -> 956 instructions, in 3 tiles of 12 990; 16 -> 32 965 -> 840, in tiles
# of 16 898), up to it from SPLIT_MIN_STEPS steps on (16 -> 16 441 -> 418, 24 -> 12
# 468 -> 444 against one tile; 12 -> 12 313 against 328 split, 16 -> 10 in tiles of 5
# 268 against 256 whole).
TILE_ROWS = (8, 6)
SPLIT_MIN_STEPS = 4
# Tiles past the first pair the input again each; the dense-rows call pairs it once for
# all of them. Up to this many steps the tiles are faster (48 -> 32 in 4 tiles of 8:
# 1,853 -> 1,776 instructions); from 16 slower (64 -> 32: 2,158 -> 2,216).
TILES_MAX_STEPS = 12
# Instructions, counted from the code LLVM makes of it on cortex-m4: per step of the
# input its load (half an LDRD) and two SXTB16; per row and step the two paired words
# (one LDRD) and two SMLAD; per row its sum's start; per tile the pointers.
PAIR_STEP = 2.5
ROW_STEP = 3
PER_ROW = 1
PER_TILE = 4


def fits(rows: int, steps: int) -> bool:
    """Whether a tile of `rows` rows over `steps` packed steps is written out (the bounds
    above)."""
    if rows <= HELD_ROWS:
        return steps <= HELD_MAX_STEPS
    return rows <= TINY_MAX_ROWS and rows * steps <= SPILLED_MAX_ROW_STEPS


def tile_rows(rows: int, steps: int) -> int | None:
    """The rows of each written-out tile of a dense layer of `rows` outputs over `steps`
    packed steps, or None where it keeps the calls."""
    if rows <= HELD_ROWS:
        return rows if fits(rows, steps) else None
    split = next((t for t in TILE_ROWS if rows % t == 0 and fits(t, steps)), None)
    if rows <= TINY_MAX_ROWS:
        if not fits(rows, steps):
            return None  # 24 -> 16 in two tiles of 8: 609 instructions, one call 602
        return split if split is not None and steps >= SPLIT_MIN_STEPS else rows
    return split if steps <= TILES_MAX_STEPS else None


def tiny_dense_candidates(k: Kernel, int8_dot: str, epilogue: int) -> list[tuple]:
    """The candidate tuple (loops/rules.py _reduction_nest's form) of `k`'s rows written
    out, costed; [] where it does not apply (see the module docstring). Where there is
    one the rules take it (loops/rules.py), the others staying for the tuner."""
    c = dense_rows_dim(k, int8_dot)
    if c is None or not weights_paired(k):  # int8 weights (--optimize size): the calls
        return []
    (r,) = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    rows, steps = k.domain[c], k.domain[r] // DOT_WIDTH
    tile = tile_rows(rows, steps)
    if tile is None:
        return []
    tiles = rows // tile
    per_tile = PER_TILE + steps * PAIR_STEP + tile * (steps * ROW_STEP + PER_ROW + epilogue)
    return [((False, tiles * per_tile, tile, 1), per_tile, {c: tile}, (), (r,), 1,
             TINY_DENSE_KIND, 1)]
