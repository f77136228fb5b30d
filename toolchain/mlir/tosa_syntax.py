"""Pretty (custom) syntax of the TOSA dialect, as upstream MLIR prints it.

Almost every TOSA op prints as `tosa.op %a, %b {attrs} : (T1, T2) -> R`: operands, an
attribute dictionary and a functional type. Three things differ from the other dialects'
pretty forms, and this file reads them:

- enum attributes are bare words inside the dictionary (`rounding_mode = SINGLE_ROUND`,
  `nan_mode = IGNORE`); they become `#tosa<rounding_mode SINGLE_ROUND>`, which is how the
  generic printer writes them back (LLVM 20/21 also wrote them as strings; the importer
  reads both);
- the newest MLIR binds properties directly: `axis(0)`, `perms([2, 0, 1])`,
  `values(dense<0> : tensor<6xindex>)`, `block_size<BLOCK_SIZE_32>`;
- `cond_if` and `while_loop` carry regions (`{...} else {...}`, `(%a = %x) ... {...} do
  {...}`), and `variable*` ops name a symbol.

Each parser builds exactly the Operation the generic form gives (dictionary entries are
properties, as MLIR stores inherent attributes), so `print_generic` output parses back to
the same tree. `!tosa.shape<N>` types need nothing here: the type parser keeps any
dialect type as an opaque type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolchain.mlir.ir import (
    Block,
    OpaqueAttr,
    Operation,
    Region,
    SymbolRefAttr,
    UnitAttr,
    Value,
)
from toolchain.mlir.lexer import Token
from toolchain.types import ALIASES, DTYPES, FunctionType

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser

__all__ = ["SYNTAX", "TOSA_OPS"]

# Every op of the TOSA 1.0 specification as MLIR names it, plus the ones current MLIR
# adds (conv3d's and resize's neighbours, the shape algebra, block-scaled types) and the
# pre-1.0 spellings IREE's and TensorFlow's tests still use: all parse in pretty form.
TOSA_OPS = """
argmax avg_pool2d conv2d conv3d depthwise_conv2d fft2d matmul max_pool2d rfft2d
transpose_conv2d clamp erf sigmoid tanh add arithmetic_right_shift bitwise_and bitwise_or
bitwise_xor intdiv logical_and logical_left_shift logical_right_shift logical_or
logical_xor maximum minimum mul pow sub table abs bitwise_not ceil clz cos exp floor log
logical_not negate reciprocal rsqrt sin select equal greater greater_equal reduce_all
reduce_any reduce_max reduce_min reduce_product reduce_sum concat pad reshape reverse
slice tile transpose gather scatter resize cast rescale const identity custom
const_shape yield variable_read variable_write
avg_pool2d_adaptive max_pool2d_adaptive matmul_t row_gather argmin conv2d_block_scaled
matmul_t_block_scaled cast_from_block_scaled cast_to_block_scaled reshape_block_scaled
row_gather_block_scaled add_shape sub_shape mul_shape div_shape mod_shape div_ceil_shape
div_floor_shape exp2_shape log2_ceil_shape log2_floor_shape max_shape min_shape
concat_shape slice_shape dim assert_equal_shape fully_connected int_div apply_scale
""".split()  # noqa: SIM905

# Words that start an attribute value rather than name an enum case.
_ATTR_WORDS = {"true", "false", "unit", "dense", "dense_resource", "array", "affine_map",
               "affine_set", "sparse", "strided", "opaque", "loc", "distinct", "tensor",
               "vector", "memref", "complex", "tuple", "none"}
# Element types the type parser knows or refuses by name (`i48` gets its error there).
_TYPE_WORD = re.compile(r"[fiu]i?[0-9]+|bf16|tf32|f8E\w+")


# --------------------------------------------------------------------------- shared parts


def _operands(p: Parser) -> tuple[list[Value], list[Token]]:
    """`%a, %b, ...` (possibly none); stops before anything that is not an SSA value."""
    values: list[Value] = []
    toks: list[Token] = []
    while p.peek().kind == "value":
        toks.append(p.peek())
        values.append(p.parse_operand())
        if p.peek().text != ",":
            break
        save = p.lex.pos
        p.lex.next()
        if p.peek().kind != "value":  # a comma before something else: not ours
            p.lex.pos = save
            p.lex._peeked = None
            break
    return values, toks


def _value(p: Parser, key: str) -> Any:
    """An attribute value; a bare word that is not one (`SINGLE_ROUND`) is an enum case."""
    tok = p.peek()
    if tok.kind == "bare" and not (tok.text in _ATTR_WORDS or tok.text in DTYPES
                                   or tok.text in ALIASES or _TYPE_WORD.fullmatch(tok.text)):
        p.lex.next()
        return OpaqueAttr("tosa", f"{key} {tok.text}")
    return p.parse_attribute()


def _attr_dict(p: Parser) -> dict[str, Any]:
    """`{key = value, flag, "quoted" = value}` with bare enum words allowed."""
    if not (p.peek().kind == "punct" and p.peek().text == "{"):
        return {}
    p.lex.next()
    entries: dict[str, Any] = {}

    def entry() -> None:
        tok = p.peek()
        if tok.kind not in ("bare", "string"):
            raise p.error(f"expected attribute name, found '{tok.text[:40]}'", tok)
        p.lex.next()
        key = tok.text[1:-1] if tok.kind == "string" else tok.text
        entries[key] = _value(p, key) if p.parse_optional_punct("=") else UnitAttr()

    p.parse_comma_list(entry, "}")
    return entries


def _bound_properties(p: Parser) -> dict[str, Any]:
    """The newest MLIR's directly bound properties: `axis(0)`, `block_size<...>`."""
    props: dict[str, Any] = {}
    while p.peek().kind == "bare":
        save = p.lex.pos
        key = p.lex.next().text
        nxt = p.peek()
        if nxt.kind == "punct" and nxt.text == "(":
            p.lex.next()
            props[key] = _value(p, key)
            p.parse_punct(")", f"to close '{key}('")
        elif nxt.kind == "punct" and nxt.text == "<":
            p.lex.next()
            props[key] = OpaqueAttr("tosa", f"{key} {p.skip_balanced('<').strip()}")
        else:
            p.lex.pos = save
            p.lex._peeked = None
            break
    return props


