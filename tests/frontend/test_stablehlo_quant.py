"""StableHLO on !quant.uniform types lands in the int8 graph with TFLite's integer
arithmetic (toolchain/frontend/stablehlo_quant.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.loader import load_graph
from toolchain.quant import fixedpoint as fp
from toolchain.quant import tflm
from toolchain.reference import run_graph

Q_IN = "!quant.uniform<i8:f32, 0.05:-3>"
Q_W = "!quant.uniform<i8:f32:3, {0.02:0, 0.03:0, 0.01:0, 0.05:0}>"
Q_OUT = "!quant.uniform<i8:f32, 0.1:7>"
W_HWIO = np.arange(-36, 36).reshape(3, 3, 2, 4) * 3 % 255 - 127  # deterministic int8 values

CONV = f"""
func.func @main(%x: tensor<1x6x5x2xf32>) -> tensor<1x6x5x4xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<1x6x5x2xf32>) -> tensor<1x6x5x2x{Q_IN}>
  %w = stablehlo.constant dense<{W_HWIO.tolist()}> : tensor<3x3x2x4x{Q_W}>
  %c = stablehlo.convolution(%q, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}}
       {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
       : (tensor<1x6x5x2x{Q_IN}>, tensor<3x3x2x4x{Q_W}>) -> tensor<1x6x5x4x{Q_OUT}>
  %d = stablehlo.uniform_dequantize %c : (tensor<1x6x5x4x{Q_OUT}>) -> tensor<1x6x5x4xf32>
  return %d : tensor<1x6x5x4xf32>
}}
"""


def _model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.mlir"
    path.write_text(text)
    return path


def _quantize_spec(x: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """StableHLO's quantize(): x / scale + zp, clamped, rounded to nearest even."""
    v = x.astype(np.float32) / np.float32(scale) + np.float32(zp)
    return np.rint(np.clip(v, -128, 127)).astype(np.int8)


def test_quantized_convolution_is_tflite_arithmetic(tmp_path: Path) -> None:
    graph = load_graph(_model(tmp_path, CONV))
    x = np.random.default_rng(1).standard_normal((1, 6, 5, 2)).astype(np.float32) * 3
    got = run_graph(graph, [x])[0]
    q = _quantize_spec(x, 0.05, -3)
    mult, shift = tflm.conv_params(0.05, [0.02, 0.03, 0.01, 0.05], 0.1)
    y = tflm.conv2d(q, W_HWIO.transpose(3, 0, 1, 2).astype(np.int8), None, strides=(1, 1),
                    padding="SAME", input_zp=-3, output_zp=7, multipliers=mult, shifts=shift)
    np.testing.assert_array_equal(got, tflm.dequantize(y, 0.1, 7))


ACC = """
func.func @main(%x: tensor<2x6xf32>) -> tensor<2x3xf32> {
  %q = stablehlo.uniform_quantize %x : (tensor<2x6xf32>) -> tensor<2x6x!quant.uniform<i8:f32, 0.04:5>>
  %w = stablehlo.constant dense<[[1, -2, 3], [4, 5, -6], [7, -8, 9], [-10, 11, 12], [13, 14, -15], [16, -17, 18]]> : tensor<6x3x!quant.uniform<i8:f32, 0.5:0>>
  %acc = stablehlo.dot_general %q, %w, contracting_dims = [1] x [0]
       : (tensor<2x6x!quant.uniform<i8:f32, 0.04:5>>, tensor<6x3x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<2x3x!quant.uniform<i32:f32, 0.02:0>>
  %b = stablehlo.constant dense<[[100, -200, 300]]> : tensor<1x3x!quant.uniform<i32:f32, 0.02:0>>
  %bb = stablehlo.broadcast_in_dim %b, dims = [0, 1] : (tensor<1x3x!quant.uniform<i32:f32, 0.02:0>>) -> tensor<2x3x!quant.uniform<i32:f32, 0.02:0>>
  %s = stablehlo.add %acc, %bb : tensor<2x3x!quant.uniform<i32:f32, 0.02:0>>
  %o = stablehlo.uniform_quantize %s : (tensor<2x3x!quant.uniform<i32:f32, 0.02:0>>) -> tensor<2x3x!quant.uniform<i8:f32, 0.3:-4>>
  %d = stablehlo.uniform_dequantize %o : (tensor<2x3x!quant.uniform<i8:f32, 0.3:-4>>) -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}
"""  # noqa: E501


def test_accumulator_bias_and_requantization(tmp_path: Path) -> None:
    graph = load_graph(_model(tmp_path, ACC))
    x = np.random.default_rng(2).standard_normal((2, 6)).astype(np.float32) * 2
    got = run_graph(graph, [x])[0]
    q = _quantize_spec(x, 0.04, 5).astype(np.int64)
    w = np.array([[1, -2, 3], [4, 5, -6], [7, -8, 9], [-10, 11, 12], [13, 14, -15],
                  [16, -17, 18]], np.int64)
    acc = (q - 5) @ w + np.array([100, -200, 300])
    m, s = fp.quantize_multiplier(float(np.float32(0.02)) / float(np.float32(0.3)))
    out = np.clip(fp.multiply_by_quantized_multiplier(acc, m, s).astype(np.int64) - 4, -128, 127)
    np.testing.assert_array_equal(got, tflm.dequantize(out, 0.3, -4))


