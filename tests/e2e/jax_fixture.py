"""Running a committed JAX export (tests/e2e/data/*/NAME.mlir + NAME.npz) on a board."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from toolchain.cli import run as run_cli

BOARDS = ["cortex-m4", "riscv32", "aarch64", "x86-64"]


def run_jax_export(data: Path, name: str, board: str, tmp_path: Path,
                   capsys) -> tuple[np.lib.npyio.NpzFile, np.lib.npyio.NpzFile]:
    """`minirt-run --check` of export `name` with JAX's own inputs on `board`; returns
    (JAX's npz, the board's outputs) once the check against the reference passed."""
    saved = tmp_path / "out.npz"
    rc = run_cli.main([str(data / f"{name}.mlir"), "--board", board, "--check",
                       "-o", str(tmp_path / "fw"), "--inputs", str(data / f"{name}.npz"),
                       "--save-outputs", str(saved)])
    captured = capsys.readouterr()
    assert rc == 0, captured.out + captured.err
    assert "check: outputs match the reference" in captured.out
    return np.load(data / f"{name}.npz"), np.load(saved)
