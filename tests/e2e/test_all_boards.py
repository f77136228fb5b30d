"""Every board in boards/ builds and runs a model under QEMU and passes --check.

The issue-3 matrix covers four boards in depth; this keeps the other descriptors
honest: a board we ship must really run. mlp is the largest shared model that fits
the smallest board (the 16 KB-RAM Cortex-M0+).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.cli import run as run_cli
from toolchain.target import list_boards, load_board
from toolchain.target.host_cpu import native_refusal

REPO = Path(__file__).resolve().parents[2]


def _skip_if_host_cannot_run(board: str) -> None:
    """A native board (x86-64-v4: QEMU cannot execute AVX-512) runs only on a host whose
    CPU has its level."""
    b = load_board(board)
    if b.simulation.native and native_refusal(b):
        pytest.skip(native_refusal(b))


@pytest.mark.parametrize("board", list_boards())
def test_every_board_runs_seed(board: str, tmp_path: Path, capsys) -> None:
    _skip_if_host_cannot_run(board)
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", board, "--check",
                       "-o", str(tmp_path / "fw")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "check: outputs match the reference" in captured.out


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", list_boards())
def test_every_board_runs_mlp(board: str, tmp_path: Path, capsys) -> None:
    _skip_if_host_cannot_run(board)
    mlp = MODELS_DIR / "jax" / "mlp.mlir"
    rc = run_cli.main([str(mlp), "--board", board, "--check", "--inputs",
                       str(mlp.with_suffix(".npz")), "-o", str(tmp_path / "fw")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err


def test_too_big_for_the_board_is_one_clear_error(tmp_path: Path, capsys) -> None:
    if not have_models():
        pytest.skip(MISSING_REASON)
    rc = run_cli.main([str(MODELS_DIR / "jax" / "resnet8.mlir"), "--board", "cortex-m0plus",
                       "-o", str(tmp_path / "fw")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "does not fit the board's memory" in err and "overflows RAM by" in err
    assert sum("error:" in line for line in err.splitlines()) == 1
