"""The per-image object: symbols, sections, alignment, contents and determinism."""

from __future__ import annotations

import io
import struct

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from toolchain.codegen import emit_image_object
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.module import BindingKind, BindingNeed, CommandNeed, ImageContract
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
T4 = TensorType((4,), F32)
KERNELS = [
    Kernel("k_add", (4,), 1, (T4, T4), T4,
           Apply("add", (Load(0, (Index(0),)), Load(1, (Index(0),))), F32)),
    Kernel("k_exp", (4,), 1, (T4,), T4, Apply("exponential", (Load(0, (Index(0),)),), F32)),
]  # fmt: skip
MODULE = bytes(range(256)) * 3 + b"tail"
ARENA, CONST, IN, OUT = (BindingKind.ARENA, BindingKind.CONSTANT, BindingKind.INPUT,
                         BindingKind.OUTPUT)
CONTRACT = ImageContract(
    target_id=7, layout_crc=0xC0FFEE11,
    commands=(CommandNeed(0, (BindingNeed(IN, 16), BindingNeed(CONST, 16),
                              BindingNeed(ARENA, 16))),
              CommandNeed(1, (BindingNeed(ARENA, 16), BindingNeed(OUT, 16)))),
    input_sizes=(16, 16), output_sizes=(16,))


def _image(target: str = "cortex-m4", **kw) -> bytes:
    args = dict(kernels=KERNELS, module_bytes=MODULE, contract=CONTRACT, arena_size=1000,
                target=target)
    args.update(kw)
    return emit_image_object(**args)


def _symbols(elf: ELFFile) -> dict:
    return {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name}


def _data(elf: ELFFile, sym) -> bytes:
    sec = elf.get_section(sym["st_shndx"])
    off = sym["st_value"] - (sec["sh_addr"] or 0)
    return sec.data()[off : off + sym["st_size"]]


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32-nofpu", "x86-64"])
def test_image_symbols_sections_and_contents(target: str) -> None:
    elf = ELFFile(io.BytesIO(_image(target)))
    syms = _symbols(elf)
    u32 = "<I"
    expect = {
        "mrt_image_module_size": len(MODULE),
        "mrt_image_arena_size": 1000,
    }
    for name, value in expect.items():
        s = syms[name]
        assert s["st_info"]["bind"] == "STB_GLOBAL"
        assert elf.get_section(s["st_shndx"]).name == f".rodata.{name}"
        assert struct.unpack(u32, _data(elf, s))[0] == value, name

    # mrt_image_t: three pointers (relocated), then target, layout CRC, command count,
    # and the two u16 I/O counts; laid out as the C struct is on this target.
    ptr = elf.elfclass // 8
    image = syms["mrt_image"]
    assert image["st_info"]["bind"] == "STB_GLOBAL"
    assert elf.get_section(image["st_shndx"]).name == ".rodata.mrt_image"
    assert image["st_size"] == 3 * ptr + 16
    fields = struct.unpack("<IIIHH", _data(elf, image)[3 * ptr :])
    assert fields == (7, 0xC0FFEE11, 2, 2, 1)
    tables = {"mrt_image_commands": CONTRACT.command_words,
              "mrt_image_io_sizes": [16, 16, 16]}
    assert CONTRACT.command_words == [0 | 3 << 16, 2 << 30 | 16, 1 << 30 | 16, 16,
                                      1 | 2 << 16, 16, 3 << 30 | 16]
    for name, words in tables.items():
        data = _data(elf, syms[name])
        assert list(struct.unpack(f"<{len(words)}I", data)) == words, name

    mod = syms["mrt_image_module"]
    sec = elf.get_section(mod["st_shndx"])
    assert sec.name == ".rodata.mrt_image_module" and sec["sh_addralign"] >= 16
    assert _data(elf, mod) == MODULE

    arena = syms["mrt_image_arena"]
    sec = elf.get_section(arena["st_shndx"])
    assert sec.name == ".bss.mrt_image_arena" and sec["sh_type"] == "SHT_NOBITS"
    assert sec["sh_addralign"] >= 16 and arena["st_size"] == 1000

    for table, n in (
        ("mrt_image_dispatches", 2),
        ("mrt_image_inputs", 2),
        ("mrt_image_outputs", 1),
    ):
        s = syms[table]
        assert elf.get_section(s["st_shndx"]).name == f".rodata.{table}"
        assert s["st_size"] == n * ptr, table
    for kind, sizes in (("input", [16, 16]), ("output", [16])):
        for i, size in enumerate(sizes):
            s = syms[f"mrt_image_{kind}_{i}"]
            sec = elf.get_section(s["st_shndx"])
            assert sec.name == f".bss.mrt_image_{kind}_{i}" and sec["sh_type"] == "SHT_NOBITS"
            assert sec["sh_addralign"] >= 16 and s["st_size"] == size
    # Dispatch functions: own sections, referenced from the table by relocations.
    for k in KERNELS:
        assert elf.get_section(syms[k.name]["st_shndx"]).name == f".text.{k.name}"
    relocs = [
        r
        for r in elf.iter_sections()
        if isinstance(r, RelocationSection) and r.name.endswith(".rodata.mrt_image_dispatches")
    ]
    assert relocs, "dispatch table has no relocations"
    symtab = elf.get_section_by_name(".symtab")
    targets = [symtab.get_symbol(r["r_info_sym"]).name for r in relocs[0].iter_relocations()]
    assert targets == ["k_add", "k_exp"]


def test_image_is_deterministic() -> None:
    assert _image() == _image()
    assert _image() != _image(arena_size=2000)


def test_empty_image() -> None:
    """No kernels, no I/O, no arena: still links (no zero-sized symbols), counts say 0."""
    empty = ImageContract(7, 0, (), (), ())
    elf = ELFFile(io.BytesIO(_image(kernels=[], arena_size=0, contract=empty)))
    syms = _symbols(elf)
    ptr = elf.elfclass // 8
    assert struct.unpack("<IIIHH", _data(elf, syms["mrt_image"])[3 * ptr :]) == (7, 0, 0, 0, 0)
    assert struct.unpack("<I", _data(elf, syms["mrt_image_arena_size"]))[0] == 0
    assert syms["mrt_image_arena"]["st_size"] == 1


def test_contract_calling_missing_dispatches_is_refused() -> None:
    with pytest.raises(ValueError, match="2 dispatches, the image has 1"):
        _image(kernels=KERNELS[:1])
