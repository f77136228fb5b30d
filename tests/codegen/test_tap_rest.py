"""Dilated 3x3 windows over 13 input channels with each tap's 13th channel gathered
(issue 21): schedule/tap_rest.py reorders the weights and sets Nest.tap_rest, the
staging call mrt_pair2w3r_s8 (runtime_c) writes two pixels' window in that order and
the 2x4 calls run 30 steps where 36 carried the padded channels' zero lanes.

Every case is an int8 model of several CONV_2D layers built for cortex-m4 (the
13-channel maps for cortex-m33 too) and run under QEMU: its outputs must be the numpy
reference's and TFLite Micro's exactly. The sweep holds dilation 2 over odd channel
counts 5-15 (13 gathered, the others as before), odd map widths and heights (a lone
last pixel, staged twice: the staging has no one-pixel form), dilation 3, output
channels past a group of four, and two it leaves: a VALID window (its channel pad
fused into the window, whose channel loads are then tested) and 16 channels (no zero
lanes). TAKEN says how many layers of each case take the gathering; the test checks
it, and that the weights the firmware holds are each tap's first 12 channels, then the
taps' 13th.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.kernel.paired import from_paired_rows
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.tap_rest import KEPT, tap_rest_steps
from toolchain.target import load_board

D2 = dict(kind="conv", kh=3, kw=3, dilation=2)

CASES = {
    "d2-odd-channels": [dict(D2, h=19, w=6, cin=c, cout=16) for c in (5, 7, 9, 11, 13, 15)],
    "d2-13-maps": [dict(D2, h=9, w=7, cin=13, cout=16), dict(D2, h=8, w=5, cin=13, cout=10),
                   dict(D2, h=11, w=9, cin=13, cout=13),
                   dict(kind="conv", kh=3, kw=3, dilation=3, h=12, w=8, cin=13, cout=8),
                   dict(D2, h=12, w=9, cin=13, cout=16, padding="VALID"),
                   dict(D2, h=19, w=6, cin=16, cout=16)],
}
TAKEN = {"d2-odd-channels": 1, "d2-13-maps": 4}


@pytest.mark.parametrize("name,board", [(name, "cortex-m4") for name in CASES]
                         + [("d2-13-maps", "cortex-m33")])
def test_gathered_tap_rests_bit_exact(tmp_path: Path, name: str, board: str) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    layers = CASES[name]
    rng = np.random.default_rng(13)
    ops, xs, ys, weights = [], [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
        weights.append(op.inputs[1].data)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(path, board, out_dir=tmp_path / "build")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({layers[i]}) differs from TFLite Micro"
    taken = _taken(path, board)
    assert len(taken) == TAKEN[name]
    for held in taken:  # (O4, 3, 3, 16): some layer's weights, in the gathered order
        o = held.shape[0]
        flat = held.reshape(o, -1)
        assert not flat[:, tap_rest_steps(9) * 4:].any()  # past the steps: zeros
        gathered = flat[:, :9 * KEPT].reshape(o, 9, KEPT)
        rest = flat[:, 9 * KEPT:9 * KEPT + 9]
        assert any(np.array_equal(gathered[:w.shape[0]], w.reshape(w.shape[0], 9, 13)[..., :KEPT])
                   and np.array_equal(rest[:w.shape[0]], w.reshape(w.shape[0], 9, 13)[..., KEPT])
                   for w in weights if w.shape[-1] == 13)


def _taken(path: Path, name: str) -> list[np.ndarray]:
    """The weights (int8, rows interleaved undone) of the model's steps on board `name`
    whose nest gathers the tap rests."""
    board = load_board(name)
    program = schedule_for_board(prepare_graph(load_graph(str(path))), board)
    out = []
    for step in program.steps:
        if not isinstance(step.kernel, Kernel):
            continue
        schedule = step.schedule or choose_schedule(step.kernel, board.target_info)
        if any(n.tap_rest for n in schedule.nests):
            (j,) = step.kernel.interleaved
            out.append(from_paired_rows(program.constants[step.buffers[j].index]))
    return out
