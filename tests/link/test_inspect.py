"""Reading the module and the image contract back out of a linked firmware."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchain.link.inspect import ImageError, image_contract_of, module_span
from toolchain.module import image_contract
from toolchain.pipeline import build_model

MODEL = """
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<3xi32>) {
  %w = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = stablehlo.multiply %x, %w : tensor<2x3xf32>
  %1 = stablehlo.add %y, %y : tensor<3xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xi32>
}
"""


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32"])
def test_contract_and_module_read_back_from_the_elf(board: str, tmp_path: Path) -> None:
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    result = build_model(model, board, tmp_path / "fw", log=lambda _: None)
    offset, size = module_span(result.elf)
    assert result.elf.read_bytes()[offset:offset + size] == result.module
    want = image_contract(result.program, result.module, result.board.target_info.target_id)
    assert image_contract_of(result.elf) == want


def test_not_a_firmware_image(tmp_path: Path) -> None:
    elf = tmp_path / "x.elf"
    elf.write_bytes(Path("/bin/true").read_bytes())
    with pytest.raises(ImageError, match="no symbol"):
        module_span(elf)
