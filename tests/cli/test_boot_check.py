"""--boot-check: what the runtime checks at boot is the user's choice. The default,
'layout', checks the structure and the CRC of everything but the weights with the
table-less loop; 'small' adds the whole CRC bit by bit, 'fast' by slicing-by-4 with 4 KB
of tables (docs/module-format.md, "The boot check")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.cli import build, run

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed.mlir"
TABLES = 4096


def _rodata_bytes(elf: Path) -> int:
    with elf.open("rb") as f:
        return sum(s.data_size for s in ELFFile(f).iter_sections()
                   if s.name.startswith(".rodata"))


@pytest.mark.parametrize("board", ["cortex-m4", "riscv32"])
def test_fast_links_the_tables_and_checks_the_same_module(board: str, tmp_path: Path,
                                                           capsys) -> None:
    small, fast = tmp_path / "small", tmp_path / "fast"
    assert build.main(["--board", board, str(SEED), "-o", str(small),
                       "--boot-check", "small"]) == 0
    assert build.main(["--board", board, str(SEED), "-o", str(fast),
                       "--boot-check", "fast"]) == 0
    assert (small / "model.mrt").read_bytes() == (fast / "model.mrt").read_bytes()
    grown = _rodata_bytes(fast / "firmware.elf") - _rodata_bytes(small / "firmware.elf")
    assert grown >= TABLES
    assert json.loads((fast / "build.json").read_text())["stamp"]["boot_check"] == "fast"
    assert json.loads((small / "build.json").read_text())["stamp"]["boot_check"] == "small"
    # The fast check accepts the module it was built with, and the result is right.
    capsys.readouterr()
    assert run.main(["--board", board, str(SEED), "-o", str(fast), "--boot-check", "fast",
                     "--check"]) == 0
    assert "building" not in capsys.readouterr().err  # the stamp matched: reused


def test_minirt_run_rebuilds_when_the_boot_check_changes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    assert run.main(["--board", "cortex-m4", str(SEED), "-o", str(out)]) == 0
    capsys.readouterr()
    assert run.main(["--board", "cortex-m4", str(SEED), "-o", str(out),
                     "--boot-check", "fast"]) == 0
    assert "building" in capsys.readouterr().err


def test_a_library_takes_no_boot_check(tmp_path: Path, capsys) -> None:
    rc = build.main(["--board", "cortex-m4", str(SEED), "-o", str(tmp_path / "lib"),
                     "--emit", "library", "--boot-check", "fast"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--boot-check" in err


KWS = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "kws_ref_model.tflite"


@pytest.mark.skipif(not KWS.exists(), reason=f"{KWS} is absent (../shared/models is not "
                    "beside this checkout)")
def test_the_default_boot_check_costs_at_most_5_percent_of_a_kws_inference(
        tmp_path: Path) -> None:
    """Issue 22's goal: the default boot check is at most 5 % of one kws_ref_model
    inference on cortex-m4 (the whole CRC bit by bit was 75 %)."""
    import minirt

    b = minirt.build(KWS, "cortex-m4", out_dir=tmp_path / "kws")
    assert "boot_check" not in json.loads((tmp_path / "kws" / "build.json").read_text())["stamp"]
    profile = b.profile()
    boot = sum(r.outside for r in profile.rows if r.name == "runtime")
    assert 0 < boot <= 0.05 * profile.total, (boot, profile.total)
