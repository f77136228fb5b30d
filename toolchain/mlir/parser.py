"""Parses MLIR text into the generic operation tree of `toolchain.mlir.ir`: the entry
points, which give the grammar every dialect's pretty syntax.

The parser is layered so its imports run one way: `cursor.py` (tokens),
`type_attribute_parser.py` (types and attributes) and `op_parser.py` (values, ops,
regions, the whole file) are the grammar; the dialect files (`core_syntax.py`,
`stablehlo_syntax.py`, `chlo_syntax.py`, `tosa_syntax.py`, `struct_attrs.py`) build on
it, and `custom_syntax.py` gathers their tables. This module, above them all, hands
those tables to the grammar.
"""

from __future__ import annotations

from pathlib import Path

from toolchain.diagnostics import CompileError, Location, SourceFile
from toolchain.mlir.custom_syntax import ATTRIBUTE_SYNTAX, parse_custom_operation
from toolchain.mlir.ir import Operation, Value
from toolchain.mlir.op_parser import Parser
from toolchain.mlir.type_attribute_parser import complex_dtype
from toolchain.types import TensorType


def parse_text(text: str, filename: str = "<input>") -> Operation:
    """Parses MLIR text; returns the `builtin.module` op. Raises CompileError."""
    parser = Parser(SourceFile(filename, text), parse_custom_operation, ATTRIBUTE_SYNTAX)
    try:
        return parser.parse_module_text()
    except CompileError as e:
        raise parser.earliest(e) from None


def parse_file(path: str | Path) -> Operation:
    """Parses an MLIR file. Raises CompileError (also for unreadable / non-UTF-8 files)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CompileError(f"{path}: {e.strerror}") from None
    return parse_bytes(raw, str(path))


def parse_bytes(raw: bytes, filename: str = "<input>") -> Operation:
    """Parses the bytes of an MLIR file, which must be UTF-8. Raises CompileError."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # Point at the bad byte: the text before it decodes, so its length is the column.
        source = SourceFile(filename, raw.decode("utf-8", errors="replace"))
        offset = len(raw[: e.start].decode("utf-8"))
        raise CompileError(f"not a UTF-8 text file (invalid byte 0x{raw[e.start]:02X})",
                           Location(source, offset)) from None
    return parse_text(text, filename)


# `Parser` and `complex_dtype` are re-exported for the importers that took them from
# here (the frontend reads tuple types with a bare Parser; the op report asks numpy's
# complex types); the others for older callers.
__all__ = ["Parser", "complex_dtype", "parse_bytes", "parse_text", "parse_file", "Value",
           "Operation", "TensorType"]
