"""bitcast_convert to and from i1, whose elements are single bits (the spec's; the
interpreter's bitcast_convert_op_test_i1_to_i64 / _f64_to_i1): element k of the i1 dim
is bit k of the wider value, little-endian. The reference against numpy's bit order,
then the lowered kernels on x86-64 firmware with --check and against the same values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.cli import run as run_cli
from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.reference import run_graph

MODEL = """func.func @main(%b: tensor<2x64xi1>, %x: tensor<2xf64>, %s: tensor<3x16xi1>)
    -> (tensor<2xi64>, tensor<2x64xi1>, tensor<3xbf16>, tensor<3x16xi1>) {
  %0 = stablehlo.bitcast_convert %b : (tensor<2x64xi1>) -> tensor<2xi64>
  %1 = stablehlo.bitcast_convert %x : (tensor<2xf64>) -> tensor<2x64xi1>
  %2 = stablehlo.bitcast_convert %s : (tensor<3x16xi1>) -> tensor<3xbf16>
  %3 = stablehlo.bitcast_convert %2 : (tensor<3xbf16>) -> tensor<3x16xi1>
  return %0, %1, %2, %3 : tensor<2xi64>, tensor<2x64xi1>, tensor<3xbf16>, tensor<3x16xi1>
}
"""
WORDS = np.array([0x0123456789ABCDEF, -2], np.int64)  # the interpreter's value, and -2
BITS = ((WORDS.view(np.uint64)[:, None] >> np.arange(64, dtype=np.uint64)) & 1).astype(bool)
X = np.array([0x0123456789ABCDEF, 0x3FF0000000000000], np.int64).view(np.float64)
BF16 = np.array([0x3F80, 0xC000, 0x7F80], np.uint16)  # 1.0, -2.0, inf
SMALL = ((BF16[:, None] >> np.arange(16, dtype=np.uint16)) & 1).astype(bool)


def _check(outs: list[np.ndarray]) -> None:
    np.testing.assert_array_equal(outs[0], WORDS)
    np.testing.assert_array_equal(outs[1], ((X.view(np.uint64)[:, None] >> np.arange(
        64, dtype=np.uint64)) & 1).astype(bool))
    np.testing.assert_array_equal(outs[2], [1.0, -2.0, np.inf])
    np.testing.assert_array_equal(outs[3], SMALL)


def test_bitcast_i1_on_the_reference() -> None:
    assert BITS[0, :8].tolist() == [True, True, True, True, False, True, True, True]  # 0xEF
    _check(run_graph(import_module(parse_text(MODEL, "b.mlir")), [BITS, X, SMALL]))


def test_bitcast_i1_on_firmware(tmp_path: Path, capsys) -> None:
    (tmp_path / "m.mlir").write_text(MODEL)
    np.savez(tmp_path / "in.npz", input_0=BITS, input_1=X, input_2=SMALL)
    rc = run_cli.main([str(tmp_path / "m.mlir"), "--board", "x86-64", "-o",
                       str(tmp_path / "fw"), "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    out = np.load(tmp_path / "out.npz")
    _check([out[f"output_{k}"] for k in range(4)])
