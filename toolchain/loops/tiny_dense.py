"""Tiny dense layers written out row by row, no call (issue 21).

A dense layer of a few inputs to a few outputs (the converter models' 16 -> 4 of an LSTM's
head, 16 -> 5 of a Conv1D keyword model) spent as much on a microkernel call's fixed
costs as on its MACs: on cortex-m4, 16 -> 4 with per-channel scales took 131
instructions in the 1x4 kernel's call for 64 MACs (0.49 MAC per instruction): the
kernel 76 (its frame, the input paired step by step, its loop), the generated side 55
(the sums' start copied to a stack array and read back, the call's arguments, 4
requantizations). Written out in the dispatch (codegen/tiny_dense.py) the input is
paired once into registers, each row runs from its sum's start over its paired weight
words into two SMLAD a step, and the sums go straight into the requantization.

This file says which kernels take it (`tiny_dense_candidates`): a dense layer the
dense-rows kernel could take (loops/dense_rows.py dense_rows_dim: one pixel, paired
weights, rows one after another, an input as stored or padded to whole words with 0),
its whole packed dim at most TINY_MAX_STEPS steps (the input's pairs stay in
registers) and all its rows one tile of at most TINY_MAX_ROWS. Within these bounds it
is the candidate the cost model picks (measured in bench/shapes.py and
bench/converter_models.py: no layer slower, docs/architecture.md "Tiny dense layers
written out"); the others stay candidates for the tuner.
"""

from __future__ import annotations

from toolchain.kernel.form import Kernel
from toolchain.loops.dense_rows import dense_rows_dim
from toolchain.loops.tables import DOT_WIDTH

__all__ = ["TINY_DENSE_KIND", "TINY_MAX_ROWS", "TINY_MAX_STEPS", "tiny_dense_candidates"]

TINY_DENSE_KIND = "dsp_written"  # a nest's `dot` when codegen/tiny_dense.py writes it out
# Packed steps (4 inputs each) whose pairs are held in registers across the rows: 2 words
# a step, with a row's sum, its weight words and the pointers beside them.
TINY_MAX_STEPS = 4
# Outputs of the one tile (each row's epilogue is written out).
TINY_MAX_ROWS = 16
# Instructions, counted from the code LLVM makes of it on cortex-m4: per step of the
# input its load and two SXTB16; per row and step the two paired words (one LDRD or a
# share of an LDM) and two SMLAD; per row its sum's start; per layer the pointers.
PAIR_STEP = 3
ROW_STEP = 3
PER_ROW = 1
PER_LAYER = 4


def tiny_dense_candidates(k: Kernel, int8_dot: str, epilogue: int) -> list[tuple]:
    """The candidate tuple (loops/rules.py _reduction_nest's form) of `k`'s rows written
    out as one tile, costed; [] where it does not apply (see the module docstring)."""
    c = dense_rows_dim(k, int8_dot)
    if c is None:
        return []
    (r,) = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    rows, steps = k.domain[c], k.domain[r] // DOT_WIDTH
    if steps > TINY_MAX_STEPS or rows > TINY_MAX_ROWS:
        return []
    per_row = steps * ROW_STEP + PER_ROW + epilogue
    cost = PER_LAYER + steps * PAIR_STEP + rows * per_row
    code = PER_LAYER + steps * PAIR_STEP + rows * per_row
    return [((False, cost, rows, 1), code, {c: rows}, (), (r,), 1, TINY_DENSE_KIND, 1)]
