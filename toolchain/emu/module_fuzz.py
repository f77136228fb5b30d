"""Structural fuzz of a firmware's module under QEMU.

Every 32-bit field of the module (each aligned word before the constant pool, and the
head of every quantization record in the pool) is set to each of a list of boundary
values, the CRC is recomputed, and the firmware runs with that module patched into its
flash image (the bytes the loader reads). Each run must either be rejected by the loader
with the status the Python reader predicts from the image's own contract, or produce
exactly the outputs of the unmodified firmware. Nothing else is allowed: no other exit
status, no fault, no hang, no outputs that differ.

Used by `tests/e2e/test_module_fuzz.py` (a bounded sample) and `bench/module_fuzz.py`
(the full sweep, `make fuzz-module`).
"""

from __future__ import annotations

import struct
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolchain.emu.run import EmuTimeout, run_image
from toolchain.link.inspect import image_contract_of, module_span
from toolchain.module import format as fmt
from toolchain.module.contract import ImageContract
from toolchain.module.pack import CONST_FLAG_QUANT
from toolchain.module.reader import ModuleFormatError, read_module
from toolchain.target import Board

__all__ = ["Case", "Outcome", "FuzzTarget", "field_offsets", "fuzz_cases", "mutate"]

OK = 0


@dataclass(frozen=True)
class Case:
    """Set the u32 at `offset` of the module to `value` (the CRC recomputed after)."""

    offset: int
    value: int


@dataclass(frozen=True)
class Outcome:
    case: Case
    expected: int  # the loader status the reader predicts, OK = 0
    exit_code: int | None  # None: the run timed out
    passed: bool
    detail: str = ""


def field_offsets(module: bytes) -> list[int]:
    """Every aligned u32 before the pool, then the axis and channel count of every
    quantization record in the pool."""
    m = read_module(module)
    offsets = list(range(0, m.header.pool_offset, 4))
    for c in m.constants:
        if c.flags & CONST_FLAG_QUANT:
            at = m.header.pool_offset + c.params_offset
            offsets += [at, at + 4]
    return offsets


def boundary_values(module: bytes) -> tuple[int, ...]:
    """0, 1, 16, the arena size, the module size, 0x7fffffff, 0xffffffff, 1 << 30."""
    arena = fmt.HEADER.unpack_from(module)[5]
    return (0, 1, 16, arena, len(module), 0x7FFFFFFF, 0xFFFFFFFF, 1 << 30)


def fuzz_cases(module: bytes) -> list[Case]:
    """Every field at every boundary value, in module order."""
    values = boundary_values(module)
    return [Case(at, v) for at in field_offsets(module) for v in values]


def mutate(module: bytes, case: Case) -> bytes:
    """The module with the field set, and its CRC recomputed (unless the field is the
    CRC itself)."""
    data = bytearray(module)
    struct.pack_into("<I", data, case.offset, case.value)
    if case.offset != fmt.CRC_FIELD_OFFSET:
        struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, zlib.crc32(data[fmt.CRC_START:]))
    return bytes(data)


def expected_status(module: bytes, contract: ImageContract, full_crc: bool = True) -> int:
    """What mrt_module_load returns for `module` against `contract`, in a runtime that
    checks the whole module's CRC (`full_crc`, --boot-check small|fast) or the layout's
    only (layout)."""
    try:
        read_module(module, image=contract, loader_only=True, check_crc=full_crc)
    except ModuleFormatError as e:
        return int(e.status)
    return OK


class FuzzTarget:
    """One built firmware: its ELF, its module and contract read back from it, and the
    outputs of a clean run on fixed inputs. `boot_check` is the one it was built with
    (module/format.py BOOT_CHECKS), which says what the loader checks."""

    def __init__(self, board: Board, elf: Path, inputs: Sequence[bytes],
                 boot_check: str = fmt.DEFAULT_BOOT_CHECK) -> None:
        self.board = board
        self.full_crc = fmt.BOOT_CHECKS[boot_check].full_crc
        self.elf = Path(elf)
        self.image = self.elf.read_bytes()
        self.offset, size = module_span(self.elf)
        self.module = self.image[self.offset:self.offset + size]
        self.contract = image_contract_of(self.elf)
        self.inputs = list(inputs)
        clean = run_image(board, self.elf, self.inputs, count_instructions=False)
        if clean.exit_code != 0 or clean.outputs is None:
            raise RuntimeError(f"{self.elf}: the unmodified firmware failed: {clean.diagnosis}")
        self.outputs = clean.outputs

    def run(self, case: Case, timeout: float = 20.0) -> Outcome:
        """Runs the firmware with one mutated module and judges the result."""
        bad = mutate(self.module, case)
        want = expected_status(bad, self.contract, self.full_crc)
        with tempfile.TemporaryDirectory(prefix="minirt-fuzz-") as tmp:
            patched = Path(tmp) / self.elf.name
            patched.write_bytes(self.image[:self.offset] + bad
                                + self.image[self.offset + len(bad):])
            patched.chmod(0o755)
            try:
                run = run_image(self.board, patched, self.inputs, count_instructions=False,
                                timeout=timeout)
            except EmuTimeout:
                return Outcome(case, want, None, False, "hang")
        if want != OK:
            passed = run.exit_code == want
            detail = "" if passed else f"exit {run.exit_code} ({run.diagnosis})"
        else:
            passed = run.exit_code == 0 and run.outputs == self.outputs
            detail = "" if passed else (f"exit {run.exit_code} ({run.diagnosis})"
                                        if run.exit_code else "outputs differ")
        return Outcome(case, want, run.exit_code, passed, detail)
