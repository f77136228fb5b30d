"""minirt-flash flashes what was built: every file it reads must have the hash the build
record (build.json) gives it, the board is the one the record names, and only regular
files inside the build directory are read, without blocking on a FIFO."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.cli import flash as flash_cli
from toolchain.link.images import flash_chunks, intel_hex
from toolchain.pipeline import STAMP_FILE, flash_record
from toolchain.target import load_board

Build = Callable[[str], Path]
BOARD = "nucleo-l4r5zi"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def build(double_build: Build, tmp_path: Path) -> Path:
    """A copy of the board's build that a test may spoil."""
    copy = tmp_path / "fw"
    shutil.copytree(double_build(BOARD), copy)
    return copy


def _error(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    """The one error line of a refused minirt-flash (exit 2, nothing on stdout)."""
    rc = flash_cli.main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("minirt-flash: error: "), err
    return err


def _rerecord(build: Path) -> None:
    """The build record rewritten to vouch for the files as they are now."""
    (build / STAMP_FILE).write_text(json.dumps({"flash": flash_record(build, load_board(BOARD))}))


def test_a_replaced_elf_with_regenerated_images_is_refused(build: Path, fake_tools: Path,
                                                           capsys) -> None:  # type: ignore[no-untyped-def]
    board = load_board(BOARD)
    elf = bytearray((build / "firmware.elf").read_bytes())
    code = flash_chunks(build / "firmware.elf", board.flash.origin, board.flash.end)[0].data
    at = bytes(elf).index(code[:64]) + 200  # a byte of the flashed code, in the ELF file
    elf[at] ^= 0xFF
    (build / "firmware.elf").write_bytes(elf)
    chunks = flash_chunks(build / "firmware.elf", board.flash.origin, board.flash.end)
    (build / "firmware.hex").write_text(intel_hex(chunks))  # consistent with the new ELF
    err = _error(capsys, "--board", BOARD, str(build))
    assert f"{build}/firmware.elf is not the file minirt-build wrote" in err
    assert fake_tools.read_text() == ""
    # The replacement is consistent: only the record's hashes tell it from the build.
    _rerecord(build)
    assert flash_cli.main(["--board", BOARD, str(build)]) == 0


def test_an_edited_linker_script_does_not_retarget_the_build(build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    script = build / "firmware.ld"
    script.write_text(script.read_text().replace(f"for board '{BOARD}'", "for board 'nrf52840dk'"))
    err = _error(capsys, "--board", "nrf52840dk", str(build), "--dry-run")
    assert "was built for board 'nucleo-l4r5zi', not 'nrf52840dk'" in err
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert f"{script} is not the file minirt-build wrote" in err


def test_the_board_comes_from_the_build_record(build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    record = json.loads((build / STAMP_FILE).read_text())
    record["flash"]["board"] = "nrf52840dk"
    (build / STAMP_FILE).write_text(json.dumps(record))
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert "was built for board 'nrf52840dk', not 'nucleo-l4r5zi'" in err


@pytest.mark.parametrize(("text", "message"), [
    ("", "not a build record (Expecting value"),
    ('{"flash": {"board": 1' + "0" * 100000 + "}}", "not a build record (Exceeds the limit"),
    ("[" * 100000 + "]" * 100000, "not a build record ("),
    ('{"flash": {"board": "nucleo-l4r5zi", "files": [1]}}', "records no board and hashes"),
    ('{"stamp": {}}', "records no board and hashes"),
    ("[1, 2]", "records no board and hashes"),
])
def test_a_bad_build_record_is_one_line(text: str, message: str, build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (build / STAMP_FILE).write_text(text)
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert f"{build / STAMP_FILE}" in err and message in err


def test_a_build_without_a_record_is_refused(build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (build / STAMP_FILE).unlink()
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert f"{build}: no {STAMP_FILE}, the record of what the build wrote" in err


def test_a_file_missing_from_the_record_is_refused(build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    record = json.loads((build / STAMP_FILE).read_text())
    del record["flash"]["files"]["firmware.hex"]
    (build / STAMP_FILE).write_text(json.dumps(record))
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert f"{build}/firmware.hex: not in the build record" in err


def test_a_symlink_leading_outside_is_refused(build: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "elsewhere.hex"
    shutil.copyfile(build / "firmware.hex", outside)  # the very bytes: only the link is wrong
    (build / "firmware.hex").unlink()
    (build / "firmware.hex").symlink_to(outside)
    err = _error(capsys, "--board", BOARD, str(build), "--dry-run")
    assert f"{build}/firmware.hex leads to {outside}, outside the build directory" in err


def test_a_symlink_inside_the_build_is_followed(build: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (build / "firmware.hex").rename(build / "copy.hex")
    (build / "firmware.hex").symlink_to("copy.hex")
    assert flash_cli.main(["--board", BOARD, str(build), "--dry-run"]) == 0


@pytest.mark.parametrize("name", ["firmware.ld", STAMP_FILE, "firmware.hex", "firmware.elf"])
def test_a_fifo_is_refused_without_waiting(name: str, build: Path) -> None:
    """In a subprocess with a timeout: a FIFO opened for reading blocks until a writer
    comes, so without the check this test would hang, not fail."""
    (build / name).unlink()
    os.mkfifo(build / name)
    proc = subprocess.run([sys.executable, "-m", "toolchain.cli.flash", "--board", BOARD,
                           str(build), "--dry-run"], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr == (f"minirt-flash: error: {build / name} is a FIFO, not a file "
                           "minirt-build wrote: refusing to read it\n")
