"""Pretty (custom) syntax of the upstream MLIR ops StableHLO programs use: builtin
`module`, `func.func` / `func.call` / `func.return`, `arith.constant` and the
unstructured control flow of `cf.br`, `cf.cond_br` and `cf.assert`.

As for every dialect, each parser builds the Operation the generic form gives: a
branch's successor blocks go to `Operation.successors` and their arguments to the
operands (`cf.cond_br` records how many go where in `operandSegmentSizes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolchain.mlir.ir import (
    ArrayAttr,
    Block,
    DenseArrayAttr,
    DictAttr,
    OpaqueAttr,
    Operation,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    Value,
)
from toolchain.mlir.literals import symbol_name
from toolchain.mlir.stablehlo_syntax import OpParser, p_constant, p_return
from toolchain.mlir.syntax_parts import I32, make_op, operands
from toolchain.types import FunctionType

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser


def p_call(p: Parser, name: str) -> Operation:
    """`call @f(%a) : (T) -> R`."""
    tok = p.peek()
    if tok.kind != "symbol":
        raise p.error("expected callee symbol '@name'", tok)
    p.lex.next()
    p.parse_punct("(", "to open call arguments")
    values, toks = p.parse_operands_until(")")
    attrs = p.parse_optional_attr_dict()
    results = p.parse_functional_type(values, toks, "the call's")
    return make_op("func.call", values, results,
                   {"callee": SymbolRefAttr(symbol_name(tok.text))}, attrs)


def p_func(p: Parser, name: str) -> Operation:
    """`func.func public @main(%arg0: T {attrs}) -> (R {attrs}) attributes {..} { body }`,
    or a declaration `func.func private @f(T) -> R` without argument names or body."""
    props: dict = {}
    vis = p.peek()
    if vis.kind == "bare" and vis.text in ("public", "private", "nested"):
        p.lex.next()
        if vis.text != "public":
            props["sym_visibility"] = StringAttr(vis.text)
    sym = p.peek()
    if sym.kind != "symbol":
        raise p.error("expected function name '@name'", sym)
    p.lex.next()
    props["sym_name"] = StringAttr(symbol_name(sym.text))
    p.parse_punct("(", "to open the argument list")
    p.scopes.append({})
    args: list[Value] = []
    arg_attrs: list[DictAttr] = []

    def arg() -> None:
        if p.peek().kind == "value":
            args.append(p.parse_block_arg())
        else:  # a declaration names only the types
            args.append(Value(p.parse_type("argument type")))
        arg_attrs.append(DictAttr(tuple(p.parse_optional_attr_dict().items())))
        p.skip_optional_loc()

    p.parse_comma_list(arg, ")")
    results: list = []
    res_attrs: list[DictAttr] = []
    if p.parse_optional_punct("->"):
        def res() -> None:
            results.append(p.parse_type())
            res_attrs.append(DictAttr(tuple(p.parse_optional_attr_dict().items())))
            p.skip_optional_loc()

        # Result attributes exist only in the parenthesized form; a bare `{` is the body.
        if p.parse_optional_punct("("):
            p.parse_comma_list(res, ")")
        else:
            results.append(p.parse_type())
    props["function_type"] = TypeAttr(FunctionType(tuple(a.type for a in args), tuple(results)))
    if any(d.items for d in arg_attrs):
        props["arg_attrs"] = ArrayAttr(tuple(arg_attrs))
    if any(d.items for d in res_attrs):
        props["res_attrs"] = ArrayAttr(tuple(res_attrs))
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    regions = []
    if p.peek().text == "{":
        region = p.parse_region()
        if region.blocks and not region.blocks[0].label:
            region.blocks[0].args = args
        regions = [region]
    p.scopes.pop()
    return make_op("func.func", [], [], props, attrs, regions)


def p_module(p: Parser, name: str) -> Operation:
    """`module @name attributes {..} { ops }`."""
    props: dict = {}
    if p.peek().kind == "symbol":
        props["sym_name"] = StringAttr(symbol_name(p.lex.next().text))
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    return make_op("builtin.module", [], [], props, attrs, [p.parse_region()])


def _successor(p: Parser, values: list[Value]) -> tuple[Block, int]:
    """`^bb1` or `^bb1(%a, %b : T1, T2)`: the block, its arguments appended to
    `values`; returns the block and how many arguments it took."""
    before = len(values)
    block = p.parse_successor(values, [])
    return block, len(values) - before


def p_br(p: Parser, name: str) -> Operation:
    """`cf.br ^bb1(%a : T)`."""
    values: list[Value] = []
    block, _ = _successor(p, values)
    attrs = p.parse_optional_attr_dict()
    op = make_op(name, values, [], {}, attrs)
    op.successors = [block]
    return op


def p_cond_br(p: Parser, name: str) -> Operation:
    """`cf.cond_br %c, ^bb1(%a : T), ^bb2`."""
    cond, toks = operands(p)
    if len(cond) != 1:
        raise p.error("cf.cond_br takes one condition")
    p.parse_punct(",", "after the branch condition")
    values = list(cond)
    first, n_true = _successor(p, values)
    p.parse_punct(",", "between the branch targets")
    second, n_false = _successor(p, values)
    attrs = p.parse_optional_attr_dict()
    props = {"operandSegmentSizes": DenseArrayAttr(I32, (1, n_true, n_false))}
    op = make_op(name, values, [], props, attrs)
    op.successors = [first, second]
    return op


def p_assert(p: Parser, name: str) -> Operation:
    """`cf.assert %c, "message"`."""
    values, _ = operands(p)
    p.parse_punct(",", "before the assertion message")
    tok = p.peek()
    msg = p.parse_attribute()
    if not isinstance(msg, StringAttr):
        raise p.error("expected the assertion message as a string", tok)
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, [], {"msg": msg}, attrs)


def p_sdy_mesh(p: Parser, name: str) -> Operation:
    """`sdy.mesh @mesh = <["x"=2]>`: the device mesh newer JAX exports declare (Shardy);
    metadata the importer leaves alone, kept as the generic form gives it."""
    tok = p.peek()
    if tok.kind != "symbol":
        raise p.error("expected the mesh name '@name'", tok)
    p.lex.next()
    p.parse_punct("=", "after the mesh name")
    p.parse_punct("<", "to open the mesh")
    props = {"sym_name": StringAttr(symbol_name(tok.text)),
             "mesh": OpaqueAttr("sdy.mesh", p.skip_balanced("<"))}
    return make_op(name, [], [], props, p.parse_optional_attr_dict())


def p_unsupported(p: Parser, name: str) -> Operation:
    """An op minirt knows but does not read."""
    raise p.error(f"'{name}' is not supported (branch with cf.br / cf.cond_br)")


SYNTAX: dict[str, OpParser] = {
    "arith.constant": p_constant,
    "func.return": p_return,
    "return": p_return,
    "func.call": p_call,
    "call": p_call,
    "func.func": p_func,
    "module": p_module,
    "builtin.module": p_module,
    "cf.br": p_br,
    "cf.cond_br": p_cond_br,
    "cf.assert": p_assert,
    "cf.switch": p_unsupported,
    "sdy.mesh": p_sdy_mesh,
}

__all__ = ["SYNTAX"]
