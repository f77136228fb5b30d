"""The symbol table and sections of an ELF file, read in one pass with numpy.

A build reads symbol tables many times: each object's undefined symbols before each
link (the compiler-helper aliases it needs), the linked image's (no undefined symbol
left), the stack's bounds and the benchmark markers before the QEMU run. pyelftools
parses every symbol as a Python object through its construct library, 20-60 ms per
table; this reads the section headers and the whole table as numpy records and only
the names it is asked for as strings. The size report reads the objects' mergeable
sections through it too (read_sections). It reads what the ELF specification (System V
ABI, "Object Files") fixes for 32- and 64-bit little-endian files (every target minirt
has) and refuses anything else with ELFFormatError; what needs segments or more of the
format keeps pyelftools.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["EM_ARM", "ET_EXEC", "ELFFormatError", "ElfHeader", "ElfSection", "ElfSymbols",
           "read_header", "read_sections", "read_symbols"]

EM_ARM = 40  # e_machine of 32-bit Arm (Thumb functions' symbols have bit 0 set)
ET_EXEC = 2  # e_type of an executable
PT_INTERP, PT_DYNAMIC = 3, 2  # what a dynamically linked image has
SHT_SYMTAB = 2
SHT_NOBITS = 8
SHN_UNDEF = 0
_MAGIC = b"\x7fELF"


class ELFFormatError(ValueError):
    """Not an ELF file this reader understands (truncated, another format)."""


def _section_dtype(bits: int, order: str) -> np.dtype:
    word = f"{order}u4" if bits == 32 else f"{order}u8"
    return np.dtype([("name", f"{order}u4"), ("type", f"{order}u4"), ("flags", word),
                     ("addr", word), ("offset", word), ("size", word),
                     ("link", f"{order}u4"), ("info", f"{order}u4"), ("addralign", word),
                     ("entsize", word)])


def _symbol_dtype(bits: int, order: str) -> np.dtype:
    if bits == 32:
        return np.dtype([("name", f"{order}u4"), ("value", f"{order}u4"),
                         ("size", f"{order}u4"), ("info", "u1"), ("other", "u1"),
                         ("shndx", f"{order}u2")])
    return np.dtype([("name", f"{order}u4"), ("info", "u1"), ("other", "u1"),
                     ("shndx", f"{order}u2"), ("value", f"{order}u8"),
                     ("size", f"{order}u8")])


@dataclass(frozen=True)
class ElfSymbols:
    """An ELF file's machine (e_machine) and its .symtab: `table` holds one numpy record
    per symbol (name offset, value, size, info, other, shndx), `strings` the string
    table the names index."""

    machine: int
    table: np.ndarray
    strings: bytes

    def _raw_name(self, i: int) -> bytes:
        start = int(self.table["name"][i])
        end = self.strings.find(b"\0", start)
        return self.strings[start:end if end >= 0 else len(self.strings)]

    def name(self, i: int) -> str:
        """The name of symbol `i`."""
        return self._raw_name(i).decode("utf-8", "replace")

    def undefined(self) -> frozenset[str]:
        """The names of the undefined symbols (section index SHN_UNDEF, a name)."""
        rows = np.flatnonzero((self.table["shndx"] == SHN_UNDEF) & (self.table["name"] != 0))
        return frozenset(self.name(i) for i in rows)

    def values(self, names: tuple[str, ...] | list[str]) -> dict[str, int]:
        """The value (address) of the first symbol of each of `names` that the table
        has, as pyelftools' get_symbol_by_name(name)[0] gives it; a name it lacks is
        left out."""
        wanted = {n.encode(): n for n in names}
        found: dict[str, int] = {}
        for i in range(len(self.table)):
            name = wanted.get(self._raw_name(i))
            if name is not None and name not in found:
                found[name] = int(self.table["value"][i])
                if len(found) == len(wanted):
                    break
        return found


def _section_headers(data: bytes) -> tuple[np.ndarray, int, int]:
    """The section header table of ELF file `data` as numpy records, its e_machine and
    e_shstrndx; ELFFormatError when it is no ELF file this reader can read."""
    if len(data) < 52 or data[:4] != _MAGIC or data[4] not in (1, 2):
        raise ELFFormatError("not an ELF file")
    if data[5] != 1:  # EI_DATA: ELFDATA2LSB
        raise ELFFormatError("a big-endian ELF file (minirt's targets are little-endian)")
    bits = 32 if data[4] == 1 else 64
    try:
        # e_shoff, then e_shentsize, e_shnum and e_shstrndx, where each class puts them.
        shoff_at, word, counts_at = (0x20, "u4", 0x2E) if bits == 32 else (0x28, "u8", 0x3A)
        shoff = int(np.frombuffer(data, f"<{word}", 1, shoff_at)[0])
        shentsize, shnum, shstrndx = (int(v) for v in np.frombuffer(data, "<u2", 3,
                                                                      counts_at))
        machine = int(np.frombuffer(data, "<u2", 1, 0x12)[0])
        sdt = _section_dtype(bits, "<")
        if shnum == 0 or shentsize != sdt.itemsize:
            raise ELFFormatError("no section headers this reader understands")
        return np.frombuffer(data, sdt, shnum, shoff), machine, shstrndx
    except ELFFormatError:
        raise
    except (ValueError, IndexError) as e:  # numpy: a table past the end of the buffer
        raise ELFFormatError(f"truncated or damaged: {e}") from None


def _bytes_of(data: bytes, section: np.void) -> bytes:
    start, size = int(section["offset"]), int(section["size"])
    if start + size > len(data):
        raise ELFFormatError("a section past the end of the file")
    return bytes(data[start:start + size])


def read_symbols(data: bytes | Path) -> ElfSymbols | None:
    """The symbol table of ELF file `data` (its bytes, or a path), None when it has no
    .symtab; ELFFormatError when it is no ELF file this reader can read."""
    if isinstance(data, Path):
        data = data.read_bytes()
    sections, machine, _ = _section_headers(data)
    rows = np.flatnonzero(sections["type"] == SHT_SYMTAB)
    if not len(rows):
        return None
    symtab = sections[rows[0]]
    ydt = _symbol_dtype(32 if data[4] == 1 else 64, "<")
    try:
        strtab = sections[int(symtab["link"])]
        table = np.frombuffer(data, ydt, int(symtab["size"]) // ydt.itemsize,
                              int(symtab["offset"]))
    except (ValueError, IndexError) as e:
        raise ELFFormatError(f"truncated or damaged: {e}") from None
    return ElfSymbols(machine, table, _bytes_of(data, strtab))


@dataclass(frozen=True)
class ElfSection:
    """One section header: its name, sh_type, sh_flags, sh_size, sh_entsize and contents
    (empty for SHT_NOBITS)."""

    name: str
    type: int
    flags: int
    size: int
    entsize: int
    data: bytes


def read_sections(data: bytes | Path) -> list[ElfSection]:
    """The sections of ELF file `data` (its bytes, or a path) with their contents, in
    header order; ELFFormatError when it is no ELF file this reader can read."""
    if isinstance(data, Path):
        data = data.read_bytes()
    sections, _, shstrndx = _section_headers(data)
    try:
        names = _bytes_of(data, sections[shstrndx])
    except IndexError:
        raise ELFFormatError("no section name table") from None
    out = []
    for sec in sections:
        start = int(sec["name"])
        end = names.find(b"\0", start)
        out.append(ElfSection(
            names[start:end if end >= 0 else len(names)].decode("utf-8", "replace"),
            int(sec["type"]), int(sec["flags"]), int(sec["size"]), int(sec["entsize"]),
            b"" if int(sec["type"]) == SHT_NOBITS else _bytes_of(data, sec)))
    return out


@dataclass(frozen=True)
class ElfHeader:
    """What the link checks of an image besides its sections: e_type, e_entry and the
    p_type of each program header."""

    type: int
    entry: int
    segment_types: tuple[int, ...]

    @property
    def dynamic(self) -> bool:
        """Whether a segment asks for a dynamic loader (PT_INTERP, PT_DYNAMIC)."""
        return any(t in (PT_INTERP, PT_DYNAMIC) for t in self.segment_types)


def read_header(data: bytes | Path) -> ElfHeader:
    """The ELF header's e_type and e_entry and the program headers' types of `data`
    (bytes or a path); ELFFormatError when it is no ELF file this reader can read."""
    if isinstance(data, Path):
        data = data.read_bytes()
    _section_headers(data)  # the identification checks
    bits = 32 if data[4] == 1 else 64
    word = "<u4" if bits == 32 else "<u8"
    # e_entry and e_phoff follow e_version; e_phentsize and e_phnum sit before e_shentsize.
    entry_at, phoff_at, counts_at = (0x18, 0x1C, 0x2A) if bits == 32 else (0x18, 0x20, 0x36)
    try:
        e_type = int(np.frombuffer(data, "<u2", 1, 0x10)[0])
        entry = int(np.frombuffer(data, word, 1, entry_at)[0])
        phoff = int(np.frombuffer(data, word, 1, phoff_at)[0])
        phentsize, phnum = (int(v) for v in np.frombuffer(data, "<u2", 2, counts_at))
        types = tuple(int(np.frombuffer(data, "<u4", 1, phoff + i * phentsize)[0])
                      for i in range(phnum))
    except (ValueError, IndexError) as e:
        raise ELFFormatError(f"truncated or damaged: {e}") from None
    return ElfHeader(e_type, entry, types)
