"""SSA dominance of an MLIR op tree: every use of a value is dominated by its
definition, as MLIR's verifier requires ("operand does not dominate this use").

The parser resolves names across a whole region (a block may use a value printed
later, which is legal when the defining block dominates), so it accepts a use that
no definition dominates: a value of one branch read in the join, or a value of a
later block read through a loop's back edge. Built, such a use would read an arena
slot nobody wrote; this check refuses it before import, naming the use and the
definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolchain.diagnostics import CompileError
from toolchain.graph.dominance import dominators

if TYPE_CHECKING:
    from toolchain.diagnostics import Location
    from toolchain.mlir.ir import Operation, Region, Value


class _Def:
    """Where a value is defined: its region, block, and op index in the block (-1 for
    a block argument, defined before the block's first op)."""

    __slots__ = ("region", "block", "index", "loc", "what")

    def __init__(self, region: int, block: int, index: int, loc: Location | None,
                 what: str):
        self.region, self.block, self.index, self.loc, self.what = \
            region, block, index, loc, what


def dominance_errors(root: Operation) -> list[CompileError]:
    """An error for every operand under `root` whose definition does not dominate it
    (uses in a block the entry never reaches are not checked: it never runs)."""
    defs: dict[int, _Def] = {}
    doms: dict[int, list] = {}
    errors: list[CompileError] = []
    # Each region with the position (block, op) of its enclosing ops in their regions;
    # a loop, not a recursion, so no nesting depth exhausts Python's stack. A region is
    # taken after every region enclosing it, so the values it may use are all known.
    stack: list[tuple[Region, dict[int, tuple[int, int]]]] = [
        (r, {}) for r in reversed(root.regions)]
    while stack:
        region, outer = stack.pop()
        index = {id(b): k for k, b in enumerate(region.blocks)}
        doms[id(region)] = dominators([[index.get(id(s), -1) for op in b.ops
                                        for s in op.successors] for b in region.blocks])
        for k, block in enumerate(region.blocks):
            first = block.ops[0].loc if block.ops else None
            for a in block.args:
                defs[id(a)] = _Def(id(region), k, -1, first, "a block argument")
            for i, op in enumerate(block.ops):
                for r in op.results:
                    defs[id(r)] = _Def(id(region), k, i, op.loc, "defined")
        for k, block in enumerate(region.blocks):
            for i, op in enumerate(block.ops):
                here = {**outer, id(region): (k, i)}
                for v in op.operands:
                    if not _dominates(defs.get(id(v)), here, doms):
                        errors.append(_error(v, op, defs[id(v)]))
                stack.extend((r, here) for r in reversed(op.regions))
    return errors


def _dominates(d: _Def | None, here: dict[int, tuple[int, int]],
               doms: dict[int, list]) -> bool:
    """Whether definition `d` dominates a use at `here` (the use's position, through
    its enclosing ops, in every region around it)."""
    if d is None or d.region not in here:
        return True  # not a value this tree defines in scope: the parser's concern
    block, index = here[d.region]
    if block == d.block:
        return d.index < index
    dom = doms[d.region][block]
    return dom is None or d.block in dom


def _error(v: Value, op: Operation, d: _Def) -> CompileError:
    name = f"%{v.name}" if v.name else "an operand"
    note = (f"{name} is an argument of the block starting here" if d.index < 0
            else f"{name} is defined here")
    context = [(note, d.loc)] if d.loc is not None else []
    return CompileError(f"operand {name} does not dominate this use", op.loc,
                        context=context)
