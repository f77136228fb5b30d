"""Espressif's image format (what esptool flashes and the ESP32 ROM loader reads), written
from a linked ELF, and read back with every check the ROM and esptool make.

Layout (ESP-IDF Programming Guide, "App Image Format"): a 24-byte header (magic 0xE9,
segment count, SPI mode, flash size and clock, entry address, then the extended header:
WP pin, SPI pin drive strengths, chip ID, minimum and maximum chip revision, whether a
SHA-256 is appended), each segment as load address, length and data, zero padding up to
a checksum byte at the end of a 16-byte line (0xEF XOR every segment data byte), and the
SHA-256 of everything before it.

The segments are the ELF's PT_LOAD contents at their *run* addresses (p_vaddr): the ROM
loader copies each segment to its address in SRAM and jumps to the entry. On the
ESP32-C3 that puts the code at its instruction-bus address and the constants at their
data-bus address, the same SRAM seen twice (boards/esp32c3-devkitm-1.yaml). Why we write
the format ourselves rather than run ``esptool elf2image`` is in docs/esp32.md.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from toolchain.link.images import ImageFormatError, LoadChunk, coalesce
from toolchain.target.esp import ESP_CHIPS, FLASH_MODES, FLASH_SIZES

__all__ = ["ESP_IMAGE_SUFFIX", "EspImage", "esp_image", "load_segments", "read_esp_image"]

ESP_IMAGE_SUFFIX = ".esp.bin"
MAGIC = 0xE9
CHECKSUM_SEED = 0xEF
MAX_SEGMENTS = 16  # the ROM loader's limit (ESP_IMAGE_MAX_SEGMENTS)
_HEADER = struct.Struct("<BBBBI")  # magic, segments, SPI mode, size << 4 | clock, entry
_EXTENDED = struct.Struct("<BBBBHBHH4sB")  # wp, drv x3, chip, min rev, min/max rev full, -, hash
_SEGMENT = struct.Struct("<II")  # load address, length
_WP_PIN_NONE = 0xEE  # "no WP pin": what ESP-IDF writes when the flash's WP is not wired
_MAX_REV_ANY = 0xFFFF  # esptool's "no upper chip revision" (v655.35)
# The SPI mode of the header. The ROM loader reads the image with the mode its eFuses and
# strapping pins give; DIO works with every module's flash, so that is what the header says
# for whoever reads it next.
_MODE = "dio"


@dataclass(frozen=True)
class EspImage:
    """An image read back: its header fields and segments."""

    chip_id: int
    entry: int
    flash_mode: int
    flash_size_freq: int
    segments: tuple[LoadChunk, ...]
    sha256: bytes  # the appended digest ("" when the header says none is appended)


def load_segments(elf_path: Path) -> list[LoadChunk]:
    """The file-backed parts of the ELF's PT_LOAD segments at their run (virtual)
    addresses: what the ROM loader must copy into SRAM, sorted by address."""
    chunks = []
    with Path(elf_path).open("rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                chunks.append(LoadChunk(seg["p_vaddr"], seg.data()[: seg["p_filesz"]]))
    return sorted(chunks, key=lambda c: c.address)


def esp_image(chunks: Iterable[LoadChunk], entry: int, chip: str, flash_size: str = "") -> bytes:
    """The image of ``chunks`` (one segment per contiguous run, each padded with zeros to
    a multiple of 4 bytes, as the ROM copies words) for ``chip`` (a row of ESP_CHIPS),
    starting at ``entry``, with checksum and SHA-256. ``flash_size`` (``4MB``) goes into
    the header for a later reader; empty: 1MB, the format's zero."""
    info = ESP_CHIPS[chip]
    segments = coalesce(chunks)
    if len(segments) > MAX_SEGMENTS:
        raise ValueError(f"{len(segments)} segments; the {chip} ROM loader takes at most "
                         f"{MAX_SEGMENTS}")
    size_freq = FLASH_SIZES[flash_size or "1MB"] | info.flash_freq[info.default_freq]
    out = bytearray(_HEADER.pack(MAGIC, len(segments), FLASH_MODES[_MODE], size_freq, entry))
    out += _EXTENDED.pack(_WP_PIN_NONE, 0, 0, 0, info.image_chip_id, 0, 0, _MAX_REV_ANY,
                          bytes(4), 1)
    checksum = CHECKSUM_SEED
    for seg in segments:
        if seg.address % 4:
            raise ValueError(f"segment at {seg.address:#010x} is not word aligned")
        data = seg.data + bytes(-len(seg.data) % 4)
        out += _SEGMENT.pack(seg.address, len(data)) + data
        for byte in data:
            checksum ^= byte
    out += bytes(15 - len(out) % 16) + bytes([checksum])
    return bytes(out + hashlib.sha256(out).digest())


def read_esp_image(data: bytes) -> EspImage:
    """The header and segments of an image, after the checks the ROM and esptool make:
    magic, segment count and lengths, checksum, and the appended SHA-256 when the header
    says there is one. ImageFormatError naming the first problem otherwise."""
    fixed = _HEADER.size + _EXTENDED.size
    if len(data) < fixed:
        raise ImageFormatError(f"not an ESP image: {len(data)} bytes, shorter than its "
                               f"{fixed}-byte header")
    magic, count, mode, size_freq, entry = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ImageFormatError(f"not an ESP image: magic {magic:#04x}, expected {MAGIC:#04x}")
    *_, chip_id, _, _, _, _, hashed = _EXTENDED.unpack_from(data, _HEADER.size)
    if hashed not in (0, 1):
        raise ImageFormatError(f"ESP image: hash-appended flag {hashed:#04x} (0 or 1)")
    if not 0 < count <= MAX_SEGMENTS:
        raise ImageFormatError(f"ESP image: {count} segments (1 to {MAX_SEGMENTS})")
    pos, checksum, segments = fixed, CHECKSUM_SEED, []
    for i in range(count):
        if pos + _SEGMENT.size > len(data):
            raise ImageFormatError(f"ESP image: segment {i} header is past the end")
        address, length = _SEGMENT.unpack_from(data, pos)
        pos += _SEGMENT.size
        if length % 4 or pos + length > len(data):
            raise ImageFormatError(f"ESP image: segment {i} at {address:#010x} has length "
                                   f"{length}, not a multiple of 4 inside the file")
        body = data[pos:pos + length]
        for byte in body:
            checksum ^= byte
        segments.append(LoadChunk(address, body))
        pos += length
    pos += 15 - pos % 16
    if pos >= len(data):
        raise ImageFormatError("ESP image: no checksum byte after the segments")
    if data[pos] != checksum:
        raise ImageFormatError(f"ESP image: checksum {data[pos]:#04x}, the segments give "
                               f"{checksum:#04x}")
    pos += 1
    digest = b""
    if hashed:
        digest = data[pos:pos + 32]
        if hashlib.sha256(data[:pos]).digest() != digest:
            raise ImageFormatError("ESP image: the appended SHA-256 is not that of the image")
        pos += 32
    if pos != len(data):
        raise ImageFormatError(f"ESP image: {len(data) - pos} bytes after its end")
    return EspImage(chip_id, entry, mode, size_freq, tuple(segments), digest)
