"""Runs a firmware image under QEMU as its board's ``simulation`` section says.

The run happens in a fresh temporary directory: the inputs are written there as
``minirt_in.bin`` (the harness reads it through semihosting or syscalls), and
``minirt_out.bin`` is read back afterwards. With ``count_instructions`` our TCG plugin
counts the guest instructions retired between the entries of ``mrt_bench_begin`` and
``mrt_bench_end`` (addresses taken from the ELF symbol table) - exact and repeatable,
unlike wall-clock time.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from toolchain.emu.diagnose import FAULT_FILE, describe_exit
from toolchain.emu.plugin import build_plugin
from toolchain.target import Board

__all__ = [
    "BENCH_BEGIN",
    "BENCH_END",
    "EmuError",
    "EmuTimeout",
    "RunResult",
    "bench_markers",
    "qemu_command",
    "run_image",
]

BENCH_BEGIN = "mrt_bench_begin"
BENCH_END = "mrt_bench_end"
IN_FILE = "minirt_in.bin"
OUT_FILE = "minirt_out.bin"
_COUNT_FILE = "minirt_insn_count.txt"
_COUNT_RE = re.compile(r"count=(\d+) begins=(\d+) ends=(\d+)")


class EmuError(Exception):
    """The emulator could not be started or its result could not be read."""


class EmuTimeout(EmuError):
    """The image did not finish in time (usually a hang)."""


class _HasToBytes(Protocol):
    def tobytes(self) -> bytes: ...


@dataclass(frozen=True)
class RunResult:
    """What one emulator run produced."""

    exit_code: int  # the image's exit status (negative: killed by that signal)
    console: str  # the image's console output (stdout; semihosting console on bare metal)
    stderr: str  # QEMU's own diagnostics
    outputs: bytes | None  # minirt_out.bin, None if the image did not write it
    instructions: int | None  # retired between the markers; None if not counted / reached
    command: tuple[str, ...]
    fault: bytes | None = None  # the raw fault record, if a fault handler left one

    @property
    def diagnosis(self) -> str:
        """Why the run ended, in words (the images themselves print nothing)."""
        return describe_exit(self.exit_code, self.fault)


def bench_markers(elf_path: Path) -> tuple[int, int]:
    """Addresses of the first instruction of mrt_bench_begin and mrt_bench_end (the Thumb
    bit cleared on Arm)."""
    try:
        with Path(elf_path).open("rb") as f:
            elf = ELFFile(f)
            symtab = elf.get_section_by_name(".symtab")
            if symtab is None:
                raise EmuError(f"{elf_path}: no symbol table to find the benchmark markers in")
            thumb = elf["e_machine"] == "EM_ARM"
            found: dict[str, int] = {}
            for name in (BENCH_BEGIN, BENCH_END):
                syms = symtab.get_symbol_by_name(name)
                if not syms:
                    raise EmuError(f"{elf_path}: symbol {name} not found (is the harness "
                                   "linked?)")
                value = syms[0]["st_value"]
                found[name] = value & ~1 if thumb else value
    except OSError as e:
        raise EmuError(f"{elf_path}: cannot read: {e.strerror or e}") from None
    except (ELFError, struct.error) as e:  # a truncated or overwritten file
        raise EmuError(f"{elf_path}: not a valid ELF file: {e}") from None
    return found[BENCH_BEGIN], found[BENCH_END]


def _plugin_option(path: Path, args: dict[str, str]) -> str:
    """One -plugin value; QEMU's option syntax escapes commas by doubling them."""
    parts = [f"file={path}", *(f"{k}={v}" for k, v in args.items())]
    return ",".join(p.replace(",", ",,") for p in parts)


def qemu_command(board: Board, elf: Path, plugin: str | None = None) -> list[str]:
    """The QEMU command line that runs ``elf`` on ``board`` (optionally with a plugin
    option value as built by the runner)."""
    sim = board.simulation
    qemu = shutil.which(sim.qemu)
    if qemu is None:
        package = "qemu-user" if sim.mode == "user" else "qemu-system-arm / qemu-system-misc"
        raise EmuError(f"board {board.identifier}: {sim.qemu} not found (install {package})")
    plugin_args = ["-plugin", plugin] if plugin else []
    if sim.mode == "user":
        return [qemu, *sim.args, *plugin_args, str(elf)]
    return [qemu, "-M", sim.machine, *sim.args, *plugin_args, "-kernel", str(elf)]


def _input_bytes(inputs: bytes | Sequence[bytes | _HasToBytes]) -> bytes:
    if isinstance(inputs, bytes | bytearray | memoryview):
        return bytes(inputs)
    return b"".join(bytes(x) if isinstance(x, bytes | bytearray) else x.tobytes() for x in inputs)


def run_image(
    board: Board,
    elf: Path,
    inputs: bytes | Sequence[bytes | _HasToBytes] = b"",
    *,
    timeout: float | None = None,
    count_instructions: bool = True,
) -> RunResult:
    """Runs ``elf`` under QEMU for ``board`` with ``inputs`` (raw bytes, or a sequence of
    byte strings / numpy arrays concatenated in signature order).

    Raises EmuTimeout if it runs longer than ``timeout`` seconds (default: the board's
    simulation.timeout), EmuError if QEMU cannot run or the plugin reports nothing for a
    successful run.
    """
    elf = Path(elf).resolve()
    limit = board.simulation.timeout if timeout is None else timeout
    if board.simulation.mode == "user" and not os.access(elf, os.X_OK):
        # qemu-user would exit with status 1 without a word, which reads as the image's
        # own "argument error".
        raise EmuError(f"{elf}: not executable (QEMU user mode runs it as a program)")
    with tempfile.TemporaryDirectory(prefix="minirt-run-") as tmp:
        work = Path(tmp)
        (work / IN_FILE).write_bytes(_input_bytes(inputs))
        plugin = None
        if count_instructions:
            begin, end = bench_markers(elf)
            plugin = _plugin_option(
                build_plugin(),
                {"begin": hex(begin), "end": hex(end), "out": str(work / _COUNT_FILE)},
            )
        cmd = qemu_command(board, elf, plugin)
        try:
            proc = subprocess.run(
                cmd,
                cwd=work,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=limit,
                env={**os.environ, "LC_ALL": "C"},
            )
        except subprocess.TimeoutExpired as exc:
            console = (exc.stdout or b"").decode(errors="replace").strip()
            seen = f"; console so far: {console[-200:]!r}" if console else ""
            raise EmuTimeout(
                f"board {board.identifier}: {elf.name} did not finish within {limit:g} s "
                f"(hang?){seen}"
            ) from None
        out_path = work / OUT_FILE
        outputs = out_path.read_bytes() if out_path.is_file() else None
        fault_path = work / FAULT_FILE
        fault = fault_path.read_bytes() if fault_path.is_file() else None
        instructions = None
        count_path = work / _COUNT_FILE
        if count_instructions and count_path.is_file():
            match = _COUNT_RE.search(count_path.read_text())
            if match and int(match.group(3)) > 0:
                instructions = int(match.group(1))
        stderr = proc.stderr.decode(errors="replace")
        if count_instructions and instructions is None and proc.returncode == 0:
            raise EmuError(
                f"board {board.identifier}: the run succeeded but the instruction counter "
                f"saw no {BENCH_BEGIN}..{BENCH_END} interval; QEMU said: {stderr.strip()!r}"
            )
        return RunResult(
            exit_code=proc.returncode,
            console=proc.stdout.decode(errors="replace"),
            stderr=stderr,
            outputs=outputs,
            instructions=instructions,
            command=tuple(cmd),
            fault=fault,
        )
