"""The kernel form's limits and its walkers: no recursion, shared nodes visited once."""

from __future__ import annotations

from toolchain.kernel.form import (
    INDEX,
    MAX_OPERANDS,
    Apply,
    Const,
    Index,
    Load,
    children,
    depth,
    postorder,
    rewrite,
    with_children,
)
from toolchain.module import format as fmt


def test_operand_limit_matches_the_module_format() -> None:
    assert MAX_OPERANDS + 1 == fmt.MAX_BINDINGS  # the operands, then the result


def _chain(n: int):
    e = Index(0)
    for i in range(n):
        e = Apply("add", (e, Const(i, INDEX)), INDEX)
    return e


def test_walkers_do_not_recurse() -> None:
    deep = _chain(20_000)  # far beyond Python's recursion limit
    assert depth(deep) == 20_001
    assert len(postorder(deep)) == 2 * 20_000 + 1
    renamed = rewrite(deep, lambda e, kids: Index(1) if isinstance(e, Index)
                      else with_children(e, kids))
    assert depth(renamed) == 20_001


def test_shared_nodes_are_visited_once_and_stay_shared() -> None:
    # Each level reads the one below twice: 2**60 paths, 61 distinct nodes.
    e = Index(0)
    for _ in range(60):
        e = Apply("multiply", (e, e), INDEX)
    assert len(postorder(e)) == 61 and depth(e) == 61
    copy = rewrite(e, lambda x, kids: with_children(x, kids))
    assert copy is not e and copy.args[0] is copy.args[1]


def test_with_children_keeps_a_loads_pad_and_valid_apart() -> None:
    ld = Load(0, (Index(0), Index(1)), pad=Const(0.0, INDEX), valid=Index(2))
    kids = children(ld)
    assert kids == (Index(0), Index(1), Const(0.0, INDEX), Index(2))
    again = with_children(ld, kids, operand=3)
    assert again == Load(3, ld.index, ld.pad, ld.valid)
