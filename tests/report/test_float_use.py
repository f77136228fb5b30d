"""The float-use check of a firmware's model code: it sees a float model's soft-float
calls and FPU instructions, and int8 kernels built by toolchain/quant have none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.pipeline import build_model, compile_graph
from toolchain.quant import build, tflm, tflm_activations, tflm_tables
from toolchain.report.float_use import float_use
from toolchain.target import load_board
from toolchain.types import TensorType, dtype

REPO = Path(__file__).resolve().parents[2]


def _int8_model() -> Graph:
    """A small int8 network touching every integer kernel kind: convolution with
    padding, depthwise, average pool, fully connected, add, a table lookup, softmax."""
    rng = np.random.default_rng(0)
    g = Graph("int8")
    b = GraphBuilder(g)
    x = g.add_input(TensorType((1, 8, 6, 3), dtype("i8")))
    m, s = tflm.conv_params(0.05, rng.uniform(0.001, 0.02, 8), 0.1)
    y = build.conv2d(b, x, rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8),
                     rng.integers(-99, 99, 8).astype(np.int32), strides=(1, 1),
                     padding=((1, 1), (1, 1)), input_zp=-3, multipliers=m, shifts=s,
                     output_zp=4, act_min=4, act_max=127)
    m, s = tflm.conv_params(0.1, rng.uniform(0.001, 0.02, 8), 0.1)
    y = build.conv2d(b, y, rng.integers(-127, 128, (1, 3, 3, 8)).astype(np.int8), None,
                     strides=(2, 2), padding=((1, 1), (0, 1)), depthwise=True, input_zp=4,
                     multipliers=m, shifts=s, output_zp=-2)
    p = tflm.add_params(0.1, -2, 0.1, -2, 0.2, 3)
    y = build.add(b, y, y, left_shift=20, input1=(2, p.input1_multiplier, p.input1_shift),
                  input2=(2, p.input2_multiplier, p.input2_shift),
                  output=(3, p.output_multiplier, p.output_shift))
    y = build.lookup(b, y, tflm_tables.lookup_table(
        "LOGISTIC", tflm_activations.logistic_params(0.2, 3)))
    y = build.average_pool(b, y, window=(4, 3), strides=(1, 1), padding=((0, 0), (0, 0)))
    y = b.op("reshape", [y], shape=(1, 8))
    m, s = tflm.fully_connected_params(1 / 256, 0.01, 0.05)
    y = build.fully_connected(b, y, rng.integers(-127, 128, (5, 8)).astype(np.int8),
                              rng.integers(-99, 99, 5).astype(np.int32), input_zp=-128,
                              multipliers=m, shifts=s, output_zp=0)
    e, t = tflm_tables.softmax_exp_table(tflm_activations.softmax_params(0.05))
    g.outputs = [build.softmax(b, y, e, t)]
    verify_graph(g)
    return g


@pytest.mark.parametrize("board", ["cortex-m3", "cortex-m0plus", "riscv32-nofpu", "cortex-m4"])
def test_int8_kernels_do_no_float_work(board: str, tmp_path: Path) -> None:
    result = compile_graph(_int8_model(), load_board(board), tmp_path / "fw", log=lambda _: None)
    assert float_use(result.elf) == []


@pytest.mark.parametrize("board, what", [("cortex-m3", "soft-float routine"),
                                         ("cortex-m4", "vmul.f32")])
def test_a_float_model_is_caught(board: str, what: str, tmp_path: Path) -> None:
    result = build_model(REPO / "examples" / "seed.mlir", board, tmp_path / "fw",
                         log=lambda _: None)
    found = float_use(result.elf)
    assert any(what in line for line in found), found
