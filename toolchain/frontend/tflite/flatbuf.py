"""Bounds-checked reading of flatbuffer tables through the `tflite` package's classes.

The generated classes in `tflite` (Model, SubGraph, Tensor, ...) read through a
`flatbuffers.table.Table`, which trusts every offset and length it finds: on a
truncated or corrupted file they raise whatever Python raises first (IndexError,
struct.error, TypeError) or return garbage. `CheckedTable` is a drop-in replacement
that checks every read against the buffer before it happens and raises FormatError
with what was wrong. `checked(obj)` swaps it into any generated object, so the schema
knowledge stays in the generated classes and the safety stays here.

Offsets in a flatbuffer only ever point forward (unsigned), except a table's link to
its vtable; reading a tree top-down therefore cannot loop, and every count is bounded
by the file's size because each element read is checked.
"""

from __future__ import annotations

import struct
from typing import Any, TypeVar

import numpy as np
from flatbuffers import number_types as N
from flatbuffers.table import Table

T = TypeVar("T")


class FormatError(Exception):
    """The bytes are not a well-formed flatbuffer of the TFLite schema."""


_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")


class CheckedTable(Table):
    """A flatbuffers Table whose every read is checked against the buffer's bounds."""

    __slots__ = ()

    def _need(self, off: int, size: int, what: str) -> None:
        if off < 0 or off + size > len(self.Bytes):
            raise FormatError(f"{what} at byte {off} ({size} bytes) lies outside the "
                              f"{len(self.Bytes)}-byte file")

    def _u32(self, off: int, what: str) -> int:
        self._need(off, 4, what)
        return _U32.unpack_from(self.Bytes, off)[0]

    def Offset(self, vtableOffset: int) -> int:  # noqa: N802 (flatbuffers' API)
        self._need(self.Pos, 4, "table")
        vtable = self.Pos - _I32.unpack_from(self.Bytes, self.Pos)[0]
        self._need(vtable, 4, "vtable")
        vsize, tsize = _U16.unpack_from(self.Bytes, vtable)[0], _U16.unpack_from(
            self.Bytes, vtable + 2)[0]
        if vsize < 4 or vsize % 2:
            raise FormatError(f"vtable at byte {vtable} has an invalid size {vsize}")
        self._need(vtable, vsize, "vtable")
        self._need(self.Pos, max(tsize, 4), "table")
        if vtableOffset + 2 > vsize:
            return 0  # a field newer than the writer's schema: its default
        field = _U16.unpack_from(self.Bytes, vtable + vtableOffset)[0]
        if field and field >= tsize:
            raise FormatError(f"table at byte {self.Pos} has a field at offset {field}, past "
                              f"its own size {tsize}")
        return field

    def Indirect(self, off: int) -> int:  # noqa: N802
        target = off + self._u32(off, "offset")
        self._need(target, 4, "table")  # objects are made at it before any read
        return target

    def String(self, off: int) -> bytes:  # noqa: N802
        start = off + self._u32(off, "string offset")
        length = self._u32(start, "string length")
        self._need(start + 4, length, "string")
        return bytes(self.Bytes[start + 4:start + 4 + length])

    def VectorLen(self, off: int) -> int:  # noqa: N802
        start = self.Pos + off
        start += self._u32(start, "vector offset")
        length = self._u32(start, "vector length")
        # Every element takes at least one byte: a longer claim cannot be true.
        self._need(start + 4, length, "vector")
        return length

    def Vector(self, off: int) -> int:  # noqa: N802
        start = self.Pos + off
        return start + self._u32(start, "vector offset") + 4

    def Union(self, t2: Table, off: int) -> None:  # noqa: N802
        start = self.Pos + off
        target = start + self._u32(start, "union offset")
        self._need(target, 4, "table")
        t2.Pos = target
        t2.Bytes = self.Bytes

    def Get(self, flags: Any, off: int) -> Any:  # noqa: N802
        self._need(off, flags.bytewidth, "value")
        return flags.py_type(flags.packer_type.unpack_from(self.Bytes, off)[0])

    def GetVectorAsNumpy(self, flags: Any, off: int) -> np.ndarray:  # noqa: N802
        start, length = self.Vector(off), self.VectorLen(off)
        dt = np.dtype(N.to_numpy_type(flags)).newbyteorder("<")
        self._need(start, length * dt.itemsize, "vector")
        return np.frombuffer(self.Bytes, dtype=dt, count=length, offset=start).copy()


def checked(obj: T) -> T:
    """`obj` (a generated tflite object, or None) reading through a CheckedTable."""
    if obj is not None:
        tab = obj._tab  # type: ignore[attr-defined]
        obj._tab = CheckedTable(tab.Bytes, tab.Pos)  # type: ignore[attr-defined]
    return obj


def checked_as(cls: type[T], table: Table | None) -> T | None:
    """A union member (the Table an accessor like BuiltinOptions() returns) read as
    `cls`, through a CheckedTable; None for an absent member."""
    if table is None:
        return None
    obj = cls()
    obj.Init(table.Bytes, table.Pos)  # type: ignore[attr-defined]
    return checked(obj)


class _NoFields(Table):
    """A table with no fields: every accessor returns the schema's default."""

    __slots__ = ()

    def Offset(self, vtableOffset: int) -> int:  # noqa: N802
        return 0


def defaults_of(cls: type[T]) -> T:
    """An instance of generated class `cls` whose accessors give the schema defaults:
    what a reader sees for an options table the writer left out."""
    obj = cls()
    obj._tab = _NoFields(b"", 0)  # type: ignore[attr-defined]
    return obj
