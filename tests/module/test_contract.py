"""The image contract: the module structure an image pins (toolchain/module/contract.py)."""

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
    pack_module,
    program_needs,
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
def built(tmp_path: Path):
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    program = schedule(prepare_graph(load_graph(model)))
    data = module_from_program(program, "cortex-m4")
    return program, data, image_contract(program, data, fmt.target_id("cortex-m4"))


def test_contract_pins_the_structure_the_compiler_packed(built) -> None:
    program, data, contract = built
    m = read_module(data, image=contract)
    h = m.header
    # Header after the CRC, signature and commands, byte for byte; the rest by its CRC.
    assert contract.pinned == data[fmt.CRC_START:m.constant_table_offset]
    assert contract.layout_crc == zlib.crc32(data[fmt.CRC_START:h.pool_offset])
    assert contract.pool_offset == h.pool_offset and h.constant_count > 0
    assert contract.input_sizes == (2 * 8 * 4,) and contract.output_sizes == (32, 8)
    assert contract.commands == m.commands
    # What the code accesses is what the module binds: kinds and sizes per binding.
    needs = program_needs(program)
    assert [(c.ordinal, [(b.kind, b.size) for b in c.bindings]) for c in needs] == \
        [(c.ordinal, [(b.kind, b.size) for b in c.bindings]) for c in m.commands]
    # A dispatch stores only into its last binding, which is the arena or an output.
    assert all(c.bindings[-1].kind in (BindingKind.ARENA, BindingKind.OUTPUT)
               for c in m.commands)
    assert contract.words[:2] == [h.total_size, h.arena_size]


def test_a_weights_update_with_the_same_structure_still_fits(built) -> None:
    """The pool is the module's own: new weights, same image."""
    _, data, contract = built
    h = read_module(data).header
    new = bytearray(data)
    new[h.pool_offset:h.pool_offset + 4] = struct.pack("<f", 3.0)
    new[8:12] = struct.pack("<I", zlib.crc32(bytes(new[12:])))
    read_module(bytes(new), image=contract)
    assert layout_crc(bytes(new)) == contract.layout_crc


def _patched(data: bytes, offset: int, value: int) -> bytes:
    d = bytearray(data)
    struct.pack_into("<I", d, offset, value)
    d[8:12] = struct.pack("<I", zlib.crc32(bytes(d[12:])))
    return bytes(d)


def test_any_change_before_the_pool_does_not_fit(built) -> None:
    """Every aligned word of header (after the CRC), signature, commands and constant
    table, changed: the module is rejected, by the comparison with the image's copy or
    by the layout CRC (or, for total_size, as truncated or malformed)."""
    _, data, contract = built
    h = read_module(data).header
    for at in range(fmt.CRC_START, h.pool_offset, 4):
        (old,) = struct.unpack_from("<I", data, at)
        with pytest.raises(ModuleFormatError) as e:
            read_module(_patched(data, at, old ^ 0x10), image=contract)
        want = (Status.TRUNCATED, Status.MALFORMED) if at == fmt.CRC_START else (Status.IMAGE,)
        assert e.value.status in want, at


def test_reader_names_what_does_not_fit(built) -> None:
    _, data, contract = built
    with pytest.raises(ModuleFormatError, match="layout CRC") as e:
        read_module(data, image=ImageContract(contract.target_id, contract.layout_crc ^ 1,
                                              contract.pinned))
    assert e.value.status == Status.IMAGE
    other = bytearray(data)
    struct.pack_into("<I", other, 16, 12345)  # arena_size
    with pytest.raises(ModuleFormatError, match="byte 16 differs") as e:
        read_module(_patched(bytes(other), 16, 12345), image=contract)
    assert e.value.status == Status.IMAGE
    with pytest.raises(ModuleFormatError) as e:
        read_module(data, image=ImageContract(fmt.target_id("x86-64"), contract.layout_crc,
                                              contract.pinned))
    assert e.value.status == Status.TARGET


def test_a_contract_pins_only_a_valid_structure(built) -> None:
    """The C loader trusts what the image pins, so building a contract checks it as the
    reader checks a module: every binding inside its buffer, records well formed, and
    the bytes ending with the command list."""
    _, data, contract = built
    pinned = bytearray(contract.pinned)
    first = read_module(data).commands_offset - fmt.CRC_START
    # The first command's first binding (the input, one word) turned into an arena
    # binding past the arena.
    struct.pack_into("<I", pinned, first + 4, 0 << 30 | 1 << 20)
    with pytest.raises(ValueError, match="pins an invalid module"):
        ImageContract(contract.target_id, contract.layout_crc, bytes(pinned))
    with pytest.raises(ValueError, match="end at"):
        ImageContract(contract.target_id, contract.layout_crc, contract.pinned + bytes(4))
    with pytest.raises(ValueError, match="whole words"):
        ImageContract(contract.target_id, contract.layout_crc, contract.pinned[:-2])


def test_image_contract_refuses_a_module_that_is_not_the_programs(built) -> None:
    """The module the image pins must bind what the program's code accesses."""
    program, data, _ = built
    m = read_module(data)
    swapped = pack_module("cortex-m4", m.inputs, m.outputs, [c.to_entry() for c in m.constants],
                          m.commands[::-1], m.header.arena_size)
    with pytest.raises(ValueError, match="not the ones the image's code runs"):
        image_contract(program, swapped, fmt.target_id("cortex-m4"))
