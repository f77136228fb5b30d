"""Dilated and strided windows in the DSP 2x4 staged kernel (issue 21): two pixels'
whole dilated window over 8 channels staged in one call (codegen/dot_ukernel.py
`_stage_window2`, runtime_c's mrt_pair2w2_s8), where its taps, which follow one
another only undilated, took a staging call each.

Every case is an int8 model of several CONV_2D layers built for cortex-m4 and run
under QEMU: its outputs must be the numpy reference's and TFLite Micro's exactly. The
sweep holds the channel counts the new call stages (8, and 7 padded to 8), those it
leaves to the call a tap or merged rows (13, 21: padded to 16 and 24, whole words of
more than two a tap), odd maps (a last pixel staged alone), a one-row and a 3-row
dilated window, dilation 3, VALID padding, output channels past a group of four, and
stride 2 over 8 channels (taps that follow one another: the runs, not the new call).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.loops.rules import UKERNELS

WINDOW2 = UKERNELS["dsp"].pair_two_window2_symbol

# name: (layers (int8_layer_op's keywords), whether the image must call WINDOW2).
CASES = {
    "d2-8-13-21": ([dict(kind="conv", h=19, w=6, cin=c, cout=16, kh=3, kw=3, dilation=2)
                    for c in (8, 13, 21)], True),
    "d2-odd-maps": ([dict(kind="conv", h=11, w=5, cin=8, cout=10, kh=3, kw=3, dilation=2),
                     dict(kind="conv", h=9, w=7, cin=7, cout=16, kh=1, kw=3, dilation=2),
                     dict(kind="conv", h=12, w=8, cin=8, cout=13, kh=3, kw=3, dilation=3),
                     dict(kind="conv", h=12, w=9, cin=8, cout=16, kh=3, kw=3, dilation=2,
                          padding="VALID")], True),
    "s2-8": ([dict(kind="conv", h=10, w=10, cin=8, cout=16, kh=3, kw=3, stride=2),
              dict(kind="conv", h=11, w=9, cin=8, cout=16, kh=3, kw=3, stride=2)], False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dilated_and_strided_windows_bit_exact(tmp_path: Path, name: str) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    layers, window2 = CASES[name]
    rng = np.random.default_rng(21)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    build = minirt.build(path, "cortex-m4", out_dir=tmp_path / "build")
    link_map = (tmp_path / "build" / "firmware.map").read_text()
    assert (WINDOW2 in link_map) == window2, f"{WINDOW2} {'not ' * window2}linked"
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({layers[i]}) differs from TFLite Micro"
