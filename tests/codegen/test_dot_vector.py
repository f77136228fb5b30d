"""The vector int8 dot steps (codegen/dot_vector.py) on their own boards, under QEMU:
NEON (SMULL + SADALP) on aarch64, SDOT on aarch64 with Armv8.2-A's dot product (a copy
of the aarch64 target that says so; qemu-aarch64's default CPU has it), AVX2 (VPMADDWD)
on x86-64-v3, Helium (VMLADAVA) on cortex-m55. Sums of int8 products are exact, so
every output is compared bit for bit with numpy's int64 sum, on the values that stress
the steps most: -128 x -128 products (two of them overflow a 16-bit pair sum)
accumulated over a reduction of 1,037 (64 vector steps and a remainder of 13 done one
at a time), and the border of a padded convolution, where a whole vector is the
zero-point pad. Depthwise convolutions compute 16 channels in the lanes of vector
accumulators on the same boards (`dot lanes`): checked at the same extremes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from window_models import _Builder, int8_windows

from toolchain.emu.run import run_image
from toolchain.graph.ir import Graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import compile_graph, decode_outputs, module_outputs
from toolchain.reference import run_graph
from toolchain.target import load_board
from toolchain.types import TensorType, dtype

I8, I32 = dtype("i8"), dtype("i32")
KINDS = {"aarch64": "neon", "aarch64-dotprod": "sdot", "x86-64-v3": "avx2",
         "cortex-m55": "mve"}
ROOT = Path(__file__).resolve().parents[2]
N_OUT, N_IN = 7, 16 * 64 + 13


def _dense() -> Graph:
    """x (1 x N_IN) . w (N_OUT x N_IN)^T -> i32, both operands inputs, so the test
    chooses their values."""
    g = Graph("dense_i8")
    x = g.add_input(TensorType((1, N_IN), I8))
    w = g.add_input(TensorType((N_OUT, N_IN), I8))
    g.outputs = [g.add("dot_general", [x, w], [TensorType((1, N_OUT), I32)], {
        "lhs_batch": (), "rhs_batch": (), "lhs_contract": (1,), "rhs_contract": (1,),
        "dtype": "i32"}).output]
    return g


def _dense_cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(8)
    full = np.full((N_OUT, N_IN), -128, np.int8)
    alternating = np.where(np.arange(N_IN) % 2, 127, -128).astype(np.int8)
    return [
        # every product 16384: 16,990,208 per output, far outside 16 bits
        ("-128 x -128", np.full((1, N_IN), -128, np.int8), full),
        # -128 x 127 and 127 x -128 pairs: the most negative pair sums
        ("-128 x 127", alternating[None, :], -1 - alternating[None, :].repeat(N_OUT, 0)),
        ("random", rng.integers(-128, 128, (1, N_IN)).astype(np.int8),
         rng.integers(-128, 128, (N_OUT, N_IN)).astype(np.int8)),
    ]


def _dotprod_board(tmp_path: Path) -> Path:
    """The aarch64 board on a copy of its target with FEAT_DotProd (`+dotprod`, SIMD
    row `neon-dotprod`), as a descriptor for an Armv8.2-A core would say."""
    target = yaml.safe_load((ROOT / "targets" / "aarch64.yaml").read_text())
    target["features"] += ",+dotprod"
    target["capabilities"]["simd"] = "neon-dotprod"
    # Still named aarch64: the same ABI and module target id, another file.
    (tmp_path / "targets").mkdir()
    target_path = tmp_path / "targets" / "aarch64.yaml"
    target_path.write_text(yaml.safe_dump(target))
    board = yaml.safe_load((ROOT / "boards" / "aarch64.yaml").read_text())
    board["identifier"] = "aarch64-dotprod"
    board["target"] = str(target_path)
    board_path = tmp_path / "aarch64-dotprod.yaml"
    board_path.write_text(yaml.safe_dump(board))
    return board_path


def _built(graph: Graph, board_name: str, out_dir: Path):
    board = load_board(_dotprod_board(out_dir.parent) if board_name == "aarch64-dotprod"
                       else board_name)
    build = compile_graph(graph, board, out_dir, log=lambda _: None)
    kinds = {n.dot for s in build.program.steps
             for n in choose_schedule(s.kernel, board.target_info).nests}
    return board, build, kinds


@pytest.mark.parametrize("board_name", list(KINDS))
def test_extreme_int8_dots_are_exact_on_the_board(board_name: str, tmp_path) -> None:
    board, build, kinds = _built(_dense(), board_name, tmp_path / "fw")
    assert kinds == {KINDS[board_name]}, kinds  # the vector steps, not the scalar loop
    for what, x, w in _dense_cases():
        run = run_image(board, build.elf, [x, w], count_instructions=False)
        assert run.exit_code == 0, run.diagnosis
        (got,) = decode_outputs(module_outputs(build.module), run.outputs)
        want = x.astype(np.int64) @ w.astype(np.int64).T
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("board_name", list(KINDS))
def test_padded_int8_windows_are_exact_on_the_board(board_name: str, tmp_path) -> None:
    """tests/window_models.py's int8 kernels: a padded 3x3 convolution over 16 channels
    (one vector step per tap, the zero point in every lane at the border), requantized."""
    graph = int8_windows()
    board, build, kinds = _built(graph, board_name, tmp_path / "fw")
    assert KINDS[board_name] in kinds, kinds
    x = np.random.default_rng(4).integers(-128, 128, (1, 7, 9, 3)).astype(np.int8)
    run = run_image(board, build.elf, [x], count_instructions=False)
    assert run.exit_code == 0, run.diagnosis
    got = decode_outputs(module_outputs(build.module), run.outputs)
    for i, (g, want) in enumerate(zip(got, run_graph(build.graph, [x]), strict=True)):
        np.testing.assert_array_equal(g, want, err_msg=f"output {i}")


C_DW = 40  # two whole vectors of channels and a remainder of 8 (the scalar path)


def _depthwise() -> Graph:
    """x (1x6x7xC_DW) padded with -128 (TFLite's zero point for a ReLU input) and
    convolved depthwise 3x3 with w (3x3x1xC_DW), both inputs, into i32: the tile's
    outputs along the channels are the lanes of the vector accumulators."""
    b = _Builder("depthwise_i8", 0)
    x = b.g.add_input(TensorType((1, 6, 7, C_DW), I8))
    w = b.g.add_input(TensorType((3, 3, 1, C_DW), I8))
    padded = b.op("pad", [x, b.const(-128, I8)], TensorType((1, 8, 9, C_DW), I8),
                  low=(0, 1, 1, 0), high=(0, 1, 1, 0), interior=(0, 0, 0, 0))
    b.g.outputs = [b.conv(padded, w, I32, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), C_DW)]
    return b.g


@pytest.mark.parametrize("board_name", ["aarch64", "x86-64-v3", "cortex-m55"])
def test_depthwise_lanes_are_exact_on_the_board(board_name: str, tmp_path) -> None:
    """-128 everywhere (each output 9 x 16384, the border's pad too), -128 x 127, and
    random values, against numpy's int64 sums of the padded window."""
    board, build, kinds = _built(_depthwise(), board_name, tmp_path / "fw")
    assert kinds == {"lanes"}, kinds
    rng = np.random.default_rng(2)
    cases = [("-128 x -128", np.full((1, 6, 7, C_DW), -128), np.full((3, 3, 1, C_DW), -128)),
             ("-128 x 127", np.full((1, 6, 7, C_DW), -128), np.full((3, 3, 1, C_DW), 127)),
             ("random", rng.integers(-128, 128, (1, 6, 7, C_DW)),
              rng.integers(-128, 128, (3, 3, 1, C_DW)))]
    for what, x, w in cases:
        x, w = x.astype(np.int8), w.astype(np.int8)
        run = run_image(board, build.elf, [x, w], count_instructions=False)
        assert run.exit_code == 0, run.diagnosis
        (got,) = decode_outputs(module_outputs(build.module), run.outputs)
        xp = np.pad(x.astype(np.int64), ((0, 0), (1, 1), (1, 1), (0, 0)),
                    constant_values=-128)
        want = sum(xp[:, i:i + 6, j:j + 7, :] * w[i, j, 0].astype(np.int64)
                   for i in range(3) for j in range(3))
        np.testing.assert_array_equal(got, want, err_msg=what)