def _signature(p: Parser, operands: list[Value], toks: list[Token]) -> list[Value]:
    """`: (T1, T2) -> R`, `-> (R1, R2)`, `-> ()`; or `: T` for every operand and the
    single result (also the result alone when there are no operands)."""
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.kind == "punct" and ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(operands, list(fty.inputs), toks, ty_tok)
        return [Value(t) for t in fty.results]
    ty = p.parse_type()
    p.check_operand_types(operands, [ty] * len(operands), toks, ty_tok)
    return [Value(ty)]


# --------------------------------------------------------------------------- op parsers


def p_tosa(p: Parser, name: str) -> Operation:
    """`tosa.op %a, %b [name(value)...] {attrs} : (T...) -> R`."""
    operands, toks = _operands(p)
    props = _bound_properties(p)
    props.update(_attr_dict(p))
    results = _signature(p, operands, toks)
    return Operation(name, operands, results, {}, props)


def p_variable(p: Parser, name: str) -> Operation:
    """`tosa.variable @name = dense<...> : T` / `variable_read @name : T` /
    `variable_write @name, %v : T` (parsed so that the importer can say they are not
    supported, at their location)."""
    tok = p.peek()
    if tok.kind != "symbol":
        raise p.error("expected the variable's name '@name'", tok)
    p.lex.next()
    props: dict[str, Any] = {"name": SymbolRefAttr(tok.text[1:])}
    operands: list[Value] = []
    toks: list[Token] = []
    if p.parse_optional_punct("="):
        props["initial_value"] = p.parse_attribute()
        results: list[Value] = []
    else:
        if p.parse_optional_punct(","):
            operands, toks = _operands(p)
        props.update(_attr_dict(p))
        results = _signature(p, operands, toks)
    return Operation(name, operands, results, {}, props)


def p_variable_write(p: Parser, name: str) -> Operation:
    """`variable_write @name, %v : T`: as `p_variable`, but the type is the stored
    value's; the op has no result."""
    op = p_variable(p, name)
    op.results = []
    return op


