"""The lone last pixels of a two-pixel staged nest, paired along the dim outside
(loops/paired_column.py): which nests have such a column, and the order
schedule/overlap.py times their tiles in (that of codegen/nest.py `_paired_column`)."""

from __future__ import annotations

import dataclasses

from toolchain.loops.paired_column import PairedColumn, paired_column
from toolchain.loops.schedule import Nest
from toolchain.schedule.overlap import tile_order

# 3x3 stride 2 over 10x10 (SAME) to 8 outputs: a 5x5 map, its last row and column
# checked, two pixels along the columns, channels in fours.
S2 = Nest((1, 5, 5, 8, 3, 3, 8), 4, (0, 1, 2, 3), (6,), (4, 5), ((2, 2), (3, 4)),
          ((1, 0, 4), (2, 0, 4)), dot="dsp", stage=2)


def test_the_last_column_of_a_5_pixel_row_pairs_along_the_rows() -> None:
    assert paired_column(S2) == PairedColumn(q=1, p=2, last=4, lo=0, hi=4)
    # No interior split and an odd row (a border kept in RAM): every row's last pixel.
    flat = dataclasses.replace(S2, interior=())
    assert paired_column(flat) == PairedColumn(q=1, p=2, last=4, lo=0, hi=5)


def test_nests_without_such_a_column() -> None:
    even = dataclasses.replace(S2, domain=(1, 5, 6, 8, 3, 3, 8), interior=((1, 0, 4),))
    low_border = dataclasses.replace(S2, interior=((1, 0, 4), (2, 1, 4)))
    odd_interior = dataclasses.replace(S2, interior=((1, 0, 4), (2, 0, 3)))
    cases = {
        "an even row": even,
        "a low border": low_border,
        "an odd interior": odd_interior,
        "a reversed nest": dataclasses.replace(S2, reverse=True),
        "a pointwise layer": dataclasses.replace(S2, domain=(1, 5, 5, 8, 8), unroll=(),
                                                 reduction=(4,), interior=()),
        "one pixel staged": dataclasses.replace(S2, stage=1, blocks=((3, 4),)),
        "the outer dim blocked": dataclasses.replace(S2, blocks=((1, 2), (2, 2), (3, 4))),
        "one row outside": dataclasses.replace(S2, domain=(5, 1, 5, 8, 3, 3, 8),
                                               order=(0, 1, 2, 3), interior=()),
    }
    for what, nest in cases.items():
        assert paired_column(nest) is None, what


def _emitted(nest: Nest, col: PairedColumn) -> list[list[tuple[int, ...]]]:
    """The tiles, in order, as codegen/nest.py emits a nest of S2's form (dims 0-3, the
    last blocked by 4): each row's pairs, then the row's last pixel, rows of q's
    border; q's rows [lo, hi) without their last pixel, then that column in pairs.
    Each tile's points channel-first, its pixels after."""
    _, nq, npx, nc = nest.domain[:4]
    cb = nest.block(3)

    def tiles(qs: list[int], ps: list[int]) -> list[list[tuple[int, ...]]]:
        return [[(0, y, x, c + i) for i in range(cb) for y in qs for x in ps]
                for c in range(0, nc, cb)]

    out: list[list[tuple[int, ...]]] = []
    for y in range(col.lo, col.hi):
        for x in range(0, col.last, 2):
            out += tiles([y], [x, x + 1])
    for y in range(col.lo, col.hi, 2):
        out += tiles([v for v in (y, y + 1) if v < col.hi], [col.last])
    for y in range(col.hi, nq):
        for x in range(0, col.last, 2):
            out += tiles([y], [x, x + 1])
        out += tiles([y], [col.last])
    return out


def test_the_walk_times_the_column_where_codegen_runs_it() -> None:
    """tile_order's ranks sort the outputs into the emitted tiles, in order, and each
    tile's points into their order in it (channel by channel, both pixels each)."""
    for nest in (S2, dataclasses.replace(S2, interior=()),
                 dataclasses.replace(S2, domain=(1, 7, 5, 8, 3, 3, 8),
                                     interior=((1, 0, 6), (2, 0, 4)))):
        col = paired_column(nest)
        assert col is not None
        tile, point, most = tile_order(nest)
        want = _emitted(nest, col)
        ranks = [sorted({int(tile[p]) for p in t}) for t in want]
        assert all(len(r) == 1 for r in ranks)  # a tile's points share a rank
        assert [r[0] for r in ranks] == sorted(r[0] for r in ranks)
        assert len({r[0] for r in ranks}) == len(want)
        for t in want:
            assert [int(point[p]) for p in t] == list(range(len(t)))
        assert most == 8
