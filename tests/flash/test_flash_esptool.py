"""minirt-flash's esptool method (ESP32-C3 / C6) against a recording fake esptool on
PATH: --dry-run prints the command with no tool installed, the image is written at the
ROM loader's offset with the chip, port and baud rate asked for, esptool's MD5 check is
what verifies it, and bad options, a missing board and an image that is not the build's
are one line (exit 2)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.cli import flash as flash_cli
from toolchain.flash import esp_serial
from toolchain.link.esp_image import esp_image, load_segments
from toolchain.pipeline import STAMP_FILE, flash_record
from toolchain.target import load_board

Build = Callable[[str], Path]
C3, C6 = "esp32c3-devkitm-1", "esp32c6-devkitc-1"

FAKE_ESPTOOL = """\
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["esptool", *sys.argv[1:]]) + "\\n")
mode = os.environ.get("FAKE_MODE", "ok")
print("esptool v5 (fake)")
if mode == "nodevice":
    print("A fatal error occurred: Could not open /dev/ttyUSB9, the port is busy or doesn't "
          "exist."); sys.exit(2)
if mode == "fail":
    print("A fatal error occurred: Packet content transfer stopped"); sys.exit(1)
print("Wrote 3776 bytes (2011 compressed) at 0x00000000 in 0.2 seconds")
if mode != "silent":
    print("Hash of data verified.")
