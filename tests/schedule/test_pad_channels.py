"""Input channels padded to whole words for the packed int8 steps
(toolchain/schedule/pad_channels.py).

What the rewrite touches (int8 convolutions and dense layers with a channel count that
is not a multiple of 4, on DSP targets only), what it makes of them (a pad of the
input, zero weights, the pad kept in RAM for pointwise layers), and the firmware on
Cortex-M4 under QEMU: layers over odd channel counts, kernel sizes, strides, dilations
and paddings, dense layers, bit for bit against the numpy reference and TFLite Micro.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.graph.ir import Graph
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.pad_channels import pad_int8_channels
from toolchain.target import load_board


def _graph(tmp_path: Path, *layers: dict) -> tuple[Graph, Path]:
    """A prepared graph of independent int8 layers (int8_layer_op's keywords)."""
    rng = np.random.default_rng(7)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return prepare_graph(load_graph(path)), path


def _convs(graph: Graph) -> list:
    return [n for n in graph.nodes if n.op == "convolution"]


def test_pads_odd_channels_with_zero_weights(tmp_path: Path) -> None:
    graph, _ = _graph(tmp_path, dict(kind="conv", h=5, w=4, cin=13, cout=8),
                      dict(kind="conv", h=5, w=4, cin=7, cout=8, kh=3, kw=3))
    weights = [np.asarray(c.inputs[1].producer.attrs["value"]) for c in _convs(graph)]
    keep = pad_int8_channels(graph, load_board("cortex-m4").target_info)
    # The 3x3 window's input was a SAME border's pad already: that pad is widened.
    for conv, before, c4, border in zip(_convs(graph), weights, (16, 8), (0, 1),
                                        strict=True):
        x, w = conv.inputs
        assert x.producer.op == "pad" and x.type.shape[-1] == c4
        assert x.producer.attrs["high"] == (0, border, border, c4 - before.shape[-1])
        assert x.producer.inputs[0] in graph.inputs  # one pad reads the input
        after = np.asarray(w.producer.attrs["value"])
        assert after.shape == (*before.shape[:-1], c4)
        assert np.array_equal(after[..., :before.shape[-1]], before)
        assert not after[..., before.shape[-1]:].any()
    # Both pads are kept in RAM (the module docstring says why).
    pads = [c.inputs[0] for c in _convs(graph)]
    assert keep == {id(pads[0]), id(pads[1])}


@pytest.mark.parametrize("cin,cout", [(61, 32), (27, 10)])
def test_pads_a_dense_layers_inputs(tmp_path: Path, cin: int, cout: int) -> None:
    """However few its points (27 -> 10: 270), a dense layer is padded: it runs packed
    steps, never the cold plain loops (loops/cold.py). Its pad (one pixel) is fused, not
    kept in RAM: the dense-rows kernel pads the last word itself (loops/dense_rows.py)."""
    graph, _ = _graph(tmp_path, dict(kind="dense", h=1, w=1, cin=cin, cout=cout))
    keep = pad_int8_channels(graph, load_board("cortex-m4").target_info)
    (dot,) = [n for n in graph.nodes if n.op == "dot_general"]
    x, w = dot.inputs
    c4 = -(-cin // 4) * 4
    assert x.producer.op == "pad" and x.type.shape == (1, c4) and keep == set()
    assert w.type.shape == (cout, c4)
    assert not np.asarray(w.producer.attrs["value"])[:, cin:].any()


@pytest.mark.parametrize("layer", [
    dict(kind="conv", h=5, w=4, cin=16, cout=8),  # already whole words
    dict(kind="conv", h=8, w=4, cin=1, cout=8, kh=5, kw=5),  # one channel: gathered taps
    dict(kind="conv", h=8, w=4, cin=3, cout=8, kh=3, kw=3),  # 3x3 over 3: no gain
    dict(kind="conv", h=8, w=6, cin=2, cout=8, kh=5, kw=5),  # rows merged (window_rows)
    dict(kind="conv", h=5, w=4, cin=13, cout=1),  # too few MACs per padded byte
    dict(kind="depthwise", h=5, w=4, cin=13, cout=13, kh=3, kw=3),
    dict(kind="dense", h=1, w=1, cin=3, cout=10),  # fewer than 5 inputs
], ids=["cin16", "cin1", "cin3-3x3", "cin2-5x5", "cout1", "depthwise", "dense-3"])
def test_leaves_other_layers(tmp_path: Path, layer: dict) -> None:
    graph, _ = _graph(tmp_path, layer)
    before = [n.op for n in graph.nodes]
    assert pad_int8_channels(graph, load_board("cortex-m4").target_info) == set()
    assert [n.op for n in graph.nodes] == before


@pytest.mark.parametrize("layer", [
    dict(kind="conv", h=9, w=9, cin=2, cout=8, kh=5, kw=5, dilation=2),  # rows not merged
    dict(kind="conv", h=9, w=9, cin=5, cout=8, kh=5, kw=5),  # 5 channels: padded to 8
], ids=["cin2-5x5-d2", "cin5-5x5"])
def test_pads_windows_whose_rows_do_not_merge(tmp_path: Path, layer: dict) -> None:
    graph, _ = _graph(tmp_path, layer)
    pad_int8_channels(graph, load_board("cortex-m4").target_info)
    assert _convs(graph)[0].inputs[0].type.shape[-1] == 4 if layer["cin"] < 4 else 8


# cortex-m55 pads by its own row (PAD_ROWS "mve"): tests/schedule/test_pad_channels_helium.py
@pytest.mark.parametrize("board", ["riscv32", "cortex-m3"])
def test_only_on_word_packed_targets(tmp_path: Path, board: str) -> None:
    graph, _ = _graph(tmp_path, dict(kind="conv", h=5, w=4, cin=13, cout=8))
    assert pad_int8_channels(graph, load_board(board).target_info) == set()
    assert _convs(graph)[0].inputs[0].type.shape[-1] == 13


def test_pointwise_pad_is_its_own_dispatch(tmp_path: Path) -> None:
    # 61 channels: past the im2col kernel's pointwise layers (which read 5-32 unpadded).
    graph, _ = _graph(tmp_path, dict(kind="conv", h=5, w=4, cin=61, cout=8))
    program = schedule_for_board(graph, load_board("cortex-m4"))
    assert len(program.steps) == 2
    assert program.steps[1].kernel.domain[-1] == 64  # the convolution reads 64 channels


# Odd channel counts through every path the rewrite takes: pointwise (pad in RAM),
# windows (pad fused, staged), strides, dilation, VALID padding, 1xN windows, the
# smallest counts the rewrite takes (2, 3: wide windows) and ones just past a multiple of 4.
LAYERS = [
    dict(kind="conv", h=7, w=5, cin=13, cout=12),
    dict(kind="conv", h=7, w=5, cin=61, cout=8),
    dict(kind="conv", h=6, w=6, cin=5, cout=16, stride=2),
    dict(kind="conv", h=7, w=5, cin=2, cout=8, kh=1, kw=7),
    dict(kind="conv", h=9, w=9, cin=3, cout=16, kh=5, kw=5, stride=2),
    dict(kind="conv", h=7, w=5, cin=13, cout=12, kh=3, kw=3),
    dict(kind="conv", h=7, w=6, cin=7, cout=8, kh=3, kw=3, dilation=2),
    dict(kind="conv", h=7, w=5, cin=31, cout=4, kh=3, kw=3, padding="VALID"),
    dict(kind="conv", h=9, w=9, cin=6, cout=8, kh=5, kw=5, stride=2),
    dict(kind="conv", h=3, w=9, cin=9, cout=12, kh=1, kw=7),
    dict(kind="conv", h=5, w=5, cin=67, cout=4, kh=3, kw=3),
    dict(kind="dense", h=1, w=1, cin=61, cout=32),
    dict(kind="dense", h=1, w=1, cin=250, cout=10),
]


def test_odd_channels_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    graph, path = _graph(tmp_path, *LAYERS)
    # 3 pads of their own (the pointwise layers'; the dense layers' are fused), 3 SAME
    # borders widened (windows) and the 3x3 over 13's kept as it is (its rows merged,
    # not padded); the VALID 3x3 over 31 channels, the 2- and 3-channel windows and the
    # 5x5 stride 2 over 6 (rows merged, few MACs a byte of its border) keep theirs fused.
    assert len(pad_int8_channels(graph, load_board("cortex-m4").target_info)) == 7
    build = minirt.build(path, "cortex-m4", out_dir=tmp_path / "build")
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-128, 128, (1, la["cin"]) if la["kind"] == "dense" else
                           (1, la["h"], la["w"], la["cin"])).astype(np.int8) for la in LAYERS]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({LAYERS[i]}) differs from TFLite Micro"
