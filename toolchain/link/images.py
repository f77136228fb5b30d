"""Flashable images from a linked ELF, and the checks that they are what the ELF says.

Three formats carry the flash content (the file-backed parts of the ELF's PT_LOAD
segments at their load addresses):

* raw binary (``.bin``): the bytes from the lowest load address on, gaps filled with the
  erased-flash value 0xFF; its base address travels beside it (``.bin.base``, size.json);
* Intel HEX (``.hex``), written here (as the ``intelhex`` package writes it, faster)
  and read with ``intelhex``: data records at their addresses, and the entry point as a
  start linear address record;
* UF2 (``.uf2``), for boards with a UF2 bootloader: one 512-byte block per 256-byte flash
  page the image touches, each with its target address and the board's family ID
  (the UF2 specification: github.com/microsoft/uf2).

Each format has a reader here too, so a round trip can be checked against the ELF, and
``layout_problems`` checks that an image is laid out for a board: every section inside
one of its memories, the vector table (Cortex-M) or the entry (RISC-V) at the start of
its flash.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from toolchain.target import Board
from toolchain.target.esp import ESP_CHIPS

__all__ = [
    "UF2_BLOCK_SIZE",
    "UF2_FLAG_FAMILY",
    "UF2_PAYLOAD",
    "VERIFY_WORDS",
    "ImageFormatError",
    "LoadChunk",
    "coalesce",
    "flash_chunks",
    "image_matches",
    "images_record",
    "intel_hex",
    "layout_problems",
    "raw_binary",
    "read_intel_hex",
    "read_uf2",
    "uf2_image",
]

ERASED = 0xFF  # what a flash byte holds after an erase: the fill of gaps and padding

UF2_BLOCK_SIZE = 512
UF2_PAYLOAD = 256  # bytes of data per block, what every UF2 bootloader accepts
UF2_MAGIC_START0 = 0x0A324655  # "UF2\n"
UF2_MAGIC_START1 = 0x9E5D5157
UF2_MAGIC_END = 0x0AB16F30
UF2_FLAG_NOT_MAIN_FLASH = 0x00000001
UF2_FLAG_FAMILY = 0x00002000  # the word after numBlocks is a family ID, not a file size
_UF2_HEADER = struct.Struct("<8I")  # magic0, magic1, flags, addr, size, block, count, family
_UF2_DATA = 476  # the data field of a block; the payload is padded with zeros to it


class ImageFormatError(ValueError):
    """A .hex or .uf2 file that is not well formed."""


@dataclass(frozen=True)
class LoadChunk:
    """Bytes that must be present at ``address`` in the device's memory."""

    address: int
    data: bytes

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.address + len(self.data)


def flash_chunks(elf_path: Path, origin: int, end: int) -> list[LoadChunk]:
    """File-backed parts of PT_LOAD segments whose load (physical) address is in
    [origin, end): the content to program into flash, sorted by address."""
    chunks = []
    with Path(elf_path).open("rb") as f:
        elf = ELFFile(f)
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_LOAD" or seg["p_filesz"] == 0:
                continue
            addr = seg["p_paddr"]
            if origin <= addr < end:
                chunks.append(LoadChunk(addr, seg.data()[: seg["p_filesz"]]))
    return sorted(chunks, key=lambda c: c.address)


def coalesce(chunks: Iterable[LoadChunk]) -> list[LoadChunk]:
    """The chunks sorted, with adjacent ones merged; overlapping chunks are an error."""
    out: list[LoadChunk] = []
    for chunk in sorted(chunks, key=lambda c: c.address):
        if not chunk.data:
            continue
        if out and chunk.address < out[-1].end:
            raise ValueError(f"overlapping load chunks at {chunk.address:#x}")
        if out and chunk.address == out[-1].end:
            out[-1] = LoadChunk(out[-1].address, out[-1].data + chunk.data)
        else:
            out.append(chunk)
    return out


def raw_binary(chunks: Iterable[LoadChunk], fill: int = ERASED) -> tuple[int, bytes]:
    """(base address, bytes) covering all chunks; gaps are filled with ``fill`` (the
    erased-flash value by default)."""
    merged = coalesce(chunks)
    if not merged:
        return 0, b""
    base = merged[0].address
    out = bytearray()
    for chunk in merged:
        out.extend(bytes([fill]) * (chunk.address - base - len(out)))
        out.extend(chunk.data)
    return base, bytes(out)


# --------------------------------------------------------------------------- Intel HEX


def _intelhex() -> Any:
    """The intelhex module (a dependency: pyproject.toml says why)."""
    import intelhex

    return intelhex


