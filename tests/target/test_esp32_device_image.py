"""The ESP32 boards' device image itself (not the copy QEMU runs on the virt sibling):
linked with the esp32_uart driver addressing UART0 at 0x60000000, carrying the board's
watchdog setup writes, and still an ESP image that esptool reads as valid. Its sibling copy
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


def _lui_bases(elf_path: Path, function: str) -> set[int]:
    """The upper immediates (``lui rd, imm`` -> imm << 12) in ``function``'s code: a
    driver reaches its registers through one, at its peripheral's base."""
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        (symbol,) = elf.get_section_by_name(".symtab").get_symbol_by_name(function)
        start, size = symbol["st_value"], symbol["st_size"]
        for section in elf.iter_sections():
            if section["sh_addr"] <= start < section["sh_addr"] + section["sh_size"]:
                offset = start - section["sh_addr"]
                code = section.data()[offset:offset + size]
                break
        else:
            raise AssertionError(f"{function} at {start:#x} is in no section")
    bases, i = set(), 0
    while i < len(code):
        half = int.from_bytes(code[i:i + 2], "little")
        if half & 3 != 3:  # a compressed instruction (C extension): 16 bits
            i += 2
            continue
        word = int.from_bytes(code[i:i + 4], "little")
        if word & 0x7F == 0x37:  # LUI
            bases.add(word & 0xFFFFF000)
        i += 4
    return bases


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
