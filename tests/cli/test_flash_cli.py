"""minirt-flash as a user runs it: --dry-run prints the right command for every real
board and method with none of the tools installed; an emulated board is "flashed" into
QEMU from its .bin and the harness's verdict reported; bad input is one line, exit 2."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import pytest

from toolchain.cli import flash as flash_cli
from toolchain.cli.build import main as build_main
from toolchain.flash import methods_for
from toolchain.link import link_firmware
from toolchain.pipeline import STAMP_FILE, flash_record
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[2]
DOUBLES = REPO / "tests" / "link" / "doubles"
# Where OpenOCD's copy of the .hex goes (a plain name: its program command re-reads it).
STAGED = os.path.join(tempfile.gettempdir(), "minirt-openocd-XXXXXXXX", "firmware.hex")
REAL = ["nucleo-l4r5zi", "netduinoplus2", "nrf52840dk", "stm32f746g-disco",
        "feather-m4-express", "hifive1"]

# board -> method -> the commands --dry-run prints ({d} is the build directory). The
# OpenOCD configuration files are the ones Debian's openocd 0.12 ships.
DRY_RUN = {
    "nucleo-l4r5zi": {
        "openocd": ["$ cp -- {d}/firmware.hex {s}",
                    "$ openocd -f board/st_nucleo_l4.cfg -c 'program \"{s}\" verify reset "
                    "exit'"],
        "pyocd": ["> pyocd: ConnectHelper.get_all_connected_probes(blocking=False, "
                  "unique_id=None)",
                  "> pyocd: Session(probe, target_override='stm32l4r5zitx') -> "
                  "FileProgrammer(session, no_reset=True).program('{d}/firmware.hex', "
                  "file_format='hex')"],
    },
    "netduinoplus2": {
        "openocd": ["$ cp -- {d}/firmware.hex {s}",
                    "$ openocd -f interface/stlink.cfg -f target/stm32f4x.cfg -c 'program "
                    "\"{s}\" verify reset exit'"],
        "dfu": ["$ dfu-util -d 0483:df11 -a 0 -s 0x08000000 -D {d}/firmware.bin",
                "$ dfu-util -d 0483:df11 -a 0 -s 0x08000000:{size}:leave -U "
                "'<temporary folder>/readback.bin'"],
    },
    "nrf52840dk": {
        "pyocd": ["> pyocd: Session(probe, target_override='nrf52840') -> "
                  "FileProgrammer(session, no_reset=True).program('{d}/firmware.hex', "
                  "file_format='hex')"],
        "openocd": ["$ cp -- {d}/firmware.hex {s}",
                    "$ openocd -f board/nordic_nrf52_dk.cfg -c 'program \"{s}\" verify reset "
                    "exit'"],
    },
    "stm32f746g-disco": {
        "openocd": ["$ cp -- {d}/firmware.hex {s}",
                    "$ openocd -f board/stm32f746g-disco.cfg -c 'program "
                    "\"{s}\" verify reset exit'"],
    },
    "feather-m4-express": {
        "uf2": ["$ cp -- {d}/firmware.uf2 '<FEATHERBOOT>/firmware.uf2'",
                "> wait until <FEATHERBOOT>/INFO_UF2.TXT goes away (the bootloader took "
                "every block and reset into the image)"],
    },
    "hifive1": {
        "openocd": ["$ cp -- {d}/firmware.hex {s}",
                    "$ openocd -f board/sifive-hifive1.cfg -c 'program \"{s}\" verify reset "
                    "exit'"],
    },
}


@pytest.fixture(scope="module")
def doubles(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A linked image per board from the link test doubles (flashing needs no model)."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            board = load_board(name)
            out = tmp_path_factory.mktemp(name) / "fw"
            link_firmware(board, [], out, runtime_parts=("platform", "harness"),
                          extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
                          extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
            # What minirt-build records and minirt-flash checks the files against.
            (out / STAMP_FILE).write_text(json.dumps({"flash": flash_record(out, board)}))
            cache[name] = out
        return cache[name]

    return get


@pytest.fixture(scope="module")
def seed_build(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A minirt-build of the seed model per board (flashing into QEMU runs the model)."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = tmp_path_factory.mktemp(name) / "fw"
            assert build_main([str(REPO / "examples" / "seed.mlir"), "--board", name,
                               "-o", str(out)]) == 0
            cache[name] = out
        return cache[name]

    return get


def _flash(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    rc = flash_cli.main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize(("board", "method"),
                         [(b, m) for b, methods in DRY_RUN.items() for m in methods])
def test_dry_run_prints_the_command_without_any_tool(board: str, method: str, doubles,
                                                     tmp_path: Path, monkeypatch,
                                                     capsys) -> None:  # type: ignore[no-untyped-def]
    build = doubles(board)
    monkeypatch.setenv("PATH", str(tmp_path))  # no openocd, dfu-util, qemu or cp
    monkeypatch.setitem(sys.modules, "pyocd", None)  # and no pyOCD
    rc, out, err = _flash(capsys, "--board", board, "--method", method, str(build), "--dry-run")
    assert rc == 0, err
    size = (build / "firmware.bin").stat().st_size
    for line in DRY_RUN[board][method]:
        assert line.format(d=build, size=size, s=STAGED) in out.splitlines(), out
    assert f"minirt-flash: {load_board(board).name} with " in err


@pytest.mark.parametrize("board", REAL)
def test_every_real_board_has_a_default_method(board: str, doubles, capsys) -> None:  # type: ignore[no-untyped-def]
    names = methods_for(load_board(board))
    assert names[0] == next(iter(DRY_RUN[board]))
    assert set(DRY_RUN[board]) | {"qemu"} == set(names)
    rc, out, _ = _flash(capsys, "--board", board, str(doubles(board)), "--dry-run")
    assert rc == 0 and out.strip()


def test_dry_run_names_the_probe(doubles, capsys) -> None:  # type: ignore[no-untyped-def]
    build = doubles("netduinoplus2")
    rc, out, _ = _flash(capsys, "--board", "netduinoplus2", str(build), "--dry-run",
                        "--probe", "066DFF")
    assert rc == 0
    assert shlex.split(out.splitlines()[1])[1:6] == ["openocd", "-c", "adapter serial \"066DFF\"",
                                                    "-f", "interface/stlink.cfg"]


@pytest.mark.parametrize("board", ["cortex-m4", "nucleo-l4r5zi"])
def test_flashing_an_emulated_board_boots_the_bin(board: str, seed_build, capsys) -> None:  # type: ignore[no-untyped-def]
    """cortex-m4 has no flash method: QEMU is its flash. nucleo-l4r5zi --method qemu
    boots the copy relinked for its sibling."""
    build = seed_build(board)
    argv = ["--board", board, str(build)] + (["--method", "qemu"] if board != "cortex-m4" else [])
    rc, out, err = _flash(capsys, *argv)
    assert rc == 0, err
    booted = build / ("verify/firmware.bin" if board == "nucleo-l4r5zi" else "firmware.bin")
    assert f"loader,file={booted},addr=0x0,force-raw=on" in out
    assert "-kernel" not in out
    assert "harness: exit 0 (ok)" in out
    assert "output_0: float32 [4, 4] [0. 0. 0." in out  # zero inputs: 0 * 0 + 0
    assert "instructions: " in out and "done: QEMU booted firmware.bin" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--board", "z80", "{cm4}"], "unknown board 'z80'"),
    (["--board", "nrf52840dk", "{cm4}"], "was built for board 'cortex-m4', not 'nrf52840dk' "
                                         "(rebuild with minirt-build --board nrf52840dk)"),
    (["--board", "cortex-m4", "{missing}"], "no such build directory (make one with "
                                            "minirt-build --board cortex-m4 MODEL -o"),
    (["--board", "cortex-m4", "{empty}"], "no firmware.elf: not a minirt build directory"),
    (["--board", "cortex-m4", "--method", "dfu", "{cm4}"],
     "board cortex-m4 is not flashed with dfu (its methods: qemu)"),
    (["--board", "x86-64", "{cm4}"], "board x86-64 runs images as Linux programs: there is "
                                     "nothing to flash"),
    (["--board", "cortex-m4", "--method", "jtag", "{cm4}"], "argument --method: invalid choice"),
    (["{cm4}"], "the following arguments are required: --board"),
])
def test_bad_input_is_one_line(argv: list[str], message: str, doubles, tmp_path: Path,
                               capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    paths = {"cm4": doubles("cortex-m4"), "missing": tmp_path / "nope",
             "empty": tmp_path / "empty"}
    rc, out, err = _flash(capsys, *[a.format(**paths) for a in argv])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("minirt-flash: error: "), err
    assert message in err, err


def test_uf2_of_another_family_is_refused(doubles, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from toolchain.link.images import flash_chunks, uf2_image

    build = tmp_path / "fw"
    shutil.copytree(doubles("feather-m4-express"), build)
    board = load_board("feather-m4-express")
    chunks = flash_chunks(build / "firmware.elf", board.flash.origin, board.flash.end)
    (build / "firmware.uf2").write_bytes(uf2_image(chunks, 0xE48BFF56))  # an RP2040's
    # With the build record edited to match: the family is checked on its own too.
    (build / STAMP_FILE).write_text(json.dumps({"flash": flash_record(build, board)}))
    rc, _, err = _flash(capsys, "--board", "feather-m4-express", str(build), "--dry-run")
    assert rc == 2
    assert "UF2 family 0xe48bff56, the board's bootloader takes 0x55114460" in err
