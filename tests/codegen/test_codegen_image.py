"""The per-image object: symbols, sections, alignment, contents and determinism."""

from __future__ import annotations

import io
import struct

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from toolchain.codegen import emit_image_object
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
T4 = TensorType((4,), F32)
KERNELS = [
    Kernel("k_add", (4,), 1, (T4, T4), T4,
           Apply("add", (Load(0, (Index(0),)), Load(1, (Index(0),))), F32)),
    Kernel("k_exp", (4,), 1, (T4,), T4, Apply("exponential", (Load(0, (Index(0),)),), F32)),
]  # fmt: skip
MODULE = bytes(range(256)) * 3 + b"tail"


def _image(target: str = "cortex-m4", **kw) -> bytes:
    args = dict(
        kernels=KERNELS,
        module_bytes=MODULE,
        target_id=7,
        arena_size=1000,
        input_sizes=[16, 16],
        output_sizes=[16],
        target=target,
    )
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
        "mrt_image_dispatch_count": 2,
        "mrt_image_module_size": len(MODULE),
        "mrt_image_target_id": 7,
        "mrt_image_arena_size": 1000,
    }
    for name, value in expect.items():
        s = syms[name]
        assert s["st_info"]["bind"] == "STB_GLOBAL"
        assert elf.get_section(s["st_shndx"]).name == f".rodata.{name}"
        assert struct.unpack(u32, _data(elf, s))[0] == value, name

    mod = syms["mrt_image_module"]
    sec = elf.get_section(mod["st_shndx"])
    assert sec.name == ".rodata.mrt_image_module" and sec["sh_addralign"] >= 16
    assert _data(elf, mod) == MODULE

    arena = syms["mrt_image_arena"]
    sec = elf.get_section(arena["st_shndx"])
    assert sec.name == ".bss.mrt_image_arena" and sec["sh_type"] == "SHT_NOBITS"
    assert sec["sh_addralign"] >= 16 and arena["st_size"] == 1000

    ptr = elf.elfclass // 8
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
    elf = ELFFile(io.BytesIO(_image(kernels=[], arena_size=0, input_sizes=[], output_sizes=[])))
    syms = _symbols(elf)
    assert struct.unpack("<I", _data(elf, syms["mrt_image_dispatch_count"]))[0] == 0
    assert struct.unpack("<I", _data(elf, syms["mrt_image_arena_size"]))[0] == 0
    assert syms["mrt_image_arena"]["st_size"] == 1
