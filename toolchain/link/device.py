"""What the device harness adds to a link (docs/device.md).

An image is built with one of two harnesses (``HARNESSES``): ``semihost``, the default,
which reads its inputs from and writes its outputs to host files through semihosting
(QEMU, or a debugger on a real board), and ``device``, which serves inference after
inference over the board's UART (``uart:`` in the board file). The device image drops the
semihosting platform part, links ``runtime_c/harness/device`` instead of the harness,
the UART driver of the board's kind (``runtime_c/platform/uart/<kind>.c``) and is
compiled with the UART's address, rate, clock and setup writes as macros.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from toolchain.loader import UsageError
from toolchain.target import Board

__all__ = [
    "DEFAULT_HARNESS",
    "HARNESSES",
    "check_harness",
    "device_cflags",
    "device_sources",
    "device_verify_board",
]

HARNESSES = ("semihost", "device")
DEFAULT_HARNESS = "semihost"
# The platform part the device harness replaces: its host files and exit are semihosting
# calls, which stop a board that no debugger serves.
_SEMIHOST_PART = "semihost"


def check_harness(board: Board, harness: str) -> None:
    """UsageError, naming the option and the board, for a harness the board cannot take:
    an unknown name, or ``device`` on a board without ``uart:`` (hosted boards have none)."""
    if harness not in HARNESSES:
        raise UsageError(f"--harness must be one of {', '.join(HARNESSES)}, got {harness!r}")
    if harness == "device" and board.uart is None:
        hosted = board.simulation is not None and board.simulation.mode == "user"
        why = ("a hosted board runs a Linux program, which has no UART of its own" if hosted
               else f"{board.path.name or board.identifier} has no 'uart:' block")
        raise UsageError(f"--harness device: board {board.identifier} cannot serve "
                         f"inferences over a UART ({why})")
    if harness == "device" and board.sibling is not None and board.sibling.uart is None:
        raise UsageError(f"--harness device: board {board.identifier} is verified on "
                         f"{board.sibling.identifier}, which has no 'uart:' block")


def device_sources(board: Board, root: Path, sources: list[Path],
                   parts: Sequence[str]) -> list[Path]:
    """``sources`` (the runtime parts ``parts`` of the semihosting image) turned into the
    device image's: without the semihosting platform part, the device harness for the
    semihosting one and, with the platform, the board's UART driver."""
    semihost = root / "platform" / _SEMIHOST_PART
    harness = root / "harness"
    kept = [s for s in sources if s.parent not in (semihost, harness)]
    if "harness" in parts:
        kept += sorted((harness / "device").glob("*.c"))
    if "platform" in parts:
        kept.append(root / "platform" / "uart" / f"{board.uart.kind}.c")  # type: ignore[union-attr]
    return kept


def device_cflags(board: Board) -> list[str]:
    """The macros the device harness and the UART driver are compiled with
    (runtime_c/include/mrt_device.h)."""
    uart = board.uart
    assert uart is not None  # check_harness refused the board otherwise
    flags = ["-DMRT_DEVICE", f"-DMRT_UART_BASE={uart.base:#x}u", f"-DMRT_UART_BAUD={uart.baud}u",
             f"-DMRT_UART_CLOCK_HZ={uart.clock_hz}u"]
    if uart.setup:
        writes = ",".join(f"{{{s.address:#x}u,{s.clear:#x}u,{s.set:#x}u}}" for s in uart.setup)
        flags.append(f"-DMRT_UART_SETUP={writes}")
    return flags


def device_verify_board(board: Board) -> Board:
    """What the device image of a board verified on a sibling is linked for under QEMU:
    the board's memory map when the sibling maps it (else the sibling's, as the
    semihosting image's relinked copy), and always the sibling's UART, which is the only
    one QEMU models there."""
    assert board.sibling is not None
    base = (board.relinked_for_sibling() if board.verify_mode == "relink" else
            dataclasses.replace(board, verify_on=None, sibling=None, flash_methods=(),
                                cycle_counter=board.sibling.cycle_counter))
    return dataclasses.replace(base, uart=board.sibling.uart)
