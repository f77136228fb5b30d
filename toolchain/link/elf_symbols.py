"""The symbol table of an ELF file, read in one pass with numpy.

A build reads symbol tables many times: each object's undefined symbols before each
link (the compiler-helper aliases it needs), the linked image's (no undefined symbol
left), the stack's bounds and the benchmark markers before the QEMU run. pyelftools
parses every symbol as a Python object through its construct library, 20-60 ms per
table; this reads the section headers and the whole table as numpy records and only
the names it is asked for as strings. It reads what the ELF specification (System V
ABI, "Object Files") fixes for 32- and 64-bit little-endian files (every target minirt
has) and refuses anything else with ELFFormatError; the size report, which needs
sections, segments and relocations, keeps pyelftools.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["EM_ARM", "ELFFormatError", "ElfSymbols", "read_symbols"]

EM_ARM = 40  # e_machine of 32-bit Arm (Thumb functions' symbols have bit 0 set)
SHT_SYMTAB = 2
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


def read_symbols(data: bytes | Path) -> ElfSymbols | None:
    """The symbol table of ELF file `data` (its bytes, or a path), None when it has no
    .symtab; ELFFormatError when it is no ELF file this reader can read."""
    if isinstance(data, Path):
        data = data.read_bytes()
    if len(data) < 52 or data[:4] != _MAGIC or data[4] not in (1, 2):
        raise ELFFormatError("not an ELF file")
    if data[5] != 1:  # EI_DATA: ELFDATA2LSB
        raise ELFFormatError("a big-endian ELF file (minirt's targets are little-endian)")
    bits = 32 if data[4] == 1 else 64
    order = "<"
    try:
        # e_shoff, then e_shentsize and e_shnum, where each class puts them.
        shoff_at, word, counts_at = (0x20, "u4", 0x2E) if bits == 32 else (0x28, "u8", 0x3A)
        shoff = int(np.frombuffer(data, f"{order}{word}", 1, shoff_at)[0])
        shentsize, shnum = (int(v) for v in np.frombuffer(data, f"{order}u2", 2, counts_at))
        machine = int(np.frombuffer(data, f"{order}u2", 1, 0x12)[0])
        sdt = _section_dtype(bits, order)
        if shnum == 0 or shentsize != sdt.itemsize:
            raise ELFFormatError("no section headers this reader understands")
        sections = np.frombuffer(data, sdt, shnum, shoff)
        rows = np.flatnonzero(sections["type"] == SHT_SYMTAB)
        if not len(rows):
            return None
        symtab = sections[rows[0]]
        strtab = sections[int(symtab["link"])]
        ydt = _symbol_dtype(bits, order)
        count = int(symtab["size"]) // ydt.itemsize
        table = np.frombuffer(data, ydt, count, int(symtab["offset"]))
        start, size = int(strtab["offset"]), int(strtab["size"])
        if start + size > len(data):
            raise ELFFormatError("string table past the end of the file")
        return ElfSymbols(machine, table, bytes(data[start:start + size]))
    except ELFFormatError:
        raise
    except (ValueError, IndexError) as e:  # numpy: a table past the end of the buffer
        raise ELFFormatError(f"truncated or damaged: {e}") from None
