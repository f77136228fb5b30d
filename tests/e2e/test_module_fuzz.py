"""A bounded sample of the structural module fuzz under QEMU (`make fuzz-module` runs it all).

Each case sets one 32-bit field of the module inside a built firmware to a boundary
value, with the CRC recomputed; the run must be rejected with the status the reader
predicts from the firmware's own contract, or give exactly the unmodified outputs.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from toolchain.emu.module_fuzz import Case, fuzz_cases, mutate
from toolchain.emu.run import run_image
from toolchain.module.format import CRC_FIELD_OFFSET, CRC_START, Status
from toolchain.module.reader import read_module

BENCH = Path(__file__).resolve().parents[2] / "bench" / "module_fuzz.py"
SAMPLE = 48  # runs per model and board: about 10 s for all six on two cores


def _bench():
    spec = importlib.util.spec_from_file_location("module_fuzz_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("board", ["x86-64", "cortex-m4"])
@pytest.mark.parametrize(("model", "boot_check"), [("dense_int8", "layout"), ("chain", "layout"),
                                                   ("multi_io", "layout"),
                                                   ("dense_int8", "small")])
def test_structural_fuzz_sample(model: str, boot_check: str, board: str,
                                tmp_path: Path) -> None:
    target = _bench().fuzz_target(model, board, tmp_path, boot_check)
    cases = fuzz_cases(target.module)
    # The header's fields and a seeded sample of the rest, so every run of the suite
    # covers the same cases.
    head = [c for c in cases if c.offset < 48 and c.value in (0, 0xFFFFFFFF)]
    rest = random.Random(f"{model}/{board}").sample(cases, SAMPLE - len(head))
    failures = [o for o in map(target.run, head + rest) if not o.passed]
    assert not failures, "\n".join(f"field {o.case.offset} = {o.case.value:#x}: expected "
                                   f"{o.expected}, {o.detail}" for o in failures)


def test_fields_cover_quantization_records_and_the_crc_is_recomputed(tmp_path: Path) -> None:
    target = _bench().fuzz_target("dense_int8", "x86-64", tmp_path)
    cases = fuzz_cases(target.module)
    pool = read_module(target.module).header.pool_offset
    in_pool = {c.offset for c in cases if c.offset >= pool}
    assert in_pool and len(in_pool) % 2 == 0  # axis and channel count of each record
    same = mutate(target.module, Case(20, int.from_bytes(target.module[20:24], "little")))
    assert same == target.module
    # A quantization record's head is tool metadata the runtime never reads.
    outcome = target.run(Case(min(in_pool), 0x7FFFFFFF))
    assert outcome.passed and outcome.expected == 0


@pytest.mark.parametrize(("boot_check", "status"), [("layout", Status.OK), ("small", Status.CRC),
                                                    ("fast", Status.CRC)])
def test_only_the_full_boot_checks_read_the_crc_field(boot_check: str, status: Status,
                                                      tmp_path: Path) -> None:
    """A wrong CRC field: the full checks refuse the module, the layout check never reads
    the field (the weights are trusted as flashed) and runs it exactly."""
    target = _bench().fuzz_target("dense_int8", "cortex-m4", tmp_path, boot_check)
    outcome = target.run(Case(CRC_FIELD_OFFSET, 0x12345678))
    assert outcome.passed and outcome.expected == status, outcome.detail


def test_the_layout_check_still_catches_a_corrupted_layout(tmp_path: Path) -> None:
    """A flipped bit of the constant table (after the pinned commands, before the pool)
    with the header's CRC left stale: the layout CRC refuses it in every variant."""
    target = _bench().fuzz_target("dense_int8", "cortex-m4", tmp_path, "layout")
    contract = target.contract
    at = len(contract.pinned) + CRC_START  # the first byte after the command list
    assert at < contract.pool_offset
    bad = bytearray(target.module)
    bad[at] ^= 1
    patched = tmp_path / "patched.elf"
    patched.write_bytes(target.image[:target.offset] + bytes(bad)
                        + target.image[target.offset + len(bad):])
    patched.chmod(0o755)
    run = run_image(target.board, patched, target.inputs, count_instructions=False)
    assert run.exit_code == Status.IMAGE
