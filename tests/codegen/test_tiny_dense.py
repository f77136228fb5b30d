"""Tiny dense layers written out row by row in the dispatch (loops/tiny_dense.py,
codegen/tiny_dense.py) on the DSP boards under QEMU, bit for bit against the numpy
reference and TFLite Micro.

The sweep covers what the written-out code depends on: input counts that are whole
words and ones padded to whole words with the pad fused (the last word's bytes cleared
in the dispatch: 9, 13, 21, 27, 33 inputs, 1 to 3 real bytes), odd and even step
counts (the input read two words at a time), 2 to 16 outputs in one tile (their sums'
starts read together up to 6), more in tiles of 12 or 8 (36, 40, 32 outputs), per-tensor
and per-channel weight scales (the requantization's constants immediates or a table)
and a fused ReLU; and the layers it leaves to the calls (under 8 inputs, one output,
past its bounds) beside them, exact too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, build_model, int8_layer_op, run_tflm

import minirt
from toolchain.frontend.tflite.importer import load_tflite
from toolchain.kernel.form import Kernel
from toolchain.loops import choose_schedule
from toolchain.loops.tiny_dense import TINY_DENSE_KIND, fits, tile_rows
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

# (inputs, outputs, per-channel scales, fused ReLU)
SWEEP = [(16, 4, True, False), (16, 4, False, False), (16, 5, False, True), (3, 4, False, False),
         (5, 7, True, False), (8, 2, False, False), (9, 3, True, True), (12, 16, False, False),
         (13, 9, True, False), (16, 1, False, False), (17, 6, True, False),
         (21, 11, False, True), (24, 8, True, False), (27, 10, True, False),
         (31, 12, False, False), (32, 16, True, True), (33, 5, False, False),
         (20, 16, True, False), (9, 36, True, False), (13, 40, False, True),
         (16, 32, True, False), (10, 6, False, False), (6, 7, True, True), (64, 8, True, False)]
# Shapes outside the written-out bounds (loops/tiny_dense.py fits): still exact, by the
# calls.
LEFT = [(24, 16, True, False), (128, 8, False, False), (64, 10, True, False),
        (64, 32, False, False)]


def _dense(rng: np.random.Generator, cin: int, cout: int, name: str, per_channel: bool,
           relu: bool) -> tuple[Op, object, object]:
    """A FULLY_CONNECTED layer as TFLite's converter writes it (tests/tflite_models.py
    int8_layer_op), its weights' scales per output channel where `per_channel` (as the
    converter writes a Keras Dense layer's), ReLU fused where `relu`."""
    op, x, y = int8_layer_op(rng, "dense", 1, 1, cin, cout, name=name)
    if per_channel:
        w, bias = op.inputs[1], op.inputs[2]
        scales = rng.uniform(0.005, 0.02, cout).astype(np.float32)
        w.scale, w.zero_point = list(scales), [0] * cout
        bias.scale = list((x.scale * scales).astype(np.float32))
        bias.zero_point = [0] * cout
    if relu:
        op.options = {**op.options, "fused_activation_function": 1}
    return op, x, y


def _model(tmp_path: Path, layers: list[tuple[int, int, bool, bool]]
           ) -> tuple[Path, list[np.ndarray]]:
    rng = np.random.default_rng(21)
    ops, xs, ys = [], [], []
    for i, (cin, cout, per_channel, relu) in enumerate(layers):
        op, x, y = _dense(rng, cin, cout, f"L{i}", per_channel, relu)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "tiny.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    return path, inputs


def _dots(path: Path, board: str) -> list[str]:
    """The dot kind of each reduction nest of the model's schedule on `board`."""
    program = schedule_for_board(prepare_graph(load_tflite(path)), load_board(board), "speed")
    target = load_board(board).target_info
    return [nest.dot for s in program.steps
            if isinstance(s.kernel, Kernel) and s.kernel.is_reduction
            for nest in choose_schedule(s.kernel, target).nests]


def _check(tmp_path: Path, board: str, layers: list[tuple[int, int, bool, bool]]) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    path, inputs = _model(tmp_path, layers)
    build = minirt.build(path, board, out_dir=tmp_path / board)
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {layers[i]} differs from TFLite Micro on {board}"


def test_tiny_dense_sweep_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    _check(tmp_path, "cortex-m4", SWEEP + LEFT)


def test_the_rules_write_out_tiny_layers_only(tmp_path: Path) -> None:
    """Layers of 2+ whole or padded steps within the bounds are written out; under 8
    inputs, one output, an unpadded remainder or past the bounds they keep their
    schedules."""
    path, _ = _model(tmp_path, SWEEP + LEFT)
    dots = _dots(path, "cortex-m4")
    assert len(dots) == len(SWEEP + LEFT)
    for (cin, cout, *_), dot in zip(SWEEP + LEFT, dots, strict=True):
        steps = -(-cin // 4)
        # An input padded to whole words only for 4 outputs or more (schedule/
        # pad_channels.py MIN_MACS_PER_BYTE); unpadded the layer is no packed one.
        expected = steps >= 2 and cout > 1 and (cin % 4 == 0 or cout >= 4) and \
            tile_rows(cout, steps) is not None
        assert (dot == TINY_DENSE_KIND) == expected, (cin, cout, dot)


def test_no_tiny_dense_without_the_dsp_extension(tmp_path: Path) -> None:
    """riscv32 has no SMLAD: its dense layers keep their generated loops, exact."""
    path, _ = _model(tmp_path, SWEEP[:4])
    assert TINY_DENSE_KIND not in _dots(path, "riscv32")


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_tiny_dense_bit_exact_on_other_dsp_boards(tmp_path: Path, board: str) -> None:
    _check(tmp_path, board, [SWEEP[0], SWEEP[2], SWEEP[6], SWEEP[13], SWEEP[18], SWEEP[21]])


def test_bounds() -> None:
    """The measured bounds (loops/tiny_dense.py): up to 8 rows over 16 steps, up to 16
    rows over 90 row steps, tiles of 8 or 6 rows past 8 from 4 steps on and past 16 up
    to 12 steps."""
    assert fits(8, 16) and not fits(8, 17)
    assert fits(16, 5) and not fits(16, 6) and fits(9, 10) and not fits(17, 1)
    assert tile_rows(36, 3) == 6 and tile_rows(16, 4) == 8 and tile_rows(12, 3) == 12
    assert tile_rows(32, 12) == 8 and tile_rows(32, 16) is None
    assert tile_rows(16, 6) is None and tile_rows(4, 16) == 4 and tile_rows(17, 2) is None