def _region_args(p: Parser) -> tuple[list[Value], list[Token], list[tuple[str, int]]]:
    """`(%a = %x, %b = %y)`: the initial operands, and the region argument names."""
    inits: list[Value] = []
    toks: list[Token] = []
    names: list[tuple[str, int]] = []
    if not p.parse_optional_punct("("):
        return inits, toks, names

    def one() -> None:
        tok = p.peek()
        if tok.kind != "value":
            raise p.error("expected a region argument '%name'", tok)
        p.lex.next()
        names.append((tok.text[1:], tok.start))
        p.parse_punct("=", "after the region argument")
        toks.append(p.peek())
        inits.append(p.parse_operand())

    p.parse_comma_list(one, ")")
    return inits, toks, names


def _region(p: Parser, names: list[tuple[str, int]], types: list[Any]) -> Region:
    """A region whose entry block takes `names` (declared in the op's header) unless it
    spells its own `^bb0(...)` arguments."""
    p.scopes.append({})
    args = []
    for (n, offset), t in zip(names, types):
        v = Value(t, n)
        p.define(n, [v], offset)
        args.append(v)
    region = p.parse_region()
    p.scopes.pop()
    if region.blocks and not region.blocks[0].label:
        region.blocks[0].args = args
    elif not region.blocks:
        region.blocks = [Block(args)]
    return region


def _result_types(p: Parser) -> list[Any]:
    if p.parse_optional_punct("("):
        return p.parse_comma_list(p.parse_type, ")")
    return [p.parse_type()]


def p_cond_if(p: Parser, name: str) -> Operation:
    """`tosa.cond_if %c [(%a = %x, ...)] : tensor<i1> [(T...)] -> R {then} else {else}`,
    or as LLVM 19 / 20 print it, without the condition's type: `tosa.cond_if %c -> (R)`."""
    cond_tok = p.peek()
    cond = p.parse_operand()
    inits, toks, names = _region_args(p)
    if not p.parse_optional_punct("->"):
        ty_tok = p.parse_punct(":", "before cond_if's types")
        cond_ty = p.parse_type()
        p.check_operand_types([cond], [cond_ty], [cond_tok], ty_tok)
        if p.parse_optional_punct("("):
            p.check_operand_types(inits, p.parse_comma_list(p.parse_type, ")"), toks,
                                  ty_tok)
        p.parse_punct("->", "before cond_if's result types")
    results = [Value(t) for t in _result_types(p)]
    types = [v.type for v in inits]
    then = _region(p, names, types)
    p.parse_keyword("else")
    other = _region(p, names, types)
    props = _attr_dict(p)
    return Operation(name, [cond, *inits], results, {}, props, [then, other])


def p_while_loop(p: Parser, name: str) -> Operation:
    """`tosa.while_loop (%a = %x, ...) : (T...) -> (T...) {cond} do {body}`."""
    inits, toks, names = _region_args(p)
    ty_tok = p.parse_punct(":", "before while_loop's types")
    fty = p.parse_type("function type")
    if not isinstance(fty, FunctionType):
        raise p.error("expected while_loop's function type '(...) -> ...'", ty_tok)
    p.check_operand_types(inits, list(fty.inputs), toks, ty_tok)
    types = list(fty.inputs)
    cond = _region(p, names, types)
    p.parse_keyword("do")
    body = _region(p, names, types)
    props = _attr_dict(p)
    return Operation(name, inits, [Value(t) for t in fty.results], {}, props, [cond, body])


def p_yield(p: Parser, name: str) -> Operation:
    """`tosa.yield %a, %b : T1, T2`."""
    operands, toks = _operands(p)
    attrs = _attr_dict(p)
    if operands:
        ty_tok = p.parse_punct(":", "before the yielded types")
        types = p.parse_comma_list(p.parse_type)
        p.check_operand_types(operands, types, toks, ty_tok)
    return Operation(name, operands, [], attrs, {})


_SPECIAL: dict[str, Callable[[Parser, str], Operation]] = {
    "variable": p_variable, "variable_read": p_variable, "variable_write": p_variable_write,
    "cond_if": p_cond_if, "while_loop": p_while_loop, "yield": p_yield,
}

SYNTAX: dict[str, Callable[[Parser, str], Operation]] = {
    f"tosa.{n}": _SPECIAL.get(n, p_tosa) for n in TOSA_OPS + list(_SPECIAL)
}
