"""The parser's cursor over one source file: peeking and consuming tokens, the common
expect-or-fail steps (punctuation, keywords, integers, comma lists), skipping balanced
text the parser keeps opaque, and the bound on nesting.

The bottom of the parser: the type, attribute and operation grammars
(`type_attribute_parser.py`, `op_parser.py`) and every dialect's pretty syntax build on
these steps, so all of them word their "expected X, found Y" errors alike. Follows
xDSL's convention: `parse_x` raises a located CompileError, `parse_optional_x` returns
None (or False) when the construct is absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from toolchain.diagnostics import CompileError, SourceFile
from toolchain.mlir.lexer import Lexer, Token
from toolchain.mlir.literals import int_literal_value, is_int_literal
from toolchain.types import DType

# Regions, attribute lists, nested dense literals and function types nest by recursion:
# deeper than this is an error at the construct, not a Python RecursionError. Real
# models nest a handful of levels; each level costs a few Python frames, and the
# importer recurses once more per level, all well inside Python's default limit.
MAX_NESTING = 64


class Cursor:
    """Token-level reading of one MLIR source file."""

    def __init__(self, source: SourceFile):
        self.lex = Lexer(source)
        self.source = source
        self.depth = 0

    @contextmanager
    def nested(self, tok: Token) -> Iterator[None]:
        """One level of recursive structure, opened at `tok`; refuses too many."""
        if self.depth >= MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels", tok)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ token helpers

    def peek(self) -> Token:
        return self.lex.peek()

    def error(self, message: str, tok: Token | None = None) -> CompileError:
        tok = tok or self.peek()
        return self.lex.error(message, tok.start)

    def _describe(self, tok: Token) -> str:
        return "end of file" if tok.kind == "eof" else f"'{tok.text[:40]}'"

    def parse_optional_punct(self, p: str) -> bool:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == p:
            self.lex.next()
            return True
        return False

    def parse_punct(self, p: str, context: str = "") -> Token:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == p:
            return self.lex.next()
        where = f" {context}" if context else ""
        raise self.error(f"expected '{p}'{where}, found {self._describe(tok)}", tok)

    def parse_optional_keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "bare" and tok.text == word:
            self.lex.next()
            return True
        return False

    def parse_keyword(self, word: str) -> Token:
        tok = self.peek()
        if tok.kind == "bare" and tok.text == word:
            return self.lex.next()
        raise self.error(f"expected '{word}', found {self._describe(tok)}", tok)

    def parse_bare(self, what: str = "identifier") -> Token:
        tok = self.peek()
        if tok.kind != "bare":
            raise self.error(f"expected {what}, found {self._describe(tok)}", tok)
        return self.lex.next()

    def parse_comma_list(self, parse_item: Callable[[], Any], close: str | None = None) -> list:
        """Items separated by commas; with `close`, stops (consuming it) at that punct."""
        items: list = []
        if close is not None and self.parse_optional_punct(close):
            return items
        items.append(parse_item())
        while self.parse_optional_punct(","):
            items.append(parse_item())
        if close is not None:
            self.parse_punct(close, "to close the list")
        return items

    def parse_integer(self, what: str = "integer") -> int:
        tok = self.peek()
        if tok.kind != "number" or not is_int_literal(tok.text):
            raise self.error(f"expected {what}, found {self._describe(tok)}", tok)
        self.lex.next()
        return self.int_value(tok)

    def int_value(self, tok: Token, ty: DType | None = None) -> int:
        """The value of integer token `tok` (see `int_literal_value`), which must fit in `ty`
        (default i64, what MLIR reads dimensions, indices and untyped integers as);
        located on failure."""
        value = int_literal_value(tok.text, lambda m: self.error(m, tok))
        if ty is None:
            lo, hi = -(1 << 63), (1 << 63) - 1
        elif ty.kind == "u":
            lo, hi = 0, (1 << ty.bits) - 1
        else:  # signless: the signed range, or the bit pattern as unsigned
            lo, hi = -(1 << (ty.bits - 1)), (1 << ty.bits) - 1
        if not lo <= value <= hi:
            raise self.error(f"integer {tok.text[:30]} does not fit in "
                             f"{ty.name if ty is not None else 'i64'}", tok)
        return value

    def parse_int_list(self) -> list[int]:
        """`[1, 2, 3]`."""
        self.parse_punct("[")
        return self.parse_comma_list(self.parse_integer, "]")

    def skip_balanced(self, open_: str) -> str:
        """Consumes text up to the bracket matching `open_` (just consumed); returns it."""
        close = {"<": ">", "(": ")", "[": "]", "{": "}"}[open_]
        text = self.lex.text
        start = pos = self.lex.pos
        depth = 1
        while pos < len(text):
            c = text[pos]
            if c == '"':
                m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(text, pos)
                if not m:
                    raise self.lex.error("unterminated string literal", pos)
                pos = m.end()
                continue
            if c == "-" and text.startswith("->", pos):
                pos += 2
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.lex.pos = pos + 1
                    self.lex._peeked = None
                    return text[start:pos]
            pos += 1
        raise self.lex.error(f"unbalanced '{open_}': no matching '{close}'", start - 1)

    def skip_optional_loc(self) -> str:
        """Skips a trailing ``loc(...)``; returns the text inside it ('' without one),
        which names the op in reports (mlir/locations.py)."""
        tok = self.peek()
        if tok.kind == "bare" and tok.text == "loc":
            self.lex.next()
            self.parse_punct("(", "after 'loc'")
            return self.skip_balanced("(")
        return ""
