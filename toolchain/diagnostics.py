"""Source locations and the compiler's error type.

Every user-facing error carries a location and renders as one line in the form
compilers use (``file:line:col: error: message``) followed by the source line and a
caret, so editors and CI logs can jump to it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import contextmanager
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
    every offending op at once instead of stopping at the first. `context` holds
    notes about this error itself: (message, location) pairs such as the call sites
    of the function it is in, rendered as `file:line:col: note: ...` after it.
    """

    def __init__(self, message: str, loc: Location | None = None,
                 notes: list[CompileError] | None = None,
                 context: list[tuple[str, Location]] | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.notes = notes or []
        self.context = list(context or [])

    def render(self) -> str:
        """All errors, each with its source line and caret, and its notes."""
        parts = [render(self.message, self.loc)]
        parts += [render(m, loc, "note") for m, loc in self.context]
        parts += [n.render() for n in self.notes]
        return "\n".join(parts)

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


class ErrorCollector(list):
    """The errors an importer finds, in a list that knows which inlined call is being
    imported: an error appended meanwhile remembers that call site, so `raise_all`
    can report an error inside a function called from several places once, at its
    own location, with each call site as a note."""

    def __init__(self) -> None:
        super().__init__()
        self._calls: list[tuple[str, Location | None]] = []

    @contextmanager
    def called_from(self, note: str, loc: Location | None) -> Iterator[None]:
        """While the body of a call is imported: `note` describes the call at `loc`."""
        self._calls.append((note, loc))
        try:
            yield
        finally:
            self._calls.pop()

    def append(self, error: CompileError) -> None:
        if self._calls and self._calls[-1][1] is not None:
            note, loc = self._calls[-1]
            error.context = [*error.context, (note, loc)]  # type: ignore[list-item]
        super().append(error)

    def extend(self, errors) -> None:  # type: ignore[override]
        for e in errors:
            self.append(e)

    def __iadd__(self, errors):  # type: ignore[override]
        self.extend(errors)
        return self


def _order(error: CompileError) -> tuple:
    """Source order; errors without a location keep their order, after the others."""
    if error.loc is None:
        return (1, "", 0)
    return (0, error.loc.source.name, error.loc.offset)


def merge_errors(errors: list[CompileError]) -> list[CompileError]:
    """The errors in source order, each distinct one once: the same message at the same
    place (an op inside a function inlined at several call sites) becomes one error
    whose context lists every call site, in source order."""
    merged: dict[tuple, CompileError] = {}
    for e in errors:
        key = (e.message, _order(e)) if e.loc is not None else (e.message, id(e))
        first = merged.get(key)
        if first is None:
            merged[key] = CompileError(e.message, e.loc, context=e.context)
            continue
        for note in e.context:
            if note not in first.context:
                first.context.append(note)
    out = sorted(merged.values(), key=_order)
    for e in out:
        e.context.sort(key=lambda n: (n[1].source.name, n[1].offset) if n[1] else ("", 0))
    return out


def raise_all(errors: list[CompileError]) -> None:
    """Raises the first error (in source order) carrying the rest as notes, after
    merging repeats (`merge_errors`); does nothing when empty."""
    merged = merge_errors(errors)
    if merged:
        first = merged[0]
        raise CompileError(first.message, first.loc, merged[1:], first.context)
