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

from toolchain.module import format as fmt
from toolchain.module.contract import ImageContract

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
        # Four addresses (dispatch table, I/O sizes, the command list's start and end
        # inside this struct), the target id, layout CRC and pool offset, then the
        # pinned module bytes: the header's words after its CRC, the signature records
        # and the command list.
        fixed = 4 * ptr + 12
        head = fmt.HEADER_SIZE - fmt.CRC_START
        if sym["st_size"] < fixed + head:
            raise ImageError(f"{elf_path}: {IMAGE_SYMBOL} has {sym['st_size']} bytes, "
                             f"mrt_image_t has at least {fixed + head}")
        at = _file_offset(elf, sym["st_value"], sym["st_size"], elf_path)
        word = "<Q" if ptr == 8 else "<I"
        commands, end = (struct.unpack_from(word, data, at + i * ptr)[0] for i in (2, 3))
        target, crc, pool = struct.unpack_from("<3I", data, at + 4 * ptr)
        pinned = sym["st_value"] + fixed  # the address of the first pinned word
        size = end - sym["st_value"]
        if not (pinned + head <= commands <= end and fixed + head <= size <= sym["st_size"]
                < size + ptr):  # padded to the pointer alignment
            raise ImageError(f"{elf_path}: {IMAGE_SYMBOL} has {sym['st_size']} bytes, its "
                             f"command list is at {commands:#x}..{end:#x}")
        try:
            contract = ImageContract(target, crc, data[at + fixed:at + size])
        except ValueError as e:
            raise ImageError(f"{elf_path}: {e}") from None
        if commands - pinned != contract.header.signature_size + head:
            raise ImageError(f"{elf_path}: {IMAGE_SYMBOL}'s command list starts at "
                             f"{commands:#x}, its signature ends at "
                             f"{pinned + head + contract.header.signature_size:#x}")
        if contract.pool_offset != pool:
            raise ImageError(f"{elf_path}: {IMAGE_SYMBOL} says the pool starts at {pool}, "
                             f"its structure at {contract.pool_offset}")
        return contract
