"""QEMU boots the files that are flashed, not the ELF: on every bare-metal board the
.bin (at its recorded base) and the .hex (at its records' addresses) give the same
outputs and the same instruction count as the ELF."""

from __future__ import annotations

import dataclasses
import shutil
import struct
from pathlib import Path

import pytest

from toolchain.emu.run import BootImage, EmuError, boot_image, qemu_command, run_image
from toolchain.link import LinkResult, link_firmware
from toolchain.link.build import VERIFY_DIR
from toolchain.target import Board, list_boards, load_board

DOUBLES = Path(__file__).resolve().parent / "doubles"
SYSTEM = [b for b in list_boards() if load_board(b).simulation.mode == "system"]


def _input(iterations: int) -> bytes:
    """What the image double reads: mode 0 (run), iterations, 8 data bytes."""
    return struct.pack("<II8s", 0, iterations, bytes(range(8)))


def _expected(iterations: int) -> bytes:
    acc = 12345
    for _ in range(iterations):
        acc = (acc * 1664525 + 1013904223) & 0xFFFFFFFF
    return struct.pack("<II8s", 0, acc, bytes(b + 1 for b in range(8)))


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    cache: dict[str, tuple[Board, LinkResult]] = {}

    def get(name: str) -> tuple[Board, LinkResult]:
        if name not in cache:
            board = load_board(name)
            if shutil.which(board.simulation.qemu) is None:
                pytest.skip(f"{board.simulation.qemu} not installed")
            cache[name] = (board, link_firmware(
                board, [], tmp_path_factory.mktemp(name), runtime_parts=("platform", "harness"),
                extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
                extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"]))
        return cache[name]

    return get


@pytest.mark.parametrize("name", SYSTEM)
def test_bin_and_hex_boot_like_the_elf(name: str, linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked(name)
    runs = {}
    for boot in (None, result.bin, result.hex):
        run = run_image(board, result.elf, _input(7), boot=boot)
        assert run.exit_code == 0, f"{boot}: {run.diagnosis} {run.stderr}"
        runs[boot.suffix if boot else ".elf"] = (run.outputs, run.instructions)
        booted = run.image
        if board.verify_mode == "relink":  # the copy relinked for the sibling
            assert booted.parent.name == VERIFY_DIR
        else:  # the very file
            assert booted == (boot or result.elf).resolve()
        if boot is not None:
            assert "-kernel" not in run.command
            assert any(a.startswith(f"loader,file={booted}") for a in run.command)
    assert runs[".elf"][0] == _expected(7)
    assert runs[".bin"] == runs[".hex"] == runs[".elf"]


def test_bin_boots_at_its_recorded_base(linked) -> None:  # type: ignore[no-untyped-def]
    board, result = linked("netduinoplus2")
    image = boot_image(result.bin)
    assert image == BootImage(result.bin.resolve(), 0x08000000)
    cmd = qemu_command(board, result.elf, boot=image)
    assert cmd[-2:] == ["-device", f"loader,file={result.bin.resolve()},addr=0x8000000,"
                                   "force-raw=on"]
    assert boot_image(result.hex).base is None


def test_uf2_hand_off_is_what_boots_the_feather(linked) -> None:  # type: ignore[no-untyped-def]
    """Without the bootloader's hand-off (VTOR = 0x4000) the sibling finds no vector
    table at 0 and locks up: the hand-off in verify_on.args is what makes it run."""
    board, result = linked("feather-m4-express")
    args = tuple(a for a in board.simulation.args
                 if a not in ("-global", "armv7m.init-nsvtor=0x4000"))
    bare = dataclasses.replace(board, simulation=dataclasses.replace(board.simulation,
                                                                     args=args))
    run = run_image(bare, result.elf, _input(1), boot=result.bin, count_instructions=False,
                    timeout=20)
    assert run.exit_code != 0 and run.outputs is None


def test_boot_errors(linked, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    board, result = linked("cortex-m4")
    lone = tmp_path / "firmware.bin"
    lone.write_bytes(result.bin.read_bytes())
    with pytest.raises(EmuError, match="no firmware.bin.base beside it"):
        run_image(board, result.elf, _input(1), boot=lone)
    with pytest.raises(EmuError, match="cannot boot a '.elf' file"):
        boot_image(result.elf)
    with pytest.raises(EmuError, match="there is no .bin image to boot, only the ELF"):
        qemu_command(load_board("x86-64"), result.elf, boot=BootImage(result.bin, 0))
    nucleo, relinked = linked("nucleo-l4r5zi")
    copy = tmp_path / "nucleo"
    shutil.copytree(relinked.elf.parent, copy)
    shutil.rmtree(copy / VERIFY_DIR)
    with pytest.raises(EmuError, match="verified on cortex-m4 with a relinked copy, and .* "
                                       "is missing"):
        run_image(nucleo, copy / "firmware.elf", _input(1))
