"""Source locations and the compiler's error type.

Every user-facing error carries a location and renders as one line in the form
compilers use (``file:line:col: error: message``) followed by the source line and a
caret, so editors and CI logs can jump to it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


class SourceFile:
    """The text of one input file, with line starts indexed for offset -> line:col."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text
        self._line_starts: list[int] | None = None

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of 1-based `line`, without its newline."""
        self.line_col(0)
        assert self._line_starts is not None
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end == -1 else self.text[start:end]


@dataclass(frozen=True)
class Location:
    """A point in a source file."""

    source: SourceFile
    offset: int

    @property
    def line_col(self) -> tuple[int, int]:
        return self.source.line_col(self.offset)

    def __str__(self) -> str:
        line, col = self.line_col
        return f"{self.source.name}:{line}:{col}"


# Long lines (hex blobs run to megabytes) are clipped around the caret.
_CONTEXT = 100


def render(message: str, loc: Location | None, kind: str = "error") -> str:
    """Formats a diagnostic: one headline, then the source line and a caret."""
    if loc is None:
        return f"{kind}: {message}"
    line, col = loc.line_col
    head = f"{loc}: {kind}: {message}"
    text = loc.source.line_text(line)
    start = max(0, col - 1 - _CONTEXT)
    snippet = text[start : col - 1 + _CONTEXT]
    prefix = "..." if start else ""
    suffix = "..." if len(text) > col - 1 + _CONTEXT else ""
    caret = " " * (len(prefix) + col - 1 - start) + "^"
    return f"{head}\n{prefix}{snippet}{suffix}\n{caret}"


class CompileError(Exception):
    """An error in the user's input, reported with its location.

    `notes` holds further errors found in the same input, so a tool can report
    every offending op at once instead of stopping at the first.
    """

    def __init__(self, message: str, loc: Location | None = None,
                 notes: list[CompileError] | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.notes = notes or []

    def render(self) -> str:
        """All errors, each with its source line and caret."""
        parts = [render(self.message, self.loc)]
        parts += [n.render() for n in self.notes]
        return "\n".join(parts)

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


def raise_all(errors: list[CompileError]) -> None:
    """Raises the first error carrying the rest as notes; does nothing when empty."""
    if errors:
        first = errors[0]
        raise CompileError(first.message, first.loc, errors[1:])
