"""Comparing parsed op trees: the property every pretty form must have is that it
parses to exactly what its generic spelling gives, and that `print_generic` output
parses back to the same tree (and prints identically: a fixed point)."""

from __future__ import annotations

from toolchain.mlir import parse_text
from toolchain.mlir.ir import Operation
from toolchain.mlir.printer import print_generic


def normalize(op: Operation) -> tuple:
    """An op tree as nested tuples, values and blocks numbered in definition order;
    attribute and property dictionaries compare as dicts (MLIR dictionaries are
    unordered)."""
    names: dict[int, int] = {}
    blocks: dict[int, int] = {}

    def value(v) -> tuple:
        names.setdefault(id(v), len(names))
        return names[id(v)], str(v.type)

    def walk(o: Operation) -> tuple:
        # A region's blocks, arguments and results are numbered before its ops are
        # walked: a block may use a value (or branch to a block) that comes later.
        for r in o.regions:
            for b in r.blocks:
                blocks.setdefault(id(b), len(blocks))
                for a in b.args:
                    value(a)
                for x in b.ops:
                    for v in x.results:
                        value(v)
        operands = tuple(names[id(v)] for v in o.operands)
        regions = tuple(tuple((tuple(value(a) for a in b.args), tuple(walk(x) for x in b.ops))
                              for b in r.blocks) for r in o.regions)
        results = tuple(value(r) for r in o.results)
        successors = tuple(blocks[id(b)] for b in o.successors)
        return (o.name, operands, results, o.attributes, o.properties, regions, successors)

    return walk(op)


def assert_roundtrip(module: Operation) -> str:
    """print_generic(module) parses back to the same tree and is a fixed point."""
    text = print_generic(module)
    again = parse_text(text, "generic.mlir")
    assert normalize(again) == normalize(module)
    assert print_generic(again) == text
    return text


def same_tree(pretty: str, generic: str) -> Operation:
    """The pretty spelling parses to exactly what its generic spelling gives, and
    both survive the generic printer."""
    a, b = parse_text(pretty, "pretty.mlir"), parse_text(generic, "generic.mlir")
    assert normalize(a) == normalize(b)
    assert_roundtrip(a)
    return a
