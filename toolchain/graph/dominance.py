"""Dominators of a graph of blocks: block d dominates block k when every path from the
entry (block 0) to k passes through d. A value may only be read where its definition
dominates the read; otherwise some path reaches the read without having written the
value, and the firmware would read an arena slot nobody wrote (issue 24).

Shared by the MLIR frontend (frontend/dominance.py, which names the values) and the
`cfg` node's rule (graph/region_rules.py, which checks any producer of a `cfg` node).
"""

from __future__ import annotations

from collections.abc import Sequence


def dominators(successors: Sequence[Sequence[int]]) -> list[frozenset[int] | None]:
    """Per block, the set of blocks that dominate it (itself included), or None for a
    block the entry never reaches (it never runs, so nothing it reads matters, as in
    MLIR). `successors[k]` lists where block k may branch; block 0 is the entry.

    The simple iterative data-flow algorithm: blocks are few (one per MLIR block), so
    its quadratic worst case costs nothing next to importing the blocks' ops."""
    n = len(successors)
    if n == 0:
        return []
    reach = [False] * n
    reach[0] = True
    order, stack = [], [0]
    while stack:  # reachable blocks, in a depth-first order from the entry
        k = stack.pop()
        order.append(k)
        for s in successors[k]:
            if 0 <= s < n and not reach[s]:
                reach[s] = True
                stack.append(s)
    preds: list[list[int]] = [[] for _ in range(n)]
    for k in order:
        for s in successors[k]:
            if 0 <= s < n:
                preds[s].append(k)
    everything = frozenset(order)
    dom: list[frozenset[int] | None] = [everything if reach[k] else None for k in range(n)]
    dom[0] = frozenset((0,))
    changed = True
    while changed:
        changed = False
        for k in order[1:]:
            meet = everything
            for p in preds[k]:
                dp = dom[p]
                assert dp is not None  # a predecessor found by the walk is reachable
                meet = meet & dp
            new = meet | {k}
            if new != dom[k]:
                dom[k] = new
                changed = True
    return dom
