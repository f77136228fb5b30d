"""The image contract: what an image's code needs from a module (toolchain/module/contract.py)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from toolchain.loader import load_graph
from toolchain.module import (
    BindingKind,
    ImageContract,
    ModuleFormatError,
    Status,
    image_contract,
    layout_crc,
    read_module,
)
from toolchain.module import format as fmt
from toolchain.module.from_program import module_from_program
from toolchain.pipeline import prepare_graph
from toolchain.schedule import schedule

MODEL = """
func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %w = stablehlo.constant dense<0.5> : tensor<8x4xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %e = stablehlo.exponential %d : tensor<2x4xf32>
  return %e, %s : tensor<2x4xf32>, tensor<2xf32>
}
"""


@pytest.fixture
def built(tmp_path: Path) -> tuple[bytes, ImageContract]:
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    program = schedule(prepare_graph(load_graph(model)))
    data = module_from_program(program, "cortex-m4")
    return data, image_contract(program, data, fmt.target_id("cortex-m4"))


def test_contract_describes_the_module_the_compiler_packed(built) -> None:
    data, contract = built
    m = read_module(data, image=contract)
    assert contract.input_sizes == (2 * 8 * 4,) and contract.output_sizes == (32, 8)
    assert contract.layout_crc == zlib.crc32(data[16:m.header.pool_offset])
    assert [c.ordinal for c in contract.commands] == [c.ordinal for c in m.commands]
    for need, cmd in zip(contract.commands, m.commands, strict=True):
        assert [(b.kind, b.size) for b in need.bindings] == [(b.kind, b.size)
                                                             for b in cmd.bindings]
        # A dispatch stores only into its last binding, which is the arena or an output.
        assert need.bindings[-1].kind in (BindingKind.ARENA, BindingKind.OUTPUT)
    words = contract.command_words
    assert words[0] == contract.commands[0].ordinal | len(contract.commands[0].bindings) << 16
    assert words[1] == contract.commands[0].bindings[0].kind << 30 | contract.commands[0] \
        .bindings[0].size


def test_a_weights_update_with_the_same_structure_still_fits(built) -> None:
    """The layout CRC leaves the pool out: new weights, same image."""
    data, contract = built
    h = read_module(data).header
    new = bytearray(data)
    new[h.pool_offset:h.pool_offset + 4] = struct.pack("<f", 3.0)
    new[12:16] = struct.pack("<I", zlib.crc32(bytes(new[16:])))
    read_module(bytes(new), image=contract)
    assert layout_crc(bytes(new)) == contract.layout_crc


def _patched(data: bytes, offset: int, value: int) -> bytes:
    d = bytearray(data)
    struct.pack_into("<I", d, offset, value)
    d[12:16] = struct.pack("<I", zlib.crc32(bytes(d[16:])))
    return bytes(d)


def test_any_change_before_the_pool_does_not_fit(built) -> None:
    """Every aligned word of header (after the CRC), signature, commands and constant
    table, changed: the module is rejected, at the latest by the layout CRC."""
    data, contract = built
    h = read_module(data).header
    for at in range(fmt.CRC_START, h.pool_offset, 4):
        (old,) = struct.unpack_from("<I", data, at)
        with pytest.raises(ModuleFormatError) as e:
            read_module(_patched(data, at, old ^ 0x10), image=contract)
        assert e.value.status in (Status.TRUNCATED, Status.MALFORMED, Status.IMAGE), at


def test_reader_names_what_does_not_fit(built) -> None:
    data, contract = built
    with pytest.raises(ModuleFormatError, match="layout CRC") as e:
        read_module(data, image=ImageContract(contract.target_id, contract.layout_crc ^ 1,
                                              contract.commands, contract.input_sizes,
                                              contract.output_sizes))
    assert e.value.status == Status.IMAGE
    with pytest.raises(ModuleFormatError, match="I/O tensor 1 has 32 bytes") as e:
        read_module(data, image=ImageContract(contract.target_id, contract.layout_crc,
                                              contract.commands, contract.input_sizes,
                                              (64, 8)))
    assert e.value.status == Status.IMAGE
    with pytest.raises(ModuleFormatError) as e:
        read_module(data, image=ImageContract(fmt.target_id("x86-64"), *(
            contract.layout_crc, contract.commands, contract.input_sizes,
            contract.output_sizes)))
    assert e.value.status == Status.TARGET
