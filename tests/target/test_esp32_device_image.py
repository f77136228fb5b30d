"""The ESP32 boards' device image itself (not the copy QEMU runs on the virt sibling):
linked with the esp32_uart driver addressing UART0 at 0x60000000, carrying the board's
watchdog setup writes, counting cycles with Espressif's mpccr rather than mcycle, and
still an ESP image that esptool reads as valid. Its sibling copy
(verify/) is linked with the ns16550 driver at QEMU virt's 0x10000000 instead; that copy
runs end to end in tests/cli/test_device_cli.py."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from esptool_info import esptool_image_info

from toolchain.cli import build as build_cli
from toolchain.link.esp_image import read_esp_image
from toolchain.target import load_board

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed.mlir"
ESP = {"esp32c3-devkitm-1": "ESP32-C3", "esp32c6-devkitc-1": "ESP32-C6"}


def _words(code: bytes) -> list[int]:
    """The 32-bit instructions of RISC-V ``code``, stepping over compressed ones."""
    words, i = [], 0
    while i < len(code):
        if code[i] & 3 != 3:  # a compressed instruction (C extension): 16 bits
            i += 2
            continue
        words.append(int.from_bytes(code[i:i + 4], "little"))
        i += 4
    return words


def _code(elf_path: Path, function: str | None = None) -> bytes:
    """``function``'s bytes, or the whole of ``.text``."""
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        if function is None:
            return text.data()
        (symbol,) = elf.get_section_by_name(".symtab").get_symbol_by_name(function)
        offset = symbol["st_value"] - text["sh_addr"]
        assert 0 <= offset < text["sh_size"], f"{function} is not in .text"
        return text.data()[offset:offset + symbol["st_size"]]


def _lui_bases(elf_path: Path, function: str) -> set[int]:
    """The upper immediates (``lui rd, imm`` -> imm << 12) in ``function``'s code: a
    driver reaches its registers through one, at its peripheral's base."""
    return {w & 0xFFFFF000 for w in _words(_code(elf_path, function)) if w & 0x7F == 0x37}


def _csrs(elf_path: Path) -> set[int]:
    """The CSR numbers the image's code reads or writes (SYSTEM opcode, funct3 != 0)."""
    return {w >> 20 for w in _words(_code(elf_path))
            if w & 0x7F == 0x73 and (w >> 12) & 7}


MCYCLE, MCYCLEH, MPCER, MPCMR, MPCCR = 0xB00, 0xB80, 0x7E0, 0x7E1, 0x7E2


@pytest.mark.parametrize("name", sorted(ESP))
def test_esp32_device_image_uses_uart0_and_passes_esptool(name: str, tmp_path: Path) -> None:
    for tool in ("clang", "ld.lld"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", name, "--harness", "device",
                           "-o", str(out)]) == 0
    drivers = sorted(f for f in json.loads((out / "build.json").read_text())["files"]
                     if "platform__uart__" in f)
    assert drivers == ["obj/runtime_c__platform__uart__esp32_uart.o",
                       "verify/obj/runtime_c__platform__uart__ns16550.o"]
    # The drivers address their UARTs: UART0 on the chip, the NS16550A in the copy.
    assert 0x60000000 in _lui_bases(out / "firmware.elf", "mrt_uart_get")
    assert 0x10000000 in _lui_bases(out / "verify" / "firmware.elf", "mrt_uart_get")

    # The cycle counter: Espressif's mpccr on the chip, which has no mcycle (reading it
    # traps); mcycle on the virt copy, where QEMU has no mpccr.
    chip, copy = _csrs(out / "firmware.elf"), _csrs(out / "verify" / "firmware.elf")
    assert {MPCER, MPCMR, MPCCR} <= chip and not {MCYCLE, MCYCLEH} & chip
    assert {MCYCLE, MCYCLEH} <= copy and not {MPCER, MPCMR, MPCCR} & copy

    # The watchdog writes are in what the ROM loads, as {address, clear, set} words.
    board = load_board(name)
    assert board.uart is not None
    table = b"".join(struct.pack("<3I", s.address, s.clear, s.set) for s in board.uart.setup)
    image = read_esp_image((out / "firmware.esp.bin").read_bytes())
    assert any(table in segment.data for segment in image.segments)

    info = esptool_image_info(out / "firmware.esp.bin")
    assert f"Detected image type: {ESP[name]}" in info
    for field in ("Checksum:", "Validation hash:"):
        (line,) = [x for x in info.splitlines() if x.startswith(field)]
        assert line.endswith("(valid)"), line
