"""Each flash method against fakes: OpenOCD and dfu-util as recording scripts on PATH,
pyOCD as stand-in modules of its Python API, a UF2 drive as a folder with a fake
bootloader. What runs is printed exactly, writes are verified, and a missing tool,
probe or drive is one line saying what to install or plug in (exit 2)."""

from __future__ import annotations

import json
import re
import shlex
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from toolchain.cli import flash as flash_cli
from toolchain.link.images import LoadChunk, flash_chunks, read_intel_hex, read_uf2
from toolchain.pipeline import STAMP_FILE, flash_record
from toolchain.target import load_board

Build = Callable[[str], Path]


def _flash(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    rc = flash_cli.main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("minirt-flash: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _elf_chunks(build: Path, board: str) -> list[LoadChunk]:
    b = load_board(board)
    return flash_chunks(build / "firmware.elf", b.flash.origin, b.flash.end)


# --------------------------------------------------------------------------- OpenOCD


def test_openocd_programs_and_verifies(double_build: Build, fake_tools: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    build = double_build("nucleo-l4r5zi")
    rc, out, err = _flash(capsys, "--board", "nucleo-l4r5zi", str(build))
    assert rc == 0, err
    hex_path = build / "firmware.hex"
    (call,) = _calls(fake_tools)
    # The verified bytes, staged under a plain name (OpenOCD's program re-reads its
    # argument as Tcl): only the temporary folder's random part is unknown here.
    staged = call[-1].split('"')[1]
    assert re.fullmatch(r"program \"[A-Za-z0-9_./-]+/firmware.hex\" verify reset exit", call[-1])
    expected = ["openocd", "-f", "board/st_nucleo_l4.cfg",
                "-c", f'program "{staged}" verify reset exit']
    assert call == expected
    assert f"$ cp -- {hex_path} {staged}" in out
    # Printed exactly as run (the tool by its full path).
    assert f"$ {shlex.join([str(fake_tools.parent / 'bin' / 'openocd'), *expected[1:]])}" in out
    assert "** Verified OK **" in err and "done: OpenOCD read the flash back" in err


def test_openocd_probe_goes_before_the_configuration(double_build: Build, fake_tools: Path,
                                                     capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = _flash(capsys, "--board", "hifive1", str(double_build("hifive1")),
                        "--probe", "FT2232-1")
    assert rc == 0, err
    (call,) = _calls(fake_tools)
    assert call[1:5] == ["-c", "adapter serial \"FT2232-1\"", "-f", "board/sifive-hifive1.cfg"]


@pytest.mark.parametrize(("mode", "rc", "message"), [
    ("noprobe", 2, "OpenOCD found no debug probe: plug in the board's debug USB port"),
    ("badverify", 1, "openocd exited with status 1: "),
    ("silent", 1, "without reporting '** Verified OK **'"),
])
def test_openocd_failures(mode: str, rc: int, message: str, double_build: Build,
                          fake_tools: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAKE_MODE", mode)
    got, _, err = _flash(capsys, "--board", "nucleo-l4r5zi", str(double_build("nucleo-l4r5zi")))
    assert got == rc
    assert message in _one_error(err)


def test_missing_tools_say_what_to_install(double_build: Build, tmp_path: Path, monkeypatch,
                                           capsys) -> None:  # type: ignore[no-untyped-def]
    nucleo, netduino = double_build("nucleo-l4r5zi"), double_build("netduinoplus2")
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    rc, _, err = _flash(capsys, "--board", "nucleo-l4r5zi", str(nucleo))
    assert rc == 2
    assert _one_error(err) == ("minirt-flash: error: openocd not found on PATH: install the "
                               "Debian package 'openocd' (apt-get install openocd)")
    rc, _, err = _flash(capsys, "--board", "netduinoplus2", "--method", "dfu", str(netduino))
    assert rc == 2 and "dfu-util not found on PATH: install the Debian package 'dfu-util'" in err


# --------------------------------------------------------------------------- DFU


def test_dfu_downloads_reads_back_and_leaves(double_build: Build, fake_tools: Path,
                                             capsys) -> None:  # type: ignore[no-untyped-def]
    build = double_build("netduinoplus2")
    rc, out, err = _flash(capsys, "--board", "netduinoplus2", "--method", "dfu", str(build),
                          "--probe", "3276")
    assert rc == 0, err
    blob = (build / "firmware.bin").read_bytes()
    down, up = _calls(fake_tools)
    device = ["-d", "0483:df11", "-a", "0", "-S", "3276"]
    assert down == ["dfu-util", *device, "-s", "0x08000000", "-D", str(build / "firmware.bin")]
    assert up[:10] == ["dfu-util", *device, "-s", f"0x08000000:{len(blob)}:leave", "-U"]
    assert (fake_tools.parent / "device-flash.bin").read_bytes() == blob
    assert out.count("$ ") == 2 and "Download" in err
    assert f"done: read back over DFU: {len(blob)} bytes equal to firmware.bin" in err


@pytest.mark.parametrize(("mode", "rc", "message"), [
    ("nodevice", 2, "no DFU device 0483:df11 found: start the board's bootloader in DFU mode"),
    ("corrupt", 1, "differs from firmware.bin at 0x08000009"),
])
def test_dfu_failures(mode: str, rc: int, message: str, double_build: Build, fake_tools: Path,
                      monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAKE_MODE", mode)
    got, _, err = _flash(capsys, "--board", "netduinoplus2", "--method", "dfu",
                         str(double_build("netduinoplus2")))
    assert got == rc and message in _one_error(err)


# --------------------------------------------------------------------------- pyOCD


class FakePyocd:
    """Stand-ins for the pieces of pyOCD's API minirt-flash calls, with a memory that
    FileProgrammer writes and read_memory_block8 reads."""

    class Error(Exception):
        pass

    class TargetSupportError(Error):
        pass

    def __init__(self, probes: list[str], unknown_target: bool = False,
                 corrupt: bool = False) -> None:
        self.probes, self.unknown_target, self.corrupt = probes, unknown_target, corrupt
        self.memory: dict[int, int] = {}
        self.calls: list[tuple] = []

    def modules(self) -> dict[str, types.ModuleType]:
        fake = self
        probe_type = type("Probe", (), {})

        def get_all_connected_probes(blocking=True, unique_id=None, print_wait_message=True):  # type: ignore[no-untyped-def]
            fake.calls.append(("probes", blocking, unique_id))
            found = []
            for uid in fake.probes:
                if unique_id is None or unique_id.lower() in uid.lower():
                    p = probe_type()
                    p.unique_id, p.description = uid, "fake CMSIS-DAP"
                    found.append(p)
            return found

        class Target:
            def read_memory_block8(self, addr: int, size: int) -> list[int]:
                data = [fake.memory.get(addr + i, 0xFF) for i in range(size)]
                if fake.corrupt:
                    data[-1] ^= 1
                return data

            def reset(self) -> None:
                fake.calls.append(("reset",))

        class Session:
            def __init__(self, probe, **options) -> None:  # type: ignore[no-untyped-def]
                fake.calls.append(("session", probe.unique_id, options))
                self.target = Target()

            def __enter__(self):  # type: ignore[no-untyped-def]
                if fake.unknown_target:
                    raise fake.TargetSupportError("Target type stm32l4r5zitx not recognized")
                return self

            def __exit__(self, *exc) -> None:  # type: ignore[no-untyped-def]
                fake.calls.append(("close",))

        class FileProgrammer:
            def __init__(self, session, progress=None, no_reset=None) -> None:  # type: ignore[no-untyped-def]
                self.progress, self.no_reset = progress, no_reset

            def program(self, path: str, file_format: str | None = None) -> None:
                fake.calls.append(("program", path, file_format, self.no_reset))
                chunks, _ = read_intel_hex(Path(path).read_text())
                for n, chunk in enumerate(chunks, 1):
                    for i, b in enumerate(chunk.data):
                        fake.memory[chunk.address + i] = b
                    self.progress(n / len(chunks))

        helpers = types.ModuleType("pyocd.core.helpers")
        helpers.ConnectHelper = type("ConnectHelper", (), {  # type: ignore[attr-defined]
            "get_all_connected_probes": staticmethod(get_all_connected_probes)})
        session = types.ModuleType("pyocd.core.session")
        session.Session = Session  # type: ignore[attr-defined]
        programmer = types.ModuleType("pyocd.flash.file_programmer")
        programmer.FileProgrammer = FileProgrammer  # type: ignore[attr-defined]
        errors = types.ModuleType("pyocd.core.exceptions")
        errors.Error, errors.TargetSupportError = self.Error, self.TargetSupportError  # type: ignore[attr-defined]
        return {"pyocd.core.helpers": helpers, "pyocd.core.session": session,
                "pyocd.flash.file_programmer": programmer, "pyocd.core.exceptions": errors}


def _fake_pyocd(monkeypatch, **kw) -> FakePyocd:  # type: ignore[no-untyped-def]
    fake = FakePyocd(**kw)
    for name, module in fake.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    return fake


def test_pyocd_programs_reads_back_and_resets(double_build: Build, monkeypatch,
                                              capsys) -> None:  # type: ignore[no-untyped-def]
    fake = _fake_pyocd(monkeypatch, probes=["0240000032044e45"])
    build = double_build("nrf52840dk")
    rc, out, err = _flash(capsys, "--board", "nrf52840dk", str(build))
    assert rc == 0, err
    assert fake.calls[0] == ("probes", False, None)
    assert fake.calls[1] == ("session", "0240000032044e45", {"target_override": "nrf52840"})
    assert fake.calls[2] == ("program", str(build / "firmware.hex"), "hex", True)
    assert fake.calls[-2:] == [("reset",), ("close",)]
    for chunk in _elf_chunks(build, "nrf52840dk"):
        assert bytes(fake.memory[chunk.address + i] for i in range(len(chunk.data))) == chunk.data
    assert out.count("> pyocd: ") == 3 and "writing: 100%" in err
    assert "done: pyOCD read the flash back" in err


@pytest.mark.parametrize(("kw", "argv", "rc", "message"), [
    ({"probes": []}, [], 2, "pyOCD found no debug probe: plug in the board's debug USB port"),
    ({"probes": ["A1", "B2"]}, [], 2, "pyOCD sees 2 debug probes (A1, B2): choose one with "
                                      "--probe ID"),
    ({"probes": ["A1", "B2"]}, ["--probe", "C3"], 2, "no debug probe with unique ID "
                                                     "containing 'C3'"),
    ({"probes": ["A1"], "corrupt": True}, [], 1, "pyOCD read back"),
])
def test_pyocd_failures(kw: dict, argv: list[str], rc: int, message: str,
                        double_build: Build, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    _fake_pyocd(monkeypatch, **kw)
    got, _, err = _flash(capsys, "--board", "nrf52840dk", str(double_build("nrf52840dk")),
                         *argv)
    assert got == rc and message in _one_error(err)


def test_pyocd_probe_choice_and_missing_pack(double_build: Build, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    fake = _fake_pyocd(monkeypatch, probes=["A1", "B2"])
    rc, _, err = _flash(capsys, "--board", "nrf52840dk", str(double_build("nrf52840dk")),
                        "--probe", "b2")
    assert rc == 0 and fake.calls[1][1] == "B2", err
    _fake_pyocd(monkeypatch, probes=["A1"], unknown_target=True)
    rc, _, err = _flash(capsys, "--board", "nucleo-l4r5zi", "--method", "pyocd",
                        str(double_build("nucleo-l4r5zi")))
    assert rc == 2
    assert "install its CMSIS pack with `pyocd pack install stm32l4r5zitx`" in _one_error(err)


def test_pyocd_not_installed(double_build: Build, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "pyocd.core.helpers", None)  # import fails
    rc, _, err = _flash(capsys, "--board", "nrf52840dk", str(double_build("nrf52840dk")))
    assert rc == 2
    assert _one_error(err) == ("minirt-flash: error: pyOCD is not installed: pip install "
                               "'minirt[flash]' (pyOCD), or pick another --method")


def test_real_pyocd_without_a_probe(double_build: Build, capsys) -> None:  # type: ignore[no-untyped-def]
    """With the flash extra installed and no probe attached, pyOCD's own probe search
    comes back empty and the message says what to plug in."""
    pytest.importorskip("pyocd.core.helpers", reason="pyOCD (the flash extra) not installed")
    rc, _, err = _flash(capsys, "--board", "nrf52840dk", str(double_build("nrf52840dk")))
    if rc == 0:
        pytest.skip("a real debug probe is attached")
    assert rc == 2 and "pyOCD found no debug probe" in _one_error(err)


# --------------------------------------------------------------------------- UF2


def _bootloader(drive: Path, family: int, got: list) -> threading.Thread:  # type: ignore[type-arg]
    """A fake UF2 bootloader: waits for a complete .uf2 of its family, keeps its blocks
    and leaves (its drive goes away)."""
    def serve() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for f in drive.glob("*.uf2"):
                data = f.read_bytes()
                try:
                    chunks, fam = read_uf2(data)
                except ValueError:
                    continue  # still being written
                if fam == family:
                    got.extend(chunks)
                    (drive / "INFO_UF2.TXT").unlink()
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_uf2_copy_is_taken_by_the_bootloader(double_build: Build, uf2_drive,
                                             capsys) -> None:  # type: ignore[no-untyped-def]
    build = double_build("feather-m4-express")
    drive = uf2_drive("FEATHERBOOT")
    got: list[LoadChunk] = []
    thread = _bootloader(drive, 0x55114460, got)
    rc, out, err = _flash(capsys, "--board", "feather-m4-express", str(build))
    thread.join(5)
    assert rc == 0, err
    assert f"$ cp -- {build / 'firmware.uf2'} {drive / 'firmware.uf2'}" in out
    assert "copying: 100%" in err and "done: the bootloader took all" in err
    from toolchain.link.images import image_matches
    assert image_matches(got, _elf_chunks(build, "feather-m4-express")) == []


def test_uf2_drive_errors(double_build: Build, uf2_drive, capsys) -> None:  # type: ignore[no-untyped-def]
    build = str(double_build("feather-m4-express"))
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", build)
    assert rc == 2
    assert "no UF2 drive of a SAMD51J19A board is mounted: double-press the board's RESET " \
           "button so FEATHERBOOT appears" in _one_error(err)
    uf2_drive("RPI-RP2", "UF2 Bootloader v3.0\nModel: Raspberry Pi RP2\n"
                                      "Board-ID: RPI-RP2\n")
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", build)
    assert rc == 2 and "UF2 drives of other boards: " in err and "(Board-ID: RPI-RP2)" in err
    uf2_drive("FEATHERBOOT")
    uf2_drive("FEATHERBOOT2")
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", build)
    assert rc == 2 and "2 UF2 drives of a SAMD51J19A board are mounted" in _one_error(err)


def test_uf2_probe_picks_the_drive_and_a_stuck_drive_fails(double_build: Build,
                                                           uf2_drive, monkeypatch,
                                                           capsys) -> None:  # type: ignore[no-untyped-def]
    build = str(double_build("feather-m4-express"))
    uf2_drive("FEATHERBOOT")
    second = uf2_drive("FEATHERBOOT2")
    got: list[LoadChunk] = []
    thread = _bootloader(second, 0x55114460, got)
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", build, "--probe", "FEATHERBOOT2")
    thread.join(5)
    assert rc == 0 and got, err
    # A bootloader that does not take the image keeps its drive: exit 1.
    monkeypatch.setenv("MINIRT_UF2_TIMEOUT", "0.2")
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", build, "--probe", "FEATHERBOOT")
    assert rc == 1 and "is still mounted 0.2 s after the copy" in _one_error(err)


# --------------------------------------------------------------------------- checks


def test_a_file_that_is_not_the_elf_is_not_flashed(double_build: Build, fake_tools: Path,
                                                   tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from toolchain.link.images import intel_hex

    build = tmp_path / "fw"
    shutil.copytree(double_build("nucleo-l4r5zi"), build)
    chunks, entry = read_intel_hex((build / "firmware.hex").read_text())
    data = bytearray(chunks[0].data)
    data[100] ^= 0xFF  # a well-formed HEX file with one byte changed
    (build / "firmware.hex").write_text(intel_hex([LoadChunk(chunks[0].address, bytes(data)),
                                                   *chunks[1:]], entry))
    rc, _, err = _flash(capsys, "--board", "nucleo-l4r5zi", str(build))
    assert rc == 2 and _calls(fake_tools) == []
    assert "firmware.hex is not the file minirt-build wrote" in _one_error(err)
    # Even with a build record edited to match, the image must carry the ELF's bytes.
    record = {"flash": flash_record(build, load_board("nucleo-l4r5zi"))}
    (build / STAMP_FILE).write_text(json.dumps(record))
    rc, _, err = _flash(capsys, "--board", "nucleo-l4r5zi", str(build))
    assert rc == 2 and _calls(fake_tools) == []
    assert "firmware.hex does not carry what firmware.elf loads" in _one_error(err)
