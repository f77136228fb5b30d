"""int8 LOG_SOFTMAX (toolchain/quant/tflm_log_softmax.py, build_log_softmax.py) against
TFLite Micro's kernel, exactly: the numpy kernel and the imported graph on seeded
inputs over input scales from 1e-5 to 100 (the cut-off, the multiplier cap and the
reverse divisor each take their edge cases), rows of one repeated value, rows with one
outlier, depths from 1 to 1000; the graph's fixed-point log against the numpy one over
int32 sums; and the firmware under QEMU on cortex-m4, x86-64, riscv32 and cortex-m0plus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import OPTIONS_TABLE, Tensor, run_tflm, single_op_model

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph
from toolchain.quant import build_log_softmax
from toolchain.quant import tflm_log_softmax as ls
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

OPTIONS_TABLE["LOG_SOFTMAX"] = None
OUTPUT_SCALE, OUTPUT_ZP = 16 / 256, 127


def _model(shape: tuple[int, ...], scale: float, zero_point: int,
           out_scale: float = OUTPUT_SCALE, out_zp: int = OUTPUT_ZP) -> bytes:
    return single_op_model("LOG_SOFTMAX", [Tensor(shape, "int8", scale=scale,
                                                  zero_point=zero_point)],
                           [Tensor(shape, "int8", scale=out_scale, zero_point=out_zp)])


def _case(seed: int) -> tuple[bytes, np.ndarray, float]:
    """A seeded model and input: scale, shape and the kind of rows vary with the seed."""
    rng = np.random.default_rng(seed)
    scale = float(np.float32(rng.choice([1e-5, 5e-4, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0, 100.0])
                             * rng.uniform(0.5, 2.0)))
    depth = int(rng.choice([1, 2, 7, 64, 255, 1000]))
    rows = int(rng.integers(1, 4))
    x = rng.integers(-128, 128, size=(rows, depth)).astype(np.int8)
    if seed % 4 == 1:
        x[:] = x[:, :1]  # every element the row's max
    elif seed % 4 == 2:
        x[:] = -128
        x[:, depth // 2] = 127  # one far outlier: every other element cut off
    return _model((rows, depth), scale, int(rng.integers(-128, 128))), x, scale


SEEDS = range(24)


@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_and_graph_match_tflite_micro(seed: int) -> None:
    model, x, scale = _case(seed)
    want = run_tflm(model, [x])[0][0]
    assert np.array_equal(ls.log_softmax(x, ls.log_softmax_params(scale)), want)
    got = np.asarray(run_graph(import_model(read_model(model)), [x])[0])
    assert got.dtype == np.int8 and np.array_equal(got, want), np.argwhere(got != want)[:5]


def test_rank_three_input() -> None:
    x = np.random.default_rng(5).integers(-128, 128, size=(2, 3, 17)).astype(np.int8)
    model = _model((2, 3, 17), 0.07, -3)
    want = run_tflm(model, [x])[0][0]
    assert np.array_equal(np.asarray(run_graph(import_model(read_model(model)), [x])[0]), want)


def test_graph_log_matches_numpy() -> None:
    """The fixed-point log of the graph against numpy's on sums over the whole positive
    int32 range: every power of two and its neighbours, and seeded values."""
    powers = np.int64(1) << np.arange(31, dtype=np.int64)
    sums = np.concatenate([powers, powers - 1, powers + 1, [ls.fp.INT32_MAX],
                           np.random.default_rng(0).integers(1, 1 << 31, size=4000)])
    sums = np.unique(np.clip(sums, 1, ls.fp.INT32_MAX)).astype(np.int32)
    g = Graph("log")
    x = g.add_input(TensorType((sums.size,), dtype("i32")))
    g.outputs = [build_log_softmax.log_x_ge_1(GraphBuilder(g), x)]
    got = np.asarray(run_graph(g, [sums])[0])
    assert np.array_equal(got, ls.log_x_ge_1(sums))


def test_log_of_one_is_zero_and_log_grows() -> None:
    """The numpy log is the log: 1.0 (Q12) gives 0, and e**k gives k to 2**-20."""
    one = 1 << (31 - ls.ACCUMULATION_INTEGER_BITS)
    values = np.array([one, int(one * np.e), int(one * np.e ** 5)], np.int64)
    got = ls.log_x_ge_1(values) / float(1 << (31 - ls.INPUT_INTEGER_BITS))
    assert np.allclose(got, [0.0, 1.0, 5.0], atol=2 ** -20)


@pytest.mark.parametrize("out_scale,out_zp", [(1 / 256, 127), (16 / 256, -128)])
def test_other_output_quantization_is_refused(out_scale: float, out_zp: int) -> None:
    model = _model((2, 8), 0.1, 0, out_scale, out_zp)
    with pytest.raises(TFLiteError, match="scale 16/256 and zero point 127") as e:
        import_model(read_model(model))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "riscv32", "cortex-m0plus"])
def test_firmware_matches_tflite_micro(board: str, tmp_path: Path) -> None:
    from toolchain.testing.difftest import run_side_by_side

    cases = [_case(seed) for seed in (0, 1, 2, 3, 6, 9)]
    graphs = [import_model(read_model(model)) for model, _, _ in cases]
    outputs = run_side_by_side(graphs, [x for _, x, _ in cases], board, tmp_path / "fw")
    for k, ((model, x, _), got) in enumerate(zip(cases, outputs, strict=True)):
        want = run_tflm(model, [x])[0][0]
        assert got.dtype == np.int8 and np.array_equal(got, want), k
