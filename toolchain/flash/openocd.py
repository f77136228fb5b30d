"""OpenOCD (the Debian package ``openocd``): the board's configuration files, then
``program FILE verify reset exit``, which writes the .hex, reads the flash back to
compare, and starts the image."""

from __future__ import annotations

import re

from toolchain.flash.common import FlashFailed, FlashJob, Step, require_tool, run_streaming

__all__ = ["plan", "run"]

INSTALL = "install the Debian package 'openocd' (apt-get install openocd)"
VERIFIED = "** Verified OK **"
# OpenOCD's words for "no adapter to talk to", per adapter driver.
_NO_PROBE = re.compile(r"open failed|No J-Link device found|unable to open ftdi device|"
                       r"no device found|No CMSIS-DAP device found|libusb_open\(\) failed|"
                       r"couldn't find an adapter|Error: unable to find a matching")


def _tcl_word(text: str) -> str:
    """A Tcl word: braces keep spaces and brackets in a path literal."""
    return "{" + text + "}"


def plan(job: FlashJob) -> list[Step]:
    """The one openocd command line: probe choice first (the HiFive1 configuration
    initialises its adapter itself), then the board's configuration files."""
    assert job.method is not None
    hex_path = job.build.checked(".hex")
    probe = ["-c", f"adapter serial {_tcl_word(job.probe)}"] if job.probe else []
    configs = [arg for cfg in job.method.config for arg in ("-f", cfg)]
    return [Step(("openocd", *probe, *configs,
                  "-c", f"program {_tcl_word(str(hex_path))} verify reset exit"))]


def _missing_probe(output: str) -> str | None:
    if _NO_PROBE.search(output):
        return ("OpenOCD found no debug probe: plug in the board's debug USB port (and check "
                "the udev rules that give you access to it)")
    return None


def run(job: FlashJob) -> str:
    """Programs and verifies; returns what was verified."""
    (step,) = plan(job)
    tool = require_tool("openocd", INSTALL)
    output = run_streaming(job, (tool, *step.argv[1:]), _missing_probe)
    if VERIFIED not in output:
        raise FlashFailed("openocd finished without reporting '** Verified OK **'")
    return f"OpenOCD read the flash back: {job.build.flash_bytes} bytes verified"
