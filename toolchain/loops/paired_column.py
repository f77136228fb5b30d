"""The lone last pixels of a two-pixel staged nest, paired along the dim outside.

A nest whose pixels go two at a time to the 2x4 microkernel (Nest.stage 2, its pixel dim
p blocked by 2) leaves p's last pixel alone wherever p's run ends on an odd pixel: a
5-pixel row (3x3 stride 2 over 10x10, SAME) is two pairs and a one-pixel call, in every
row. The lone pixels form a column along the dim q just outside p, so codegen/nest.py
emits that column after q's loop in pairs along q (two rows' last pixels staged together
and taken by one 2x4 call a group of output channels) instead of one at a time: a 5x5
map then leaves one pixel alone where it left five. A one-pixel call costs about as much
per MAC as the 2x4 call, but the staging, requantization setup and call overhead around
it are paid per pixel (3x3 stride 2 over 8 channels on cortex-m4: ~125 instructions a
lone pixel more than a paired one).

Only where q's values run in increasing order one at a time around p's loop (q unblocked,
the nest not reversed) and p's last pixel is the only one alone: p has no checked
border but its high one, of one pixel, after an even interior, or no interior and an odd
extent. schedule/overlap.py times the stores in the same order (`tile_order`). Only for
a window of several taps (Nest.unroll): a pointwise layer's lone pixel stages a few
words, and its result is often placed over its input (schedule/program.py), which the
column's late reads of each row's last pixel push further away: vww_96_int8's 1x1
layers on 3x3 maps then lost their two-pixel schedule to the placement, 8,448,971 ->
8,591,838 instructions on cortex-m4.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.loops.schedule import Nest

__all__ = ["PairedColumn", "paired_column"]


@dataclass(frozen=True)
class PairedColumn:
    """p's last pixel (index `last`) for q in [lo, hi) (q's unchecked interior, or all
    of q), emitted after q's loop over that range in pairs along q (the last one alone
    where hi - lo is odd)."""

    q: int
    p: int
    last: int
    lo: int
    hi: int


def paired_column(nest: Nest) -> PairedColumn | None:
    """The column of lone last pixels of `nest` that codegen pairs along the outer dim
    (module docstring), or None."""
    c = nest.n_parallel - 1
    if nest.stage != 2 or nest.reverse or nest.phases or not nest.unroll:
        return None
    pair = [d for d, f in nest.blocks if f == 2 and d != c]
    if len(pair) != 1 or pair[0] not in nest.order:
        return None
    (p,) = pair
    at = nest.order.index(p)
    if at == 0:
        return None
    q = nest.order[at - 1]
    n = nest.domain[p]
    if q == c or nest.block(q) != 1 or nest.domain[q] < 2 or n < 3:
        return None
    inner = nest.interior_of(p)
    if inner is None:
        if n % 2 == 0:
            return None
    elif inner[0] != 0 or (inner[1] - inner[0]) % 2 or n - inner[1] != 1:
        return None
    lo, hi = nest.interior_of(q) or (0, nest.domain[q])
    if hi - lo < 2:
        return None
    return PairedColumn(q, p, n - 1, lo, hi)
