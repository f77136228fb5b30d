"""i64, ui64 and f64 on every kind of board (tests/e2e/data/wide/wide.mlir): add,
subtract, multiply, divide and remainder (the overflowing MIN / -1 included), shifts by
0, 33, 63 and out-of-range amounts, signed and unsigned compares, maximum and abs;
conversions i64 <-> f64, i64 -> f32 / i32, ui64 <-> f64 above 2**63, f64 -> f32; f64
add, multiply, divide, remainder, sqrt, exp, log, sin and pow. On cortex-m0plus (no
FPU, no divider), cortex-m4 (f32 FPU only) and riscv32 / riscv32-nofpu these are the
compiler helpers' work (__aeabi_ldivmod, __muldf3, __udivdi3, ...: toolchain/link);
aarch64 and x86-64 have the instructions. Each board builds the model once and runs it
with --check against the reference: integers exactly, floats like
numpy.isclose(rtol=1e-5, atol=1e-6).

The f64 transcendental functions (exp, log, sin, pow) compute in f32 after rounding
their operands (codegen/mathlib.py says so): their inputs here stay in f32's range and
to sin arguments f32 holds exactly (-2**40: a large one, reduced exactly), where
that rounding moves nothing.
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
    "input_5": np.array([0.5, -1.25, 3.0, 1e10, -2.0**40, 70.0, 1e-300, -0.0]),
    "input_6": np.array([2.0, 0.75, 1e-5, 9.5, 1.8e19, 1.5, 4e30, 3.0]),
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
