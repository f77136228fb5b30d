"""Pretty (custom) syntax: the table of op parsers and the dispatch on op names, and
the table of dialect attributes with a syntax of their own.

Each dialect's pretty forms live in their own file (`core_syntax.py`: builtin, func,
arith, cf; `stablehlo_syntax.py`; `chlo_syntax.py`); every parser builds exactly the
Operation the generic form of the same op gives, so `print_generic` output parses
back to an identical tree. Another dialect joins by adding its table to `SYNTAX`.

An op of a dialect in the table that has no row is an error naming it (`unknown
operation 'chlo.foo'`). Ops of other dialects are read in the simplest pretty form,
`op %a, %b {attrs} : types`, and left to the importer to judge; when that form does
not fit, the error names the op too.

The grammar (`op_parser.Parser`) does not import this module: the entry points
(`parser.py`) hand it `parse_custom_operation` and `ATTRIBUTE_SYNTAX`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolchain.diagnostics import CompileError
from toolchain.mlir.chlo_syntax import SYNTAX as CHLO_SYNTAX
from toolchain.mlir.core_syntax import SYNTAX as CORE_SYNTAX
from toolchain.mlir.ir import BoolAttr, Operation, StructAttr
from toolchain.mlir.stablehlo_syntax import SYNTAX as STABLEHLO_SYNTAX
from toolchain.mlir.stablehlo_syntax import p_elementwise, parse_conv_dims
from toolchain.mlir.struct_attrs import STRUCTS, parse_struct_body
from toolchain.mlir.syntax_parts import i64_array, i64_attr, make_op, operands, signature
from toolchain.mlir.tosa_syntax import SYNTAX as TOSA_SYNTAX

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser

SYNTAX: dict[str, Callable[[Parser, str], Operation]] = {
    **CORE_SYNTAX,
    **STABLEHLO_SYNTAX,
    **CHLO_SYNTAX,
}
SYNTAX.update(TOSA_SYNTAX)  # the TOSA dialect's pretty forms live in their own file

# The same helpers under the names this module used to define them by.
_operands = operands
_signature = signature
_op = make_op

# Dialects whose every op has a row in SYNTAX: another name there is no op at all.
COMPLETE_DIALECTS = {"stablehlo", "chlo"}

# After an op, the text goes on with another op, a block label, the end of the region
# or of the file: anything else means the op's form was not understood.
_NEXT_OP_KINDS = ("value", "string", "block", "eof")


def _starts_next_op(p: Parser) -> bool:
    tok = p.peek()
    if tok.kind == "bare":  # an op name (`return` or `dialect.op`) or a location
        return tok.text in SYNTAX or "." in tok.text or tok.text == "loc"
    return tok.kind in _NEXT_OP_KINDS or (tok.kind == "punct" and tok.text == "}")


def parse_custom_operation(p: Parser) -> Operation:
    """Dispatches on the op name (already peeked, consumed here)."""
    tok = p.lex.next()
    parse = SYNTAX.get(tok.text)
    if parse is not None:
        return parse(p, tok.text)
    unknown = CompileError(f"unknown operation '{tok.text}'", p.lex.loc(tok.start))
    if "." not in tok.text or tok.text.split(".", 1)[0] in COMPLETE_DIALECTS:
        raise unknown
    try:
        op = p_elementwise(p, tok.text)
    except CompileError:
        raise unknown from None
    if not _starts_next_op(p):
        raise unknown
    return op


def parse_conv_attr(p: Parser, name: str, opening: int) -> StructAttr:
    """`#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`, or its struct form
    after the keyword `raw` (`#stablehlo.conv<raw input_batch_dimension = 0, ...>`)."""
    if p.parse_optional_keyword("raw"):
        return parse_struct_body(p, name, opening)
    attr = parse_conv_dims(p)
    p.parse_punct(">", "to close '#stablehlo.conv'")
    return attr


# `#name<...>` attributes read by a parser of their own (see type_attribute_parser.py).
ATTRIBUTE_SYNTAX: dict[str, Callable[[Any, str, int], Any]] = {
    **{name: parse_struct_body for name in STRUCTS},
    "stablehlo.conv": parse_conv_attr,
}


__all__ = ["ATTRIBUTE_SYNTAX", "SYNTAX", "parse_custom_operation", "parse_conv_dims",
           "BoolAttr", "i64_array", "i64_attr", "p_elementwise"]