ADD = """
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %qa = stablehlo.uniform_quantize %a : (tensor<8xf32>) -> tensor<8x!quant.uniform<i8:f32, 0.07:-3>>
  %qb = stablehlo.uniform_quantize %b : (tensor<8xf32>) -> tensor<8x!quant.uniform<i8:f32, 0.11:25>>
  %s = stablehlo.add %qa, %qb : (tensor<8x!quant.uniform<i8:f32, 0.07:-3>>, tensor<8x!quant.uniform<i8:f32, 0.11:25>>) -> tensor<8x!quant.uniform<i8:f32, 0.15:4>>
  %d = stablehlo.uniform_dequantize %s : (tensor<8x!quant.uniform<i8:f32, 0.15:4>>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}
"""  # noqa: E501


def test_quantized_add_is_tflite_add(tmp_path: Path) -> None:
    graph = load_graph(_model(tmp_path, ADD))
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(8).astype(np.float32) * 4 for _ in range(2))
    got = run_graph(graph, [a, b])[0]
    qa, qb = _quantize_spec(a, 0.07, -3), _quantize_spec(b, 0.11, 25)
    want = tflm.add(qa, qb, tflm.add_params(0.07, -3, 0.11, 25, 0.15, 4))
    np.testing.assert_array_equal(got, tflm.dequantize(want, 0.15, 4))


@pytest.mark.parametrize("body, message", [
    ("%m = stablehlo.multiply %q, %q : tensor<4x!quant.uniform<i8:f32, 0.1:0>>",
     "'stablehlo.multiply' on quantized types is not supported"),
    ("%m = stablehlo.reshape %q : (tensor<4x!quant.uniform<i8:f32, 0.1:0>>) -> "
     "tensor<2x2x!quant.uniform<i8:f32, 0.2:0>>", "needs one quantization"),
    ("%m = stablehlo.uniform_dequantize %x : (tensor<4xf32>) -> tensor<4xf32>",
     "the operand must have a quantized type"),
])
def test_unsupported_quantized_ops_are_located_errors(tmp_path: Path, body: str,
                                                      message: str) -> None:
    text = f"""func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %q = stablehlo.uniform_quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.1:0>>
  {body}
  return %x : tensor<4xf32>
}}
"""
    with pytest.raises(CompileError) as e:
        load_graph(_model(tmp_path, text))
    assert message in e.value.message and e.value.loc is not None
    assert e.value.loc.line_col[0] == 3


@pytest.mark.parametrize("board", ["x86-64", "cortex-m4"])
def test_quantized_models_run_and_check_on_boards(board: str, tmp_path: Path, capsys) -> None:
    for i, text in enumerate((CONV, ACC)):
        model = tmp_path / f"q{i}.mlir"
        model.write_text(text)
        rc = run_cli.main([str(model), "--board", board, "--check", "-o", str(tmp_path / f"fw{i}")])
        out = capsys.readouterr()
        assert rc == 0, out.err
        assert "check: outputs match the reference" in out.out


Q_AXIS_IN = "!quant.uniform<i8:f32:1, {0.1:-30, 0.5:-20, 0.25:3}>"
Q_AXIS_OUT = "!quant.uniform<i8:f32:1, {0.1:-20, 0.2:-30, 0.3:10}>"
BITCAST_REQUANT = f"""
func.func @main(%s: tensor<4x3xi8>) -> (tensor<4x3xi8>, tensor<4x3xui8>) {{
  %q = stablehlo.bitcast_convert %s : (tensor<4x3xi8>) -> tensor<4x3x{Q_AXIS_IN}>
  %r = stablehlo.uniform_quantize %q : (tensor<4x3x{Q_AXIS_IN}>) -> tensor<4x3x{Q_AXIS_OUT}>
  %b = stablehlo.bitcast_convert %r : (tensor<4x3x{Q_AXIS_OUT}>) -> tensor<4x3xi8>
  %u = stablehlo.bitcast_convert %r : (tensor<4x3x{Q_AXIS_OUT}>) -> tensor<4x3xui8>
  return %b, %u : tensor<4x3xi8>, tensor<4x3xui8>
}}
"""
STORED = np.array([[10, 10, 10], [-128, 127, 1], [55, -70, 99], [-3, 4, -127]], np.int8)


def _requantized_by_the_spec() -> np.ndarray:
    """dequantize with the input's per-channel parameters, quantize with the output's
    (the spec's definition, float64: none of these values is near a rounding tie)."""
    real = (STORED.astype(np.float64) - [-30, -20, 3]) * [0.1, 0.5, 0.25]
    v = np.rint(real / [0.1, 0.2, 0.3] + [-20, -30, 10])
    return np.clip(v, -128, 127).astype(np.int8)


@pytest.mark.parametrize("board", [None, "cortex-m4", "x86-64"])
def test_bitcast_of_quantized_is_its_storage_and_per_axis_requantize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], board: str | None) -> None:
    """bitcast_convert to / from a quantized type moves the storage's bits (i8 stays,
    ui8 is the same byte); requantizing per axis rescales channel by channel."""
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=STORED)
    where = ["--reference"] if board is None else ["--board", board, "--check", "-o",
                                                   str(tmp_path / board)]
    rc = run_cli.main([str(_model(tmp_path, BITCAST_REQUANT)), *where, "--inputs",
                       str(inputs), "--save-outputs", str(outputs)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    want = _requantized_by_the_spec()
    with np.load(outputs) as z:
        np.testing.assert_array_equal(z["output_0"], want)
        np.testing.assert_array_equal(z["output_1"], want.view(np.uint8))