"""


@pytest.fixture
def fake_esptool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake esptool first on PATH; returns the log of its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "esptool"
    tool.write_text(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_ESPTOOL))
    tool.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    log.write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    monkeypatch.setenv("FAKE_LOG", str(log))
    return log


def _flash(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    rc = flash_cli.main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("minirt-flash: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("board", "chip"), [(C3, "esp32c3"), (C6, "esp32c6")])
@pytest.mark.parametrize("options", [[], ["--port", "/dev/ttyACM0", "--baud", "921600"]])
def test_dry_run_prints_the_esptool_command(board: str, chip: str, options: list[str],
                                            double_build: Build, tmp_path: Path, monkeypatch,
                                            capsys) -> None:  # type: ignore[no-untyped-def]
    build = double_build(board)
    monkeypatch.setenv("PATH", str(tmp_path))  # no esptool needed to say what would run
    rc, out, err = _flash(capsys, "--board", board, str(build), "--dry-run", *options)
    assert rc == 0, err
    write = esp_serial._write_command()  # write-flash (esptool 5) or write_flash (4)
    assert out.splitlines() == [f"$ esptool --chip {chip} {' '.join(options)} {write} 0x0 "
                                f"{build}/firmware.esp.bin".replace("  ", " ")]
    assert f"minirt-flash: {load_board(board).name} with esptool: " in err


def test_writes_at_the_rom_offset_and_reports_the_md5_check(double_build: Build,
                                                            fake_esptool: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    build = double_build(C3)
    rc, out, err = _flash(capsys, "--board", C3, str(build), "--port", "/dev/ttyACM0")
    assert rc == 0, err
    (call,) = [json.loads(line) for line in fake_esptool.read_text().splitlines()]
    assert call == ["esptool", "--chip", "esp32c3", "--port", "/dev/ttyACM0",
                    esp_serial._write_command(), "0x0", str(build / "firmware.esp.bin")]
    size = (build / "firmware.esp.bin").stat().st_size
    assert out.startswith("$ ") and "Hash of data verified." in err
    assert (f"minirt-flash: done: esptool read back the MD5 of {size} bytes at 0x0: equal to "
            "firmware.esp.bin") in err


@pytest.mark.parametrize(("mode", "rc", "message"), [
    ("nodevice", 2, "no ESP32-C6 answered on /dev/ttyUSB9: plug in the board's USB port; if "
                    "it still does not answer, hold BOOT while pressing RESET"),
    ("fail", 1, "esptool exited with status 1: "),
    ("silent", 1, "esptool did not report the flash's MD5 as equal to the image's"),
])
def test_failures(mode: str, rc: int, message: str, double_build: Build, fake_esptool: Path,
                  monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAKE_MODE", mode)
    got, _, err = _flash(capsys, "--board", C6, str(double_build(C6)), "--port", "/dev/ttyUSB9")
    assert got == rc
    assert message in _one_error(err)


def test_missing_esptool_says_what_to_install(double_build: Build, tmp_path: Path, monkeypatch,
                                              capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # none beside it either
    rc, _, err = _flash(capsys, "--board", C3, str(double_build(C3)))
    assert rc == 2
    assert "esptool not found on PATH: install esptool (pip install" in _one_error(err)


@pytest.mark.parametrize(("argv", "message"), [
    (["--board", "nrf52840dk", "{nrf}", "--port", "/dev/ttyACM0"],
     "--port and --baud are esptool's options; board nrf52840dk is flashed here with pyocd"),
    (["--board", C3, "{c3}", "--probe", "066DFF"],
     "--probe names a debug probe or UF2 drive; esptool talks over a serial port: give --port"),
    (["--board", C3, "{c3}", "--baud", "0"], "argument --baud"),
    (["--board", C3, "{c3}", "--baud", "fast"], "argument --baud"),
    (["--board", C3, "{c3}", "--method", "openocd"],
     f"board {C3} is not flashed with openocd (its methods: esptool, qemu)"),
    (["--board", C6, "{c3}"], f"was built for board '{C3}', not '{C6}'"),
])
def test_bad_options_are_one_line(argv: list[str], message: str, double_build: Build,
                                  capsys) -> None:  # type: ignore[no-untyped-def]
    paths = {"c3": double_build(C3), "nrf": double_build("nrf52840dk")}
    rc, out, err = _flash(capsys, *[a.format(**paths) for a in argv])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in _one_error(err), err


def _copy(build: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "fw"
    shutil.copytree(build, copy)
    return copy


def _rerecord(copy: Path, board: str) -> None:
    """build.json made to vouch for the files as they now are (a forged record)."""
    (copy / STAMP_FILE).write_text(json.dumps({"flash": flash_record(copy, load_board(board))}))


def test_an_image_that_is_not_the_builds_is_refused(double_build: Build, tmp_path: Path,
                                                    capsys) -> None:  # type: ignore[no-untyped-def]
    copy = _copy(double_build(C3), tmp_path)
    image = copy / "firmware.esp.bin"
    data = bytearray(image.read_bytes())
    data[40] ^= 0xFF
    image.write_bytes(data)
    rc, _, err = _flash(capsys, "--board", C3, str(copy), "--dry-run")
    assert rc == 2 and "is not the file minirt-build wrote" in _one_error(err)
    # Recorded, but no longer a valid image: the checksum says so.
    _rerecord(copy, C3)
    rc, _, err = _flash(capsys, "--board", C3, str(copy), "--dry-run")
    assert rc == 2 and "firmware.esp.bin: ESP image: checksum" in _one_error(err)


def test_a_valid_image_of_other_bytes_or_chip_is_refused(double_build: Build, tmp_path: Path,
                                                         capsys) -> None:  # type: ignore[no-untyped-def]
    copy = _copy(double_build(C3), tmp_path)
    segments = load_segments(copy / "firmware.elf")
    entry = segments[-1].address
    image = copy / "firmware.esp.bin"
    image.write_bytes(esp_image(segments, entry, "esp32c6", "4MB"))
    _rerecord(copy, C3)
    rc, _, err = _flash(capsys, "--board", C3, str(copy), "--dry-run")
    assert rc == 2 and "an image for ESP chip ID 13, the board's chip has ID 5" in _one_error(err)
    segments[0] = type(segments[0])(segments[0].address, b"\0" * len(segments[0].data))
    image.write_bytes(esp_image(segments, entry, "esp32c3", "4MB"))
    _rerecord(copy, C3)
    rc, _, err = _flash(capsys, "--board", C3, str(copy), "--dry-run")
    assert rc == 2 and "does not carry what firmware.elf loads" in _one_error(err)
