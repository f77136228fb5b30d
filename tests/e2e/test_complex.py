"""complex<f32> under QEMU: add, subtract, multiply, divide, negate, abs, exponential,
log, sqrt, sign, compare EQ / NE, complex / real / imag, convert (to complex<f64>, to
i32, from f32), constants, select, and reshape / transpose / slice / concatenate / pad
over complex tensors, and complex<f64> multiply, divide, exp, log, sqrt, abs and a
length-3 fft (tests/e2e/data/complex/ops.mlir), built once per board for
cortex-m4, riscv32, aarch64 and x86-64 and checked with `minirt-run --check` against
the reference (numpy's complex arithmetic in complex128, rounded once): each part like
numpy.isclose(rtol=1e-5, atol=1e-6), the bound --check holds every float to. The
inputs hold the hard cases: signed zeros, a zero divisor, parts near f32's range
(Smith's division and the scaled modulus must not overflow), the negative real axis
(sqrt's and log's branch cut).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "complex"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]


def _inputs() -> dict[str, np.ndarray]:
    a = np.array([[1 + 2j, -3 + 0j, 0j], [complex(-0.0, 0.0), 2.5 - 1e20j, 0j]],
                 np.complex64)
    a[1, 2] = complex(-4.0, -0.0)  # just below the branch cut: sqrt gives -2i
    b = np.array([[1 + 2j, 0.5 - 0.25j, 1e-3 + 3e30j], [0j, 3e30 + 1j, -2.75 + 1.5j]],
                 np.complex64)
    re = np.array([[1, 2, 3], [-1, -2, 0.5]], np.float32)
    im = np.array([[0, 3, -1], [2, -5, 0.25]], np.float32)
    return {"input_0": a, "input_1": b, "input_2": re, "input_3": im}


@pytest.mark.parametrize("board", BOARDS)
def test_complex_ops_on_board(board: str, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", **_inputs())
    rc = run_cli.main([str(DATA / "ops.mlir"), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    got = np.load(tmp_path / "out.npz")
    # Spot checks against the spec's semantics, independent of the reference.
    a, b = _inputs()["input_0"], _inputs()["input_1"]
    np.testing.assert_allclose(got["output_2"][0], a[0] * b[0], rtol=1e-6)
    assert got["output_3"][0, 0] == 1  # (1 + 2i) / (1 + 2i)
    assert np.isnan(got["output_3"][1, 0].real)  # 0 / 0
    assert got["output_8"][1, 2] == complex(0, -2)  # sqrt(-4 - 0i)
    np.testing.assert_array_equal(got["output_10"], [[True, False, False],
                                                     [True, False, False]])
    assert got["output_15"].dtype == np.complex128
    assert got["output_5"][1, 1] == np.float32(1e20)  # |2.5 - 1e20 i| without overflow
    assert got["output_24"].dtype == np.complex128
    np.testing.assert_allclose(got["output_24"][0], a[0].astype(np.complex128) ** 2,
                               rtol=1e-15)


def test_complex_in_an_unsupported_op_is_a_located_error(tmp_path: Path, capsys) -> None:
    model = tmp_path / "m.mlir"
    # cholesky of complex: the spec allows it, minirt does not take it (yet).
    model.write_text("func.func @main(%a: tensor<2x2xcomplex<f32>>) -> "
                     "tensor<2x2xcomplex<f32>> {\n"
                     "  %0 = stablehlo.cholesky %a, lower = true : tensor<2x2xcomplex<f32>>\n"
                     "  return %0 : tensor<2x2xcomplex<f32>>\n}\n")
    rc = run_cli.main([str(model), "--reference"])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{model}:2:" in err and "'stablehlo.cholesky'" in err and "complex" in err
    assert "Traceback" not in err
