"""A module with any single corrupted byte is rejected by the runtime under QEMU, with
the status code the Python reader predicts, and never crashes or hangs.

The firmware is linked once; each case patches one byte of `mrt_image_module` inside
the ELF (the same bytes the loader reads from flash) and runs the image.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.emu.run import run_image
from toolchain.link.inspect import image_contract_of, module_span
from toolchain.module.reader import ModuleFormatError, read_module
from toolchain.pipeline import build_model


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
    offset, size = module_span(result.elf)
    contract = image_contract_of(result.elf)
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
            read_module(bytes(bad), image=contract)
            pytest.fail(f"byte {i}: the reader accepted a corrupted module")
        except ModuleFormatError as e:
            want = int(e.status)
        patched.write_bytes(elf[:offset + i] + bytes([bad[i]]) + elf[offset + i + 1:])
        patched.chmod(0o755)
        run = run_image(result.board, patched, inputs, count_instructions=False, timeout=20)
        assert run.exit_code == want, f"byte {i}: exit {run.exit_code}, expected {want}: " \
                                      f"{run.console}"
