"""End to end: model -> firmware -> QEMU, checked against the numpy reference.

Tolerance: compiled floats must match like numpy.isclose(rtol=1e-5, atol=1e-6), the
same bound the reference meets against JAX; summation order and our polynomial math
differ from numpy's, and the largest difference seen on the shared models is 6e-7.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from model_zoo import MISSING_REASON, MODELS_DIR, have_models

from toolchain.emu.run import run_image
from toolchain.loader import load_graph, random_inputs
from toolchain.pipeline import build_model
from toolchain.reference import run_graph

REPO = Path(__file__).resolve().parents[2]
BOARDS = ["x86-64", "aarch64", "riscv32", "cortex-m4"]


def _run(model: Path, board: str, inputs: list[np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    result = build_model(model, board, tmp_path / board, log=lambda _: None)
    run = run_image(result.board, result.elf, inputs)
    assert run.exit_code == 0, run.console + run.stderr
    assert run.instructions is not None and run.instructions > 0
    outs, offset = [], 0
    for t in result.program.outputs:
        n = t.num_elements * t.dtype.np_dtype.itemsize
        outs.append(np.frombuffer(run.outputs[offset:offset + n],
                                  dtype=t.dtype.np_dtype).reshape(t.shape))
        offset += n
    return outs


@pytest.mark.parametrize("board", BOARDS)
def test_seed_runs_on_every_board(board: str, tmp_path: Path) -> None:
    model = REPO / "examples" / "seed.mlir"
    graph = load_graph(model)
    inputs = random_inputs(graph, seed=1)
    (got,) = _run(model, board, inputs, tmp_path)
    np.testing.assert_allclose(got, inputs[0] * inputs[1] + inputs[2], rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not have_models(), reason=MISSING_REASON)
@pytest.mark.parametrize("board", ["riscv32", "cortex-m4"])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_jax_model_matches_reference(name: str, board: str, tmp_path: Path) -> None:
    model = MODELS_DIR / "jax" / f"{name}.mlir"
    data = np.load(MODELS_DIR / "jax" / f"{name}.npz")
    inputs = [data["input_0"]]
    want = run_graph(load_graph(model), inputs)
    got = _run(model, board, inputs, tmp_path)
    for g, w in zip(got, want):
        assert np.isclose(g, w, rtol=1e-5, atol=1e-6).all(), np.abs(g - w).max()
