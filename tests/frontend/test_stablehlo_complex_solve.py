"""Complex triangular_solve (frontend/stablehlo_complex_solve.py: one real solve of the
2n x 2n block matrix) for every left_side / lower / transpose_a / unit_diagonal, with a
batch dim, against numpy's dense solve of the same triangle: on the reference and on
the boards."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

N, M = 3, 2
CASES = list(itertools.product([True, False], [True, False],
                               ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"], [False, True]))


def _operands(dt: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)

    def c(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)

    a = c(2, N, N)
    a[:, range(N), range(N)] += (2 + 1j)  # well conditioned: a dominant diagonal
    return a, c(2, N, M), c(2, M, N)


def _want(a: np.ndarray, rhs: np.ndarray, left: bool, lower: bool, mode: str,
          unit: bool) -> np.ndarray:
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t[:, range(N), range(N)] = 1
    t = {"NO_TRANSPOSE": t, "TRANSPOSE": np.swapaxes(t, -1, -2),
         "ADJOINT": np.conj(np.swapaxes(t, -1, -2))}[mode]
    if left:
        return np.linalg.solve(t, rhs)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(rhs, -1, -2)),
                       -1, -2)


def _model(ty: str) -> str:
    a, bl, br = (f"tensor<2x{s}x{ty}>" for s in (f"{N}x{N}", f"{N}x{M}", f"{M}x{N}"))
    lines, results = [], []
    for k, (left, lower, mode, unit) in enumerate(CASES):
        rhs, t = ("%l", bl) if left else ("%r", br)
        lines.append(f'  %x{k} = "stablehlo.triangular_solve"(%a, {rhs}) {{left_side = '
                     f"{str(left).lower()}, lower = {str(lower).lower()}, unit_diagonal = "
                     f"{str(unit).lower()}, transpose_a = #stablehlo<transpose {mode}>}} : "
                     f"({a}, {t}) -> {t}")
        results.append((f"%x{k}", t))
    sig = ", ".join(t for _, t in results)
    return (f"func.func @main(%a: {a}, %l: {bl}, %r: {br}) -> ({sig}) {{\n"
            + "\n".join(lines) + f"\n  return {', '.join(v for v, _ in results)} : {sig}\n}}\n")


@pytest.mark.parametrize("board", [None, "cortex-m4", "x86-64"])
@pytest.mark.parametrize("ty, dt, rtol", [("complex<f64>", np.complex128, 1e-12),
                                          ("complex<f32>", np.complex64, 1e-5)])
def test_complex_triangular_solve(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  board: str | None, ty: str, dt: type, rtol: float) -> None:
    """Every form within a few roundings of numpy's (rtol: f64's 1e-12, f32's 1e-5 for
    a 3x3 substitution with a dominant diagonal), atol at the same scale."""
    a, left_rhs, right_rhs = _operands(dt)
    model = tmp_path / "m.mlir"
    model.write_text(_model(ty))
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, input_0=a, input_1=left_rhs, input_2=right_rhs)
    where = ["--reference"] if board is None else ["--board", board, "--check", "-o",
                                                   str(tmp_path / board)]
    rc = run_cli.main([str(model), *where, "--inputs", str(inputs), "--save-outputs",
                       str(outputs)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    wide = [x.astype(np.complex128) for x in (a, left_rhs, right_rhs)]
    with np.load(outputs) as z:
        for k, (left, lower, mode, unit) in enumerate(CASES):
            want = _want(wide[0], wide[1] if left else wide[2], left, lower, mode, unit)
            np.testing.assert_allclose(z[f"output_{k}"], want, rtol=rtol, atol=rtol,
                                       err_msg=str(CASES[k]))


def test_ill_shaped_complex_solve_is_a_located_error(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    t, bad = "tensor<2x2xcomplex<f32>>", "tensor<3x1xcomplex<f32>>"
    model = tmp_path / "m.mlir"
    model.write_text(f"func.func @main(%a: {t}, %b: {bad}) -> {bad} {{\n"
                     f'  %x = "stablehlo.triangular_solve"(%a, %b) {{left_side = true, '
                     f"lower = true, unit_diagonal = false, transpose_a = "
                     f"#stablehlo<transpose NO_TRANSPOSE>}} : ({t}, {bad}) -> {bad}\n"
                     f"  return %x : {bad}\n}}\n")
    rc = run_cli.main([str(model), "--reference"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{model}:2:" in err and "'stablehlo.triangular_solve'" in err, err
    assert "b's dim 0 must be 2 (a's size) when left_side is true, not 3" in err, err
    assert "Traceback" not in err
