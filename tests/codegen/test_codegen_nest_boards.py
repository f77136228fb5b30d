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


def _lane_model() -> Graph:
    """x: 1x6x10x8 f32 -> a padded 3x3 convolution to 20 channels with bias and ReLU
    (two vectors of 8 and a remainder of 4 along the channels), and a 480-term dot to
    40 outputs (a long sum: partial sums in vector lanes)."""
    from window_models import F32, _Builder

    from toolchain.graph.verify import verify_graph
    from toolchain.types import TensorType

    b = _Builder("lanes", 21)
    x = b.g.add_input(TensorType((1, 6, 10, 8), F32))
    w = b.const(b.rng.standard_normal((3, 3, 8, 20)) / np.sqrt(72), F32)
    y = b.conv(x, w, F32, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1)
    t = y.type
    bias = b.op("broadcast_in_dim", [b.const(b.rng.standard_normal(20), F32)], t, dims=(3,),
                shape=t.shape)
    zero = b.op("broadcast_in_dim", [b.const(0.0, F32)], t, dims=(), shape=t.shape)
    y = b.op("maximum", [b.op("add", [y, bias], t), zero], t)
    flat = b.op("reshape", [x], TensorType((1, 480), F32), shape=(1, 480))
    wd = b.const(b.rng.standard_normal((480, 40)) / np.sqrt(480), F32)
    d = b.op("dot_general", [flat, wd], TensorType((1, 40), F32), lhs_batch=(), rhs_batch=(),
             lhs_contract=(1,), rhs_contract=(0,), dtype="f32")
    b.g.outputs = [y, d]
    verify_graph(b.g)
    return b.g


# Per hosted board, what a vector FMA of its float lanes looks like in the disassembly.
LANE_FMA = {"x86-64-v3": ("vfmadd", "ymm"), "aarch64": ("fmla", ".4s")}


@pytest.mark.parametrize("board", sorted(LANE_FMA))
def test_float_lane_tiles_become_vector_fmas(board: str, tmp_path) -> None:
    """Float convolutions and dense layers are blocked in whole vectors along their
    output channels (FloatLanes), and LLVM's SLP vectorizer makes vector FMAs of them
    (a tile it leaves scalar is the regression this catches: 32 lanes x 2 partial sums
    did on x86-64-v3). The results stay the reference's, like --check."""
    import subprocess

    from toolchain.loops import choose_schedule
    from toolchain.pipeline import prepare_graph, schedule_for_board

    board_info = load_board(board)
    program = schedule_for_board(prepare_graph(_lane_model()), board_info)
    lanes = [n.vector for step in program.steps
             for n in choose_schedule(step.kernel, board_info.target_info).nests
             if step.kernel.combine is not None]
    assert lanes and all(v > 1 for v in lanes), lanes
    x = [np.random.default_rng(4).standard_normal((1, 6, 10, 8)).astype(np.float32)]
    got, want, _ = _run(_lane_model(), board, x, tmp_path / "fw")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    op, reg = LANE_FMA[board]
    dis = subprocess.run(["llvm-objdump", "-d", str(tmp_path / "fw" / "dispatch.o")],
                         capture_output=True, text=True, check=True).stdout
    fmas = [line for line in dis.splitlines() if op in line and reg in line]
    assert len(fmas) >= 8, dis[-2000:]
