"""Linking the runtime for each board: the ELF is static and complete, the images are
right, the build is reproducible and mistakes fail loudly."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from elftools.elf.elffile import ELFFile

from toolchain.link import LinkError, LinkResult, LoadChunk, intel_hex, linker_script, raw_binary
from toolchain.target import list_boards, load_board

LinkFn = Callable[..., LinkResult]

needs_clang = pytest.mark.skipif(
    shutil.which("clang") is None or shutil.which("ld.lld") is None,
    reason="clang and ld.lld are needed (Debian packages clang, lld)",
)


def _symbols(elf_path: Path) -> dict[str, int]:
    with elf_path.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}


def _parse_hex(text: str) -> dict[int, int]:
    """Address -> byte from Intel HEX (types 00, 04, 05, 01), checking checksums."""
    memory: dict[int, int] = {}
    upper = 0
    for line in text.splitlines():
        assert line.startswith(":")
        raw = bytes.fromhex(line[1:])
        assert sum(raw) & 0xFF == 0, f"bad checksum in {line}"
        count, addr, kind, payload = raw[0], int.from_bytes(raw[1:3], "big"), raw[3], raw[4:-1]
        assert len(payload) == count
        if kind == 0x04:
            upper = int.from_bytes(payload, "big") << 16
        elif kind == 0x00:
            for i, b in enumerate(payload):
                memory[upper + addr + i] = b
        elif kind == 0x01:
            break
    return memory


@needs_clang
@pytest.mark.parametrize("name", list_boards())
def test_links_static_complete_elf(name: str, tmp_path: Path, link_double: LinkFn) -> None:
    board = load_board(name)
    helpers = board.target_info.compiler_helpers
    if helpers.required and shutil.which(helpers.gcc) is None:
        pytest.skip(f"{helpers.package} not installed")
    result = link_double(board, tmp_path)
    syms = _symbols(result.elf)
    for required in ("main", "mrt_bench_begin", "mrt_bench_end", "mrt_platform_exit"):
        assert required in syms
    assert result.map.is_file() and "mrt_bench_begin" in result.map.read_text()
    assert result.bin_base == board.flash.origin
    assert 0 < result.flash_used <= board.flash.length
    # The HEX and BIN files carry the same bytes at the same addresses.
    memory = _parse_hex(result.hex.read_text())
    blob = result.bin.read_bytes()
    assert memory, "hex is empty"
    for addr, value in memory.items():
        assert blob[addr - result.bin_base] == value


@needs_clang
@pytest.mark.parametrize("name", ["riscv32", "cortex-m4"])
def test_bare_metal_layout(name: str, tmp_path: Path, link_double: LinkFn) -> None:
    board = load_board(name)
    result = link_double(board, tmp_path)
    syms = _symbols(result.elf)
    assert syms["_stack_start"] == board.ram.end
    assert board.ram.origin <= syms["__sbss"] <= syms["__ebss"] <= syms["_stack_end"]
    assert board.flash.origin <= syms["__sidata"] < board.flash.end
    # Constants (the module) live in flash, the arena in RAM.
    assert board.flash.origin <= syms["mrt_image_module"] < board.flash.end
    assert board.ram.origin <= syms["mrt_image_arena"] < board.ram.end


@needs_clang
def test_cortex_m_vector_table_at_flash_origin(tmp_path: Path, link_double: LinkFn) -> None:
    board = load_board("cortex-m4")
    result = link_double(board, tmp_path)
    syms = _symbols(result.elf)
    blob = result.bin.read_bytes()
    initial_sp = int.from_bytes(blob[0:4], "little")
    reset = int.from_bytes(blob[4:8], "little")
    assert initial_sp == board.ram.end
    assert reset == syms["mrt_cortex_m_reset"] and reset & 1, "reset vector must be Thumb"


@needs_clang
def test_soft_float_helpers_come_from_libgcc(tmp_path: Path, link_double: LinkFn) -> None:
    """The double division in the dispatch double needs __aeabi_ddiv on a Cortex-M4
    (single-precision FPU): it must be linked from arm-none-eabi libgcc."""
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("gcc-arm-none-eabi not installed")
    result = link_double(load_board("cortex-m4"), tmp_path)
    assert result.helpers is not None and "thumb/v7e-m+fp/hard" in str(result.helpers)
    assert "__aeabi_ddiv" in _symbols(result.elf)


@needs_clang
@pytest.mark.parametrize("name", ["riscv32", "cortex-m4", "x86-64"])
def test_reproducible(name: str, tmp_path: Path, link_double: LinkFn) -> None:
    board = load_board(name)
    first = link_double(board, tmp_path / "one")
    second = link_double(board, tmp_path / "two" / "deeper")
    for attr in ("elf", "bin", "hex"):
        a, b = getattr(first, attr), getattr(second, attr)
        assert a.read_bytes() == b.read_bytes(), f"{attr} differs between builds"


@needs_clang
def test_undefined_symbol_fails_loudly(tmp_path: Path, link_double: LinkFn) -> None:
    extra = tmp_path / "uses_missing.c"
    extra.write_text(
        "extern int mrt_missing_helper(int);\n"
        "__attribute__((used, retain)) int mrt_uses_missing(int x) {\n"
        "  return mrt_missing_helper(x);\n"
        "}\n"
    )
    board = load_board("riscv32")
    with pytest.raises(LinkError, match="undefined symbols: mrt_missing_helper"):
        link_double(board, tmp_path / "out", extra_sources=(extra,))


def _custom_board(tmp_path: Path, base: str, edit) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(load_board(base).path.read_text())
    data["identifier"] = "custom"
    edit(data)
    path = tmp_path / "boards" / "custom.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


@needs_clang
def test_flash_overflow_is_a_link_error(tmp_path: Path, link_double: LinkFn) -> None:
    path = _custom_board(tmp_path, "cortex-m4", lambda d: d["flash"].update(length=0x200))
    with pytest.raises(LinkError, match="does not fit"):
        link_double(load_board(path), tmp_path / "out")


@needs_clang
def test_stack_minimum_is_enforced(tmp_path: Path, link_double: LinkFn) -> None:
    def small_ram(d: dict) -> None:
        d["ram"]["length"] = 0x1000
        d["stack_size"] = 0xFF0

    path = _custom_board(tmp_path, "riscv32", small_ram)
    with pytest.raises(LinkError, match="minimum stack"):
        link_double(load_board(path), tmp_path / "out")


@needs_clang
def test_over_budget_still_links(tmp_path: Path, link_double: LinkFn) -> None:
    # Budgets are judged by the size report (minirt-build exits 1 with the table).
    path = _custom_board(tmp_path, "cortex-m4", lambda d: d["budgets"].update(flash=100))
    result = link_double(load_board(path), tmp_path / "out")
    assert result.flash_used > 100 and result.elf.exists()


def test_linker_script_uses_the_memory_map() -> None:
    board = load_board("cortex-m4")
    script = linker_script(board)
    assert f"ORIGIN = {board.flash.origin:#010x}, LENGTH = {board.flash.length:#x}" in script
    assert f"ORIGIN = {board.ram.origin:#010x}, LENGTH = {board.ram.length:#x}" in script
    assert "> RAM AT > FLASH" in script and "ENTRY(mrt_cortex_m_reset)" in script
    assert "_stack_start" in script and "ASSERT(" in script
    assert "AT > FLASH" not in linker_script(load_board("x86-64"))


def test_intel_hex_records() -> None:
    text = intel_hex([LoadChunk(0x0001FFF8, bytes(range(16)))], entry=0x1234)
    lines = text.splitlines()
    # The start linear address record (intelhex writes it before the data records).
    assert ":0400000500001234B1" in lines
    lines.remove(":0400000500001234B1")
    assert lines[0] == ":020000040001F9"  # upper address 0x0001
    assert lines[1].startswith(":08FFF800")  # stops at the 64 KiB boundary
    assert lines[2] == ":020000040002F8"
    assert lines[-1] == ":00000001FF"
    memory = _parse_hex(text)
    assert [memory[0x0001FFF8 + i] for i in range(16)] == list(range(16))


def test_raw_binary_fills_gaps() -> None:
    base, blob = raw_binary([LoadChunk(0x100, b"\x01"), LoadChunk(0x104, b"\x02")])
    assert base == 0x100 and blob == b"\x01\xff\xff\xff\x02"


@needs_clang
def test_images_can_be_written_after_the_link(tmp_path: Path) -> None:
    """link_firmware(images=False) leaves the images to write_images (the pipeline's
    first, stack-measuring link), which then writes what a plain link writes."""
    from toolchain.link.build import link_firmware, write_images

    doubles = Path(__file__).resolve().parent / "doubles"  # as conftest.py's link_double
    board = load_board("feather-m4-express")  # a UF2 board: every image kind
    kwargs = dict(runtime_parts=("platform", "harness"),
                  extra_sources=[doubles / "core_double.c", doubles / "image_double.c"],
                  extra_cflags=[f"-DTD_TARGET_ID={board.target_info.target_id}"])
    plain = link_firmware(board, [], tmp_path / "plain", **kwargs)
    later = link_firmware(board, [], tmp_path / "later", images=False, **kwargs)
    images = ("firmware.bin", "firmware.bin.base", "firmware.hex", "firmware.uf2")
    assert not later.images and not any((tmp_path / "later" / f).exists() for f in images)
    written = write_images(later, board)
    assert written.images and written.bin_base == plain.bin_base
    assert written.uf2 == tmp_path / "later" / "firmware.uf2"
    for f in images:
        assert (tmp_path / "later" / f).read_bytes() == (tmp_path / "plain" / f).read_bytes()
    assert write_images(written, board) is written  # written once
