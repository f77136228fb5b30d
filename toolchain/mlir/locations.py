"""The name an MLIR location gives an op, for the reports (graph/sources.py).

MLIR's location forms and the name each one gives:
- a name location ``loc("conv1")`` or ``loc("conv1"(<child>))``: ``conv1``, the
  form JAX exports (``loc("jit(f)/jit(main)/dot_general"(#loc3))``);
- a fused location ``loc(fused["a", "b"])`` or ``loc(fused<meta>[...])``: the names
  of its parts joined by ``;`` (TFLite's converter joins fused op names the same way);
- a call site ``loc(callsite(<callee> at <caller>))``: the callee's name;
- an alias ``loc(#loc3)``: what the alias's location gives (aliases may be defined
  after their use, as JAX prints them at the end of the file);
- a file location ``loc("model.py":3:4)`` and ``loc(unknown)``: no name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolchain.mlir.literals import unescape

__all__ = ["location_name"]

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FILE_LINE = re.compile(r'"(?:[^"\\]|\\.)*"\s*:\s*\d+')
_ALIAS = re.compile(r"#([\w.$-]+)")
# Alias chains deeper than this are cyclic or hostile: they give no name.
MAX_ALIAS_DEPTH = 32


def _split_top(text: str) -> list[str]:
    """The comma-separated parts of `text` that are not inside brackets or strings."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            m = _STRING.match(text, i)
            i = m.end() if m else len(text)
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def location_name(body: str, aliases: Mapping[str, Any], depth: int = 0) -> str:
    """The name of the location whose text inside ``loc(...)`` is `body` ('' when it
    names nothing); `aliases` maps alias names to parsed ``#name = loc(...)`` values
    (attributes whose ``body`` is the text inside their ``loc(...)``)."""
    body = body.strip()
    if depth > MAX_ALIAS_DEPTH:
        return ""
    if body.startswith("#"):
        m = _ALIAS.match(body)
        alias = aliases.get(m.group(1)) if m else None
        text = getattr(alias, "body", None)
        return location_name(text, aliases, depth + 1) if isinstance(text, str) else ""
    if body.startswith("fused"):
        start = body.find("[")
        if start < 0 or not body.endswith("]"):
            return ""
        names = [location_name(p, aliases, depth + 1) for p in _split_top(body[start + 1:-1])]
        return ";".join(n for n in names if n)
    if body.startswith("callsite(") and body.endswith(")"):
        inner = body[len("callsite("):-1]
        callee = re.split(r"\s+at\s+", inner, maxsplit=1)[0]
        return location_name(callee, aliases, depth + 1)
    if body.startswith('"') and not _FILE_LINE.match(body):
        m = _STRING.match(body)
        if m:
            return unescape(m.group(0))
    return ""
