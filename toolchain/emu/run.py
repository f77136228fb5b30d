"""Runs a firmware image under QEMU as its board's ``simulation`` section says.

The run happens in a fresh temporary directory: the inputs are written there as
``mrt.in`` (the harness reads it through semihosting or syscalls), and
``mrt.out`` is read back afterwards. With ``count_instructions`` our TCG plugin
counts the guest instructions retired between the entries of ``mrt_bench_begin`` and
``mrt_bench_end`` (addresses taken from the ELF symbol table) - exact and repeatable,
unlike wall-clock time.

QEMU boots the ELF (``-kernel``), or, with ``boot``, the very file that is flashed: a
``.bin`` at its recorded base address or a ``.hex`` at the addresses its records carry
(``-device loader``); the ELF still gives the marker addresses. A real board verified
on a relinked sibling (``Board.verify_mode == "relink"``) runs the copy that
``link_firmware`` relinked for the sibling (``verify/`` beside the image).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from toolchain.emu.cycles import (
    BlocksProbe,
    CycleError,
    CycleEstimate,
    board_isa,
    estimate_cycles,
    timing_for,
)
from toolchain.emu.diagnose import FAULT_FILE, describe_exit
from toolchain.emu.plugin import build_plugin
from toolchain.link.build import VERIFY_DIR
from toolchain.link.elf_symbols import EM_ARM, ELFFormatError, read_symbols
from toolchain.target import Board, DescriptorError
from toolchain.target.host_cpu import native_refusal

__all__ = [
    "BENCH_BEGIN",
    "BENCH_END",
    "BootImage",
    "EmuError",
    "EmuTimeout",
    "Probe",
    "RunResult",
    "bench_markers",
    "boot_image",
    "qemu_command",
    "run_image",
    "verified_elf",
]

BENCH_BEGIN = "mrt_bench_begin"
BENCH_END = "mrt_bench_end"
IN_FILE = "mrt.in"  # MRT_PLATFORM_INPUT_FILE in runtime_c/include/mrt_platform.h
OUT_FILE = "mrt.out"  # MRT_PLATFORM_OUTPUT_FILE
_COUNT_FILE = "minirt_insn_count.txt"
_COUNT_RE = re.compile(r"count=(\d+) begins=(\d+) ends=(\d+)")


class EmuError(Exception):
    """The emulator could not be started or its result could not be read."""


class EmuTimeout(EmuError):
    """The image did not finish in time (usually a hang)."""


class _HasToBytes(Protocol):
    def tobytes(self) -> bytes: ...


class Probe(Protocol):
    """More measurements from the same plugin run (a profile, the stack's high-water
    mark: toolchain/emu/profile.py, stack.py): extra plugin arguments before the run,
    files and the count line to read back after it, in the run's directory."""

    def plugin_args(self, work: Path) -> dict[str, str]: ...

    def collect(self, work: Path, count_line: str) -> None: ...


@dataclass(frozen=True)
class RunResult:
    """What one emulator run produced."""

    exit_code: int  # the image's exit status (negative: killed by that signal)
    console: str  # the image's console output (stdout; semihosting console on bare metal)
    stderr: str  # QEMU's own diagnostics
    outputs: bytes | None  # OUT_FILE, None if the image did not write it
    instructions: int | None  # retired between the markers; None if not counted / reached
    command: tuple[str, ...]
    fault: bytes | None = None  # the raw fault record, if a fault handler left one
    image: Path | None = None  # the file QEMU booted (the ELF, or the .bin / .hex)
    # Estimated cycles / ms of the counted instructions at the board's clock
    # (toolchain/emu/cycles.py); None when not counted or the core has no timing table.
    cycles: CycleEstimate | None = None
    # The further output files a stream image wrote (mrt.<k>.out: emu/stream.py), by name.
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def diagnosis(self) -> str:
        """Why the run ended, in words (the images themselves print nothing)."""
        return describe_exit(self.exit_code, self.fault)


def bench_markers(elf_path: Path) -> tuple[int, int]:
    """Addresses of the first instruction of mrt_bench_begin and mrt_bench_end (the Thumb
    bit cleared on Arm)."""
    try:
        symbols = read_symbols(Path(elf_path))
    except OSError as e:
        raise EmuError(f"{elf_path}: cannot read: {e.strerror or e}") from None
    except ELFFormatError as e:  # a truncated or overwritten file
        raise EmuError(f"{elf_path}: not a valid ELF file: {e}") from None
    if symbols is None:
        raise EmuError(f"{elf_path}: no symbol table to find the benchmark markers in")
    found = symbols.values((BENCH_BEGIN, BENCH_END))
    for name in (BENCH_BEGIN, BENCH_END):
        if name not in found:
            raise EmuError(f"{elf_path}: symbol {name} not found (is the harness linked?)")
    thumb = symbols.machine == EM_ARM  # a Thumb function's symbol has bit 0 set
    return tuple(found[n] & ~1 if thumb else found[n] for n in (BENCH_BEGIN, BENCH_END))