def intel_hex(chunks: Iterable[LoadChunk], entry: int | None = None) -> str:
    """Intel HEX text of the chunks: 16-byte data records, extended linear address
    records where the upper 16 address bits change, the entry as a start linear address
    record (05) when given, and the end-of-file record.

    The text is exactly what intelhex's ``write_hex_file(byte_count=16)`` writes for the
    same bytes (tests/link/test_images.py compares them), at a tenth of its time: it
    walks the address of every byte through a dict, which took 0.15 s per image for
    vww_96_int8's 360 KB. Records: the start record first; then each contiguous run
    of bytes cut into records of 16 from the run's start and at every 64 KB boundary;
    a 04 record before the first and wherever the upper 16 bits grow, when any byte
    lies above 64 KB; then the end record. The full 16-byte records of a run are
    formatted together in numpy (_full_records): one record at a time was 20,000
    Python calls for resnet8's image."""
    pieces = []
    if entry is not None:
        pieces.append(_hex_record(5, 0, entry.to_bytes(4, "big")) + "\n")
    runs = coalesce(chunks)
    wide = bool(runs) and runs[-1].end - 1 > 0xFFFF
    high = None
    for run in runs:
        addr, data, pos = run.address, run.data, 0
        while pos < len(data):  # one 64 KB page's part of the run at a time
            if wide and (high is None or addr >> 16 > high):
                high = addr >> 16
                pieces.append(_hex_record(4, 0, high.to_bytes(2, "big")) + "\n")
            low = addr & 0xFFFF
            n = min(0x10000 - low, len(data) - pos)
            full = n // 16 * 16
            if full:
                pieces.append(_full_records(low, data[pos:pos + full]))
            if n > full:
                pieces.append(_hex_record(0, low + full, data[pos + full:pos + n]) + "\n")
            addr += n
            pos += n
    pieces.append(":00000001FF\n")
    return "".join(pieces)


_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


def _full_records(low: int, data: bytes) -> str:
    """The data records (type 00) of `data`, a multiple of 16 bytes within one 64 KB
    page from offset `low`, 16 bytes each, every line ended by a newline: exactly
    _hex_record's text for each."""
    m = len(data) // 16
    offsets = low + 16 * np.arange(m)
    body = np.empty((m, 21), dtype=np.uint8)
    body[:, 0] = 16
    body[:, 1] = offsets >> 8
    body[:, 2] = offsets & 0xFF
    body[:, 3] = 0
    body[:, 4:20] = np.frombuffer(data, dtype=np.uint8).reshape(m, 16)
    body[:, 20] = (-body[:, :20].sum(axis=1, dtype=np.int64)) & 0xFF
    text = np.empty((m, 44), dtype=np.uint8)
    text[:, 0] = ord(":")
    text[:, 1:43:2] = _HEX_DIGITS[body >> 4]
    text[:, 2:43:2] = _HEX_DIGITS[body & 0xF]
    text[:, 43] = ord("\n")
    return text.tobytes().decode("ascii")


def _hex_record(kind: int, offset: int, data: bytes) -> str:
    """One Intel HEX record: ``:`` then length, offset, type, data and checksum (the
    two's complement of the other bytes' sum) in upper-case hex."""
    body = bytes((len(data), offset >> 8, offset & 0xFF, kind)) + data
    return ":" + (body + bytes(((-sum(body)) & 0xFF,))).hex().upper()


def read_intel_hex(text: str) -> tuple[list[LoadChunk], int | None]:
    """(contiguous chunks, entry or None) of Intel HEX text; ImageFormatError when it is
    not well formed (bad checksum, bad record, overlapping data)."""
    module = _intelhex()
    ih = module.IntelHex()
    try:
        ih.loadhex(io.StringIO(text))
    except module.IntelHexError as e:
        raise ImageFormatError(f"not a valid Intel HEX file: {e}") from None
    chunks = [LoadChunk(start, ih.tobinstr(start=start, end=stop - 1))
              for start, stop in ih.segments()]
    start = ih.start_addr or {}
    entry = start.get("EIP")
    if entry is None and "CS" in start:  # a segment start address (record 03)
        entry = (start["CS"] << 4) + start["IP"]
    return chunks, entry


# --------------------------------------------------------------------------- UF2


def uf2_image(chunks: Iterable[LoadChunk], family_id: int, fill: int = ERASED) -> bytes:
    """The UF2 file of the chunks: one block per 256-byte page they touch (in address
    order, bytes of the page outside the chunks set to ``fill``), each flagged with
    ``family_id`` so a bootloader of another chip family refuses it."""
    pages: dict[int, bytearray] = {}
    for chunk in coalesce(chunks):
        for pos, value in enumerate(chunk.data):
            addr = chunk.address + pos
            page = pages.setdefault(addr - addr % UF2_PAYLOAD, bytearray([fill]) * UF2_PAYLOAD)
            page[addr % UF2_PAYLOAD] = value
    count = len(pages)
    blocks = []
    for number, address in enumerate(sorted(pages)):
        header = _UF2_HEADER.pack(UF2_MAGIC_START0, UF2_MAGIC_START1, UF2_FLAG_FAMILY, address,
                                  UF2_PAYLOAD, number, count, family_id)
        data = bytes(pages[address]).ljust(_UF2_DATA, b"\0")
        blocks.append(header + data + struct.pack("<I", UF2_MAGIC_END))
    return b"".join(blocks)


