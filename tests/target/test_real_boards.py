"""Real boards: their descriptors carry the datasheet memory maps with budgets equal to
the real memories, the flash methods the issue asks for, and how QEMU verifies them;
mistakes in the new fields fail with one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolchain.target import DescriptorError, load_board

KB, MB = 1024, 1024 * 1024

# board: (chip, target, flash origin, flash bytes, RAM origin, RAM bytes), from the
# datasheets / reference manuals named in each YAML file.
DATASHEET = {
    "nucleo-l4r5zi": ("STM32L4R5ZI", "cortex-m4", 0x08000000, 2 * MB, 0x20000000, 640 * KB),
    "netduinoplus2": ("STM32F405RG", "cortex-m4", 0x08000000, 1 * MB, 0x20000000, 128 * KB),
    "nrf52840dk": ("nRF52840", "cortex-m4", 0x00000000, 1 * MB, 0x20000000, 256 * KB),
    "stm32f746g-disco": ("STM32F746NG", "cortex-m7", 0x08000000, 1 * MB, 0x20000000, 320 * KB),
    # The UF2 bootloader keeps the first 16 KB of the 512 KB.
    "feather-m4-express": ("ATSAMD51J19A", "cortex-m4", 0x4000, 512 * KB - 16 * KB,
                           0x20000000, 192 * KB),
    # 16 MB of SPI flash at 0x20000000, the application from 0x20400000; 16 KB DTIM.
    "hifive1": ("FE310-G000", "riscv32-nofpu", 0x20400000, 12 * MB, 0x80000000, 16 * KB),
}

# How QEMU verifies each: on its own model, the very image on a sibling, or relinked.
VERIFY = {
    "nucleo-l4r5zi": ("relink", "cortex-m4"),
    "netduinoplus2": ("self", "netduinoplus2"),
    "nrf52840dk": ("image", "cortex-m4"),
    "stm32f746g-disco": ("relink", "cortex-m7"),
    "feather-m4-express": ("image", "cortex-m4"),
    "hifive1": ("self", "hifive1"),
}

METHODS = {
    "nucleo-l4r5zi": ["openocd", "pyocd"],
    "netduinoplus2": ["openocd", "dfu"],
    "nrf52840dk": ["pyocd", "openocd"],
    "stm32f746g-disco": ["openocd"],
    "feather-m4-express": ["uf2"],
    "hifive1": ["openocd"],
}


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_memory_map_and_budgets_are_the_datasheets(name: str) -> None:
    board = load_board(name)
    chip, target, flash_at, flash_len, ram_at, ram_len = DATASHEET[name]
    assert (board.chip, board.target) == (chip, target)
    assert (board.flash.origin, board.flash.length) == (flash_at, flash_len)
    assert (board.ram.origin, board.ram.length) == (ram_at, ram_len)
    # The budget gate bites at the real memories, not an emulator's.
    assert (board.budgets.flash, board.budgets.ram) == (flash_len, ram_len)


@pytest.mark.parametrize("name", sorted(DATASHEET))
def test_flash_methods_and_verification(name: str) -> None:
    board = load_board(name)
    assert [m.method for m in board.flash_methods] == METHODS[name]
    mode, on = VERIFY[name]
    assert board.verify_mode == mode
    assert (board.sibling.identifier if board.sibling else board.identifier) == on
    if board.sibling is not None:
        # The sibling runs the same code: same target and start-up, its QEMU machine.
        assert board.sibling.target == board.target
        assert board.simulation.machine == board.sibling.simulation.machine


def test_extra_memories() -> None:
    ccm = load_board("netduinoplus2").memories
    assert [(m.name, m.origin, m.length) for m in ccm] == [("ccm", 0x10000000, 64 * KB)]
    itcm = load_board("stm32f746g-disco").memories
    assert [(m.name, m.origin, m.length) for m in itcm] == [("itcm", 0, 16 * KB)]


def test_uf2_bootloader_hand_off() -> None:
    feather = load_board("feather-m4-express")
    (uf2,) = feather.flash_methods
    assert (uf2.family, uf2.board_id) == (0x55114460, "SAMD51J19A")
    # QEMU starts the image as the bootloader does: the vector table base at 0x4000.
    assert "armv7m.init-nsvtor=0x4000" in feather.simulation.args


def test_relinked_board_takes_the_siblings_memory_map() -> None:
    board = load_board("nucleo-l4r5zi")
    relinked = board.relinked_for_sibling()
    assert relinked.flash == board.sibling.flash and relinked.ram == board.sibling.ram
    assert relinked.target_info == board.target_info
    assert relinked.stack_size == board.stack_size and relinked.platform == board.platform
    assert relinked.verify_mode == "self"


# --------------------------------------------------------------------------- errors


def _write(tmp_path: Path, base: str, edit, name: str = "x") -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(load_board(base).path.read_text())
    data["identifier"] = name
    edit(data)
    path = tmp_path / "boards" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _error(path: Path) -> str:
    with pytest.raises(DescriptorError) as info:
        load_board(path)
    message = str(info.value)
    assert "\n" not in message
    return message


ERRORS = [
    # (base board, edit, expected message part)
    ("nrf52840dk", lambda d: d.update(simulation={"qemu": "q", "mode": "user"}),
     "field 'simulation': give exactly one of 'simulation'"),
    ("nrf52840dk", lambda d: d.pop("verify_on"),
     "field 'simulation': give exactly one of 'simulation'"),
    ("nrf52840dk", lambda d: d["verify_on"].update(board="z80"),
     "field 'verify_on.board': unknown board 'z80'"),
    ("nrf52840dk", lambda d: d["verify_on"].update(board="cortex-m7"),
     "field 'verify_on.board': 'cortex-m7' runs target 'cortex-m7', this board's target "
     "is 'cortex-m4'"),
    ("nrf52840dk", lambda d: d["verify_on"].update(board="x"),
     "field 'verify_on.board': a board cannot be its own sibling"),
    ("nrf52840dk", lambda d: d["verify_on"].update(board="nucleo-l4r5zi"),
     "'nucleo-l4r5zi' is itself verified on another board"),
    ("nrf52840dk", lambda d: d["verify_on"].update(args=[3]),
     "field 'verify_on.args[0]': expected a string"),
    ("netduinoplus2", lambda d: d["memories"][0].update(origin=0x20000000),
     "field 'memories[0]': overlaps the ram region"),
    ("netduinoplus2", lambda d: d["memories"][0].update(name="CCM-RAM"),
     "field 'memories[0].name': expected a lower-case identifier"),
    ("netduinoplus2", lambda d: d["memories"][0].update(name="ram"),
     "field 'memories[0].name': 'ram' is already a memory"),
    ("netduinoplus2", lambda d: d["memories"][0].update(length=0),
     "field 'memories[0].length': must be greater than 0"),
    ("netduinoplus2", lambda d: d["memories"][0].update(size=4),
     "field 'memories[0].size': unknown field"),
    ("netduinoplus2", lambda d: d["flash_methods"].append({"method": "jtag"}),
     "field 'flash_methods[2].method': expected one of 'pyocd', 'openocd', 'dfu', 'uf2'"),
    ("netduinoplus2", lambda d: d["flash_methods"][1].update(device="stm32"),
     "field 'flash_methods[1].device': expected a USB VID:PID like 0483:df11"),
    ("netduinoplus2", lambda d: d["flash_methods"][1].pop("device"),
     "field 'flash_methods[1].device': missing required field (method is dfu)"),
    ("netduinoplus2", lambda d: d["flash_methods"][0].update(target="stm32f405"),
     "field 'flash_methods[0].target': does not apply to method 'openocd'"),
    ("netduinoplus2", lambda d: d["flash_methods"].append(d["flash_methods"][0]),
     "field 'flash_methods[2].method': 'openocd' is listed twice"),
    ("feather-m4-express", lambda d: d["flash_methods"][0].pop("family"),
     "field 'flash_methods[0].family': missing required field (method is uf2)"),
    ("feather-m4-express", lambda d: d["flash_methods"][0].update(family=1 << 33),
     "field 'flash_methods[0].family': expected a 32-bit UF2 family ID"),
    ("nrf52840dk", lambda d: d["flash_methods"][0].pop("target"),
     "field 'flash_methods[0].target': missing required field (method is pyocd)"),
]


@pytest.mark.parametrize(("base", "edit", "expected"), ERRORS,
                         ids=[e[2][:40] for e in ERRORS])
def test_bad_new_fields_are_one_line_errors(tmp_path: Path, base: str, edit,  # type: ignore[no-untyped-def]
                                            expected: str) -> None:
    message = _error(_write(tmp_path, base, edit))
    assert message.startswith("boards/x.yaml: field '"), message
    assert expected in message, message


def test_sibling_found_beside_the_board_file(tmp_path: Path) -> None:
    """A board file outside boards/ may name a sibling that lives beside it."""
    _write(tmp_path, "cortex-m4", lambda d: None, name="my-m4")
    path = _write(tmp_path, "nrf52840dk", lambda d: d["verify_on"].update(board="my-m4"))
    board = load_board(path)
    assert board.sibling is not None and board.sibling.path.parent == path.parent


def test_a_changed_sibling_makes_the_build_stale(tmp_path: Path) -> None:
    """minirt-run reuses a build only when everything it depends on is unchanged: for a
    board verified on a sibling, the sibling's descriptor too."""
    from toolchain.pipeline import build_stamp

    seed = Path(__file__).resolve().parents[2] / "examples" / "seed.mlir"
    sibling = _write(tmp_path, "cortex-m4", lambda d: None, name="my-m4")
    path = _write(tmp_path, "nrf52840dk", lambda d: d["verify_on"].update(board="my-m4"))
    before = build_stamp(seed, load_board(path), "main")
    sibling.write_text(sibling.read_text().replace("stack_size: 16384", "stack_size: 8192"))
    assert build_stamp(seed, load_board(path), "main") != before
