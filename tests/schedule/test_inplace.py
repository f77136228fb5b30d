"""The arena planner's in-place reuse (schedule/inplace.py): a result takes the buffer of
an operand that dies at its command when the kernel reads that operand only at the
result's own index; windowed ops and operands still live keep their own buffers. The
arena is compared with a plan without in-place reuse and with its lower bound, and the
in-place code computes the reference's outputs under QEMU."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.cli import run
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph
from toolchain.schedule import Program, schedule

_CONV = """stablehlo.convolution({x}, {k})
         dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {{stride = [1, 1], pad = [[{p}, {p}], [{p}, {p}]]}}
         {{batch_group_count = 1 : i64, feature_group_count = {g} : i64}}"""


def _conv(x: str, k: str, pad: int, groups: int = 1) -> str:
    return _CONV.format(x=x, k=k, p=pad, g=groups)


# y = conv(x) lives in the arena (1 KiB); y * tanh(sum(y)) reads y at its own index and
# is y's last use: it may take y's buffer. The second conv writes the output. (tanh
# keeps the scale below 1: y times its raw sum would make outputs in the thousands that
# two f32 summation orders cancel apart by more than --check's bound.)
SCALED = f"""func.func @main(%x: tensor<1x8x8x4xf32>, %k1: tensor<3x3x4x4xf32>,
                %k2: tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> {{
  %y = {_conv("%x", "%k1", 1)} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x8x8x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0, 1, 2, 3]
       : (tensor<1x8x8x4xf32>, tensor<f32>) -> tensor<f32>
  %t = stablehlo.tanh %s : tensor<f32>
  %b = stablehlo.broadcast_in_dim %t, dims = [] : (tensor<f32>) -> tensor<1x8x8x4xf32>
  %w = stablehlo.multiply %y, %b : tensor<1x8x8x4xf32>
  %o = {_conv("%w", "%k2", 0)} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  return %o : tensor<1x6x6x4xf32>
}}
"""
# The same, but y is read again after the multiply: its buffer is not free to take.
STILL_LIVE = SCALED.replace(
    "  return %o : tensor<1x6x6x4xf32>",
    "  %y2 = " + _conv("%y", "%k2", 0)
    + " : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>\n"
    "  %r = stablehlo.add %o, %y2 : tensor<1x6x6x4xf32>\n"
    "  return %r : tensor<1x6x6x4xf32>")
# A 3x3 depthwise convolution of y (its last use): it reads y's neighbours, which its
# own earlier stores would have overwritten, so it keeps a buffer of its own.
DEPTHWISE = f"""func.func @main(%x: tensor<1x8x8x4xf32>, %k1: tensor<3x3x4x4xf32>,
                %kd: tensor<3x3x1x4xf32>, %k2: tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> {{
  %y = {_conv("%x", "%k1", 1)} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x8x8x4xf32>
  %d = {_conv("%y", "%kd", 1, 4)}
       : (tensor<1x8x8x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x8x8x4xf32>
  %o = {_conv("%d", "%k2", 0)} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
  return %o : tensor<1x6x6x4xf32>
}}
"""
Y_BYTES = 8 * 8 * 4 * 4  # one 1x8x8x4 f32 activation


def _program(tmp_path: Path, text: str, in_place: bool = True) -> Program:
    model = tmp_path / "m.mlir"
    model.write_text(text)
    return schedule(prepare_graph(load_graph(model)), in_place=in_place)


def _step(program: Program, name: str):
    return next(s for s in program.steps if name in s.kernel.name)


def test_an_element_wise_result_takes_its_dying_operands_buffer(tmp_path: Path) -> None:
    own = _program(tmp_path, SCALED, in_place=False)
    shared = _program(tmp_path, SCALED)
    mul = _step(shared, "multiply")
    operand, result = mul.buffers[0], mul.buffers[-1]
    assert operand.kind == result.kind == "arena" and operand.index == result.index
    # y, the 4-byte sum (16 aligned) and w: in place w is y's buffer.
    assert own.arena_size == 2 * Y_BYTES + 16
    assert shared.arena_size == Y_BYTES + 16
    # No plan of these live ranges can do better, and this one reaches the bound.
    assert shared.arena_lower_bound == shared.arena_size
    assert own.arena_lower_bound == own.arena_size


def test_an_operand_read_later_keeps_its_buffer(tmp_path: Path) -> None:
    program = _program(tmp_path, STILL_LIVE)
    mul = _step(program, "multiply")
    assert mul.buffers[0].index != mul.buffers[-1].index
    assert program.arena_size >= program.arena_lower_bound >= 2 * Y_BYTES


def test_a_windowed_op_keeps_its_own_buffer(tmp_path: Path) -> None:
    program = _program(tmp_path, DEPTHWISE)
    dw = program.steps[1]
    assert "convolution" in dw.kernel.name
    src, dst = dw.buffers[0], dw.buffers[-1]
    assert src.kind == dst.kind == "arena" and src.index != dst.index
    assert program.arena_size == _program(tmp_path, DEPTHWISE, in_place=False).arena_size


def test_the_in_place_code_computes_the_reference(tmp_path: Path, capsys) -> None:
    missing = [t for t in ("clang", "ld.lld", "qemu-system-arm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    model = tmp_path / "scaled.mlir"
    model.write_text(SCALED)
    assert run.main([str(model), "--board", "cortex-m4", "--check", "-o",
                     str(tmp_path / "fw")]) == 0
    assert "check: outputs match the reference" in capsys.readouterr().out


def test_resnet8_arena_shrinks(tmp_path: Path) -> None:
    """The shared resnet8: each residual add writes over a dying activation, so two
    64 KiB activations are live at once instead of three."""
    model = MODELS_DIR / "jax" / "resnet8.mlir"
    if not have_models() or not model.is_file():
        pytest.skip(MISSING_REASON)
    own = schedule(prepare_graph(load_graph(model)), in_place=False)
    shared = schedule(prepare_graph(load_graph(model)))
    assert shared.arena_size < own.arena_size
    assert own.arena_lower_bound <= own.arena_size
    assert shared.arena_lower_bound <= shared.arena_size
