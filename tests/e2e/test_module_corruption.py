"""A module with any single corrupted byte is rejected by the runtime under QEMU, with
the status code the Python reader predicts, and never crashes or hangs.

The firmware is linked once; each case patches one byte of `mrt_image_module` inside
the ELF (the same bytes the loader reads from flash) and runs the image.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.emu.run import run_image
from toolchain.module.reader import ModuleFormatError, read_module
from toolchain.pipeline import build_model

REPO = Path(__file__).resolve().parents[2]


def _module_file_offset(elf_path: Path) -> tuple[int, int]:
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name("mrt_image_module")[0]
        addr, size = sym["st_value"], sym["st_size"]
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= addr < seg["p_vaddr"] + \
                    seg["p_filesz"]:
                return seg["p_offset"] + addr - seg["p_vaddr"], size
    raise AssertionError("mrt_image_module is not in a loaded segment")


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_every_corrupted_byte_is_rejected(board: str, tmp_path: Path) -> None:
    # A model with constants, so header, signature, commands and pool are all present.
    model = tmp_path / "affine.mlir"
    model.write_text("""
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = stablehlo.multiply %x, %w : tensor<2x3xf32>
  %1 = stablehlo.add %0, %w : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
""")
    result = build_model(model, board, tmp_path / "fw", log=lambda _: None)
    elf = result.elf.read_bytes()
    offset, size = _module_file_offset(result.elf)
    module = elf[offset:offset + size]
    assert module == result.module
    inputs = [bytes(24)]
    clean = run_image(result.board, result.elf, inputs, count_instructions=False)
    assert clean.exit_code == 0
    patched = tmp_path / "patched.elf"
    for i in range(size):
        bad = bytearray(module)
        bad[i] ^= 0x5A
        try:
            read_module(bytes(bad), board)
            pytest.fail(f"byte {i}: the reader accepted a corrupted module")
        except ModuleFormatError as e:
            want = int(e.status)
        patched.write_bytes(elf[:offset + i] + bytes([bad[i]]) + elf[offset + i + 1:])
        patched.chmod(0o755)
        run = run_image(result.board, patched, inputs, count_instructions=False, timeout=20)
        assert run.exit_code == want, f"byte {i}: exit {run.exit_code}, expected {want}: " \
                                      f"{run.console}"
