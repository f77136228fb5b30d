"""f64 tan, expm1, log1p, tanh, logistic, rsqrt, cbrt and atan2 on firmware, computed in
f64 (issue 20: they went through f32, and tan(1.57079632) came out as -2.29e7 where
1.47e8 is right). The values are graph inputs, so nothing is folded at build time: the
firmware's own functions run, on x86-64 (double-precision instructions) and cortex-m4
(an f32-only FPU: every f64 step is a libgcc helper). Each output is held to numpy's
float64 value within 5 ulp: mathlib_f64_more.py's bound (<= 4 ulp of the correctly
rounded result) plus the 1 ulp numpy's libm may be off itself; the host test
tests/codegen/test_codegen_mathlib_f64.py checks the tighter bounds against mpmath.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "wide" / "f64_math.mlir"
BOUND_ULP = 5.0
X = np.array([1.57079632, -1.5707963267948966, 1e-300, 0.3, -30.5, 700.0, 1e5 + 0.25, -2.75])
Y = np.array([2.0, 1e-17, 4e300, 0.75, -0.5, 1e-310, 3.0, 1e5])


def _want() -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.tan(X), np.expm1(X), np.log1p(Y), np.tanh(X), 1 / (1 + np.exp(-X)),
                1 / np.sqrt(Y), np.cbrt(X), np.arctan2(X, Y)]


@pytest.mark.parametrize("board", ["x86-64", "cortex-m4"])
def test_f64_math_on_board(board: str, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", input_0=X, input_1=Y)
    rc = run_cli.main([str(DATA), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    out = np.load(tmp_path / "out.npz")
    for k, want in enumerate(_want()):
        got = out[f"output_{k}"]
        finite = np.isfinite(want) & (want != 0)
        np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=f"output_{k}")
        ulps = np.abs(got - want)[finite] / np.spacing(np.abs(want[finite]))
        assert ulps.max() <= BOUND_ULP, (k, ulps, got)
    assert 1.4716e8 < out["output_0"][0] < 1.4718e8  # the tan, on the right side
