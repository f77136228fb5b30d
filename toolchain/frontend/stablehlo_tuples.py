"""Tuples (`stablehlo.tuple`, `get_tuple_element`) resolved before import.

A tuple is only a way of grouping values: no graph op ever needs one. So before the
importer runs, every function that mentions a tuple type is rewritten into one that
does not: a tuple-typed value becomes the list of its elements (nested tuples
flattened depth-first), `tuple` and `get_tuple_element` disappear (a use of
`get_tuple_element %t[i]` is a use of the i-th element itself), and everything else
that takes or gives tuples takes or gives their elements in order: operands, results,
block arguments (a `while`'s iteration values, a function's arguments), region returns
(`while` / `if` / `case` bodies), branch arguments and function signatures. That
includes the entry function: a tuple argument or result of the model is its elements,
in that order.

The rewrite builds new functions and leaves the parsed module as it was (it may be
printed or imported again). Functions without tuple types are passed through as they
are. Errors (an index outside the tuple, a result type that is not the element's) are
located at the op and collected like the importer's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from toolchain.diagnostics import CompileError, SourceFile
from toolchain.mlir.ir import (
    Block,
    IntAttr,
    Operation,
    Region,
    SymbolRefAttr,
    TypeAttr,
    Value,
)
from toolchain.types import FunctionType, OpaqueType

__all__ = ["TUPLE_OPS", "flatten_tuples", "is_tuple", "tuple_items"]

# A tuple value's structure: a leaf Value or a list of items (a nested tuple).
Item = Value | list


def is_tuple(t: object) -> bool:
    """Whether `t` is a `tuple<...>` type (the parser keeps it as text)."""
    return isinstance(t, OpaqueType) and t.text.startswith("tuple<")


def tuple_items(t: OpaqueType) -> list:
    """The element types of tuple type `t`, a nested list for a nested tuple. The
    parser keeps a tuple type as its text (`tuple<T1, tuple<T2>>`, written from the
    element types' own text), so it is read back here."""
    from toolchain.mlir.parser import Parser

    p = Parser(SourceFile("<tuple type>", t.text))

    def one() -> object:
        if p.peek().text != "tuple":
            return p.parse_type()
        p.lex.next()
        p.parse_punct("<", "after 'tuple'")
        return p.parse_comma_list(one, ">")

    return one()  # type: ignore[return-value]


def _type_text(item: Item) -> str:
    """The type an item has, as the parser writes it."""
    if isinstance(item, Value):
        return str(item.type)
    return f"tuple<{', '.join(_type_text(i) for i in item)}>"


def _leaves(item: Item) -> list[Value]:
    if isinstance(item, Value):
        return [item]
    return [v for i in item for v in _leaves(i)]


def _items_or_self(t: object) -> object:
    """Tuple type `t`'s element types, or `t` itself when it is no tuple or its text
    does not read back (an element type only the parser's context gives): the
    importer then refuses the value's type, located at its op."""
    if not is_tuple(t):
        return t
    try:
        return tuple_items(t)  # type: ignore[arg-type]
    except CompileError:
        return t


def _flat_types(types: tuple) -> tuple:
    """`types` with each tuple type replaced by its element types, depth-first."""
    return tuple(_flat_list([_items_or_self(t) for t in types]))


def _flat_list(items: list) -> list:
    return [x for i in items for x in (_flat_list(i) if isinstance(i, list) else [i])]


class _Flattener:
    """Rewrites one module's functions; `struct` maps a tuple value (by id) to its
    item, and a `get_tuple_element` result to the element it names."""

    def __init__(self) -> None:
        self.struct: dict[int, Item] = {}
        self.errors: list[CompileError] = []
        self.blocks: dict[int, Block] = {}  # old block id -> its rewrite (successors)

    def resolve(self, v: Value) -> Item:
        return self.struct.get(id(v), v)

    def flat(self, values: list[Value]) -> list[Value]:
        return [leaf for v in values for leaf in _leaves(self.resolve(v))]

    def fresh(self, v: Value) -> list[Value]:
        """The values standing for `v` from here on: itself, or for a tuple-typed
        value new leaf values of its element types (and `v` resolves to them)."""
        items = _items_or_self(v.type)
        if not isinstance(items, list):
            return [v]

        def build(items: list, path: str) -> list:
            return [build(t, f"{path}.{i}") if isinstance(t, list) else
                    Value(t, f"{path}.{i}") for i, t in enumerate(items)]

        item = build(items, v.name or "t")
        self.struct[id(v)] = item
        return _leaves(item)

    def region(self, region: Region) -> Region:
        return Region([self.block(b) for b in region.blocks])

    def block(self, block: Block) -> Block:
        args = [leaf for a in block.args for leaf in self.fresh(a)]
        new = Block(args, [], block.label)
        self.blocks[id(block)] = new
        for op in block.ops:
            rule = TUPLE_OPS.get(op.name)
            if rule is not None:
                rule(self, op)
                continue
            results = [leaf for r in op.results for leaf in self.fresh(r)]
            new.ops.append(replace(op, operands=self.flat(op.operands), results=results,
                                   regions=[self.region(r) for r in op.regions]))
        return new

    def function(self, func: Operation) -> Operation:
        fty = func.attr("function_type")
        props = dict(func.properties)
        attrs = dict(func.attributes)
        if isinstance(fty, TypeAttr) and isinstance(fty.type, FunctionType):
            flat = TypeAttr(FunctionType(_flat_types(fty.type.inputs),
                                         _flat_types(fty.type.results)))
            (props if "function_type" in props else attrs)["function_type"] = flat
        out = replace(func, properties=props, attributes=attrs,
                      regions=[self.region(r) for r in func.regions])
        for op in out.walk():  # branches name the rewritten blocks
            op.successors = [self.blocks.get(id(b), b) for b in op.successors]
        return out


def _tuple(f: _Flattener, op: Operation) -> None:
    """`tuple %a, %b`: its result is the list of its operands' items."""
    item = [f.resolve(v) for v in op.operands]
    if len(op.results) != 1:
        f.errors.append(CompileError("'stablehlo.tuple' has one result", op.loc))
        return
    if _type_text(item) != str(op.results[0].type):
        f.errors.append(CompileError(
            f"'stablehlo.tuple' of {_type_text(item)} cannot have type "
            f"{op.results[0].type}", op.loc))
    f.struct[id(op.results[0])] = item


def _get_tuple_element(f: _Flattener, op: Operation) -> None:
    """`get_tuple_element %t[i]`: its result is element i of %t."""
    index = op.attr("index")
    if len(op.operands) != 1 or len(op.results) != 1 or not isinstance(index, IntAttr):
        f.errors.append(CompileError("'stablehlo.get_tuple_element' takes one tuple and an "
                                     "integer 'index', and has one result", op.loc))
        return
    item = f.resolve(op.operands[0])
    if not isinstance(item, list):
        f.errors.append(CompileError(f"'stablehlo.get_tuple_element' of "
                                     f"{op.operands[0].type}, which is not a tuple", op.loc))
        return
    if not 0 <= index.value < len(item):
        f.errors.append(CompileError(
            f"'stablehlo.get_tuple_element' index {index.value} is outside the tuple "
            f"{_type_text(item)} (0..{len(item) - 1})", op.loc))
        return
    element = item[index.value]
    if _type_text(element) != str(op.results[0].type):
        f.errors.append(CompileError(
            f"'stablehlo.get_tuple_element' element {index.value} has type "
            f"{_type_text(element)}, not {op.results[0].type}", op.loc))
    f.struct[id(op.results[0])] = element


# The ops that only build or take apart tuples; each records what its result stands
# for and leaves no op behind.
TUPLE_OPS: dict[str, Callable[[_Flattener, Operation], None]] = {
    "stablehlo.tuple": _tuple,
    "stablehlo.get_tuple_element": _get_tuple_element,
}


def _mentions_tuples(func: Operation) -> bool:
    for op in func.walk():
        if op.name in TUPLE_OPS or any(is_tuple(v.type) for v in op.results):
            return True
        for r in op.regions:
            if any(is_tuple(a.type) for b in r.blocks for a in b.args):
                return True
    fty = func.attr("function_type")
    return isinstance(fty, TypeAttr) and isinstance(fty.type, FunctionType) and any(
        is_tuple(t) for t in fty.type.inputs + fty.type.results)


def _reachable(funcs: dict[str, Operation], entry: str) -> set[str]:
    """The functions `entry` calls, directly or not (a call's callee, a composite's
    decomposition: any symbol an op names)."""
    seen, todo = {entry}, [entry]
    while todo:
        for op in funcs[todo.pop()].walk():
            for a in (*op.attributes.values(), *op.properties.values()):
                name = getattr(a, "name", None) if isinstance(a, SymbolRefAttr) else None
                if name in funcs and name not in seen:
                    seen.add(name)
                    todo.append(name)
    return seen


def flatten_tuples(funcs: dict[str, Operation], entry: str) -> tuple[dict[str, Operation],
                                                                     list[CompileError]]:
    """`funcs` (name -> func.func) with every tuple resolved into its elements in the
    functions `entry` reaches, and the errors found doing it. Functions without tuples,
    or that the entry never calls, are returned as they are."""
    f = _Flattener()
    reached = _reachable(funcs, entry)
    out = {name: f.function(func) if name in reached and _mentions_tuples(func) else func
           for name, func in funcs.items()}
    return out, f.errors