def _plugin_option(path: Path, args: dict[str, str]) -> str:
    """One -plugin value; QEMU's option syntax escapes commas by doubling them."""
    parts = [f"file={path}", *(f"{k}={v}" for k, v in args.items())]
    return ",".join(p.replace(",", ",,") for p in parts)


@dataclass(frozen=True)
class BootImage:
    """A flashable file QEMU boots instead of the ELF: ``.bin`` (raw, at ``base``) or
    ``.hex`` (Intel HEX: its records carry the addresses)."""

    path: Path
    base: int | None = None  # where a .bin starts; None for .hex

    def loader_option(self) -> str:
        """The ``-device loader`` value that puts the file in memory (before the core
        reads its reset vector, as QEMU's loader writes at machine reset)."""
        parts = ["loader", f"file={self.path}"]
        if self.base is not None:
            parts += [f"addr={self.base:#x}", "force-raw=on"]
        return ",".join(p.replace(",", ",,") for p in parts)


def boot_image(path: Path) -> BootImage:
    """The BootImage of a build's ``.bin`` (base from the ``.bin.base`` file written beside
    it) or ``.hex``; EmuError for anything else."""
    path = Path(path).resolve()
    if path.suffix == ".hex":
        return BootImage(path)
    if path.suffix == ".bin":
        base_file = path.with_name(path.name + ".base")
        try:
            return BootImage(path, int(base_file.read_text().strip(), 0))
        except OSError:
            raise EmuError(f"{path}: no {base_file.name} beside it to say where it starts "
                           "(rebuild with minirt-build)") from None
        except ValueError:
            raise EmuError(f"{base_file}: not an address") from None
    raise EmuError(f"{path}: cannot boot a '{path.suffix}' file (a .bin or a .hex)")


def verified_elf(board: Board, elf: Path) -> Path:
    """The image QEMU runs for ``elf`` built for ``board``: ``elf`` itself, or, for a board
    whose sibling does not map its memories, the relinked copy in ``verify/``."""
    elf = Path(elf)
    if board.verify_mode != "relink" or elf.parent.name == VERIFY_DIR:
        return elf
    copy = elf.parent / VERIFY_DIR / elf.name
    if not copy.is_file():
        raise EmuError(f"board {board.identifier} is verified on {board.sibling.identifier} "
                       f"with a relinked copy, and {copy} is missing (rebuild; an image "
                       "larger than the sibling's memories has none)")
    return copy


def qemu_command(board: Board, elf: Path, plugin: str | None = None,
                 boot: BootImage | None = None) -> list[str]:
    """The QEMU command line that runs ``elf`` on ``board`` (optionally with a plugin
    option value as built by the runner), or boots ``boot`` instead of the ELF."""
    sim = board.simulation
    if sim.native:  # QEMU cannot run its code: the host runs the program itself
        if plugin or boot is not None:
            raise EmuError(f"board {board.identifier} runs natively: no instruction "
                           "counts, profile or boot image (QEMU cannot execute its code)")
        return [str(elf)]
    qemu = shutil.which(sim.qemu)
    if qemu is None:
        package = "qemu-user" if sim.mode == "user" else "qemu-system-arm / qemu-system-misc"
        raise EmuError(f"board {board.identifier}: {sim.qemu} not found (install {package})")
    plugin_args = ["-plugin", plugin] if plugin else []
    if sim.mode == "user":
        if boot is not None:
            raise EmuError(f"board {board.identifier} runs a Linux program: there is no "
                           f"{boot.path.suffix} image to boot, only the ELF")
        return [qemu, *sim.args, *plugin_args, str(elf)]
    load = ["-device", boot.loader_option()] if boot is not None else ["-kernel", str(elf)]
    return [qemu, "-M", sim.machine, *sim.args, *plugin_args, *load]


