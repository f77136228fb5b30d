"""The random generator's op table: its row type, the table itself and the draw of
one row.

The table is filled by op_gens.py, which lists every builder module's rows (region
ops' from region_gens.py) in a fixed order: that order and the weights decide every
draw, so the same seed gives the same graph. It lives here, below the builders, so
that a region builder can grow a body from the whole table without importing the
module that lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchain.testing.gen_context import Gen

__all__ = ["OpGen", "OP_GENS", "build_one"]


@dataclass(frozen=True)
class OpGen:
    """A table row: `build` adds op `op` to a Gen; `weight` is its relative frequency;
    `mlir` says whether the op has a StableHLO spelling."""

    op: str
    weight: float
    build: Callable[[Gen], bool]
    mlir: bool = True


# Op name -> row, in drawing order; op_gens.py fills it when it is imported.
OP_GENS: dict[str, OpGen] = {}


def build_one(g: Gen, table: dict[str, OpGen]) -> bool:
    """Adds one op drawn from `table` by weight (a few tries when a builder declines)."""
    rows = list(table.values())
    if g.depth >= 2:  # regions inside regions inside regions: no deeper
        rows = [r for r in rows if not getattr(r.build, "makes_regions", False)]
    for _ in range(8):
        row = g.rng.choices(rows, [r.weight for r in rows])[0]
        if row.build(g):
            return True
    return False
