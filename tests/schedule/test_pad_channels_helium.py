"""Input channels padded for Helium's int8 steps (schedule/pad_channels.py PAD_ROWS
"mve"): on cortex-m55 a window over channels that are not a whole vector is padded to
16 channels (5 and more) or 4 (2 and 3), its pad written out as a dispatch of its own;
pointwise and dense layers only where many channels are left past whole vectors; 1
channel and whole multiples stay as they are. The
firmware runs under QEMU bit for bit against the numpy reference and TFLite Micro over
odd channel counts, kernel sizes, strides, dilation and VALID padding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.graph.ir import Graph
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph
from toolchain.schedule.pad_channels import pad_int8_channels
from toolchain.target import load_target

M55 = load_target("cortex-m55")

# (layer, input channels it reads after the pass)
PADDED = [
    (dict(kind="conv", h=7, w=5, cin=13, cout=12, kh=3, kw=3), 16),
    (dict(kind="conv", h=7, w=5, cin=61, cout=8, kh=5, kw=5), 64),
    (dict(kind="conv", h=7, w=6, cin=7, cout=8, kh=3, kw=3, dilation=2), 16),
    (dict(kind="conv", h=9, w=9, cin=3, cout=16, kh=5, kw=5, stride=2), 4),
    (dict(kind="conv", h=7, w=5, cin=2, cout=8, kh=1, kw=7), 4),
    (dict(kind="conv", h=7, w=5, cin=31, cout=4, kh=3, kw=3, padding="VALID"), 32),
    (dict(kind="conv", h=6, w=6, cin=8, cout=16, kh=3, kw=3, stride=2), 16),
    (dict(kind="conv", h=7, w=5, cin=4, cout=8, kh=3, kw=3), 4),  # a 4-lane multiple
    (dict(kind="conv", h=7, w=5, cin=1, cout=8, kh=3, kw=3), 1),  # rows of taps instead
    # Pointwise and dense: padded where the channels past whole vectors are 11 or more,
    # or there is no whole vector and the count is no multiple of 8.
    (dict(kind="conv", h=7, w=5, cin=13, cout=8), 16),
    (dict(kind="conv", h=6, w=6, cin=3, cout=16), 4),
    (dict(kind="dense", h=1, w=1, cin=61, cout=32), 64),
    (dict(kind="conv", h=7, w=5, cin=8, cout=8), 8),  # as fast as 16 unpadded
    (dict(kind="dense", h=1, w=1, cin=67, cout=32), 67),  # 3 past 64: padding lost
    (dict(kind="conv", h=7, w=5, cin=26, cout=8), 26),  # 10 past 16
]


def _graph(tmp_path: Path, layers: list[dict]) -> tuple[Graph, Path]:
    rng = np.random.default_rng(11)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return prepare_graph(load_graph(path)), path


def test_helium_pads_windows_to_whole_vectors(tmp_path: Path) -> None:
    graph, _ = _graph(tmp_path, [layer for layer, _ in PADDED])
    kept = pad_int8_channels(graph, M55)
    contractions = [n for n in graph.nodes if n.op in ("convolution", "dot_general")]
    got = [n.inputs[0].type.shape[-1] for n in contractions]
    assert got == [c for _, c in PADDED]
    padded = [n for n, (layer, c) in zip(contractions, PADDED, strict=True)
              if c != layer["cin"]]
    # Every pad is written out (kept), windows' included: the layer reads it interior.
    assert kept == {id(n.inputs[0]) for n in padded}


def test_odd_channels_bit_exact_on_cortex_m55(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    layers = [layer for layer, _ in PADDED]
    _, path = _graph(tmp_path, layers)
    build = minirt.build(path, "cortex-m55", out_dir=tmp_path / "build")
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, (1, la["cin"]) if la["kind"] == "dense" else
                           (1, la["h"], la["w"], la["cin"])).astype(np.int8) for la in layers]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({layers[i]}) differs from TFLite Micro"