def _check_native_host(board: Board) -> None:
    """Raises EmuError unless this host's CPU runs the native board's code."""
    refusal = native_refusal(board)
    if refusal:
        raise EmuError(refusal)


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
    boot: Path | BootImage | None = None,
    probes: Sequence[Probe] = (),
    files: dict[str, bytes] | None = None,
    cycles: bool = True,
) -> RunResult:
    """Runs ``elf`` under QEMU for ``board`` with ``inputs`` (raw bytes, or a sequence of
    byte strings / numpy arrays concatenated in signature order). With ``boot`` (a
    build's ``.bin`` or ``.hex``), QEMU boots that file and ``elf`` only gives the marker
    addresses. A board verified on a relinked sibling runs the relinked copy of both
    (``verified_elf``). ``probes`` add their measurements to the plugin's (they imply
    ``count_instructions``). ``files`` are more host files for the image (a stream
    image's steps: emu/stream.py); every ``mrt.*.out`` it writes comes back in
    ``RunResult.files``. ``cycles=False`` skips the cycle estimate (RunResult.cycles
    None): a run made for a probe's figure alone (the stack depth) spares QEMU the
    per-block counts and itself their costing, a tenth of a second a build.

    Raises EmuTimeout if it runs longer than ``timeout`` seconds (default: the board's
    simulation.timeout), EmuError if QEMU cannot run or the plugin reports nothing for a
    successful run.
    """
    elf = verified_elf(board, Path(elf)).resolve()
    if isinstance(boot, Path | str):
        boot = Path(boot)
        if elf.parent.name == VERIFY_DIR and boot.parent.name != VERIFY_DIR:
            boot = elf.parent / boot.name
        boot = boot_image(boot)
    limit = board.simulation.timeout if timeout is None else timeout
    if board.simulation.native:
        _check_native_host(board)
        count_instructions = False  # nothing counts a native run's instructions
    if board.simulation.mode == "user" and not os.access(elf, os.X_OK):
        # qemu-user would exit with status 1 without a word, which reads as the image's
        # own "argument error".
        raise EmuError(f"{elf}: not executable (QEMU user mode runs it as a program)")
    with tempfile.TemporaryDirectory(prefix="minirt-run-") as tmp:
        work = Path(tmp)
        (work / IN_FILE).write_bytes(_input_bytes(inputs))
        for name, data in (files or {}).items():
            (work / name).write_bytes(data)
        plugin = None
        count_instructions = count_instructions or bool(probes)
        try:
            blocks = (BlocksProbe(board_isa(board))
                      if cycles and count_instructions and timing_for(board) else None)
        except DescriptorError as exc:
            raise EmuError(str(exc)) from None
        if blocks is not None:
            probes = (*probes, blocks)
        if count_instructions:
            begin, end = bench_markers(elf)
            extra = {k: v for probe in probes for k, v in probe.plugin_args(work).items()}
            plugin = _plugin_option(
                build_plugin(),
                {"begin": hex(begin), "end": hex(end), "out": str(work / _COUNT_FILE),
                 **extra},
            )
        cmd = qemu_command(board, elf, plugin, boot)
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
                f"board {board.identifier}: {(boot.path if boot else elf).name} did not "
                f"finish within {limit:g} s "
                f"(hang?){seen}"
            ) from None
        out_path = work / OUT_FILE
        outputs = out_path.read_bytes() if out_path.is_file() else None
        fault_path = work / FAULT_FILE
        fault = fault_path.read_bytes() if fault_path.is_file() else None
        instructions = None
        count_path = work / _COUNT_FILE
        count_line = count_path.read_text() if count_path.is_file() else ""
        if count_instructions and count_line:
            match = _COUNT_RE.search(count_line)
            if match and int(match.group(3)) > 0:
                instructions = int(match.group(1))
        for probe in probes:
            probe.collect(work, count_line)
        stderr = proc.stderr.decode(errors="replace")
        if count_instructions and instructions is None and proc.returncode == 0:
            raise EmuError(
                f"board {board.identifier}: the run succeeded but the instruction counter "
                f"saw no {BENCH_BEGIN}..{BENCH_END} interval; QEMU said: {stderr.strip()!r}"
            )
        cycles = None
        if blocks is not None and blocks.blocks is not None and instructions is not None:
            try:
                cycles = estimate_cycles(board, blocks.blocks, instructions)
            except (CycleError, DescriptorError) as exc:
                raise EmuError(str(exc)) from None
        return RunResult(
            exit_code=proc.returncode,
            console=proc.stdout.decode(errors="replace"),
            stderr=stderr,
            outputs=outputs,
            instructions=instructions,
            command=tuple(cmd),
            fault=fault,
            image=boot.path if boot is not None else elf,
            cycles=cycles,
            files={p.name: p.read_bytes() for p in work.glob("mrt.*.out")},
        )
