"""Fixtures for flashing tests: a linked image per board (the link test doubles: no
model needed to flash), fake flashing tools on PATH that record their arguments, and a
fake UF2 drive."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.link import link_firmware
from toolchain.pipeline import STAMP_FILE, flash_record
from toolchain.target import load_board

DOUBLES = Path(__file__).resolve().parents[1] / "link" / "doubles"


@pytest.fixture(scope="session")
def double_build(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``double_build(board)``: a build directory (firmware.elf/.bin/.hex/.uf2/.ld) for
    the board, linked once per session."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            board = load_board(name)
            out = tmp_path_factory.mktemp(f"flash-{name}") / "fw"
            link_firmware(board, [], out, runtime_parts=("platform", "harness"),
                          extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
                          extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
            # What minirt-build records and minirt-flash checks the files against.
            (out / STAMP_FILE).write_text(json.dumps({"flash": flash_record(out, board)}))
            cache[name] = out
        return cache[name]

    return get


# A fake openocd: records its arguments; FAKE_MODE picks what the "device" does.
FAKE_OPENOCD = """\
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["openocd", *sys.argv[1:]]) + "\\n")
mode = os.environ.get("FAKE_MODE", "ok")
print("Open On-Chip Debugger 0.12.0 (fake)")
if mode == "noprobe":
    print("Error: open failed"); sys.exit(1)
print("** Programming Started **")
if mode == "badverify":
    print("Error: checksum mismatch - attempting binary compare"); sys.exit(1)
print("** Programming Finished **")
if mode != "silent":
    print("** Verified OK **")
"""

# A fake dfu-util: -D stores the file as the device's flash, -U reads it back.
FAKE_DFU = """\
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["dfu-util", *args]) + "\\n")
mode = os.environ.get("FAKE_MODE", "ok")
flash = os.path.join(os.path.dirname(os.environ["FAKE_LOG"]), "device-flash.bin")
if mode == "nodevice":
    print("dfu-util: No DFU capable USB device available"); sys.exit(74)
if "-D" in args:
    shutil.copyfile(args[args.index("-D") + 1], flash)
    print("Download\\t[=========================] 100%")
if "-U" in args:
    data = bytearray(open(flash, "rb").read())
    if mode == "corrupt":
        data[9] ^= 0xFF
    open(args[args.index("-U") + 1], "wb").write(data)
    print("Upload\\t[=========================] 100%")
"""


@pytest.fixture
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake openocd and dfu-util first on PATH (before the real ones, if installed);
    returns the log of their calls (one JSON argument list a line)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("openocd", FAKE_OPENOCD), ("dfu-util", FAKE_DFU)):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        tool.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    log.write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    monkeypatch.setenv("FAKE_LOG", str(log))
    return log


INFO_FEATHER = "UF2 Bootloader v3.14.0 SFHWRO\nModel: Adafruit Feather M4 Express\n" \
               "Board-ID: SAMD51J19A-Feather-M4-v0\n"


@pytest.fixture
def uf2_drive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """``uf2_drive(name, info=...)``: a folder that looks like a mounted UF2 bootloader
    drive, in a folder searched through MINIRT_UF2_MOUNTS (empty until called)."""
    media = tmp_path / "media"
    media.mkdir()
    monkeypatch.setenv("MINIRT_UF2_MOUNTS", str(media))

    def make(name: str, info: str = INFO_FEATHER) -> Path:
        drive = media / name
        drive.mkdir()
        (drive / "INFO_UF2.TXT").write_text(info)
        (drive / "INDEX.HTM").write_text("<html></html>")
        return drive

    return make
