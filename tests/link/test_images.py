"""Flashable images: .bin, .hex and .uf2 round-trip against the ELF's loadable segments,
the UF2 blocks follow the specification, malformed files are refused, and the layout
check catches an image that is not laid out for its board."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from toolchain.link import LinkError, LinkResult, link_firmware
from toolchain.link.images import (
    UF2_BLOCK_SIZE,
    UF2_FLAG_FAMILY,
    UF2_PAYLOAD,
    ImageFormatError,
    LoadChunk,
    coalesce,
    image_matches,
    intel_hex,
    layout_problems,
    read_intel_hex,
    read_uf2,
    uf2_image,
)
from toolchain.target import Board, load_board

LinkFn = Callable[..., LinkResult]
DOUBLES = Path(__file__).resolve().parent / "doubles"
# One board per kind of image: Cortex-M at 0, at 0x08000000 (with CCM), after a UF2
# bootloader, and RISC-V in XIP flash.
BOARDS = ["cortex-m4", "netduinoplus2", "feather-m4-express", "hifive1"]


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Board, LinkResult]]:
    """The test-double image for a board (tests/link/doubles: harness, start-up and a
    stand-in model), linked once per module."""
    cache: dict[str, tuple[Board, LinkResult]] = {}

    def get(name: str) -> tuple[Board, LinkResult]:
        if name not in cache:
            board = load_board(name)
            cache[name] = (board, link_firmware(
                board, [], tmp_path_factory.mktemp(name), runtime_parts=("platform", "harness"),
                extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
                extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"]))
        return cache[name]

    return get


def elf_segments(elf_path: Path, board: Board) -> list[LoadChunk]:
    """The file-backed bytes of every PT_LOAD segment at its load address, read here
    independently of the writer (toolchain/link/images.py)."""
    chunks = []
    with elf_path.open("rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                assert board.flash.origin <= seg["p_paddr"] < board.flash.end
                chunks.append(LoadChunk(seg["p_paddr"], seg.data()[: seg["p_filesz"]]))
    assert chunks
    return chunks


@pytest.mark.parametrize("name", BOARDS)
def test_bin_round_trip(name: str, linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked(name)
    base = int((result.bin.parent / "firmware.bin.base").read_text(), 16)
    assert base == result.bin_base == board.flash.origin
    got = [LoadChunk(base, result.bin.read_bytes())]
    assert image_matches(got, elf_segments(result.elf, board)) == []


@pytest.mark.parametrize("name", BOARDS)
def test_hex_round_trip(name: str, linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked(name)
    got, entry = read_intel_hex(result.hex.read_text())
    with result.elf.open("rb") as f:
        assert entry == ELFFile(f)["e_entry"]
    # Intel HEX has no gaps to fill: exactly the segments' bytes, nothing else.
    assert got == coalesce(elf_segments(result.elf, board))


def test_uf2_round_trip_and_blocks(linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked("feather-m4-express")
    assert result.uf2 is not None and result.uf2.name == "firmware.uf2"
    data = result.uf2.read_bytes()
    got, family = read_uf2(data)
    assert family == 0x55114460
    assert image_matches(got, elf_segments(result.elf, board)) == []
    count = len(data) // UF2_BLOCK_SIZE
    for i in range(count):
        block = data[i * UF2_BLOCK_SIZE:(i + 1) * UF2_BLOCK_SIZE]
        m0, m1, flags, addr, size, number, total, fam = struct.unpack_from("<8I", block)
        assert (m0, m1, struct.unpack_from("<I", block, 508)[0]) == \
            (0x0A324655, 0x9E5D5157, 0x0AB16F30)
        assert flags == UF2_FLAG_FAMILY and fam == 0x55114460
        assert size == UF2_PAYLOAD and addr % UF2_PAYLOAD == 0
        assert (number, total) == (i, count)
        assert addr >= 0x4000, "a block over the bootloader would be refused"
        assert block[32 + size:508] == bytes(476 - size)


def test_uf2_only_for_uf2_boards(linked) -> None:  # type: ignore[no-untyped-def]
    _, result = linked("cortex-m4")
    assert result.uf2 is None and not (result.bin.parent / "firmware.uf2").exists()


def test_uf2_pages_and_fill() -> None:
    data = uf2_image([LoadChunk(0x10FE, b"\x01\x02\x03"), LoadChunk(0x1300, b"\x04")], 7)
    assert len(data) == 3 * UF2_BLOCK_SIZE  # pages 0x1000, 0x1100, 0x1300
    got, family = read_uf2(data)
    assert family == 7
    assert [c.address for c in got] == [0x1000, 0x1300]
    assert got[0].data[0xFE:0x101] == b"\x01\x02\x03" and got[0].data[0] == 0xFF


def _blocks(data: bytes) -> list[bytearray]:
    return [bytearray(data[i:i + UF2_BLOCK_SIZE]) for i in range(0, len(data), UF2_BLOCK_SIZE)]


@pytest.mark.parametrize(("damage", "message"), [
    (lambda b: b[0].__setitem__(0, 0), "bad magic"),
    (lambda b: b[1].__setitem__(slice(20, 24), (5).to_bytes(4, "little")), "numbered 5"),
    (lambda b: b[1].__setitem__(slice(28, 32), (9).to_bytes(4, "little")), "different families"),
    (lambda b: b[0].__setitem__(slice(16, 20), (477).to_bytes(4, "little")), "payload of 477"),
    (lambda b: b.pop(), "numbered 0 of 2"),
])
def test_malformed_uf2_is_refused(damage, message: str) -> None:  # type: ignore[no-untyped-def]
    blocks = _blocks(uf2_image([LoadChunk(0, bytes(300))], 1))
    damage(blocks)
    with pytest.raises(ImageFormatError, match=message):
        read_uf2(b"".join(blocks))
    with pytest.raises(ImageFormatError, match="whole number"):
        read_uf2(bytes(100))


def test_malformed_hex_is_refused() -> None:
    text = intel_hex([LoadChunk(0x100, b"\x01\x02")])
    with pytest.raises(ImageFormatError, match="not a valid Intel HEX"):
        read_intel_hex(text.replace(":02010000", ":02010001", 1))  # checksum now wrong


def test_image_matches_finds_a_changed_byte() -> None:
    want = [LoadChunk(0x100, b"\x01\x02\x03")]
    assert image_matches([LoadChunk(0x100, b"\x01\x02\x03\xff")], want) == []
    assert image_matches([LoadChunk(0x100, b"\x01\x09\x03")], want) == [
        "0x00000101: image has 0x09, expected 0x02"]
    assert image_matches([LoadChunk(0x100, b"\x01\x02\x03\x00")], want) == [
        "0x00000103: image has 0x00, expected 0xff"]
    assert "is not all in the image" in image_matches([LoadChunk(0x100, b"\x01")], want)[0]


# --------------------------------------------------------------------------- layout


@pytest.mark.parametrize("name", BOARDS)
def test_layout_is_the_boards(name: str, linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked(name)
    assert layout_problems(result.elf, board) == []
    blob = result.bin.read_bytes()
    if "cortex_m" in board.platform:  # the vector table at the flash origin
        sp, reset = struct.unpack_from("<II", blob)
        assert sp == board.ram.end
        assert reset & 1 and board.flash.origin <= reset < board.flash.end
    else:  # the boot ROM jumps to the flash origin, where _start is
        with result.elf.open("rb") as f:
            assert ELFFile(f)["e_entry"] == board.flash.origin


def test_layout_check_refuses_another_boards_image(linked) -> None:  # type: ignore[no-untyped-def]
    _, result = linked("cortex-m4")
    problems = layout_problems(result.elf, load_board("nucleo-l4r5zi"))
    assert any("is in no memory of board nucleo-l4r5zi" in p for p in problems)
    assert any("loads from 0x" in p and "not from flash" in p for p in problems)
    assert any("vector table" in p for p in problems)
    _, riscv = linked("hifive1")
    assert any("entry" in p for p in layout_problems(riscv.elf, load_board("riscv32-nofpu")))


def test_extra_memory_holds_its_sections(tmp_path: Path, link_double: LinkFn) -> None:
    board = load_board("netduinoplus2")
    source = tmp_path / "ccm_user.c"
    source.write_text('__attribute__((section(".ccm.buffer"), used, retain)) '
                      "unsigned char ccm_buffer[4096];\n")
    result = link_double(board, tmp_path / "ok", extra_sources=(source,))
    with result.elf.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        (sym,) = symtab.get_symbol_by_name("ccm_buffer")
    assert 0x10000000 <= sym["st_value"] < 0x10010000
    assert layout_problems(result.elf, board) == []
    # Not loaded: the .bin still starts and ends in flash.
    assert result.bin_base == board.flash.origin and len(result.bin.read_bytes()) < 0x10000
    source.write_text('__attribute__((section(".ccm.buffer"), used, retain)) '
                      "unsigned char ccm_buffer[70000];\n")
    with pytest.raises(LinkError, match="overflows CCM"):
        link_double(board, tmp_path / "big", extra_sources=(source,))


def _intelhex_text(chunks: list[LoadChunk], entry: int | None) -> str:
    """What the intelhex package writes for the chunks: the reference intel_hex matches."""
    import io

    import intelhex

    ih = intelhex.IntelHex()
    for chunk in chunks:
        ih.frombytes(chunk.data, offset=chunk.address)
    if entry is not None:
        ih.start_addr = {"EIP": entry}
    out = io.StringIO()
    ih.write_hex_file(out, byte_count=16)
    return out.getvalue()


_HEX_LAYOUTS = {
    "empty": [],
    "below 64K, unaligned": [(0x0003, 37)],
    "one byte": [(0x0800_0000, 1)],
    "gaps and odd lengths": [(0x0800_0000, 1000), (0x0800_03F0 + 0x20, 17), (0x0800_1001, 3)],
    "across 64K boundaries": [(0x0000_FFF7, 0x2_0013)],
    "ends at 0xFFFF": [(0xFFF0, 16)],
    "ends just past 0xFFFF": [(0xFFF9, 8)],
    "adjacent chunks merged": [(0x2000_0000, 5), (0x2000_0005, 40)],
    "segments far apart": [(0x0001_FFFE, 4), (0x1000_0000, 33), (0xFFFF_FFF0, 16)],
}


@pytest.mark.parametrize("entry", [None, 0x0800_0101])
@pytest.mark.parametrize("layout", sorted(_HEX_LAYOUTS))
def test_intel_hex_is_what_intelhex_writes(layout: str, entry: int | None) -> None:
    rng = np.random.default_rng(len(layout))
    chunks = [LoadChunk(a, rng.integers(0, 256, n, dtype=np.uint8).tobytes())
              for a, n in _HEX_LAYOUTS[layout]]
    text = intel_hex(chunks, entry=entry)
    assert text == _intelhex_text(chunks, entry)
    back, got_entry = read_intel_hex(text)
    assert got_entry == entry and not image_matches(back, chunks)
