"""What every flash method shares: the job, the steps it prints, progress output, running
an external tool with its output passed through, and the two ways a flash can fail."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from toolchain.flash.build_dir import FlashBuild
from toolchain.loader import UsageError
from toolchain.target import Board, FlashMethod

__all__ = ["FlashFailed", "FlashJob", "Progress", "Step", "require_tool", "run_streaming"]


class FlashFailed(Exception):
    """The tool ran and writing or verifying failed (exit 1). A missing tool, probe or
    drive is a UsageError instead (exit 2): something to install or plug in."""


@dataclass(frozen=True)
class Step:
    """One thing a method does, printed before it is done: a command line (``argv``) or,
    for a library call, its description."""

    argv: tuple[str, ...] = ()
    text: str = ""

    def render(self) -> str:
        """``$ tool arg ...`` for a command, ``> what`` for a library call."""
        return f"$ {shlex.join(self.argv)}" if self.argv else f"> {self.text}"


@dataclass
class FlashJob:
    """A flash about to happen: the board, the checked build, the method's descriptor
    (None for QEMU), the probe / drive or serial port asked for, and where messages go."""

    board: Board
    build: FlashBuild
    method: FlashMethod | None
    probe: str | None = None
    port: str | None = None  # esptool: the serial port (--port)
    baud: int | None = None  # esptool: the serial baud rate (--baud)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    def say(self, text: str) -> None:
        """A progress or status line (stderr, so stdout keeps only the results)."""
        print(f"minirt-flash: {text}", file=self.err, flush=True)

    def show(self, step: Step) -> None:
        """Prints exactly what is about to run."""
        print(step.render(), file=self.out, flush=True)


class Progress:
    """Prints ``what: 40% (n/total unit)`` whenever another tenth is done (a line each,
    so it reads the same in a terminal and in a CI log)."""

    def __init__(self, job: FlashJob, what: str, total: int, unit: str) -> None:
        self.job, self.what, self.total, self.unit = job, what, max(total, 1), unit
        self._shown = -1

    def update(self, done: int) -> None:
        """``done`` of ``total`` units are finished."""
        tenth = min(10, done * 10 // self.total)
        if tenth > self._shown:
            self._shown = tenth
            self.job.say(f"{self.what}: {tenth * 10:3d}% ({done}/{self.total} {self.unit})")

    def fraction(self, value: float) -> None:
        """For callbacks that report a fraction in [0, 1] (pyOCD)."""
        self.update(round(value * self.total))


def require_tool(name: str, install: str) -> str:
    """The path of executable ``name``; a UsageError saying what to install otherwise."""
    found = shutil.which(name)
    if found is None:
        raise UsageError(f"{name} not found on PATH: {install}")
    return found


def run_streaming(job: FlashJob, argv: Sequence[str],
                  classify: Callable[[str], str | None] = lambda _: None) -> str:
    """Runs a flashing tool with its output passed through as it comes (its own progress
    bars included) and returns that output. A non-zero exit is a UsageError when
    ``classify`` recognises the output as "nothing to talk to" (it returns the message),
    else FlashFailed with the tool's last lines."""
    job.show(Step(tuple(argv)))
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
    assert proc.stdout is not None
    seen = bytearray()
    while chunk := proc.stdout.read1(4096):  # type: ignore[attr-defined]
        seen += chunk
        job.err.write(chunk.decode(errors="replace"))
        job.err.flush()
    code = proc.wait()
    text = seen.decode(errors="replace")
    if code != 0:
        missing = classify(text)
        if missing:
            raise UsageError(missing)
        tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])
        raise FlashFailed(f"{os.path.basename(argv[0])} exited with status {code}: {tail}")
    return text
