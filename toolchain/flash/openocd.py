"""OpenOCD (the Debian package ``openocd``): the board's configuration files, then
``program FILE verify reset exit``, which writes the .hex, reads the flash back to
compare, and starts the image.

OpenOCD reads its ``-c`` commands as Tcl, and its ``program`` procedure evaluates the file
name a second time (``eval flash write_image erase $filename``), so no quoting of the
build's own path survives both: a ``}``, ``[`` or space in it would end the word or run
as a command. The verified bytes of the .hex are therefore written to a fresh temporary
folder under a name made only of letters, digits and ``_./-`` (printed as a ``cp`` step),
and that name is what OpenOCD gets; user strings (``--probe``) are quoted as a Tcl word,
and the board's configuration names (which OpenOCD wraps in braces itself) must be plain.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from toolchain.flash.common import FlashFailed, FlashJob, Step, require_tool, run_streaming
from toolchain.loader import UsageError

__all__ = ["plan", "run"]

INSTALL = "install the Debian package 'openocd' (apt-get install openocd)"
VERIFIED = "** Verified OK **"
# OpenOCD's words for "no adapter to talk to", per adapter driver.
_NO_PROBE = re.compile(r"open failed|No J-Link device found|unable to open ftdi device|"
                       r"no device found|No CMSIS-DAP device found|libusb_open\(\) failed|"
                       r"couldn't find an adapter|Error: unable to find a matching")


# Characters that are the same word however often Tcl parses them.
_PLAIN = re.compile(r"[A-Za-z0-9_./+:=-]+")
_STAGED_PREFIX = "minirt-openocd-"


def tcl_word(text: str) -> str:
    """``text`` as one Tcl word that evaluates to exactly ``text``: in double quotes, with
    the characters Tcl substitutes there (backslash, quote, ``$``, brackets) escaped."""
    return '"' + re.sub(r'([\\"$\[\]])', r"\\\1", text) + '"'


def _staged_name(folder: str | None = None) -> Path:
    """Where the .hex is staged: a fresh temporary folder (its would-be name with
    ``XXXXXXXX`` in a plan), refused if TMPDIR puts characters OpenOCD would misread."""
    parent = tempfile.gettempdir()
    staged = Path(folder or os.path.join(parent, _STAGED_PREFIX + "X" * 8)) / "firmware.hex"
    if not _PLAIN.fullmatch(str(staged)):
        raise UsageError(f"the temporary folder {parent} has characters OpenOCD's program "
                         "command would misread: set TMPDIR to a plain path such as /tmp")
    return staged


def plan(job: FlashJob, staged: Path | None = None) -> list[Step]:
    """The copy of the verified .hex to a plain name, then the one openocd command line:
    probe choice first (the HiFive1 configuration initialises its adapter itself), then
    the board's configuration files."""
    assert job.method is not None
    hex_path = job.build.checked(".hex")
    staged = staged or _staged_name()
    bad = next((c for c in job.method.config if not _PLAIN.fullmatch(c)), None)
    if bad is not None:
        raise UsageError(f"board {job.board.identifier}: OpenOCD configuration {bad!r} may "
                         "only have letters, digits and _./+:=- (OpenOCD reads it as Tcl)")
    probe = ["-c", f"adapter serial {tcl_word(job.probe)}"] if job.probe else []
    configs = [arg for cfg in job.method.config for arg in ("-f", cfg)]
    return [Step(("cp", "--", str(hex_path), str(staged))),
            Step(("openocd", *probe, *configs,
                  "-c", f"program {tcl_word(str(staged))} verify reset exit"))]


def _missing_probe(output: str) -> str | None:
    if _NO_PROBE.search(output):
        return ("OpenOCD found no debug probe: plug in the board's debug USB port (and check "
                "the udev rules that give you access to it)")
    return None


def run(job: FlashJob) -> str:
    """Programs and verifies; returns what was verified."""
    tool = require_tool("openocd", INSTALL)
    with tempfile.TemporaryDirectory(prefix=_STAGED_PREFIX) as folder:
        copy, step = plan(job, _staged_name(folder))
        job.show(copy)
        Path(copy.argv[3]).write_bytes(job.build.verified(".hex"))
        output = run_streaming(job, (tool, *step.argv[1:]), _missing_probe)
    if VERIFIED not in output:
        raise FlashFailed("openocd finished without reporting '** Verified OK **'")
    return f"OpenOCD read the flash back: {job.build.flash_bytes} bytes verified"
