"""The per-image object: symbols, sections, alignment, contents and determinism."""

from __future__ import annotations

import io
import struct

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from toolchain.codegen import emit_image_object
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.module import Binding, Command, ConstantEntry, ImageContract, TensorSig, pack_module
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
T4 = TensorType((4,), F32)
KERNELS = [
    Kernel("k_add", (4,), 1, (T4, T4), T4,
           Apply("add", (Load(0, (Index(0),)), Load(1, (Index(0),))), F32)),
    Kernel("k_exp", (4,), 1, (T4,), T4, Apply("exponential", (Load(0, (Index(0),)),), F32)),
]  # fmt: skip
# Two commands: k_add(input 0, constant 0) -> arena 0; k_exp(arena 0) -> output 0.
MODULE = pack_module(
    "cortex-m4", [TensorSig("input_0", "f32", (4,)), TensorSig("y", "f32", (4,))],
    [TensorSig("output_0", "f32", (4,))], [ConstantEntry(bytes(16), "f32")],
    [Command(0, [Binding.input(0, 16), Binding.constant(0, 16), Binding.arena(0, 16)]),
     Command(1, [Binding.arena(0, 16), Binding.output(0, 16)])], arena_size=16)
CONTRACT = ImageContract.of_module(MODULE, 7)


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


def _relocations(elf: ELFFile, sym) -> dict[int, tuple[str, int]]:
    """The relocations inside `sym`'s bytes: offset in it -> (the section the address
    points into, the offset in that section). REL targets (Arm) keep the addend in the
    data, RELA ones in the relocation."""
    sec = elf.get_section(sym["st_shndx"])
    symtab = elf.get_section_by_name(".symtab")
    data = _data(elf, sym)
    out = {}
    for rs in elf.iter_sections():
        if not isinstance(rs, RelocationSection) or rs["sh_info"] != sym["st_shndx"]:
            continue
        for r in rs.iter_relocations():
            at = r["r_offset"] - sym["st_value"]
            if not 0 <= at < sym["st_size"]:
                continue
            target = symtab.get_symbol(r["r_info_sym"])
            addend = r["r_addend"] if rs.is_RELA() else struct.unpack_from("<I", data, at)[0]
            out[at] = (elf.get_section(target["st_shndx"]).name, target["st_value"] + addend)
    assert sec is not None
    return out


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

    # mrt_image_t: four pointers (relocated: dispatch table, I/O sizes, and the start
    # and end of the command list inside the struct itself), then target, layout CRC
    # and pool offset, then the module's bytes from 12 to the end of its command list;
    # laid out as the C struct is on this target.
    ptr = elf.elfclass // 8
    image = syms["mrt_image"]
    assert image["st_info"]["bind"] == "STB_GLOBAL"
    assert elf.get_section(image["st_shndx"]).name == ".rodata.mrt_image"
    h = CONTRACT.header
    fixed = 4 * ptr + 12
    assert image["st_size"] == fixed + len(CONTRACT.pinned)
    assert struct.unpack("<3I", _data(elf, image)[4 * ptr:fixed]) == (
        7, CONTRACT.layout_crc, h.pool_offset)
    assert _data(elf, image)[fixed:] == MODULE[12:12 + len(CONTRACT.pinned)]
    # The command list pointers: relocations against mrt_image itself, at the offsets of
    # the first command and of the end.
    relocs = _relocations(elf, image)
    head = 16  # the header's bytes after the CRC
    start = image["st_value"]  # mrt_image in its own section
    assert relocs[2 * ptr] == (".rodata.mrt_image", start + fixed + head + h.signature_size)
    assert relocs[3 * ptr] == (".rodata.mrt_image", start + fixed + len(CONTRACT.pinned))
    sizes = _data(elf, syms["mrt_image_io_sizes"])
    assert list(struct.unpack("<3I", sizes)) == [16, 16, 16]

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
    module = pack_module("cortex-m4", [], [], [], [], 0)
    empty = ImageContract.of_module(module, 7)
    elf = ELFFile(io.BytesIO(_image(kernels=[], arena_size=0, contract=empty,
                                    module_bytes=module)))
    syms = _symbols(elf)
    ptr = elf.elfclass // 8
    words = struct.unpack("<3I4I", _data(elf, syms["mrt_image"])[4 * ptr:])
    assert words == (7, empty.layout_crc, 28, 28, 0, 0, 0)
    # No signature, no commands: the command list starts and ends after the header words.
    end = syms["mrt_image"]["st_value"] + 4 * ptr + 12 + 16
    relocs = _relocations(elf, syms["mrt_image"])
    assert relocs[2 * ptr] == relocs[3 * ptr] == (".rodata.mrt_image", end)
    assert struct.unpack("<I", _data(elf, syms["mrt_image_arena_size"]))[0] == 0
    assert syms["mrt_image_arena"]["st_size"] == 1


def test_contract_calling_missing_dispatches_is_refused() -> None:
    with pytest.raises(ValueError, match="2 dispatches, the image has 1"):
        _image(kernels=KERNELS[:1])