def read_uf2(data: bytes) -> tuple[list[LoadChunk], int | None]:
    """(contiguous chunks, family ID or None) of a UF2 file: every block checked (magic
    numbers, payload size, numbering, one family); blocks flagged "not main flash" are
    skipped, as bootloaders do. ImageFormatError when it is not well formed."""
    if not data or len(data) % UF2_BLOCK_SIZE:
        raise ImageFormatError(f"not a UF2 file: {len(data)} bytes is not a whole number "
                               f"of {UF2_BLOCK_SIZE}-byte blocks")
    count = len(data) // UF2_BLOCK_SIZE
    chunks, families = [], set()
    for i in range(count):
        block = data[i * UF2_BLOCK_SIZE:(i + 1) * UF2_BLOCK_SIZE]
        magic0, magic1, flags, addr, size, number, total, family = _UF2_HEADER.unpack_from(block)
        (magic_end,) = struct.unpack_from("<I", block, UF2_BLOCK_SIZE - 4)
        if (magic0, magic1, magic_end) != (UF2_MAGIC_START0, UF2_MAGIC_START1, UF2_MAGIC_END):
            raise ImageFormatError(f"UF2 block {i}: bad magic numbers")
        if size > _UF2_DATA:
            raise ImageFormatError(f"UF2 block {i}: payload of {size} bytes (at most "
                                   f"{_UF2_DATA})")
        if number != i or total != count:
            raise ImageFormatError(f"UF2 block {i}: numbered {number} of {total}, expected "
                                   f"{i} of {count}")
        if flags & UF2_FLAG_NOT_MAIN_FLASH:
            continue
        if flags & UF2_FLAG_FAMILY:
            families.add(family)
        chunks.append(LoadChunk(addr, block[32:32 + size]))
    if len(families) > 1:
        raise ImageFormatError("UF2 blocks name different families: "
                               + ", ".join(f"{f:#010x}" for f in sorted(families)))
    try:
        merged = coalesce(chunks)
    except ValueError as e:
        raise ImageFormatError(f"UF2 blocks overlap: {e}") from None
    return merged, (families.pop() if families else None)


# --------------------------------------------------------------------------- checks


def image_matches(decoded: Sequence[LoadChunk], expected: Sequence[LoadChunk],
                  fill: int = ERASED) -> list[str]:
    """What differs between an image read back from a file and the ELF's load chunks:
    every expected byte must be there at its address, and any other byte the file
    carries must be ``fill`` (gap filling and page padding). Empty when they agree."""
    got, want = coalesce(decoded), coalesce(expected)
    problems = []
    for chunk in want:
        if not any(g.address <= chunk.address and chunk.end <= g.end for g in got):
            problems.append(f"[{chunk.address:#010x}, {chunk.end:#010x}) is not all in the "
                            "image")
    for have in got:
        # What this stretch of the file must hold: fill, with the ELF's bytes laid over it.
        should = bytearray([fill]) * len(have.data)
        for chunk in want:
            lo, hi = max(chunk.address, have.address), min(chunk.end, have.end)
            if lo < hi:
                should[lo - have.address:hi - have.address] = \
                    chunk.data[lo - chunk.address:hi - chunk.address]
        if should != have.data:
            k = next(i for i, (a, b) in enumerate(zip(have.data, should)) if a != b)
            problems.append(f"{have.address + k:#010x}: image has {have.data[k]:#04x}, "
                            f"expected {should[k]:#04x}")
    return problems


def _lma(elf: ELFFile, address: int) -> int | None:
    """The load address of the byte at virtual ``address`` (via its PT_LOAD segment)."""
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= address < seg["p_vaddr"] + max(
                seg["p_memsz"], 1):
            return seg["p_paddr"] + address - seg["p_vaddr"]
    return None


def _cortex_m_boot(elf: ELFFile, board: Board, flash: bytes) -> list[str]:
    """The vector table at the flash origin: the initial stack pointer inside RAM (at
    most its end), the reset handler a Thumb address inside flash and the ELF's entry."""
    if len(flash) < 8:
        return [f"no vector table at the flash origin {board.flash.origin:#010x}"]
    sp, reset = struct.unpack_from("<II", flash)
    problems = []
    if not board.ram.origin < sp <= board.ram.end:
        problems.append(f"vector table: initial SP {sp:#010x} is not in RAM "
                        f"[{board.ram.origin:#010x}, {board.ram.end:#010x}]")
    if not reset & 1 or not board.flash.origin <= reset & ~1 < board.flash.end:
        problems.append(f"vector table: reset vector {reset:#010x} is not a Thumb address "
                        "in flash")
    if reset != elf["e_entry"]:
        problems.append(f"vector table: reset vector {reset:#010x} is not the ELF entry "
                        f"{elf['e_entry']:#010x}")
    return problems


