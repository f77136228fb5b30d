"""A module with any single corrupted byte is rejected by the runtime under QEMU, with
the status code the Python reader predicts, and never crashes or hangs.

The firmware is linked once; each case patches one byte of `mrt_image_module` inside
the ELF (the same bytes the loader reads from flash) and runs the image.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from toolchain.emu.run import run_image
from toolchain.link.inspect import image_contract_of, module_span
from toolchain.module import BindingKind
from toolchain.module import format as fmt
from toolchain.module.format import Status
from toolchain.module.reader import ModuleFormatError, read_module
from toolchain.pipeline import build_model


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
@pytest.mark.parametrize("boot_check", ["small", "layout"])
def test_every_corrupted_byte_is_rejected(board: str, boot_check: str, tmp_path: Path) -> None:
    """With the whole CRC (small, fast) every corrupted byte is refused. With the
    default layout check every byte before the weights' pool is, but the header's CRC
    field (never read) and the pool (trusted as flashed) load, and the run finishes."""
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
    result = build_model(model, board, tmp_path / "fw", log=lambda _: None,
                         boot_check=boot_check)
    full_crc = fmt.BOOT_CHECKS[boot_check].full_crc
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
            read_module(bytes(bad), image=contract, check_crc=full_crc,
                        loader_only=not full_crc)
            want = int(Status.OK)
        except ModuleFormatError as e:
            want = int(e.status)
        trusted = i >= contract.pool_offset or i in range(fmt.CRC_FIELD_OFFSET, fmt.CRC_START)
        assert (want == Status.OK) == (trusted and not full_crc), \
            f"byte {i}: the reader predicts status {want}"
        patched.write_bytes(elf[:offset + i] + bytes([bad[i]]) + elf[offset + i + 1:])
        patched.chmod(0o755)
        run = run_image(result.board, patched, inputs, count_instructions=False, timeout=20)
        assert run.exit_code == want, f"byte {i}: exit {run.exit_code}, expected {want}: " \
                                      f"{run.console}"


REDUCE_SUBTRACT = """
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>
  %r = stablehlo.subtract %x, %b : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
"""


def _edited(module: bytes, edit) -> bytes:
    data = bytearray(module)
    edit(data)
    struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, zlib.crc32(data[fmt.CRC_START:]))
    return bytes(data)


@pytest.mark.parametrize("board", ["x86-64", "cortex-m4"])
def test_the_reviews_reproductions_are_rejected(board: str, tmp_path: Path) -> None:
    """Issue 11's three edits of a valid module, CRC recomputed: each used to load and
    then write outside a buffer or read past .bss; each is refused by the loader (the
    image holds the structure they change)."""
    model = tmp_path / "reduce_subtract.mlir"
    model.write_text(REDUCE_SUBTRACT)
    result = build_model(model, board, tmp_path / "fw", log=lambda _: None)
    m = read_module(result.module)
    arena = [(ci, bi) for ci, c in enumerate(m.commands) for bi, b in enumerate(c.bindings)
             if b.kind == BindingKind.ARENA]
    assert len(m.commands) == 2 and len(arena) == 2  # the reduce writes it, subtract reads

    def binding_at(ci: int, bi: int) -> int:
        at = m.commands_offset
        for c in m.commands[:ci]:
            at += fmt.command_size(b.kind for b in c.bindings)
        bindings = m.commands[ci].bindings
        return at + fmt.command_size(b.kind for b in bindings[:bi])

    def arena_bindings_past_the_arena(d: bytearray) -> None:
        for ci, bi in arena:
            struct.pack_into("<II", d, binding_at(ci, bi), m.header.arena_size, 0)

    def arena_binding_into_constants(d: bytearray) -> None:
        ci, bi = arena[0]
        (ref,) = struct.unpack_from("<I", d, binding_at(ci, bi))
        struct.pack_into("<I", d, binding_at(ci, bi), 1 << 30 | ref & 0x3FFFFFFF)

    def output_size_grown(d: bytearray) -> None:
        # output_0's record (after input_0's: head, dims 4, 4; default names, none
        # stored): its first dim, 4, becomes 16.
        struct.pack_into("<I", d, fmt.HEADER_SIZE + 12 + 4, 16)

    elf = result.elf.read_bytes()
    offset, size = module_span(result.elf)
    patched = tmp_path / "patched.elf"
    for edit in (arena_bindings_past_the_arena, arena_binding_into_constants,
                 output_size_grown):
        bad = _edited(result.module, edit)
        with pytest.raises(ModuleFormatError) as e:
            read_module(bad, image=image_contract_of(result.elf), loader_only=True)
        # Refused for what it changes, not for a broken header or CRC.
        assert e.value.status == Status.IMAGE, f"{edit.__name__}: {e.value}"
        patched.write_bytes(elf[:offset] + bad + elf[offset + size:])
        patched.chmod(0o755)
        run = run_image(result.board, patched, [bytes(64)], count_instructions=False, timeout=20)
        assert run.exit_code == e.value.status, f"{edit.__name__}: {run.diagnosis}"
        assert run.outputs is None, f"{edit.__name__}: the firmware wrote outputs"
