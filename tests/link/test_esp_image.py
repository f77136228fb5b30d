"""The ESP image writer (toolchain/link/esp_image.py): what it writes reads back through
our reader and through esptool's own (``esptool image-info``: segments, entry point,
checksum and SHA-256 valid), and every corruption the ROM would refuse is refused."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from esptool_info import esptool_image_info

from toolchain.link.esp_image import esp_image, load_segments, read_esp_image
from toolchain.link.images import ImageFormatError, LoadChunk
from toolchain.target.esp import ESP_CHIPS

CHUNKS = [LoadChunk(0x40380000, bytes(range(1, 23))),  # 22 bytes: padded to 24
          LoadChunk(0x3FC80020, b"\x10\x20\x30\x40" * 5)]


def test_round_trip_and_layout() -> None:
    data = esp_image(CHUNKS, 0x40380000, "esp32c3", "4MB")
    image = read_esp_image(data)
    assert image.chip_id == ESP_CHIPS["esp32c3"].image_chip_id == 5
    assert image.entry == 0x40380000
    assert image.flash_mode == 2  # DIO
    assert image.flash_size_freq == 0x2F  # 4MB, 80 MHz
    # Sorted by address, each padded with zeros to whole words.
    assert [(s.address, s.data) for s in image.segments] == [
        (0x3FC80020, CHUNKS[1].data), (0x40380000, CHUNKS[0].data + b"\0\0")]
    # Checksum at the end of a 16-byte line, then the SHA-256 of everything before it.
    assert (len(data) - 32) % 16 == 0
    assert data[-32:] == hashlib.sha256(data[:-32]).digest() == image.sha256


def test_adjacent_chunks_are_one_segment_and_limits() -> None:
    joined = read_esp_image(esp_image([LoadChunk(0x40800000, b"abcd"),
                                       LoadChunk(0x40800004, b"efgh")], 0x40800000, "esp32c6"))
    assert [(s.address, s.data) for s in joined.segments] == [(0x40800000, b"abcdefgh")]
    with pytest.raises(ValueError, match="not word aligned"):
        esp_image([LoadChunk(0x40800002, b"ab")], 0x40800000, "esp32c6")
    many = [LoadChunk(0x40800000 + 16 * i, b"abcd") for i in range(17)]
    with pytest.raises(ValueError, match="at most 16"):
        esp_image(many, 0x40800000, "esp32c6")


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d[:10], "shorter than its 24-byte header"),
    (lambda d: b"\xe8" + d[1:], "magic 0xe8"),
    (lambda d: d[:1] + b"\x00" + d[2:], "0 segments"),
    (lambda d: d[:40], "segment 0 at 0x3fc80020 has length 20, not a multiple of 4 inside"),
    # A third segment read from the padding: empty, so only the digest tells.
    (lambda d: d[:1] + b"\x03" + d[2:], "the appended SHA-256 is not that of the image"),
    (lambda d: d[:1] + b"\x04" + d[2:], "segment 3 at"),
    (lambda d: d[:33] + bytes([d[33] ^ 1]) + d[34:], "checksum"),  # a data byte
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "SHA-256"),
    (lambda d: d + b"\xff", "1 bytes after its end"),
    (lambda d: d[:23] + b"\x07" + d[24:], "hash-appended flag 0x07"),
])
def test_corruption_is_refused(damage, message: str) -> None:  # type: ignore[no-untyped-def]
    data = esp_image(CHUNKS, 0x40380000, "esp32c3")
    with pytest.raises(ImageFormatError, match=re.escape(message)):
        read_esp_image(damage(data))


def test_esptool_reads_what_we_write(tmp_path: Path) -> None:
    path = tmp_path / "x.esp.bin"
    path.write_bytes(esp_image(CHUNKS, 0x40380000, "esp32c3", "4MB"))
    info = esptool_image_info(path)
    assert "Entry point: 0x40380000" in info or "Entry point: 40380000" in info, info
    assert re.search(r"Segments: 2\b", info), info
    assert "Chip ID: 5" in info and "ESP32-C3" in info
    assert re.search(r"Checksum: 0x[0-9a-f]{2} \(valid\)", info), info
    assert re.search(r"Validation hash: [0-9a-f]{64} \(valid\)", info), info
    assert "Flash size: 4MB" in info and "Flash mode: DIO" in info


def test_esptool_catches_a_bad_checksum_too(tmp_path: Path) -> None:
    """The reader that matters is esptool's: a byte flipped in a segment is invalid there."""
    data = bytearray(esp_image(CHUNKS, 0x40380000, "esp32c3"))
    data[33] ^= 1  # segment 0's second byte
    data[-32:] = hashlib.sha256(data[:-32]).digest()  # the hash agrees, the checksum not
    path = tmp_path / "bad.esp.bin"
    path.write_bytes(data)
    assert "(invalid" in esptool_image_info(path)


def test_load_segments_are_run_addresses(tmp_path: Path) -> None:
    """From an ELF whose code runs elsewhere than it loads (the ESP32-C3's instruction
    bus): the segment is at the run address, which is where the ROM must copy it."""
    from toolchain.link import link_firmware
    from toolchain.target import load_board

    board = load_board("esp32c3-devkitm-1")
    doubles = Path(__file__).resolve().parent / "doubles"
    link = link_firmware(board, [], tmp_path / "fw", runtime_parts=("platform", "harness"),
                         extra_sources=[doubles / "core_double.c", doubles / "image_double.c"],
                         extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
    segments = load_segments(link.elf)
    code = board.flash.origin + board.instruction_bus_offset
    assert segments[-1].address == code == link.entry
    assert all(board.flash.origin <= s.address < board.flash.end for s in segments[:-1])
    assert link.esp is not None
    image = read_esp_image(link.esp.read_bytes())
    assert [s.address for s in image.segments] == [s.address for s in segments]
    assert image.entry == link.entry
