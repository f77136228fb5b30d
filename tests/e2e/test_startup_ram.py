"""Firmware works from whatever RAM holds at reset: nothing relies on a zeroed .bss.

The bare-metal start-ups (runtime_c/platform/cortex_m, riscv) do not zero .bss (nor copy
.data, which the linker script refuses): the arena and the I/O buffers, the only .bss of
an image, are each written before they are read. QEMU zeroes .bss when it loads the ELF,
so these runs boot the flashed .bin instead (as a board would) with the RAM filled with
a pattern first, and must give the outputs numpy gives. A probe image shows the pattern
really is what a program finds in .bss at main.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from toolchain.emu.run import IN_FILE, OUT_FILE, boot_image, qemu_command
from toolchain.link import link_firmware
from toolchain.link.build import LinkError
from toolchain.pipeline import build_model
from toolchain.target import Board, load_board

# One board per start-up: Armv7E-M with FPU, Armv6-M, RISC-V.
BOARDS = ("cortex-m4", "cortex-m0plus", "riscv32")
PATTERN = 0xA5
FILL = 0x10000  # bytes of RAM from its origin: all of .bss for these small images

# The reduce leaves its row sums in the arena for the subtract; the weights are a
# constant. Every buffer kind is there.
MODEL = """
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %w = stablehlo.constant dense<[[1.0, -2.0, 3.0, 0.5]]> : tensor<1x4xf32>
  %wb = stablehlo.broadcast_in_dim %w, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<4x4xf32>
  %m = stablehlo.multiply %x, %wb : tensor<4x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>
  %r = stablehlo.subtract %m, %b : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
"""

PROBE = """
#include <stdint.h>
/* Zero-initialized: a start-up that zeroed .bss would make this 0. */
static volatile uint32_t probe[4];
int main(void) {
  for (int i = 0; i < 4; i++)
    if (probe[i] != 0xA5A5A5A5u) return 1;
  return 0;
}
"""


def _run_on_dirty_ram(board: Board, bin_path: Path, elf: Path, inputs: bytes
                      ) -> tuple[int, bytes | None]:
    """Boots the .bin with the first FILL bytes of RAM set to PATTERN; the exit status
    and the output file, if written."""
    if shutil.which(board.simulation.qemu) is None:
        pytest.skip(f"{board.simulation.qemu} not installed")
    with tempfile.TemporaryDirectory(prefix="minirt-dirty-") as tmp:
        work = Path(tmp)
        dirt = work / "ram.bin"
        dirt.write_bytes(bytes([PATTERN]) * FILL)
        (work / IN_FILE).write_bytes(inputs)
        cmd = [*qemu_command(board, elf, boot=boot_image(bin_path)), "-device",
               f"loader,file={dirt},addr={board.ram.origin:#x},force-raw=on"]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=board.simulation.timeout)
        out = work / OUT_FILE
        return proc.returncode, (out.read_bytes() if out.is_file() else None)


@pytest.mark.parametrize("name", BOARDS)
def test_a_model_runs_from_dirty_ram(name: str, tmp_path: Path) -> None:
    model = tmp_path / "model.mlir"
    model.write_text(MODEL)
    result = build_model(model, name, tmp_path / "fw", log=lambda _: None)
    x = np.arange(16, dtype=np.float32).reshape(4, 4) - 5.5
    m = x * np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    want = m - m.sum(axis=1, keepdims=True)
    code, out = _run_on_dirty_ram(result.board, result.elf.with_suffix(".bin"), result.elf,
                                  x.tobytes())
    assert code == 0 and out is not None, f"exit {code}"
    got = np.frombuffer(out, np.float32).reshape(4, 4)
    # float32 sums of four products, in the kernel's order: a few ulp of the largest term
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", BOARDS)
def test_the_dirt_is_what_bss_holds_at_main(name: str, tmp_path: Path) -> None:
    board = load_board(name)
    src = tmp_path / "probe.c"
    src.write_text(PROBE)
    linked = link_firmware(board, [], tmp_path / "fw", runtime_parts=("platform",),
                           extra_sources=[src])
    code, _ = _run_on_dirty_ram(board, linked.bin, linked.elf, b"")
    assert code == 0, f"exit {code}: the probe did not find the pattern in .bss"


def test_initialized_variables_are_refused_at_link(tmp_path: Path) -> None:
    """The start-up copies no .data, so an image with some does not link."""
    src = tmp_path / "counter.c"
    src.write_text("int counter = 3;\nint main(void) { return ++counter; }\n")
    with pytest.raises(LinkError, match=r"initialized variables \(.data\)"):
        link_firmware(load_board("cortex-m4"), [], tmp_path / "fw",
                      runtime_parts=("platform",), extra_sources=[src])
