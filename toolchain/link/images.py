"""Flashable images from a linked ELF: raw binary (with its base address) and Intel HEX."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

__all__ = ["LoadChunk", "flash_chunks", "intel_hex", "raw_binary"]


@dataclass(frozen=True)
class LoadChunk:
    """Bytes that must be present at ``address`` in the device's memory."""

    address: int
    data: bytes


def flash_chunks(elf_path: Path, origin: int, end: int) -> list[LoadChunk]:
    """File-backed parts of PT_LOAD segments whose load (physical) address is in
    [origin, end): the content to program into flash, sorted by address."""
    chunks = []
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_LOAD" or seg["p_filesz"] == 0:
                continue
            addr = seg["p_paddr"]
            if origin <= addr < end:
                chunks.append(LoadChunk(addr, seg.data()[: seg["p_filesz"]]))
    return sorted(chunks, key=lambda c: c.address)


def raw_binary(chunks: Iterable[LoadChunk], fill: int = 0xFF) -> tuple[int, bytes]:
    """(base address, bytes) covering all chunks; gaps are filled with ``fill`` (the
    erased-flash value by default)."""
    chunks = sorted(chunks, key=lambda c: c.address)
    if not chunks:
        return 0, b""
    base = chunks[0].address
    out = bytearray()
    for chunk in chunks:
        offset = chunk.address - base
        if offset < len(out):
            raise ValueError(f"overlapping load chunks at {chunk.address:#x}")
        out.extend(bytes([fill]) * (offset - len(out)))
        out.extend(chunk.data)
    return base, bytes(out)


def _record(kind: int, address: int, payload: bytes) -> str:
    body = bytes([len(payload), (address >> 8) & 0xFF, address & 0xFF, kind]) + payload
    checksum = (-sum(body)) & 0xFF
    return ":" + body.hex().upper() + f"{checksum:02X}"


def intel_hex(chunks: Iterable[LoadChunk], entry: int | None = None, width: int = 16) -> str:
    """Intel HEX text: data records (type 00) of ``width`` bytes, extended linear address
    records (04) whenever the upper 16 address bits change, an optional start linear
    address (05) and the end-of-file record (01)."""
    lines: list[str] = []
    upper = 0
    for chunk in sorted(chunks, key=lambda c: c.address):
        pos = 0
        while pos < len(chunk.data):
            address = chunk.address + pos
            if address >> 16 != upper:
                upper = address >> 16
                lines.append(_record(0x04, 0, upper.to_bytes(2, "big")))
            # A record may not cross a 64 KiB boundary.
            room = 0x10000 - (address & 0xFFFF)
            size = min(width, len(chunk.data) - pos, room)
            lines.append(_record(0x00, address & 0xFFFF, chunk.data[pos : pos + size]))
            pos += size
    if entry is not None:
        lines.append(_record(0x05, 0, entry.to_bytes(4, "big")))
    lines.append(_record(0x01, 0, b""))
    return "\n".join(lines) + "\n"
