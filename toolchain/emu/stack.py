"""The stack an image really uses, measured under QEMU, and the reservation sized from it.

The QEMU plugin watches every guest store (plugin/insn_count.c, ``stack=LO:HI``) and
records the lowest address stored to inside the stack's region; the depth is the top of
the stack minus that address. This is exact (every store the code makes, nothing
sampled) and needs nothing in the image: no code paints the stack at reset and none
reads it back, so the measured image is byte for byte the one that ships.

* Bare metal: the stack grows down from ``_stack_start`` (the top of RAM) towards the
  end of ``.bss``; the watched region is [``__ebss``, ``_stack_start``).
* Linux (QEMU user mode): the kernel (QEMU) provides the stack, above everything the
  image maps; the watched region is everything above the board's RAM, and the top is
  the highest address stored to there (the return address ``_start``'s call pushes, at
  the 16-byte aligned initial stack pointer, on x86-64; the first frame record on
  AArch64), so the depth is exact up to that alignment.

The reservation (the linker script's ``_stack_size``, which the link checks against
RAM and the size report counts) is the measured depth plus ``stack_margin``: what the
run cannot see. A fault on Cortex-M stacks an exception frame in hardware (up to 104 B
with the FP context), which no guest store makes, and the fault handler's own frames
follow it; a compiler helper or runtime path that other inputs would take may go a
little deeper than the measured run. Hence 256 B plus an eighth of the depth, rounded up
to 16 B (the stack alignment of every ABI minirt targets).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from toolchain.emu.run import EmuError, run_image, verified_elf
from toolchain.link.elf_symbols import ELFFormatError, read_symbols
from toolchain.target import Board

__all__ = [
    "STACK_ALIGN",
    "StackProbe",
    "StackUse",
    "measure_stack",
    "stack_margin",
    "stack_probe",
    "stack_reservation",
    "stack_reserved",
]

MARGIN_FIXED = 256  # an exception frame with FP context (104 B) and the fault handlers
MARGIN_FRACTION = 8  # plus depth / 8 for paths the measured run did not take
STACK_ALIGN = 16
_TOP_OF_64_BITS = (1 << 64) - 1
_STACK_RE = re.compile(r"stack_low=(0x[0-9a-f]+|0) stack_high=(0x[0-9a-f]+|0) "
                       r"stack_stores=(\d+)")


def _align(n: int) -> int:
    return (n + STACK_ALIGN - 1) // STACK_ALIGN * STACK_ALIGN


def stack_margin(depth: int) -> int:
    """Bytes reserved beyond a measured depth (see the module docstring)."""
    return _align(depth + MARGIN_FIXED + depth // MARGIN_FRACTION) - depth


def stack_reservation(depth: int) -> int:
    """The stack reservation for a measured depth: depth + stack_margin(depth)."""
    return depth + stack_margin(depth)


@dataclass(frozen=True)
class StackUse:
    """What one run stored on the stack: ``depth`` bytes below ``top`` (the lowest
    address stored to is ``top - depth``)."""

    depth: int
    top: int


class StackProbe:
    """A run probe (toolchain.emu.run.Probe) that measures the stack's high-water mark
    in the region [lo, hi); ``top`` is the stack's initial top, or None to take the
    highest address stored to in the region (Linux, where the kernel places it)."""

    def __init__(self, lo: int, hi: int, top: int | None) -> None:
        self.lo, self.hi, self.top = lo, hi, top
        self.use: StackUse | None = None

    def plugin_args(self, work: Path) -> dict[str, str]:
        return {"stack": f"{self.lo:#x}:{self.hi:#x}"}

    def collect(self, work: Path, count_line: str) -> None:
        m = _STACK_RE.search(count_line)
        if not m or int(m.group(3)) == 0:
            return
        low, high = int(m.group(1), 16), int(m.group(2), 16)
        top = high if self.top is None else self.top
        self.use = StackUse(max(0, top - low), top)


def _symbols(elf: Path, names: tuple[str, ...]) -> dict[str, int]:
    try:
        symbols = read_symbols(Path(elf))
    except OSError as e:
        raise EmuError(f"{elf}: cannot read: {e.strerror or e}") from None
    except ELFFormatError as e:
        raise EmuError(f"{elf}: not a valid ELF file: {e}") from None
    found = symbols.values(names) if symbols is not None else {}
    for name in names:
        if name not in found:
            raise EmuError(f"{elf}: no symbol {name} to find the stack by")
    return found


def stack_probe(board: Board, elf: Path) -> StackProbe:
    """The probe that measures the stack of ``elf`` (the image QEMU runs) on ``board``."""
    if board.simulation.mode == "user":
        return StackProbe(board.ram.end, _TOP_OF_64_BITS, None)
    found = _symbols(elf, ("__ebss", "_stack_start"))
    return StackProbe(found["__ebss"], found["_stack_start"], found["_stack_start"])


def stack_reserved(elf: Path) -> int:
    """The stack an image reserves: its linker script's ``_stack_size``."""
    return _symbols(elf, ("_stack_size",))["_stack_size"]


# Depths measured in this process, by board and the exact bytes of image and inputs: a
# process that builds the same model for the same board again (a test session, a size
# matrix) measures it once. Exact execution makes the figure a function of that key.
_MEASURED: dict[tuple[str, str, bytes, bytes], StackUse] = {}


def measure_stack(board: Board, elf: Path, inputs: bytes,
                  timeout: float | None = None) -> tuple[StackUse | None, str]:
    """The stack one run of ``elf`` on ``board`` uses with ``inputs``, and why not when
    it cannot be measured (``(None, reason)``): a Linux board (the kernel gives the
    stack; the reservation is only checked), no emulator installed, or a run that failed
    or timed out. QEMU executes the image exactly, so the same image and inputs always
    measure the same depth: a build that sizes its stack from this stays reproducible."""
    if board.simulation.mode != "system":
        return None, "a Linux process: the kernel provides the stack"
    if shutil.which(board.simulation.qemu) is None:
        return None, f"{board.simulation.qemu} is not installed"
    key = (board.identifier, str(board.path), hashlib.sha256(Path(elf).read_bytes()).digest(),
           hashlib.sha256(inputs).digest())
    if key in _MEASURED:  # the same image and inputs: QEMU would measure the same
        return _MEASURED[key], ""
    try:
        # A real board runs as its emulated sibling's relinked copy: its stack is there.
        probe = stack_probe(board, verified_elf(board, Path(elf)))
        result = run_image(board, elf, inputs, timeout=timeout, probes=[probe], cycles=False)
    except EmuError as e:  # EmuTimeout included
        return None, f"the measuring run failed: {e}"
    if result.exit_code != 0 or probe.use is None:
        return None, f"the measuring run failed: {result.diagnosis or result.exit_code}"
    _MEASURED[key] = probe.use
    return probe.use, ""
