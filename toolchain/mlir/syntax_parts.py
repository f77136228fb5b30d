"""Pieces shared by the pretty-syntax parsers of every dialect.

They mirror the assembly-format directives ops are printed with: an operand list that
stops before a `, keyword = ...`, the type signatures (`: T` for "every operand and the
result", `: (T1, T2) -> R`, CHLO's `: T1, T2 -> R`), `, keyword =` and the attribute
kinds StableHLO's generic form uses (`array<i64: ...>`, `#stablehlo<fft_type FFT>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolchain.mlir.ir import DenseArrayAttr, IntAttr, OpaqueAttr, Operation, Region, Value
from toolchain.mlir.lexer import Token
from toolchain.types import I64, FunctionType, dtype

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser

I1 = dtype("i1")
I32 = dtype("i32")


def i64_array(values: list[int]) -> DenseArrayAttr:
    """`array<i64: ...>`."""
    return DenseArrayAttr(I64, tuple(values))


def i64_attr(value: int) -> IntAttr:
    """`N : i64`."""
    return IntAttr(value, I64)


def enum_attr(dialect: str, kind: str, value: str) -> OpaqueAttr:
    """`#stablehlo<comparison_direction GT>` and the like."""
    return OpaqueAttr(dialect, f"{kind} {value}")


def operands(p: Parser) -> tuple[list[Value], list[Token]]:
    """`%a, %b` (possibly none); stops before a comma that introduces a keyword
    (`, dims = ...`) or a trailing comma. Also returns each operand's token, so a type
    mismatch can point at the operand at fault."""
    toks: list[Token] = []
    values: list[Value] = []
    if p.peek().kind != "value":
        return values, toks
    toks.append(p.peek())
    values.append(p.parse_operand())
    while p.peek().text == ",":
        save = p.lex.pos
        p.lex.next()
        if p.peek().kind != "value":
            p.lex.pos = save
            p.lex._peeked = None
            break
        toks.append(p.peek())
        values.append(p.parse_operand())
    return values, toks


def signature(p: Parser, values: list[Value], toks: list[Token],
              same_type_results: int = 1) -> list[Value]:
    """`: T` (every operand and each result), `: T1, T2` (select's short form: the
    last type is the result's) or `: (T, T) -> R`; returns the results."""
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.kind == "punct" and ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(values, list(fty.inputs), toks, ty_tok)
        return [Value(t) for t in fty.results]
    types = p.parse_comma_list(p.parse_type)
    if len(types) == 1:
        p.check_operand_types(values, types * len(values), toks, ty_tok)
        return [Value(types[0]) for _ in range(same_type_results)]
    p.check_operand_types(values, types, toks, ty_tok)
    return [Value(types[-1])]


def functional(p: Parser, values: list[Value], toks: list[Token]) -> list[Value]:
    """`: (T1, T2) -> R` or `-> (R1, R2)`; returns the results."""
    return p.parse_functional_type(values, toks)


def arrow_signature(p: Parser, values: list[Value], toks: list[Token]) -> list[Value]:
    """CHLO's `: T1, T2 -> R` and `: T -> (R1, R2)`; a function type `(T) -> R` too."""
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    first = p.parse_type()
    if isinstance(first, FunctionType) and p.peek().text != "->":
        p.check_operand_types(values, list(first.inputs), toks, ty_tok)
        return [Value(t) for t in first.results]
    types = [first]
    while p.parse_optional_punct(","):
        types.append(p.parse_type())
    p.check_operand_types(values, types, toks, ty_tok)
    p.parse_punct("->", "before the result type")
    return [Value(t) for t in result_types(p)]


def result_types(p: Parser) -> list:
    """`T` or `(T1, T2)` after an arrow (a bare `(` here is a list, not a function)."""
    if p.parse_optional_punct("("):
        return p.parse_comma_list(p.parse_type, ")")
    return [p.parse_type()]


def keyword_eq(p: Parser, word: str, comma: bool = True) -> None:
    """`, word =` (or `word =`)."""
    if comma:
        p.parse_punct(",", f"before '{word}'")
    p.parse_keyword(word)
    p.parse_punct("=", f"after '{word}'")


def bare_word(p: Parser, what: str) -> str:
    """An enum value written bare (`FFT`, `PHILOX`, `GT`)."""
    return p.parse_bare(what).text


def make_op(name: str, values: list[Value], results: list[Value], props: dict,
            attrs: dict, regions: list[Region] | None = None) -> Operation:
    """The Operation the generic form of the same op would give."""
    return Operation(name, values, results, attrs, props, regions or [])


__all__ = ["I1", "I32", "arrow_signature", "bare_word", "enum_attr", "functional",
           "i64_array", "i64_attr", "keyword_eq", "make_op", "operands", "result_types",
           "signature"]
