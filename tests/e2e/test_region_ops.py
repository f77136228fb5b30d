"""Ops with regions under QEMU: reductions with a body (argmin, several accumulators, a
max pool that returns its indices), built for cortex-m4, riscv32, aarch64 and x86-64 and
checked against the reference with `minirt-run --check` (integers exactly, floats like
numpy.isclose(rtol=1e-5, atol=1e-6)).

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
