"""Schedules on their own boards, under QEMU: the window models (tests/window_models.py)
built with each board's schedules give the reference's outputs (floats like --check,
int8 bit for bit), and on Cortex-M4 the schedule pays: the padded convolution takes
under half the instructions of the plain loop nest."""

from __future__ import annotations

import numpy as np
import pytest
from window_models import all_windows, float_windows

from toolchain.codegen import image
from toolchain.emu.run import run_image
from toolchain.graph.ir import Graph
from toolchain.loops.rules import plain_schedule
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs
from toolchain.reference import run_graph
from toolchain.target import load_board

# One of each kind of schedule: DSP + FPU with FMA, Helium, RV32F with FMA, no FPU and
# 8 usable registers, and the two hosted ones (SIMD, speed budget).
BOARDS = ["cortex-m4", "cortex-m55", "riscv32", "cortex-m0plus", "aarch64", "x86-64"]


def _inputs(seed: int = 9) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 7, 9, 3)).astype(np.float32),
            rng.integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)]


def _run(graph: Graph, board_name: str, inputs: list[np.ndarray], out_dir):
    board = load_board(board_name)
    build = compile_graph(graph, board, out_dir, log=lambda _: None)
    run = run_image(board, build.elf, inputs)
    assert run.exit_code == 0, run.stderr
    got = decode_outputs(module_outputs(build.module), run.outputs)
    return got, run_graph(build.graph, inputs), run.instructions


@pytest.mark.parametrize("board", BOARDS)
def test_window_schedules_on_the_board(board: str, tmp_path) -> None:
    inputs = _inputs()
    got, want, _ = _run(all_windows(), board, inputs, tmp_path / "fw")
    assert len(got) == 14
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")


def test_the_schedule_pays_on_cortex_m4(tmp_path, monkeypatch) -> None:
    def conv_only() -> Graph:
        g = float_windows()
        g.outputs = g.outputs[:1]  # the padded 3x3 convolution with bias and ReLU
        return g

    x = _inputs()[:1]
    got, want, chosen = _run(conv_only(), "cortex-m4", x, tmp_path / "chosen")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(image, "choose_schedule", lambda k, _t: plain_schedule(k))
    got, _, plain = _run(conv_only(), "cortex-m4", x, tmp_path / "plain")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    # 315 outputs x 27 MACs: measured 34.6 K instructions against 195.6 K.
    assert chosen < 0.5 * plain, (chosen, plain)
