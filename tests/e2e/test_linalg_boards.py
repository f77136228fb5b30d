"""cholesky, triangular_solve, batch_norm_training and batch_norm_grad in firmware: one
image per board holding all of them, run with `minirt-run --check` on cortex-m4,
riscv32, aarch64 and x86-64 against the numpy reference (reference/linalg.py; floats
like numpy.isclose(rtol=1e-5, atol=1e-6), NaN equal to NaN), then the outputs checked
against the mathematics they claim (L L^T = A, op(A) X = B, A z = B after a Cholesky
solve) so a reference that agreed with a wrong rewrite would still fail.

The model: cholesky lower and upper of an f32 batch whose last matrix is not positive
definite (all NaN), an f64 and an f16 cholesky (the latter computed in f32), the four
(side, triangle) combinations of triangular_solve with each transpose_a and
unit_diagonal, a Cholesky solve (cholesky, then a forward and a transposed solve), and
batch_norm_training feeding batch_norm_grad.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.linalg_models import (
    bn_grad_op,
    bn_training_op,
    cholesky_op,
    func,
    solve_op,
    spd,
    triangular,
    ttype,
)
from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli

BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
A, T, B, C, X = (3, 4, 4), (2, 4, 4), (2, 4, 3), (2, 3, 4), (2, 3, 2, 5)
F = (3,)  # X's features (feature_index 1)
# (result, matrix, rhs, left_side, lower, unit_diagonal, transpose_a)
SOLVES = [("%s1", "%tl", "%b", True, True, False, "NO_TRANSPOSE"),
          ("%s2", "%tl", "%c", False, True, True, "TRANSPOSE"),
          ("%s3", "%tu", "%b", True, False, False, "ADJOINT"),
          ("%s4", "%tu", "%c", False, False, True, "NO_TRANSPOSE")]


def model() -> str:
    args = [f"%a: {ttype(A)}", f"%tl: {ttype(T)}", f"%tu: {ttype(T)}", f"%b: {ttype(B)}",
            f"%c: {ttype(C)}", f"%p: {ttype(T)}", f"%d: {ttype((2, 3, 3), 'f64')}",
            f"%x: {ttype(X)}", f"%sc: {ttype(F)}", f"%of: {ttype(F)}", f"%g: {ttype(X)}",
            f"%h: {ttype((2, 3, 3), 'f16')}"]
    body = [cholesky_op("%l", "%a", A, True), cholesky_op("%u", "%a", A, False),
            cholesky_op("%dl", "%d", (2, 3, 3), True, "f64")]
    for r, m, rhs, left, lower, unit, tr in SOLVES:
        body.append(solve_op(r, m, rhs, T, B if left else C, left, lower, unit, tr))
    body += [cholesky_op("%pl", "%p", T, True),  # p z = b: L y = b, then L^T z = y
             solve_op("%y", "%pl", "%b", T, B, True, True, False, "NO_TRANSPOSE"),
             solve_op("%z", "%pl", "%y", T, B, True, True, False, "TRANSPOSE"),
             bn_training_op("%n, %m, %v", "%x", "%sc", "%of", X, 1, 1e-3),
             bn_grad_op("%gx, %gs, %go", "%x", "%sc", "%m", "%v", "%g", X, 1, 1e-3),
             cholesky_op("%hl", "%h", (2, 3, 3), False, "f16")]
    outs = [("%l", ttype(A)), ("%u", ttype(A)), ("%dl", ttype((2, 3, 3), "f64"))]
    outs += [(r, ttype(B if left else C)) for r, _, _, left, *_ in SOLVES]
    outs += [("%z", ttype(B)), ("%n", ttype(X)), ("%m", ttype(F)), ("%v", ttype(F)),
             ("%gx", ttype(X)), ("%gs", ttype(F)), ("%go", ttype(F)),
             ("%hl", ttype((2, 3, 3), "f16"))]
    return func(args, body, [t for _, t in outs], [r for r, _ in outs])


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    a = spd(rng, A)
    a[2, 3, 3] = -50.0  # the last pivot goes negative: that matrix is all NaN
    return [a, triangular(rng, T, True), triangular(rng, T, False),
            rng.standard_normal(B).astype(np.float32),
            rng.standard_normal(C).astype(np.float32), spd(rng, T),
            spd(rng, (2, 3, 3), np.float64),
            (rng.standard_normal(X) * 3 + 1).astype(np.float32),
            rng.standard_normal(F).astype(np.float32), rng.standard_normal(F).astype(np.float32),
            rng.standard_normal(X).astype(np.float32), spd(rng, (2, 3, 3), np.float16)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("linalg")
    (d / "linalg.mlir").write_text(model())
    np.savez(d / "in.npz", **{f"input_{i}": x for i, x in enumerate(inputs())})
    return d


@pytest.mark.parametrize("board", BOARDS)
def test_linalg_on_board(board: str, model_dir: Path, tmp_path: Path, capsys) -> None:
    saved = tmp_path / "out.npz"
    rc = run_cli.main([str(model_dir / "linalg.mlir"), "--board", board, "--check",
                       "-o", str(tmp_path / "fw"), "--inputs", str(model_dir / "in.npz"),
                       "--save-outputs", str(saved)])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(saved)
    ins = np.load(model_dir / "in.npz")
    o = lambda i: out[f"output_{i}"].astype(np.float64)  # noqa: E731
    x = lambda i: ins[f"input_{i}"].astype(np.float64)  # noqa: E731
    low, up = o(0), o(1)
    np.testing.assert_allclose(low[:2] @ np.swapaxes(low[:2], -1, -2), x(0)[:2], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(np.swapaxes(up[:2], -1, -2) @ up[:2], x(0)[:2], rtol=1e-5,
                               atol=1e-5)
    assert np.isnan(low[2]).all() and np.isnan(up[2]).all()
    np.testing.assert_allclose(o(2) @ np.swapaxes(o(2), -1, -2), x(6), rtol=1e-13)
    for k, (_, m, _, left, lower, unit, tr) in enumerate(SOLVES):
        a = x(1 if m == "%tl" else 2)
        a = np.tril(a) if lower else np.triu(a)
        if unit:
            a[..., np.arange(4), np.arange(4)] = 1.0
        if tr != "NO_TRANSPOSE":
            a = np.swapaxes(a, -1, -2)
        sol = o(3 + k)
        np.testing.assert_allclose(a @ sol if left else sol @ a, x(3) if left else x(4),
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x(5) @ o(7), x(3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(o(9), x(7).mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o(10), x(7).var(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    hu = o(14)  # f16, upper: within a few f16 ulp of the input
    np.testing.assert_allclose(np.swapaxes(hu, -1, -2) @ hu, x(11), rtol=4e-3, atol=4e-3)


def test_dump_schedule(model_dir: Path, capsys) -> None:
    # --dump-schedule shows the dispatches the build compiles: the rewritten loops.
    rc = build_cli.main(["--board", "cortex-m4", "--dump-schedule",
                         str(model_dir / "linalg.mlir")])
    out = capsys.readouterr().out
    assert rc == 0 and "dispatches" in out and "dot_general" in out
