"""The link map's parser (toolchain/link/map_file.py): output sections by name, input
sections with the object or archive member each came from."""

from __future__ import annotations

from toolchain.link.map_file import parse_map


def test_parse_map_rows() -> None:
    text = """\
     VMA      LMA     Size Align Out     In      Symbol
       0        0     1594     4 .text
       0        0        0     1         __stext = .
      40       40      1b2     4         obj/runtime_c__core__crc32.o:(.text.mrt_crc32)
      41       41      1b2     1                 mrt_crc32
     200      200       60     4         /usr/lib/gcc/x/libgcc.a(_udivsi3.o):(.text)
     260      260       10     1         <internal>:(.rodata)
20000000 20000000      120    16 .bss
20000010 20000010        1    16         dispatch.o:(.bss.mrt_image_arena)
"""
    outputs, inputs = parse_map(text)
    assert outputs[".text"].size == 0x1594 and outputs[".bss"].vma == 0x20000000
    assert [(s.output, s.file, s.member, s.name) for s in inputs] == [
        (".text", "obj/runtime_c__core__crc32.o", None, ".text.mrt_crc32"),
        (".text", "/usr/lib/gcc/x/libgcc.a", "_udivsi3.o", ".text"),
        (".text", "<internal>", None, ".rodata"),
        (".bss", "dispatch.o", None, ".bss.mrt_image_arena"),
    ]
    assert inputs[0].vma == 0x40 and inputs[0].size == 0x1b2 and inputs[0].align == 4
