"""Identical dispatches share one function body (toolchain/codegen/image.py).

kws_ref_model repeats one depthwise + pointwise block four times with the same shapes;
its dispatch functions differ only in their names, so the image holds one body each and
every dispatch is a thunk tail-calling it (one table entry per ordinal, as the image
contract wants). These tests show that the bodies are compared by what they compute, not
by name, that the image keeps one body, and that the shared code gives the reference's
outputs under QEMU on cortex-m4 and riscv32 with a per-dispatch profile that still tells
the dispatches apart.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from toolchain.cli import run as run_cli
from toolchain.codegen import emit_image_object
from toolchain.codegen.image import SHARED_PREFIX, build_image_module
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.module import Binding, Command, ImageContract, TensorSig, pack_module
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
T4 = TensorType((4,), F32)


def _add(name: str, c: float) -> Kernel:
    return Kernel(name, (4,), 1, (T4,), T4,
                  Apply("add", (Load(0, (Index(0),)), Const(c, F32)), F32))


# Three commands over one input and one output through the arena: k0 and k1 compute the
# same thing (x + 1) on different buffers, k2 another (x + 2): only its immediate differs.
KERNELS = [_add("d0_add", 1.0), _add("d1_add", 1.0), _add("d2_add", 2.0)]
MODULE = pack_module(
    "cortex-m4", [TensorSig("input_0", "f32", (4,))], [TensorSig("output_0", "f32", (4,))],
    [], [Command(0, [Binding.input(0, 16), Binding.arena(0, 16)]),
         Command(1, [Binding.arena(0, 16), Binding.arena(16, 16)]),
         Command(2, [Binding.arena(16, 16), Binding.output(0, 16)])], arena_size=32)
CONTRACT = ImageContract.of_module(MODULE, 7)


def _functions(target: str) -> dict[str, int]:
    """Defined functions of the image object: name -> size in bytes."""
    obj = emit_image_object(KERNELS, MODULE, CONTRACT, 32, target)
    elf = ELFFile(io.BytesIO(obj))
    return {s.name: s["st_size"] for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"}


def test_bodies_are_compared_by_content_not_name() -> None:
    module = build_image_module(KERNELS, MODULE, CONTRACT, 32, "cortex-m4")
    shared = [f for f in module.functions if f.name.startswith(SHARED_PREFIX)]
    # One body for d0 and d1 (named after the first), none for d2: its constant differs.
    assert [f.name for f in shared] == [SHARED_PREFIX + "d0_add"]
    assert "noinline" in shared[0].attributes
    text = {f.name: str(f) for f in module.functions}
    for name in ("d0_add", "d1_add"):
        assert f'tail call void @"{SHARED_PREFIX}d0_add"' in text[name]
        assert "fadd" not in text[name]
    assert "fadd" in text["d2_add"] and SHARED_PREFIX not in text["d2_add"]


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32", "x86-64", "aarch64"])
def test_thunks_are_one_branch(target: str) -> None:
    """Each sharing dispatch keeps its own symbol (the dispatch table's entry) as one
    tail branch to the body: 4 bytes on Thumb-2 and AArch64, 5 on x86-64, 8 on RISC-V
    (auipc + jr)."""
    fns = _functions(target)
    assert SHARED_PREFIX + "d0_add" in fns
    assert fns["d0_add"] <= 8 and fns["d1_add"] <= 8
    assert fns["d2_add"] > fns["d0_add"]


# Two 3x3 convolutions (padding 1, ReLU) with the same shapes and different weights: two
# dispatches whose code is the same but for the buffers it is given.
MODEL = """func.func @main(%x: tensor<1x6x6x4xf32>, %w1: tensor<3x3x4x4xf32>,
                %w2: tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<1x6x6x4xf32>
  %0 = stablehlo.convolution(%x, %w1)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  %1 = stablehlo.maximum %0, %z : tensor<1x6x6x4xf32>
  %2 = stablehlo.convolution(%1, %w2)
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  %3 = stablehlo.maximum %2, %z : tensor<1x6x6x4xf32>
  return %3 : tensor<1x6x6x4xf32>
}
"""
MACS = 6 * 6 * 4 * 3 * 3 * 4


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sharing") / "two_convs.mlir"
    path.write_text(MODEL)
    return path


@pytest.mark.parametrize("board,qemu", [("cortex-m4", "qemu-system-arm"),
                                        ("riscv32", "qemu-system-riscv32")])
def test_two_identical_dispatches_run_one_body(model: Path, board: str, qemu: str,
                                               tmp_path: Path, capsys) -> None:
    missing = [t for t in ("clang", "ld.lld", qemu) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    out = tmp_path / "fw"
    rc = run_cli.main([str(model), "--board", board, "--check", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "check: outputs match the reference" in text, text
    with (out / "firmware.elf").open("rb") as f:
        syms = {s.name: s["st_size"] for s in ELFFile(f).get_section_by_name(".symtab")
                .iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}
    convs = sorted(n for n in syms if re.fullmatch(r"d\d+_\w*convolution\w*", n))
    bodies = [n for n in syms if n.startswith(SHARED_PREFIX)]
    assert len(convs) == 2 and bodies == [SHARED_PREFIX + convs[0]], sorted(syms)
    assert all(syms[n] <= 8 for n in convs) and syms[bodies[0]] > 100

    # The profile still has a row per dispatch (the thunk it entered), with the same
    # count for the same code on the same shapes, the shared body charged as a callee:
    # the thunk itself is one branch (RISC-V: auipc + jr, as the object leaves it).
    rc = run_cli.main([str(model), "--board", board, "-o", str(out), "--profile", "--json"])
    assert rc == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["dispatches"]
            if "convolution" in r["name"]]
    assert [r["name"] for r in rows] == convs and [r["macs"] for r in rows] == [MACS, MACS]
    assert rows[0]["instructions"] == rows[1]["instructions"] > MACS
    assert all(1 <= r["instructions"] - r["callee_instructions"] <= 2 for r in rows)
