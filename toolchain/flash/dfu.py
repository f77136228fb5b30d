"""USB DFU with dfu-util (the Debian package ``dfu-util``), for the STM32 system
bootloader (DfuSe): download the .bin at its base address, upload the same range back
and compare it byte for byte, leaving DFU mode so the image starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from toolchain.flash.common import FlashFailed, FlashJob, Step, require_tool, run_streaming

__all__ = ["plan", "run"]

INSTALL = "install the Debian package 'dfu-util' (apt-get install dfu-util)"
READBACK = "readback.bin"


def plan(job: FlashJob, readback: Path | None = None) -> list[Step]:
    """Download, then upload-and-leave (the upload is the verification)."""
    assert job.method is not None
    bin_path = job.build.checked(".bin")
    base, size = job.build.bin_base(), bin_path.stat().st_size
    device = ["-d", job.method.device, "-a", str(job.method.alt)]
    if job.probe:
        device += ["-S", job.probe]
    readback = readback or Path("<temporary folder>") / READBACK
    return [
        Step(("dfu-util", *device, "-s", f"{base:#010x}", "-D", str(bin_path))),
        Step(("dfu-util", *device, "-s", f"{base:#010x}:{size}:leave", "-U", str(readback))),
    ]


def _missing_device(job: FlashJob):  # type: ignore[no-untyped-def]
    def classify(output: str) -> str | None:
        if "No DFU capable USB device" in output or "Cannot open DFU device" in output:
            assert job.method is not None
            return (f"no DFU device {job.method.device} found: start the board's bootloader "
                    "in DFU mode (BOOT0 high while it resets) and plug in its USB port; "
                    "`dfu-util -l` lists what is there")
        return None
    return classify


def run(job: FlashJob) -> str:
    """Writes, reads back and compares; returns what was verified."""
    tool = require_tool("dfu-util", INSTALL)
    with tempfile.TemporaryDirectory(prefix="minirt-dfu-") as tmp:
        readback = Path(tmp) / READBACK
        write, verify = plan(job, readback)
        run_streaming(job, (tool, *write.argv[1:]), _missing_device(job))
        run_streaming(job, (tool, *verify.argv[1:]), _missing_device(job))
        want = job.build.verified(".bin")
        got = readback.read_bytes() if readback.is_file() else b""
    if got[:len(want)] != want:
        where = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(got))
        raise FlashFailed(f"the flash read back over DFU differs from firmware.bin at "
                          f"{job.build.bin_base() + where:#010x} ({len(got)} of {len(want)} "
                          "bytes read)")
    return f"read back over DFU: {len(want)} bytes equal to firmware.bin"
