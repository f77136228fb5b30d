"""Sub-byte integers (i4, ui4, i2, ui2) end to end: computed at their own width (LLVM's
i4 / i2 registers, so sums wrap as the spec's two's-complement arithmetic does), held
one a byte in memory and I/O buffers, sign- or zero-extended (not packed two a byte).

The values are the StableHLO interpreter's own cases (../shared/suites/
stablehlo_interpret/add.mlir, subtract, negate, not, maximum, iota: their check lines)
plus multiplies and converts that wrap, checked exactly on the reference (no QEMU) and on
x86-64 and cortex-m4 firmware with --check and against the same table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli
from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.reference import run_graph

MODEL = Path(__file__).resolve().parent / "data" / "sub_byte" / "sub_byte.mlir"
I4, U4 = np.int8, np.uint8
INPUTS = [
    np.array([0, 1, 2, -3, 0], I4), np.array([-8, -1, 2, -3, 7], I4),
    np.array([0, 7, 15], U4), np.array([15, 3, 8], U4),
    np.array([1, 0, -1, -2], I4), np.array([-1, 1, 1, 1], I4),
    np.array([0, 2], U4), np.array([1, 1], U4),
    np.array([7, 8, -9, 100, -1], np.int32),
]
WANT = [
    [-8, 0, 4, -6, 7],  # add (interpreter: add_op_test_si4)
    [-8, 2, 0, 0, -7],  # subtract (subtract_op_test_si4)
    [-8, 1, -2, 3, -7],  # negate: -(-8) wraps to -8
    [0, -1, 4, -7, 0],  # multiply: -3 * -3 = 9 wraps to -7
    [0, 1, 2, -3, 7],  # maximum (max_op_test_si4)
    [1, 4, 7],  # ui4 subtract: 0 - 15 wraps to 1
    [15, 8, 0],  # ui4 not (not_op_test_ui4)
    [0, 9, 1],  # ui4 negate
    [0, 1, 0, -1],  # i2 add (add_op_test_si2)
    [1, 3],  # ui2 add (add_op_test_ui2)
    [7, -8, 7, 4, -1],  # i32 -> i4 keeps the low 4 bits
    [-8, -1, 2, -3, 7],  # i4 -> i8 sign-extends
    [15, 3, 8],  # ui4 -> i32 zero-extends
    [[0] * 4, [1] * 4, [2] * 4],  # iota (iota_op_test_si4_dim_0)
    [-8.0, -1.0, 2.0, -3.0, 7.0],
]


def _check(outs: list[np.ndarray]) -> None:
    for k, (got, want) in enumerate(zip(outs, WANT, strict=True)):
        np.testing.assert_array_equal(got, np.asarray(want), err_msg=f"output_{k}")


def test_sub_byte_reference_matches_the_interpreter() -> None:
    graph = import_module(parse_text(MODEL.read_text(), str(MODEL)))
    _check(run_graph(graph, INPUTS))


@pytest.mark.parametrize("board", ["x86-64", "cortex-m4"])
def test_sub_byte_on_board(board: str, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", **{f"input_{i}": x for i, x in enumerate(INPUTS)})
    rc = run_cli.main([str(MODEL), "--board", board, "-o", str(tmp_path / "fw"),
                       "--inputs", str(tmp_path / "in.npz"), "--check",
                       "--save-outputs", str(tmp_path / "out.npz")])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    out = np.load(tmp_path / "out.npz")
    _check([out[f"output_{k}"] for k in range(len(WANT))])
