"""Ops with regions under QEMU: reductions with a body (argmin, several accumulators, a
max pool that returns its indices), map, sorts (stable, TOTALORDER, a captured scalar),
scatter and gather with batching dimensions and out-of-range indices, built for
cortex-m4, riscv32, aarch64 and x86-64 and checked against the reference with
`minirt-run --check` (integers exactly, floats like numpy.isclose(rtol=1e-5,
atol=1e-6)).

The models (tests/e2e/data/regions) are in generic form for the ops whose pretty form
the parser does not read yet; each is built once per board.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import run as run_cli

DATA = Path(__file__).resolve().parent / "data" / "regions"
BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]
RNG = np.random.default_rng(11)


def check(model: Path, board: str, out: Path, inputs: list[np.ndarray], capsys) -> None:
    np.savez(out / "in.npz", **{f"input_{i}": x for i, x in enumerate(inputs)})
    rc = run_cli.main([str(model), "--board", board, "-o", str(out / "fw"), "--inputs",
                       str(out / "in.npz"), "--check"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out


@pytest.mark.parametrize("board", BOARDS)
def test_reducers(board: str, tmp_path: Path, capsys) -> None:
    x = RNG.integers(-128, 128, (3, 40)).astype(np.int8)
    x[1, [5, 30]] = -128  # a tie: argmin takes the first
    y = RNG.standard_normal((5, 3)).astype(np.float32)
    p = RNG.standard_normal((6, 7)).astype(np.float32)
    check(DATA / "reducers.mlir", board, tmp_path, [x, y, np.float32(0.25), p], capsys)


@pytest.mark.parametrize("board", BOARDS)
def test_sort_scatter_gather(board: str, tmp_path: Path, capsys) -> None:
    x = RNG.integers(-4, 5, (2, 7, 3)).astype(np.float32)  # ties: the sort is stable
    k = RNG.standard_normal((3, 9)).astype(np.float32)
    k[0, :5] = [np.nan, -0.0, 0.0, -np.nan, np.inf]
    a = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    idx = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                    [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]], np.int64)
    u = RNG.integers(-9, 9, (2, 2, 3, 2, 2)).astype(np.int64)
    a2 = RNG.standard_normal((5, 3)).astype(np.float32)
    i2 = np.array([2, 2**32 + 1, 2, -(2**40)], np.int64)  # repeats and far outside
    u2 = RNG.standard_normal((4, 3)).astype(np.float32)
    check(DATA / "sort_scatter.mlir", board, tmp_path,
          [x, np.float32(0.5), k, a, idx, u, a2, i2, u2], capsys)
