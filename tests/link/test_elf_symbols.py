"""The numpy reader of ELF symbol tables (toolchain/link/elf_symbols.py) against
pyelftools: the same undefined symbols and symbol values on objects and linked images of
32- and 64-bit targets, the Thumb bit of the benchmark markers, and one-line errors for
files it cannot read."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.emu.run import BENCH_BEGIN, BENCH_END, EmuError, bench_markers
from toolchain.emu.stack import stack_reserved
from toolchain.link import link_firmware
from toolchain.link.elf_symbols import (
    ET_EXEC,
    ELFFormatError,
    read_header,
    read_sections,
    read_symbols,
)
from toolchain.target import load_board

BOARDS = ("cortex-m4", "riscv32", "x86-64", "aarch64")
DOUBLES = Path(__file__).resolve().parent / "doubles"


def _elftools(data: bytes) -> tuple[frozenset[str], dict[str, int], int]:
    """(undefined names, first value of each defined name, symbol count) by pyelftools."""
    symtab = ELFFile(io.BytesIO(data)).get_section_by_name(".symtab")
    undefined, values = set(), {}
    for s in symtab.iter_symbols():
        if s["st_shndx"] == "SHN_UNDEF":
            if s.name:
                undefined.add(s.name)
        elif s.name:
            values.setdefault(s.name, s["st_value"])
    return frozenset(undefined), values, symtab.num_symbols()


@pytest.fixture(scope="module", params=BOARDS)
def linked(request, tmp_path_factory) -> tuple[str, list[Path]]:
    """A board and the ELF files of a small image linked for it (harness, platform and
    the test doubles, as tests/link/conftest.py links them): its objects and the image."""
    board = load_board(request.param)
    link = link_firmware(
        board, [], tmp_path_factory.mktemp(request.param),
        runtime_parts=("platform", "harness"),
        extra_sources=[DOUBLES / "core_double.c", DOUBLES / "image_double.c"],
        extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
    return request.param, [*link.objects, link.elf]


def test_same_symbols_as_pyelftools(linked) -> None:
    board, files = linked
    assert len(files) > 2
    for path in files:
        data = path.read_bytes()
        undefined, values, count = _elftools(data)
        ours = read_symbols(data)
        assert len(ours.table) == count, path
        assert ours.undefined() == undefined, path
        assert ours.values(list(values)) == values, path
    # The linked image defines everything: what _check_elf relies on.
    assert read_symbols(files[-1]).undefined() == frozenset()


def test_markers_and_stack_symbols_as_pyelftools_read_them(linked) -> None:
    board, files = linked
    elf = files[-1]
    _, values, _ = _elftools(elf.read_bytes())
    thumb = board.startswith("cortex-m")  # Thumb functions: bit 0 of their address set
    assert values[BENCH_BEGIN] & 1 == thumb
    assert bench_markers(elf) == (values[BENCH_BEGIN] & ~1, values[BENCH_END] & ~1)
    if "_stack_size" in values:  # bare-metal images reserve their stack in the script
        assert stack_reserved(elf) == values["_stack_size"]


def test_missing_names_are_left_out(linked) -> None:
    _, files = linked
    assert read_symbols(files[-1]).values(["no_such_symbol_anywhere"]) == {}


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"MZ" + d[2:], "not an ELF file"),
    (lambda d: d[:5] + b"\x02" + d[6:], "big-endian"),
    (lambda d: d[:64], "truncated or damaged"),
    (lambda d: d[:20], "not an ELF file"),
])
def test_unreadable_files_raise_one_line(damage, message: str, linked) -> None:
    _, files = linked
    with pytest.raises(ELFFormatError, match=message):
        read_symbols(damage(files[-1].read_bytes()))


def test_a_damaged_image_is_an_emu_error(linked, tmp_path: Path) -> None:
    _, files = linked
    bad = tmp_path / "firmware.elf"
    bad.write_bytes(files[-1].read_bytes()[:64])
    with pytest.raises(EmuError, match="not a valid ELF file"):
        bench_markers(bad)


def test_same_sections_as_pyelftools(linked) -> None:
    _, files = linked
    for path in files:
        data = path.read_bytes()
        theirs = [(s.name, s["sh_flags"], s["sh_size"], s["sh_entsize"],
                   b"" if s["sh_type"] == "SHT_NOBITS" else s.data())
                  for s in ELFFile(io.BytesIO(data)).iter_sections()]
        ours = [(s.name, s.flags, s.size, s.entsize, s.data) for s in read_sections(data)]
        assert ours == theirs, path
    # Mergeable strings (the size report's pieces) are among what they carry.
    assert any(s.flags & 0x20 for f in files for s in read_sections(f))


def test_header_as_pyelftools_reads_it(linked) -> None:
    _, files = linked
    for path in files:
        data = path.read_bytes()
        elf = ELFFile(io.BytesIO(data))
        ours = read_header(data)
        assert ours.entry == elf["e_entry"]
        assert (ours.type == ET_EXEC) == (elf["e_type"] == "ET_EXEC")
        assert len(ours.segment_types) == elf.num_segments()
        assert not ours.dynamic  # static images, relocatable objects
    assert read_header(files[-1]).type == ET_EXEC and read_header(files[0]).type != ET_EXEC


def test_link_check_refuses_a_dynamic_image(linked, tmp_path: Path) -> None:
    """_check_elf on an image whose first program header says PT_INTERP."""
    from toolchain.link.build import LinkError, _check_elf

    _, files = linked
    data = bytearray(files[-1].read_bytes())
    phoff = int.from_bytes(data[0x1C:0x20] if data[4] == 1 else data[0x20:0x28], "little")
    data[phoff:phoff + 4] = (3).to_bytes(4, "little")  # PT_INTERP
    bad = tmp_path / "firmware.elf"
    bad.write_bytes(bytes(data))
    with pytest.raises(LinkError, match="dynamic link"):
        _check_elf(bad)
    good = tmp_path / "good.elf"
    good.write_bytes(files[-1].read_bytes())
    flash, ram, entry = _check_elf(good)
    assert entry == ELFFile(io.BytesIO(files[-1].read_bytes()))["e_entry"] and flash > 0
