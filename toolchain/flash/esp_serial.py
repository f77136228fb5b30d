"""esptool over the USB serial port (the ESP32-C3 / C6 USB-Serial/JTAG port, or a board's
USB-UART bridge): write the ESP image at the flash offset the chip's ROM loader reads,
which esptool then checks by reading back the flash's MD5, and reset into the image.

esptool is a Python package (the optional extra ``esp``: ``pip install minirt[esp]``);
its ``esptool`` command is looked for on PATH, then beside this Python.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path

from toolchain.flash.common import FlashFailed, FlashJob, Step, run_streaming
from toolchain.link.esp_image import ESP_IMAGE_SUFFIX
from toolchain.loader import UsageError
from toolchain.target.esp import ESP_CHIPS

__all__ = ["plan", "run"]

INSTALL = "install esptool (pip install 'esptool>=4.7', or minirt's extra: pip install minirt[esp])"
# What esptool prints when the written region's MD5, read back from the chip, matches.
_VERIFIED = "Hash of data verified"
# esptool's words for "nothing answered on that port" (a missing board, not a failed write).
_NO_DEVICE = ("could not open port", "Could not open", "Failed to connect",
              "No serial data received", "Could not auto-detect", "No serial ports found")


def _write_command() -> str:
    """esptool 5 spells its commands with dashes (``write-flash``, the underscore form is
    deprecated there); esptool 4 only knows ``write_flash``."""
    try:
        major = int(importlib.metadata.version("esptool").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return "write-flash"
    return "write-flash" if major >= 5 else "write_flash"


def _esptool() -> str | None:
    """The esptool command: on PATH, else installed beside this Python (a venv's bin/)."""
    found = shutil.which("esptool")
    if found is None:
        beside = Path(sys.executable).parent / "esptool"
        found = str(beside) if beside.is_file() else None
    return found


def plan(job: FlashJob) -> list[Step]:
    """One esptool call: the chip from the board, the port and baud rate when given, the
    ROM loader's offset and the image (checked against the ELF first)."""
    assert job.method is not None
    chip = ESP_CHIPS[job.method.chip]
    image = job.build.checked(ESP_IMAGE_SUFFIX, family=chip.image_chip_id)
    argv = ["esptool", "--chip", job.method.chip]
    if job.port:
        argv += ["--port", job.port]
    if job.baud:
        argv += ["--baud", str(job.baud)]
    argv += [_write_command(), f"{chip.rom_load_offset:#x}", str(image)]
    return [Step(tuple(argv))]


def _missing_device(job: FlashJob):  # type: ignore[no-untyped-def]
    def classify(output: str) -> str | None:
        if any(words in output for words in _NO_DEVICE):
            assert job.method is not None
            where = f"on {job.port}" if job.port else "on any serial port (give --port)"
            return (f"no {job.board.chip} answered {where}: plug in the board's USB port; if "
                    "it still does not answer, hold BOOT while pressing RESET to start the "
                    f"ROM's download mode (`esptool --chip {job.method.chip} chip-id` checks)")
        return None
    return classify


def run(job: FlashJob) -> str:
    """Writes the image; esptool compares the flash's MD5 with the image's and resets the
    chip into it. Returns what was verified."""
    tool = _esptool()
    if tool is None:
        raise UsageError(f"esptool not found on PATH: {INSTALL}")
    (step,) = plan(job)
    output = run_streaming(job, (tool, *step.argv[1:]), _missing_device(job))
    if _VERIFIED not in output:
        raise FlashFailed("esptool did not report the flash's MD5 as equal to the image's "
                          f"('{_VERIFIED}' is missing from its output)")
    size = Path(step.argv[-1]).stat().st_size
    return (f"esptool read back the MD5 of {size} bytes at {step.argv[-2]}: equal to "
            f"{Path(step.argv[-1]).name}")
