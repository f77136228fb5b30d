"""bitcast_convert to and from complex types (frontend/stablehlo_complex_bitcast.py):
the bits are numpy's `.view` of the same memory (a complex value is its real part's
bits, then its imaginary part's), on the reference and bit for bit on the boards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

C128 = np.array([complex(np.uint64(0x0123456789ABCDEF).view(np.float64),
                         np.uint64(0x11111111).view(np.float64)),
                 complex(-2.5, 1e300), complex(np.nan, -0.0)], np.complex128)
C64 = np.array([[1.5 - 2j, np.inf + 3j], [-0.0 + 0j, 7e-40 + 1e30j]], np.complex64)
F64 = np.array([1.0, -3.25, 6.02e23], np.float64)

MODEL = """
func.func @main(%a: tensor<3xcomplex<f64>>, %b: tensor<2x2xcomplex<f32>>, %c: tensor<3xf64>)
    -> (tensor<3x2xcomplex<f32>>, tensor<2xcomplex<f64>>, tensor<2x2xi64>,
        tensor<3xcomplex<f32>>, tensor<2x2x2xui32>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<3xcomplex<f64>>) -> tensor<3x2xcomplex<f32>>
  %1 = stablehlo.bitcast_convert %b : (tensor<2x2xcomplex<f32>>) -> tensor<2xcomplex<f64>>
  %2 = stablehlo.bitcast_convert %b : (tensor<2x2xcomplex<f32>>) -> tensor<2x2xi64>
  %3 = stablehlo.bitcast_convert %c : (tensor<3xf64>) -> tensor<3xcomplex<f32>>
  %4 = stablehlo.bitcast_convert %b : (tensor<2x2xcomplex<f32>>) -> tensor<2x2x2xui32>
  return %0, %1, %2, %3, %4 : tensor<3x2xcomplex<f32>>, tensor<2xcomplex<f64>>,
      tensor<2x2xi64>, tensor<3xcomplex<f32>>, tensor<2x2x2xui32>
}
"""


def _bits(a: np.ndarray) -> np.ndarray:
    """The raw bytes of each element (NaN payloads and -0 compared exactly)."""
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("board", [None, "cortex-m4", "x86-64"])
def test_complex_bitcasts_are_the_memory_view(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              board: str | None) -> None:
    model = tmp_path / "m.mlir"
    model.write_text(MODEL)
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=C128, input_1=C64, input_2=F64)
    where = ["--reference"] if board is None else ["--board", board, "--check", "-o",
                                                   str(tmp_path / board)]
    rc = run_cli.main([str(model), *where, "--inputs", str(inputs), "--save-outputs",
                       str(outputs)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    want = [C128.view(np.complex64).reshape(3, 2), C64.view(np.complex128).reshape(2),
            C64.view(np.int64).reshape(2, 2), F64.view(np.complex64),
            C64.view(np.uint32).reshape(2, 2, 2)]
    with np.load(outputs) as z:
        for k, w in enumerate(want):
            got = z[f"output_{k}"]
            if w.dtype.kind == "c":
                got = got.view(w.dtype).reshape(w.shape) if got.dtype != w.dtype else got
            assert got.shape == w.shape, k
            np.testing.assert_array_equal(_bits(got), _bits(w), err_msg=f"output_{k}")
