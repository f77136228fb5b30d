"""`minirt-run --board B --check` on seed.mlir and every JAX model, on every board.

This is issue 3's acceptance matrix: each model is built, run under QEMU and compared
with the numpy reference (floats like numpy.isclose(rtol=1e-5, atol=1e-6), see
toolchain/cli/run.py for why).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.cli import run as run_cli

REPO = Path(__file__).resolve().parents[2]
BOARDS = ["x86-64", "aarch64", "riscv32", "cortex-m4"]
JAX = ["mlp", "cnn", "dscnn_kws", "resnet8", "autoencoder"]


def _check(model: Path, board: str, tmp_path: Path, capsys, *extra: str) -> str:
    rc = run_cli.main([str(model), "--board", board, "--check", "-o", str(tmp_path / "fw"),
                       *extra])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "check: outputs match the reference" in out
    assert "instructions: " in out
    return out


@pytest.mark.parametrize("board", BOARDS)
def test_seed(board: str, tmp_path: Path, capsys) -> None:
    _check(REPO / "examples" / "seed.mlir", board, tmp_path, capsys)


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", JAX)
def test_jax_models(name: str, board: str, tmp_path: Path, capsys) -> None:
    jax = MODELS_DIR / "jax"
    _check(jax / f"{name}.mlir", board, tmp_path, capsys, "--inputs", str(jax / f"{name}.npz"))


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("mode", ["fp16", "int8-weights"])
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", JAX)
def test_jax_models_quantized(name: str, board: str, mode: str, tmp_path: Path,
                              capsys) -> None:
    jax = MODELS_DIR / "jax"
    _check(jax / f"{name}.mlir", board, tmp_path, capsys, "--inputs", str(jax / f"{name}.npz"),
           "--quantize", mode)


def test_mismatch_exits_1_and_shows_worst_elements(tmp_path: Path, capsys, monkeypatch) -> None:
    real = run_cli.run_graph

    def off_by_one(graph, inputs):
        outs = real(graph, inputs)
        outs[0] = outs[0].copy()
        outs[0][1, 2] += 1.0
        return outs

    monkeypatch.setattr(run_cli, "run_graph", off_by_one)
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "x86-64", "--check",
                       "-o", str(tmp_path / "fw")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "1 of 16 elements differ" in err and "[1, 2] got" in err


def test_hang_is_a_timeout(tmp_path: Path, capsys) -> None:
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "cortex-m4",
                       "-o", str(tmp_path / "fw"), "--timeout", "0.001"])
    assert rc == 124
    assert "timeout" in capsys.readouterr().err


def test_unknown_board_is_a_usage_error(capsys) -> None:
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "pdp-11"])
    err = capsys.readouterr().err
    assert rc == 2 and "pdp-11" in err and "Traceback" not in err


def test_save_outputs_from_board(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.npz"
    rc = run_cli.main([str(REPO / "examples" / "seed.mlir"), "--board", "riscv32",
                       "-o", str(tmp_path / "fw"), "--save-outputs", str(out)])
    assert rc == 0
    assert np.load(out)["output_0"].shape == (4, 4)
