"""GridSample (frontend/onnx/grid_sample.py) beyond ONNX's node tests: every mode,
padding mode and align_corners, 2-D and 3-D, on grids reaching past the image (so the
padding modes matter), against onnxruntime and ONNX's own reference evaluator
(numpy.isclose rtol=1e-4, atol=1e-5: float32 arithmetic in a different order), and a
sample built and run on cortex-m4 and x86-64 against the numpy reference.

onnxruntime's cubic sampling with border padding differs from the spec and ONNX's
reference (it clamps the taps' pixels, not the coordinate), so those are checked against
ONNX's reference only.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_models import import_bytes, merge, run_firmware, run_ort

from toolchain.cli.run import compare
from toolchain.reference import run_graph

CASES = [(rank, mode, pad, align) for rank, mode, pad, align in itertools.product(
    (2, 3), ("nearest", "linear", "cubic"), ("zeros", "border", "reflection"), (0, 1))
    if not (rank == 3 and mode == "cubic")]  # the spec has no 3-D cubic


def _case(rank: int, mode: str, pad: str, align: int) -> tuple[bytes, list[np.ndarray]]:
    rng = np.random.default_rng(rank * 100 + len(mode) * 10 + len(pad) + align)
    xs = (2, 3, 5, 4) if rank == 2 else (1, 2, 3, 4, 5)
    gs = (xs[0], 3, 4, rank) if rank == 2 else (1, 2, 3, 2, rank)
    x = rng.standard_normal(xs).astype(np.float32)
    grid = rng.uniform(-1.7, 1.7, gs).astype(np.float32)
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], mode=mode, padding_mode=pad,
                            align_corners=align)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, xs),
                      helper.make_tensor_value_info("G", TensorProto.FLOAT, gs)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None] * (rank + 2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    return model.SerializeToString(), [x, grid]


@pytest.mark.parametrize("rank,mode,pad,align", CASES)
def test_grid_sample_matches_onnx(rank: int, mode: str, pad: str, align: int) -> None:
    from onnx.reference import ReferenceEvaluator

    data, inputs = _case(rank, mode, pad, align)
    got = run_graph(import_bytes(data), inputs)[0]
    want = ReferenceEvaluator(onnx.load_from_string(data)).run(None, dict(zip("XG", inputs)))
    assert np.allclose(got, want[0], rtol=1e-4, atol=1e-5)
    if mode == "cubic" and pad == "border":
        return  # onnxruntime departs from the spec here (module docstring)
    ort = run_ort(data, inputs)
    if ort is not None:
        assert np.allclose(got, ort[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_grid_sample_on_the_board(board: str, tmp_path) -> None:
    """Every padding mode with each interpolation, 2-D and 3-D, in one firmware."""
    chosen = [c for c in CASES if c[3] == (c[2] == "border")][::2]
    graphs, inputs = [], []
    for case in chosen:
        data, xs = _case(*case)
        graphs.append(import_bytes(data))
        inputs += xs
    want = [y for k, g in enumerate(graphs) for y in run_graph(g, inputs[2 * k:2 * k + 2])]
    got = run_firmware(merge(graphs), board, tmp_path / "fw", inputs)
    assert not compare(got, want)
