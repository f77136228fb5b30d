"""The `uart:` block of the board files (the device harness's UART): every real board and
every sibling they are verified on has one, and bad ones are one-line errors naming the
board file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolchain.target import DescriptorError, load_board

REAL = ("netduinoplus2", "hifive1", "nrf52840dk", "nucleo-l4r5zi", "stm32f746g-disco",
        "feather-m4-express")


@pytest.mark.parametrize("name", REAL)
def test_real_boards_and_their_siblings_have_a_uart(name: str) -> None:
    board = load_board(name)
    assert board.uart is not None
    assert board.uart.baud == 115200
    assert board.uart.clock_hz >= 16 * board.uart.baud
    if board.sibling is not None:
        assert board.sibling.uart is not None
        assert board.sibling.uart.kind == "cmsdk_uart"  # the MPS2 machines' UART0


# The RISC-V virt boards (QEMU's NS16550A UART0) and the ESP32 boards verified on them.
VIRT = ("riscv32", "riscv32-nofpu", "riscv32imc")
ESP32 = {"esp32c3-devkitm-1": "riscv32imc", "esp32c6-devkitc-1": "riscv32-nofpu"}


@pytest.mark.parametrize("name", VIRT)
def test_virt_boards_have_the_ns16550(name: str) -> None:
    uart = load_board(name).uart
    assert uart is not None
    assert (uart.kind, uart.base, uart.clock_hz, uart.qemu_serial) == (
        "ns16550", 0x10000000, 3686400, 0)


@pytest.mark.parametrize("name", sorted(ESP32))
def test_esp32_boards_have_uart0_and_turn_the_watchdogs_off(name: str) -> None:
    board = load_board(name)
    assert board.uart is not None and board.sibling is not None
    assert (board.uart.kind, board.uart.base, board.uart.baud) == ("esp32_uart", 0x60000000,
                                                                   115200)
    assert board.sibling.identifier == ESP32[name]
    assert board.sibling.uart is not None and board.sibling.uart.kind == "ns16550"
    # Every write-protect unlock is followed, after the change, by a lock (a 0 written).
    steps = board.uart.setup
    keys = [i for i, s in enumerate(steps) if s.set in (0x50D83AA1, 0x8F1D312A)]
    assert len(keys) == 3
    for i in keys:
        assert steps[i].clear == 0xFFFFFFFF
        assert (steps[i + 2].address, steps[i + 2].clear, steps[i + 2].set) == (
            steps[i].address, 0xFFFFFFFF, 0)
    # The RTC and timer group 0 watchdogs lose WDT_EN (bit 31) and flash-boot mode.
    assert sum(1 for s in steps if s.clear != 0xFFFFFFFF and s.clear & 0x80000000) == 2


def test_driver_source_exists_for_every_kind() -> None:
    from typing import get_args, get_type_hints

    from toolchain.link import runtime_c_dir
    from toolchain.target import Uart

    kinds = get_args(get_type_hints(Uart)["kind"])
    missing = [k for k in kinds if not (runtime_c_dir() / "platform" / "uart" / f"{k}.c").is_file()]
    assert not missing


def _write(tmp_path: Path, base: str, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(load_board(base).path.read_text())
    data["identifier"] = "x"
    edit(data)
    path = tmp_path / "boards" / "x.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


ERRORS = [
    ("netduinoplus2", lambda d: d["uart"].update(kind="pl011"),
     "field 'uart.kind': expected one of 'cmsdk_uart'"),
    ("netduinoplus2", lambda d: d["uart"].update(base=0x40011401),
     "field 'uart.base': expected a word-aligned 32-bit peripheral address"),
    ("netduinoplus2", lambda d: d["uart"].update(base=1 << 32),
     "field 'uart.base': expected a word-aligned 32-bit peripheral address"),
    ("netduinoplus2", lambda d: d["uart"].update(baud=0),
     "field 'uart.baud': must be greater than 0"),
    ("netduinoplus2", lambda d: d["uart"].update(clock_hz=1000000),
     "field 'uart.clock_hz': 1000000 Hz cannot clock 115200 baud"),
    ("netduinoplus2", lambda d: d["uart"].pop("base"),
     "field 'uart.base': missing required field"),
    ("netduinoplus2", lambda d: d["uart"]["setup"][0].update(address=0x40023831),
     "field 'uart.setup[0]': expected a word-aligned 32-bit address"),
    ("netduinoplus2", lambda d: d["uart"]["setup"][0].update(mask=1),
     "field 'uart.setup[0].mask': unknown field"),
    ("esp32c3-devkitm-1", lambda d: d["uart"].update(baud=921600),
     "field 'uart.baud': must be 115200 for esp32_uart (the ESP32 ROM loader's UART0 rate"),
    ("esp32c6-devkitc-1", lambda d: d["uart"]["setup"][1].update(address=0x600B1C02),
     "field 'uart.setup[1]': expected a word-aligned 32-bit address"),
    ("riscv32imc", lambda d: d["uart"].update(clock_hz=115200),
     "field 'uart.clock_hz': 115200 Hz cannot clock 115200 baud"),
    ("cortex-m4", lambda d: d.update(cycle_counter="esp_pccr"),
     "field 'cycle_counter': 'esp_pccr' is read by the riscv platform part"),
    ("esp32c3-devkitm-1", lambda d: d.update(cycle_counter="mcycle"),
     "field 'cycle_counter': expected one of"),
    ("x86-64", lambda d: d.update(uart={"kind": "cmsdk_uart", "base": 0x40004000,
                                        "baud": 115200, "clock_hz": 25000000}),
     "field 'uart': a hosted board (simulation.mode user) has no UART of its own"),
]


@pytest.mark.parametrize(("base", "edit", "expected"), ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_bad_uart_is_a_one_line_error(tmp_path: Path, base: str, edit,  # type: ignore[no-untyped-def]
                                      expected: str) -> None:
    with pytest.raises(DescriptorError) as info:
        load_board(_write(tmp_path, base, edit))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("boards/x.yaml: field '"), message
    assert expected in message, message
