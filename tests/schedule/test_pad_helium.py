"""Which padded inputs Helium writes out (schedule/pad_helium.py `window_pads`): those of
int8 convolution windows whose border outputs do at least BORDER_MACS_PER_BYTE MACs per
byte of the padded input (besides kws's rows of 4 taps), on cortex-m55 only; and the firmware
with them, under QEMU, bit for bit against the numpy reference and TFLite Micro.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph
from toolchain.schedule.pad_helium import window_pads
from toolchain.target import load_target

# (layer, its pad written out on cortex-m55); the comments: border MACs per byte
LAYERS = [
    (dict(kind="conv", h=19, w=6, cin=64, cout=32, kh=5, kw=5), True),  # 292
    (dict(kind="conv", h=10, w=10, cin=4, cout=32, kh=3, kw=3), True),  # 72
    (dict(kind="conv", h=9, w=7, cin=16, cout=16, kh=1, kw=7), True),  # 52
    (dict(kind="conv", h=19, w=6, cin=32, cout=3, kh=3, kw=3), False),  # 7: the copy loses
    (dict(kind="conv", h=10, w=10, cin=16, cout=16, kh=3, kw=3, stride=2), False),  # 11
    (dict(kind="conv", h=7, w=5, cin=16, cout=16, kh=3, kw=3, padding="VALID"), False),
    (dict(kind="depthwise", h=10, w=10, cin=16, cout=16, kh=3, kw=3), False),
]


def _model(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    rng = np.random.default_rng(13)
    ops, xs, ys = [], [], []
    for i, (layer, _) in enumerate(LAYERS):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return path, [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]


def test_pads_written_out_where_the_macs_repay_the_copy(tmp_path: Path) -> None:
    path, _ = _model(tmp_path)
    graph = prepare_graph(load_graph(path))
    kept = window_pads(graph, load_target("cortex-m55"))
    convs = [n for n in graph.nodes if n.op == "convolution"]
    assert len(convs) == len(LAYERS)
    got = [id(n.inputs[0]) in kept for n in convs]
    assert got == [want for _, want in LAYERS]
    assert window_pads(graph, load_target("cortex-m4")) == set()


def test_written_out_pads_bit_exact_on_cortex_m55(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    path, inputs = _model(tmp_path)
    build = minirt.build(path, "cortex-m55", out_dir=tmp_path / "build")
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({LAYERS[i][0]}) differs from TFLite Micro"