def _entry_at_origin(elf: ELFFile, board: Board, flash: bytes) -> list[str]:
    """Execution starts at the flash origin (where the boot ROM jumps), as the instruction
    bus sees it (``instruction_bus_offset``)."""
    start = board.flash.origin + board.instruction_bus_offset
    if elf["e_entry"] != start:
        return [f"entry {elf['e_entry']:#010x} is not the flash origin {start:#010x}"]
    return []


# How each platform's core starts an image (the first platform part listed wins).
BOOT_CHECKS: dict[str, Callable[[ELFFile, Board, bytes], list[str]]] = {
    "cortex_m": _cortex_m_boot,
    "riscv": _entry_at_origin,
}


def layout_problems(elf_path: Path, board: Board) -> list[str]:
    """Why ``elf_path`` is not laid out for ``board`` (empty when it is): every allocated
    section inside one memory of the board, everything loaded from flash (bare metal),
    and the vector table (Cortex-M) or the entry (RISC-V) at the flash origin."""
    problems = []
    regions = board.regions
    bare_metal = board.target_info.os == "none"
    with Path(elf_path).open("rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC or sec["sh_size"] == 0:
                continue
            start, end = sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]
            if not any(o <= start and end <= e for _, o, e in regions):
                problems.append(f"section {sec.name} [{start:#010x}, {end:#010x}) is in no "
                                f"memory of board {board.identifier}")
            if bare_metal and sec["sh_type"] != "SHT_NOBITS":
                lma = _lma(elf, start)
                if lma is None or not board.flash.origin <= lma < board.flash.end:
                    where = "nowhere" if lma is None else f"{lma:#010x}"
                    problems.append(f"section {sec.name} loads from {where}, not from flash")
        if bare_metal:  # nothing else may be loaded: a flasher of the ELF would write it
            for seg in elf.iter_segments():
                at, size = seg["p_paddr"], seg["p_filesz"]
                if seg["p_type"] == "PT_LOAD" and size and not (
                        board.flash.origin <= at and at + size <= board.flash.end):
                    problems.append(f"a segment loads {size} bytes at {at:#010x}, outside "
                                    "flash")
        flash = raw_binary(flash_chunks(Path(elf_path), board.flash.origin, board.flash.end))
        base, blob = flash
        head = blob if base == board.flash.origin else b""
        for part in board.platform:
            if part in BOOT_CHECKS:
                problems += BOOT_CHECKS[part](elf, board, head)
                break
    return problems


# --------------------------------------------------------------------------- records

# What each verify_mode means, in words for the build's output and size.json.
VERIFY_WORDS: dict[str, str] = {
    "self": "QEMU models the board itself",
    "image": "the very image runs on the sibling, which maps every memory of the board",
    "relink": "the sibling does not map the board's memories: the same objects relinked "
              "for its memory map run there (verify/)",
}


def images_record(link: Any, board: Board) -> dict[str, Any]:
    """The flashable files of a link (a LinkResult) and how QEMU verifies the board, for
    size.json: the .bin with its base address, the .hex, the .uf2 with its family, the
    ESP image with its chip and flash offset."""
    record: dict[str, Any] = {
        "bin": {"file": link.bin.name, "base": f"{link.bin_base:#010x}",
                "bytes": link.bin.stat().st_size},
        "hex": {"file": link.hex.name, "entry": f"{link.entry:#010x}"},
    }
    if link.uf2 is not None:
        family = next(m.family for m in board.flash_methods if m.method == "uf2")
        record["uf2"] = {"file": link.uf2.name, "family": f"{family:#010x}",
                         "blocks": link.uf2.stat().st_size // UF2_BLOCK_SIZE}
    if getattr(link, "esp", None) is not None:
        method = next(m for m in board.flash_methods if m.method == "esptool")
        record["esp"] = {"file": link.esp.name, "chip": method.chip,
                         "offset": f"{ESP_CHIPS[method.chip].rom_load_offset:#x}",
                         "entry": f"{link.entry:#010x}", "bytes": link.esp.stat().st_size}
    sim = board.simulation
    record["verify"] = {
        "on": board.sibling.identifier if board.sibling else board.identifier,
        "qemu": " ".join(filter(None, (sim.qemu, sim.machine))),
        "mode": board.verify_mode,
        "why": VERIFY_WORDS[board.verify_mode],
    }
    return record
