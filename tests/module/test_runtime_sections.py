"""runtime_c defines no variables: no initialized data, no zero-initialized data.

The bare-metal start-ups (runtime_c/platform/cortex_m, riscv) neither copy .data from
flash nor zero .bss, which is what keeps them small enough for the 1 KB seed firmware
(bench/seed_size.py). That is sound only while the runtime has no variables: a `static
int n;` relying on zero, or an initialized one, would read whatever RAM held at reset.
The linker script refuses a bare-metal .data (toolchain/link/script.py); this test also
catches .bss and common symbols, in every runtime_c object a firmware links.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.link.build import compile_sources, runtime_sources
from toolchain.target import load_board

# One board per start-up / platform combination: Armv7E-M with FPU, Armv6-M, RISC-V
# without F, and a Linux one (whose start-up is the kernel's, checked all the same).
BOARDS = ("cortex-m4", "cortex-m0plus", "riscv32-nofpu", "x86-64")
# Section name prefixes of writable variables (.sdata/.sbss: RISC-V small data).
VARIABLE_SECTIONS = (".data", ".bss", ".sdata", ".sbss", ".tbss", ".tdata")


def _variables(obj: Path) -> list[str]:
    """The object's non-empty variable sections and its common symbols."""
    found = []
    with obj.open("rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if section.name.startswith(VARIABLE_SECTIONS) and section["sh_size"]:
                found.append(f"{section.name} ({section['sh_size']} bytes)")
        symtab = elf.get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab else ():
            if sym["st_shndx"] == "SHN_COMMON":
                found.append(f"common {sym.name}")
    return found


@pytest.mark.parametrize("name", BOARDS)
def test_runtime_objects_define_no_variables(name: str, tmp_path: Path) -> None:
    board = load_board(name)
    sources = runtime_sources(board)
    # Every part a firmware links: the core, the board's platform parts, the harness.
    assert {s.parent.name for s in sources} >= {"core", "harness", *board.platform}
    objs = compile_sources(board.target_info, sources, tmp_path)
    found = {obj.name: v for obj in objs if (v := _variables(obj))}
    assert not found, f"{name}: runtime_c objects with variables: {found}"


def test_the_check_sees_a_variable(tmp_path: Path) -> None:
    """The same check on a source with one initialized and one zeroed variable."""
    src = tmp_path / "vars.c"
    src.write_text("int counter = 3;\nstatic int zeroed;\n"
                   "int bump(void) { return ++counter + ++zeroed; }\n")
    (obj,) = compile_sources(load_board("cortex-m4").target_info, [src], tmp_path / "o")
    found = _variables(obj)
    assert any(v.startswith(".data") for v in found), found
    assert any(v.startswith(".bss") for v in found), found
