"""The flash methods as a table: what each writes, how it is planned (the commands it
will print, also for --dry-run) and run. A board's ``flash_methods`` name rows of it;
``qemu`` is how an emulated board (one without flash methods) is "flashed"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolchain.flash import dfu, esp_serial, openocd, pyocd_probe, qemu, uf2_drive
from toolchain.flash.common import FlashJob, Step
from toolchain.target import Board

__all__ = ["METHODS", "Method", "methods_for"]


@dataclass(frozen=True)
class Method:
    """One row: the file it writes, the tool it needs (for messages) and its two steps."""

    name: str
    image: str  # the build file it writes: .hex, .bin, .uf2 or .esp.bin
    tool: str
    plan: Callable[[FlashJob], list[Step]]
    run: Callable[[FlashJob], str]  # returns what was verified; raises on failure


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("pyocd", ".hex", "pyOCD (Python API)", pyocd_probe.plan, pyocd_probe.run),
    Method("openocd", ".hex", "OpenOCD", openocd.plan, openocd.run),
    Method("dfu", ".bin", "dfu-util", dfu.plan, dfu.run),
    Method("uf2", ".uf2", "a UF2 bootloader drive", uf2_drive.plan, uf2_drive.run),
    Method("esptool", ".esp.bin", "esptool", esp_serial.plan, esp_serial.run),
    Method("qemu", ".bin", "QEMU", qemu.plan, qemu.run),
)}


def methods_for(board: Board) -> list[str]:
    """The methods that can flash ``board``, its default first: its flash methods in the
    order its descriptor lists them, and QEMU for every board QEMU can run."""
    names = [m.method for m in board.flash_methods]
    if board.simulation is not None and board.simulation.mode == "system":
        names.append("qemu")
    return names
