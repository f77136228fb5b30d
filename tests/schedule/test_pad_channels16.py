"""16x8 layers' input channels padded to whole int16 pairs for the SMLAD steps
(toolchain/schedule/pad_channels16.py), and what follows from it: the last pair of a
channel count that is no multiple of 4 as one SMLAD (codegen/packed.py), the arena plan
placing a 16x8 result where its widened schedule is safe too (schedule/program.py).

What the rewrite touches (16x8 convolutions and dense layers with an odd channel count,
on DSP targets), what it makes of them (a pad of the input kept in RAM, holding the
convolution's zero border too, zero weights), and the firmware on Cortex-M4 under QEMU:
odd channel counts (3, 13, 61), strides, dilations, a depthwise 3x3 and a dense 27->10
layer, bit for bit against the numpy reference and TFLite Micro (and on cortex-m7 and
cortex-m33, which have the same steps).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model, run_tflm

import minirt
from toolchain.graph.ir import Graph
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.pad_channels16 import pad_int16_channels
from toolchain.target import load_board


def layer16(rng: np.random.Generator, kind: str, h: int, w: int, cin: int, cout: int,
            kh: int = 1, kw: int = 1, stride: int = 1, dilation: int = 1,
            padding: str = "SAME", name: str = "y",
            rows: int = 1) -> tuple[Op, Tensor, Tensor]:
    """One 16x8 layer as TFLite's converter writes it (int16 activations with zero
    point 0, int8 per-channel weights, int64 bias): `kind` "conv", "depthwise"
    (multiplier 1) or "dense" (on a [1, cin] input, or [1, rows, cin / rows], which
    FULLY_CONNECTED flattens). The output scale keeps about 3 standard deviations of the
    sums in range."""
    in_scale = 1.0 / 4096
    depth = kh * kw * (1 if kind == "depthwise" else cin)
    if kind == "dense":
        xshape = (1, cin) if rows == 1 else (1, rows, cin // rows)
        x = Tensor(xshape, "int16", scale=in_scale, zero_point=0, name=f"{name}_in")
        wshape, qdim = (cout, cin), 0
    else:
        x = Tensor((1, h, w, cin), "int16", scale=in_scale, zero_point=0, name=f"{name}_in")
        wshape, qdim = ((cout, kh, kw, cin), 0) if kind == "conv" else ((1, kh, kw, cout), 3)
    w_scale = rng.uniform(0.005, 0.02, cout).astype(np.float32)
    wdata = rng.integers(-127, 128, wshape).astype(np.int8)
    b_scale = (in_scale * w_scale).astype(np.float32)
    std = 18918.0 * 74.0 * np.sqrt(depth)  # of sum(x * w) over uniform int16 x, int8 w
    bias = rng.integers(-int(std), int(std) + 1, cout).astype(np.int64)
    out_scale = float(3 * std * in_scale * float(w_scale.mean()) / 32768)
    if kind == "dense":
        w_scale, b_scale = w_scale[:1], b_scale[:1]
    wt = Tensor(wshape, "int8", scale=list(w_scale), zero_point=[0] * len(w_scale),
                quantized_dimension=qdim, data=wdata, name=f"{name}_w")
    bt = Tensor((cout,), "int64", scale=list(b_scale), zero_point=[0] * len(b_scale),
                data=bias, name=f"{name}_b")
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh = (h - dilation * (kh - 1) - 1) // stride + 1
        ow = (w - dilation * (kw - 1) - 1) // stride + 1
    yshape = (1, cout) if kind == "dense" else (1, oh, ow, cout)
    y = Tensor(yshape, "int16", scale=out_scale, zero_point=0, name=name)
    if kind == "dense":
        return Op("FULLY_CONNECTED", [x, wt, bt], [y]), x, y
    opts = dict(padding=padding, stride_w=stride, stride_h=stride,
                dilation_w_factor=dilation, dilation_h_factor=dilation)
    if kind == "depthwise":
        opts["depth_multiplier"] = 1
        return Op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts), x, y
    return Op("CONV_2D", [x, wt, bt], [y], opts), x, y


def _graph(tmp_path: Path, *layers: dict) -> tuple[Graph, Path]:
    """A prepared graph of independent 16x8 layers (layer16's keywords)."""
    rng = np.random.default_rng(11)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = layer16(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers16.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return prepare_graph(load_graph(path)), path


def _contractions(graph: Graph) -> list:
    return [n for n in graph.nodes if n.op in ("convolution", "dot_general")]


def test_pads_odd_channels_to_a_pair_with_the_border(tmp_path: Path) -> None:
    graph, _ = _graph(tmp_path, dict(kind="conv", h=8, w=8, cin=13, cout=6, kh=3, kw=3,
                                     dilation=2),
                      dict(kind="dense", h=1, w=1, cin=27, cout=10))
    weights = [np.asarray(n.inputs[1].producer.attrs["value"]) for n in _contractions(graph)]
    keep = pad_int16_channels(graph, load_board("cortex-m4").target_info)
    conv, dense = _contractions(graph)
    assert len(keep) == 2
    x = conv.inputs[0]
    # 13 -> 14 channels (a pair, not a word of 4), the SAME border of 2 in the pad.
    assert x.producer.op == "pad" and id(x) in keep
    assert x.type.shape == (1, 12, 12, 14)
    assert x.producer.attrs["low"] == (0, 2, 2, 0)
    assert x.producer.attrs["high"] == (0, 2, 2, 1)
    assert all(tuple(p) == (0, 0) for p in conv.attrs["padding"])
    assert dense.inputs[0].type.shape == (1, 28)
    for node, before in zip((conv, dense), weights, strict=True):
        after = np.asarray(node.inputs[1].producer.attrs["value"])
        c = before.shape[-1]
        assert after.shape[-1] == c + 1
        assert np.array_equal(after[..., :c], before) and not after[..., c:].any()


@pytest.mark.parametrize("layer", [
    dict(kind="conv", h=6, w=6, cin=12, cout=8, kh=3, kw=3),  # even: steps as they are
    dict(kind="depthwise", h=6, w=6, cin=13, cout=13, kh=3, kw=3),  # channels not reduced
    # One channel: a pair of (x, 0) is one useful product a SMLAD, no gain for the pad.
    dict(kind="conv", h=49, w=10, cin=1, cout=64, kh=10, kw=4, stride=2),
])
def test_leaves_other_layers(tmp_path: Path, layer: dict) -> None:
    graph, _ = _graph(tmp_path, layer)
    assert pad_int16_channels(graph, load_board("cortex-m4").target_info) == set()


@pytest.mark.parametrize("board", ["riscv32", "cortex-m3"])
def test_only_on_targets_with_int16_steps(tmp_path: Path, board: str) -> None:
    graph, _ = _graph(tmp_path, dict(kind="conv", h=6, w=6, cin=13, cout=8, kh=3, kw=3))
    assert pad_int16_channels(graph, load_board(board).target_info) == set()


def test_padded_layers_take_the_int16_steps(tmp_path: Path) -> None:
    """On cortex-m4 each padded layer's schedule packs its channels (dot dsp16): the
    weights widened, the arena place safe for the packed tiles."""
    graph, _ = _graph(tmp_path, dict(kind="conv", h=12, w=12, cin=13, cout=61, kh=3, kw=3,
                                     dilation=2),
                      dict(kind="conv", h=12, w=12, cin=61, cout=27))
    board = load_board("cortex-m4")
    program = schedule_for_board(graph, board)
    # A step the arena plan fixed carries its schedule; the others are chosen by the
    # rules when their code is generated.
    dots = [n.dot for s in program.steps if isinstance(s.kernel, Kernel)
            and len(s.kernel.domain) > 4
            for n in (s.schedule or choose_schedule(s.kernel, board.target_info)).nests]
    assert dots == ["dsp16", "dsp16"]


LAYERS = [
    dict(kind="conv", h=24, w=24, cin=3, cout=13, kh=3, kw=3, stride=2),
    dict(kind="conv", h=12, w=12, cin=13, cout=61, kh=3, kw=3, dilation=2),
    dict(kind="conv", h=7, w=9, cin=13, cout=5, kh=3, kw=3, padding="VALID"),
    dict(kind="conv", h=12, w=12, cin=61, cout=27),
    dict(kind="conv", h=5, w=7, cin=61, cout=3, kh=1, kw=3, stride=2),
    dict(kind="depthwise", h=12, w=12, cin=61, cout=61, kh=3, kw=3),
    dict(kind="depthwise", h=9, w=7, cin=13, cout=13, kh=3, kw=3, stride=2),
    dict(kind="dense", h=1, w=1, cin=27, cout=10),
    dict(kind="dense", h=1, w=1, cin=61, cout=7),
    dict(kind="dense", h=1, w=1, cin=70, cout=16, rows=10),  # conv1d_kws's flattened map
]


def _input_shape(layer: dict) -> tuple[int, ...]:
    if layer["kind"] != "dense":
        return (1, layer["h"], layer["w"], layer["cin"])
    rows = layer.get("rows", 1)
    return (1, layer["cin"]) if rows == 1 else (1, rows, layer["cin"] // rows)


def test_dense_over_a_reshape_reads_a_plain_row(tmp_path: Path) -> None:
    """The flattening reshape before a 16x8 dense layer is kept as its own buffer, so
    the layer's input index is no divide and remainder and its steps pack (dsp16)."""
    graph, _ = _graph(tmp_path, LAYERS[-1])
    (dense,) = [n for n in graph.nodes if n.op == "dot_general"]
    assert dense.inputs[0].producer.op == "reshape"
    assert pad_int16_channels(graph, load_board("cortex-m4").target_info) == \
        {id(dense.inputs[0])}
    graph, _ = _graph(tmp_path, LAYERS[-1])
    board = load_board("cortex-m4")
    program = schedule_for_board(graph, board)
    dots = [n.dot for s in program.steps if isinstance(s.kernel, Kernel)
            and s.kernel.domain == (1, 16, 70)
            for n in (s.schedule or choose_schedule(s.kernel, board.target_info)).nests]
    assert dots == ["dsp16"]


# The boards whose SIMD row has the int16 steps (the DSP extension), where the rewrite
# applies.
DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_odd_channels_bit_exact(tmp_path: Path, board: str) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    _, path = _graph(tmp_path, *LAYERS)
    build = minirt.build(path, board, out_dir=tmp_path / "build")
    rng = np.random.default_rng(5)
    inputs = [rng.integers(-32768, 32768, _input_shape(la)).astype(np.int16)
              for la in LAYERS]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({LAYERS[i]}) differs from TFLite Micro"
        assert len(np.unique(b)) > min(8, b.size // 2), f"layer {i}: outputs nearly constant"
