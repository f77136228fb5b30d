"""i64, ui64 and f64 on every kind of board (tests/e2e/data/wide/wide.mlir): add,
subtract, multiply, divide and remainder (the overflowing MIN / -1 included), shifts by
0, 33, 63 and out-of-range amounts, signed and unsigned compares, maximum and abs;
conversions i64 <-> f64, i64 -> f32 / i32, ui64 <-> f64 above 2**63, f64 -> f32; f64
add, multiply, divide, remainder, sqrt, exp, log, sin, cos and pow. On cortex-m0plus (no
FPU, no divider), cortex-m4 (f32 FPU only) and riscv32 / riscv32-nofpu these are the
compiler helpers' work (__aeabi_ldivmod, __muldf3, __udivdi3, ...: toolchain/link);
aarch64 and x86-64 have the instructions. Each board builds the model once and runs it
with --check against the reference: integers exactly, floats like
numpy.isclose(rtol=1e-5, atol=1e-6).

f64 sqrt, exp, log, sin, cos and pow are codegen/mathlib_f64.py's, at f64 accuracy: the
inputs reach past f32's range (exp(700), log and sqrt of 4e300, 1e-300, 1.5**700) and
the outputs are held to numpy's float64 values in ulps, not just isclose: sqrt, exp, log
and sin / cos (|x| < 1.6e6) within 2 ulp (measured 0 to 1); pow within |y ln x| + 4 ulp (an
ulp of the f64 log, times y: measured 29 ulp for 1.5**700, bound 288); sin / cos of
|x| >= 1.6e6 is the f32 function's, within 1e-7 absolute of the truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "wide"
BOARDS = ["cortex-m0plus", "cortex-m4", "riscv32-nofpu", "riscv32", "aarch64", "x86-64"]
M = 2**63

INPUTS = {
    "input_0": np.array([7, -7, 2**62 + 12345, -M, 123456789012345, -1, M - 1, 0], np.int64),
    "input_1": np.array([2, 2, -3, -1, 1000000007, 3, -M, 5], np.int64),
    "input_2": np.array([0, 1, 63, 64, 33, 70, -1, 32], np.int64),  # shift amounts
    "input_3": np.array([2**64 - 1, 10, 2**63, 0, 12345678901234567890, 5, 1, 2**40],
                        np.uint64),
    "input_4": np.array([3, 0, 2**63 + 1, 7, 1000000007, 5, 2**64 - 1, 3], np.uint64),
    "input_5": np.array([0.5, -1.25, 123456.789, 1e10, -2.0**40, 700.0, 1e-300, -0.0]),
    "input_6": np.array([2.0, 0.75, 1e-5, 9.5, 1.8e19, 1.5, 4e300, 3.0]),
}


@pytest.mark.parametrize("board", BOARDS)
def test_wide_types_on_board(board: str, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", **INPUTS)
    rc = run_cli.main([str(DATA / "wide.mlir"), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(tmp_path / "out.npz")
    a, b = INPUTS["input_0"], INPUTS["input_1"]
    # Independent of the reference: numpy's wrapping arithmetic and C's truncating
    # division where both are defined.
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out["output_2"], a * b)
    np.testing.assert_array_equal(out["output_3"][[0, 1, 4, 5]], [3, -3, 123456, 0])
    np.testing.assert_array_equal(out["output_4"][[0, 1, 4, 5]], [1, -1, 788148153, -1])
    assert out["output_10"][0] == (2**64 - 1) // 3
    assert out["output_15"][4] == -(2**40)  # f64 -> i64 beyond 32 bits
    assert out["output_16"][4] == 18000000000000000000  # f64 -> ui64 above 2**63
    x, y = INPUTS["input_5"], INPUTS["input_6"]
    near = np.abs(x) < 1.6e6
    with np.errstate(all="ignore"):
        want = {21: np.sqrt(y), 22: np.exp(x), 23: np.log(y), 24: np.sin(x), 32: np.cos(x)}
        bound = {21: 2.0, 22: 2.0, 23: 2.0, 24: np.where(near, 2.0, np.inf)}
        bound[32] = bound[24]
        want[25], bound[25] = np.power(y, x), np.abs(x * np.log(y)) + 4
    for k, w in want.items():
        got = out[f"output_{k}"]
        finite = np.isfinite(w) & (w != 0)
        np.testing.assert_array_equal(got[~finite], w[~finite], err_msg=f"output_{k}")
        with np.errstate(invalid="ignore"):  # inf - inf where both overflow
            ulps = np.abs(got - w) / np.spacing(np.abs(w))
        assert np.all(ulps[finite] <= np.broadcast_to(bound[k], w.shape)[finite]), (k, ulps)
    assert np.all(np.abs(out["output_24"] - np.sin(x))[~near] <= 1e-7)
    assert np.all(np.abs(out["output_32"] - np.cos(x))[~near] <= 1e-7)
