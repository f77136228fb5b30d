"""The device image under QEMU: its UART wired to a pseudo-terminal, which
``minirt-run --device`` then talks to as it would to a board's USB serial port.

QEMU models the UART of netduinoplus2 (STM32F405 USART6) and hifive1 (SiFive UART0),
whose device images run there unchanged; a board verified on a sibling runs the copy
built for the sibling's UART (``verify/``, link/device.py).
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolchain.emu.run import EmuError, qemu_command
from toolchain.link.build import VERIFY_DIR
from toolchain.target import Board

__all__ = ["device_elf", "qemu_serving"]

_PTY_RE = re.compile(r"char device redirected to (\S+)")


def device_elf(board: Board, elf: Path) -> Path:
    """The device image QEMU runs for ``elf`` built for ``board``: ``elf`` itself, or for a
    board verified on a sibling the copy built for the sibling's UART."""
    elf = Path(elf)
    if board.sibling is None or elf.parent.name == VERIFY_DIR:
        return elf
    copy = elf.parent / VERIFY_DIR / elf.name
    if not copy.is_file():
        raise EmuError(f"board {board.identifier}: {copy} is missing (the device image's "
                       f"copy for {board.sibling.identifier}'s UART; rebuild)")
    return copy


def _serial_args(board: Board, args: list[str], icount_shift: int) -> list[str]:
    """``args`` without its ``-serial`` options, and the UART's slot on a pty."""
    uart = (board.sibling or board).uart
    if uart is None:
        raise EmuError(f"board {board.identifier}: no 'uart:' block for QEMU to wire")
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "-serial":
            skip = True
        else:
            out.append(a)
    # -icount: the cycle counters follow instructions, not host time, so that the
    # cycles of a run under QEMU are repeatable (docs/device.md says what they mean).
    return [*out, "-icount", f"shift={icount_shift}",
            *["-serial", "null"] * uart.qemu_serial, "-serial", "pty"]


@contextmanager
def qemu_serving(board: Board, elf: Path, start_timeout: float = 10.0,
                 icount_shift: int = 0) -> Iterator[str]:
    """Runs the device image ``elf`` (built for ``board``) under QEMU until the block
    ends; yields the pseudo-terminal its UART is wired to. Each instruction advances
    QEMU's clock by 2^icount_shift ns."""
    image = device_elf(board, elf).resolve()
    cmd = _serial_args(board, qemu_command(board, image), icount_shift)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env={**os.environ, "LC_ALL": "C"})
    try:
        seen, deadline = b"", time.monotonic() + start_timeout
        assert proc.stdout is not None
        while (match := _PTY_RE.search(seen.decode(errors="replace"))) is None:
            left = deadline - time.monotonic()
            ready = select.select([proc.stdout], [], [], max(left, 0))[0]
            chunk = os.read(proc.stdout.fileno(), 4096) if ready else b""
            if not chunk:
                raise EmuError(f"board {board.identifier}: QEMU gave no pty for the UART "
                               f"({' '.join(cmd)}): {seen.decode(errors='replace')[-300:]!r}")
            seen += chunk
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
