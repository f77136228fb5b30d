"""Thumb ADR in the runtime's assembly needs word-aligned code sections.

A Thumb ADR adds its offset to the PC rounded down to a word. The assembler resolves an
ADR to a local label against the start of its section, as if that start were
word-aligned; a naked function's section is only halfword-aligned unless it asks for
more, and the link then places it at 2 mod 4 or not depending on what else is linked.
mrt_dw3_rowpair_s8 (runtime_c/ukernel/dsp/mrt_dw_dsp.c) jumped 2 bytes off its channel
loop and hard-faulted vww_96_int8 once another microkernel changed the layout. This test
compiles every runtime source of the Cortex-M boards and checks each code section that
holds an ADR for an alignment of at least 4.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.link.build import compile_sources, runtime_sources
from toolchain.target import load_board

ADR = re.compile(r"^\s*[0-9a-f]+:\s+adr(\.w)?\s", re.M)


def _objdump() -> str:
    for name in ("llvm-objdump", "llvm-objdump-16", "llvm-objdump-15", "llvm-objdump-14"):
        found = subprocess.run(["sh", "-c", f"command -v {name}"], capture_output=True,
                               text=True).stdout.strip()
        if found:
            return found
    pytest.skip("llvm-objdump is not installed")


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m55", "cortex-m0plus"])
def test_code_sections_with_adr_are_word_aligned(board: str, tmp_path: Path) -> None:
    b = load_board(board)
    objects = compile_sources(b.target_info, runtime_sources(b), tmp_path)
    objdump = _objdump()
    checked = 0
    for obj in objects:
        with obj.open("rb") as f:
            sections = [(s.name, s["sh_addralign"]) for s in ELFFile(f).iter_sections()
                        if s.name.startswith(".text")]
        for name, align in sections:
            text = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-j", name,
                                   str(obj)], capture_output=True, text=True).stdout
            if ADR.search(text):
                checked += 1
                assert align >= 4, f"{obj.name} {name}: ADR in a section aligned to {align}"
    if board == "cortex-m4":
        assert checked >= 2  # the depthwise row-pair kernels (and the reset handler)
