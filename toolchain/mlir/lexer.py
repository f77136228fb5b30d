"""MLIR tokens, produced on demand from a character cursor.

Some MLIR syntax is not context-free at the token level (`tensor<1x640xf32>` lexes
`1x640xf32` as dimensions, `%0:2` as a result group), so the parser may also match
raw text at the cursor; the lexer therefore keeps a position, not a token list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolchain.diagnostics import CompileError, Location, SourceFile

_SKIP = re.compile(r"(?:\s+|//[^\n]*)*")
_VALUE = re.compile(r"%(?:[0-9]+|[A-Za-z_$.\-][\w$.\-]*)")
_SYMBOL = re.compile(r'@(?:[A-Za-z_][\w$.\-]*|"(?:[^"\\\n]|\\.)*")')
_BLOCK = re.compile(r"\^[\w$.\-]+")
_HASH = re.compile(r"#[A-Za-z_][\w$.\-]*")
_BANG = re.compile(r"![A-Za-z_][\w$.\-]*")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NUMBER = re.compile(
    r"[-+]?(?:0x[0-9a-fA-F]+|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+(?:[eE][-+]?[0-9]+)?)"
)
_BARE = re.compile(r"[A-Za-z_][\w$.]*")
_PUNCT = ("{-#", "#-}", "->", "::", "...", "(", ")", "[", "]", "{", "}", "<", ">", ",",
          ":", "=", "?", "*", "+", "-", "|")


@dataclass(frozen=True)
class Token:
    kind: str  # value symbol block hash bang string number bare punct eof
    text: str
    start: int
    end: int


class Lexer:
    """A cursor over one source file that hands out tokens lazily."""

    def __init__(self, source: SourceFile):
        self.source = source
        self.text = source.text
        self.pos = 0
        self._peeked: Token | None = None

    def loc(self, offset: int) -> Location:
        return Location(self.source, offset)

    def error(self, message: str, offset: int) -> CompileError:
        return CompileError(message, self.loc(offset))

    def skip_ws(self) -> int:
        self.pos = _SKIP.match(self.text, self.pos).end()
        return self.pos

    def peek(self) -> Token:
        tok = self._peeked
        if tok is None or tok.start < self.pos:
            tok = self._peeked = self._scan()
        return tok

    def next(self) -> Token:
        tok = self.peek()
        self.pos = tok.end
        self._peeked = None
        return tok

    def match_raw(self, pattern: re.Pattern[str], skip_ws: bool = True) -> re.Match[str] | None:
        """Matches `pattern` at the cursor (after whitespace) and consumes it on success."""
        pos = self.skip_ws() if skip_ws else self.pos
        m = pattern.match(self.text, pos)
        if m:
            self.pos = m.end()
            self._peeked = None
        return m

    def _scan(self) -> Token:
        pos = self.skip_ws()
        text = self.text
        if pos >= len(text):
            return Token("eof", "", pos, pos)
        c = text[pos]
        m = None
        kind = ""
        if c == "%":
            m, kind = _VALUE.match(text, pos), "value"
        elif c == "@":
            m, kind = _SYMBOL.match(text, pos), "symbol"
        elif c == "^":
            m, kind = _BLOCK.match(text, pos), "block"
        elif c == "#" and not text.startswith("#-}", pos):
            m, kind = _HASH.match(text, pos), "hash"
        elif c == "!":
            m, kind = _BANG.match(text, pos), "bang"
        elif c == '"':
            m, kind = _STRING.match(text, pos), "string"
            if m is None:
                raise self.error("unterminated string literal", pos)
        elif c.isdigit() or (c in "+-" and pos + 1 < len(text) and text[pos + 1].isdigit()):
            m, kind = _NUMBER.match(text, pos), "number"
        elif c.isalpha() or c == "_":
            m, kind = _BARE.match(text, pos), "bare"
        if m is not None:
            return Token(kind, m.group(), pos, m.end())
        for p in _PUNCT:
            if text.startswith(p, pos):
                return Token("punct", p, pos, pos + len(p))
        raise self.error(f"unexpected character {c!r}", pos)
