"""Reads what a linked firmware image carries: its module and its image contract.

The module the loader runs is the `mrt_image_module` array in flash, and the contract it
is checked against is `mrt_image` (`mrt_image_t`, minirt.h) with the tables it points
to. Reading them back from the ELF, rather than trusting the build's Python objects,
is how tools and tests see exactly what the device will run.
"""

from __future__ import annotations

import struct
from pathlib import Path

from elftools.elf.elffile import ELFFile

from toolchain.module.contract import BindingNeed, CommandNeed, ImageContract
from toolchain.module.format import BindingKind

__all__ = ["ImageError", "image_contract_of", "module_span"]

MODULE_SYMBOL = "mrt_image_module"
IMAGE_SYMBOL = "mrt_image"


class ImageError(ValueError):
    """The ELF is not a minirt firmware image (or not a complete one)."""


def _symbol(elf: ELFFile, name: str, path: Path):
    symtab = elf.get_section_by_name(".symtab")
    syms = symtab.get_symbol_by_name(name) if symtab is not None else None
    if not syms:
        raise ImageError(f"{path}: no symbol {name} (not a minirt firmware image?)")
    return syms[0]


def _file_offset(elf: ELFFile, address: int, size: int, path: Path) -> int:
    """Where `size` bytes at `address` sit in the file (in a PT_LOAD segment)."""
    for seg in elf.iter_segments():
        start = seg["p_vaddr"]
        if seg["p_type"] == "PT_LOAD" and start <= address and address + size <= \
                start + seg["p_filesz"]:
            return seg["p_offset"] + address - start
    raise ImageError(f"{path}: {size} bytes at {address:#x} are not in a loaded segment")


def module_span(elf_path: Path) -> tuple[int, int]:
    """(file offset, size) of the module bytes inside the ELF."""
    elf_path = Path(elf_path)
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        sym = _symbol(elf, MODULE_SYMBOL, elf_path)
        return _file_offset(elf, sym["st_value"], sym["st_size"], elf_path), sym["st_size"]


def image_contract_of(elf_path: Path) -> ImageContract:
    """The contract (`mrt_image`) the firmware checks every module against."""
    elf_path = Path(elf_path)
    data = elf_path.read_bytes()
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        ptr = elf.elfclass // 8
        sym = _symbol(elf, IMAGE_SYMBOL, elf_path)
        size = 3 * ptr + 16
        if sym["st_size"] != size:
            raise ImageError(f"{elf_path}: {IMAGE_SYMBOL} has {sym['st_size']} bytes, "
                             f"mrt_image_t has {size}")
        at = _file_offset(elf, sym["st_value"], size, elf_path)
        _, commands_at, io_at = struct.unpack_from(f"<3{'Q' if ptr == 8 else 'I'}", data, at)
        target, crc, n_commands, n_in, n_out = struct.unpack_from("<IIIHH", data, at + 3 * ptr)

        def words(address: int, count: int) -> list[int]:
            off = _file_offset(elf, address, 4 * count, elf_path)
            return list(struct.unpack_from(f"<{count}I", data, off))

        io = words(io_at, n_in + n_out) if n_in + n_out else []
        commands = []
        pos = commands_at
        for _ in range(n_commands):
            (head,) = words(pos, 1)
            n = head >> 16
            needs = words(pos + 4, n) if n else []
            commands.append(CommandNeed(head & 0xFFFF, tuple(
                BindingNeed(BindingKind(w >> 30), w & 0x3FFFFFFF) for w in needs)))
            pos += 4 * (1 + n)
    return ImageContract(target, crc, tuple(commands), tuple(io[:n_in]), tuple(io[n_in:]))
