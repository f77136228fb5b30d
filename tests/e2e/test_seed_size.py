"""The seed firmware for cortex-m4 fits in 1,024 bytes of flash and still checks.

Issue 10, point 6: `minirt-build --board cortex-m4 examples/seed.mlir` at most 1,024 B
of flash (the file bytes of the ELF's loadable segments, what a flasher writes), with
`minirt-run --check` passing under QEMU. A byte count of a deterministic build: exact.
bench/seed_size.py records the before/after per component.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.cli import run as run_cli
from toolchain.report.size import size_report_from_files
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
LIMIT = 1024


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The seed built and run with --check on cortex-m4: its build directory and the
    run's output."""
    out = tmp_path_factory.mktemp("seed") / "fw"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = run_cli.main([str(SEED), "--board", "cortex-m4", "--check", "-o", str(out)])
    assert rc == 0, buf.getvalue()
    return out, buf.getvalue()


def test_the_seed_checks_under_qemu(checked: tuple[Path, str]) -> None:
    _, output = checked
    assert "check: outputs match the reference" in output


def test_the_seed_fits_in_1k_of_flash(checked: tuple[Path, str]) -> None:
    out, _ = checked
    with (out / "firmware.elf").open("rb") as f:
        loadable = sum(s["p_filesz"] for s in ELFFile(f).iter_segments()
                       if s["p_type"] == "PT_LOAD")
    report = size_report_from_files(out / "firmware.elf", out / "firmware.map",
                                    load_board("cortex-m4"))
    # The size table accounts for every one of those bytes, component by component.
    assert report.flash_total == loadable == sum(report.flash.values())
    assert loadable <= LIMIT, f"the seed image is {loadable} B of flash:\n" + \
        report.format_table(symbols=20)
