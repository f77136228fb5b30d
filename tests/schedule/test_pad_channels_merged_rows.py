"""Input channels that are no multiple of 4 under a window whose rows merge: each
window row padded once, not every tap (schedule/pad_channels.py `_rows_merge_instead`,
schedule/window_rows.py's VALID view, codegen/dot_ukernel.py `_stage_row_words`,
runtime_c's mrt_pair2u_s8), and the two-pixel dim chosen by the pixels its regions
leave alone (loops/rules.py `two_pixel_dim`); the SAME border of a window over whole
words kept in RAM (`_keeps_word_border`).

What the graph rewrite leaves unpadded and which SAME borders it keeps in RAM, that the
VALID view computes the same integers (the kernel interpreter), and the firmware on
Cortex-M4 under QEMU over 5, 9, 13 and 31 input channels under 3x3, 5x5, 1x7,
stride-2 and dilated windows, bit for bit against the numpy reference and TFLite
Micro (and over 8 and 13 on cortex-m7 and cortex-m33).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.graph.ir import Graph
from toolchain.kernel.form import Kernel
from toolchain.kernel.interpret import run_kernel
from toolchain.loader import load_graph
from toolchain.loops.rules import choose_schedule
from toolchain.pipeline import lower_for_backends, prepare_graph, schedule_for_board
from toolchain.schedule import schedule
from toolchain.schedule.pad_channels import pad_int8_channels
from toolchain.schedule.window_rows import merge_window_rows
from toolchain.target import load_board, load_target


def _model(tmp_path: Path, *layers: dict) -> Path:
    """A .tflite of independent int8 layers (int8_layer_op's keywords)."""
    rng = np.random.default_rng(11)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = int8_layer_op(rng, name=f"L{i}", **layer)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "layers.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return path


def _graph(tmp_path: Path, *layers: dict) -> Graph:
    return prepare_graph(load_graph(_model(tmp_path, *layers)))


def _conv(graph: Graph):
    (conv,) = [n for n in graph.nodes if n.op == "convolution"]
    return conv


@pytest.mark.parametrize("layer", [
    dict(kind="conv", h=19, w=6, cin=13, cout=32, kh=3, kw=3),  # 40 a row, not 48
    dict(kind="conv", h=10, w=10, cin=13, cout=32, kh=5, kw=5),  # 68, not 80
    dict(kind="conv", h=19, w=6, cin=13, cout=32, kh=1, kw=7),  # 2 x 48, not 112
], ids=["3x3", "5x5", "1x7"])
def test_merged_rows_are_not_padded_and_the_border_is_kept(tmp_path: Path,
                                                           layer: dict) -> None:
    graph = _graph(tmp_path, layer)
    w_before = _conv(graph).inputs[1].type.shape
    keep = pad_int8_channels(graph, load_board("cortex-m4").target_info)
    conv = _conv(graph)
    x, w = conv.inputs
    assert x.type.shape[-1] == 13 and w.type.shape == w_before  # no channel pad
    # The SAME border (a pad op of the frontend's) stays, in RAM, its channels as they are.
    assert x.producer.op == "pad" and x.producer.attrs["high"][-1] == 0
    assert keep == {id(x)}


def test_helium_pads_its_own_way(tmp_path: Path) -> None:
    """cortex-m55's steps read any address: window_rows.py merges nothing there, so its
    3x3 over 13 channels keeps Helium's pad to 16 (PAD_ROWS "mve")."""
    graph = _graph(tmp_path, dict(kind="conv", h=19, w=6, cin=13, cout=32, kh=3, kw=3))
    pad_int8_channels(graph, load_board("cortex-m55").target_info)
    assert _conv(graph).inputs[0].type.shape[-1] == 16


def test_a_border_with_few_macs_a_byte_is_fused(tmp_path: Path) -> None:
    """3x3 stride 2 on 10x10 over 13 channels: 30 MACs per byte of the bordered map,
    under KEEP_BORDER_MIN_MACS; the window reads its border fused (and stages its
    interior rows by words)."""
    graph = _graph(tmp_path, dict(kind="conv", h=10, w=10, cin=13, cout=16, kh=3, kw=3,
                                  stride=2))
    assert pad_int8_channels(graph, load_board("cortex-m4").target_info) == set()
    assert _conv(graph).inputs[0].type.shape[-1] == 13


@pytest.mark.parametrize("layer,kept", [
    (dict(kind="conv", h=19, w=6, cin=8, cout=32, kh=3, kw=3), True),
    (dict(kind="conv", h=19, w=6, cin=12, cout=16, kh=3, kw=3, dilation=2), True),
    (dict(kind="conv", h=19, w=6, cin=4, cout=32, kh=3, kw=3), False),  # under 8
    (dict(kind="conv", h=10, w=10, cin=8, cout=16, kh=3, kw=3, stride=2), False),  # 30 a byte
    (dict(kind="conv", h=19, w=6, cin=16, cout=32), False),  # no window
], ids=["3x3-cin8", "d2-cin12", "3x3-cin4", "s2-cin8", "1x1-cin16"])
def test_a_window_over_whole_words_keeps_its_border(tmp_path: Path, layer: dict,
                                                    kept: bool) -> None:
    graph = _graph(tmp_path, layer)
    before = [n.op for n in graph.nodes]
    keep = pad_int8_channels(graph, load_board("cortex-m4").target_info)
    assert [n.op for n in graph.nodes] == before  # nothing rewritten, only kept
    x = _conv(graph).inputs[0]
    assert keep == ({id(x)} if kept else set())
    if kept:
        assert x.producer.op == "pad"
    # Not where the runtime has no byte calls (riscv32: no DSP steps at all).
    assert pad_int8_channels(_graph(tmp_path, layer), load_board("riscv32").target_info) \
        == set()


@pytest.mark.parametrize("layer,c4", [
    (dict(kind="conv", h=10, w=10, cin=7, cout=16, kh=5, kw=5), 8),  # 36 against 40
    (dict(kind="conv", h=10, w=10, cin=31, cout=16, kh=3, kw=3), 32),  # 96 against 96
    (dict(kind="conv", h=10, w=10, cin=7, cout=16, kh=1, kw=7), 8),  # 2 x 28 against 56
    (dict(kind="conv", h=10, w=10, cin=13, cout=16, kh=3, kw=3, dilation=2), 16),
], ids=["5x5-cin7", "3x3-cin31", "1x7-cin7", "3x3-d2-cin13"])
def test_other_windows_keep_the_channel_pad(tmp_path: Path, layer: dict, c4: int) -> None:
    graph = _graph(tmp_path, layer)
    pad_int8_channels(graph, load_board("cortex-m4").target_info)
    assert _conv(graph).inputs[0].type.shape[-1] == c4


def test_the_valid_view_computes_the_same(tmp_path: Path) -> None:
    """A VALID 3x3 window over 13 channels: the merged dim runs over the padded row (40)
    through an (N, H*W*C) view of its input, its last lanes tested, and computes the
    integers the unmerged kernel does."""
    path = _model(tmp_path, dict(kind="conv", h=7, w=5, cin=13, cout=8, kh=3, kw=3,
                                 padding="VALID"))
    program = schedule(lower_for_backends(prepare_graph(load_graph(path))))
    before = [s.kernel for s in program.steps]
    constants = list(program.constants)
    assert merge_window_rows(program, load_target("cortex-m4")) == 1
    (i, step), = [(i, s) for i, s in enumerate(program.steps) if s.kernel is not before[i]]
    k, k0 = step.kernel, before[i]
    assert isinstance(k, Kernel)
    assert k.domain[-1] == 40
    (x_buf,) = [j for j, b in enumerate(step.buffers) if b.kind == "input"]
    assert k.operands[x_buf].shape == (1, 7 * 5 * 13)
    x = np.random.default_rng(5).integers(-128, 128, (1, 7, 5, 13)).astype(np.int8)

    def args(kernel: Kernel, consts) -> list[np.ndarray]:
        return [(x if b.kind == "input" else np.asarray(consts[b.index])).reshape(t.shape)
                for b, t in zip(step.buffers[:len(kernel.operands)], kernel.operands,
                                        strict=True)]

    np.testing.assert_array_equal(run_kernel(k, args(k, program.constants)),
                                  run_kernel(k0, args(k0, constants)))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_one_row_split_into_sub_rows_computes_the_same(tmp_path: Path, padding: str) -> None:
    """A 1x7 window over 13 channels: its merged row of 91 values as 2 sub-rows of 48
    (window_rows.one_row_parts), a tap dim beside the packed one, computing the
    integers the unmerged kernel does."""
    path = _model(tmp_path, dict(kind="conv", h=5, w=9, cin=13, cout=8, kh=1, kw=7,
                                 padding=padding))
    program = schedule(lower_for_backends(prepare_graph(load_graph(path))))
    before = [s.kernel for s in program.steps]
    constants = list(program.constants)
    assert merge_window_rows(program, load_target("cortex-m4")) == 1
    (i, step), = [(i, s) for i, s in enumerate(program.steps) if s.kernel is not before[i]]
    k, k0 = step.kernel, before[i]
    assert isinstance(k, Kernel) and k.domain[-2:] == (2, 48)
    x = np.random.default_rng(6).integers(-128, 128, (1, 5, 9, 13)).astype(np.int8)

    def args(kernel: Kernel, consts) -> list[np.ndarray]:
        return [(x if b.kind == "input" else np.asarray(consts[b.index])).reshape(t.shape)
                for b, t in zip(step.buffers[:len(kernel.operands)], kernel.operands,
                                strict=True)]

    np.testing.assert_array_equal(run_kernel(k, args(k, program.constants)),
                                  run_kernel(k0, args(k0, constants)))


def test_two_pixels_pair_along_the_dim_its_regions_leave_fewest_alone(tmp_path: Path) -> None:
    """A staged 3x3 window on 41x10 over 8 channels (its border fused: a fifth of the
    bordered map, under KEEP_WORD_BORDER_MIN_SHARE): split into border and interior
    regions, its 10 columns leave 2 pixels a row alone (1 + 8 + 1), its 41 rows 3 a
    column (1 + 39 + 1): it pairs along the rows."""
    graph = _graph(tmp_path, dict(kind="conv", h=41, w=10, cin=8, cout=16, kh=3, kw=3))
    program = schedule_for_board(graph, load_board("cortex-m4"))
    (step,) = [s for s in program.steps if isinstance(s.kernel, Kernel)
               and s.kernel.interleaved]
    (nest,) = choose_schedule(step.kernel, load_target("cortex-m4")).nests
    assert step.kernel.domain[1] == 41 and nest.stage == 2
    assert (1, 2) in nest.blocks, nest.blocks  # two pixels along the 41 rows


# Every path: merged rows with the border kept (3x3, 5x5, 1x7 split in sub-rows) or
# fused (stride 2), the channel pad (dilation 2, 31 channels) and, over 8 and 12
# channels, whole words with the border kept or fused.
WINDOWS = [dict(kh=3, kw=3, h=19, w=6), dict(kh=5, kw=5, h=10, w=10),
           dict(kh=1, kw=7, h=7, w=10), dict(kh=3, kw=3, h=10, w=10, stride=2),
           dict(kh=3, kw=3, h=11, w=6, dilation=2)]


@pytest.mark.parametrize("board,cins", [
    ("cortex-m4", (5, 13)), ("cortex-m4", (9, 31)), ("cortex-m4", (8, 12)),
    # The other DSP cores (unaligned LDR and STR alike): the byte calls and the
    # unaligned staging.
    ("cortex-m7", (8, 13)), ("cortex-m33", (8, 13)),
], ids=["m4-cin5-13", "m4-cin9-31", "m4-cin8-12", "m7-cin8-13", "m33-cin8-13"])
def test_odd_channels_under_windows_bit_exact(tmp_path: Path, board: str,
                                              cins: tuple[int, int]) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    layers = [dict(kind="conv", cin=c, cout=16, **win) for c in cins for win in WINDOWS]
    path = _model(tmp_path, *layers)
    build = minirt.build(path, board, out_dir=tmp_path / "build")
    link_map = (tmp_path / "build" / "firmware.map").read_text()
    if 13 in cins:  # the merged rows of 13 channels are staged by unaligned words
        assert "mrt_pair2u_s8" in link_map
    if 8 in cins:  # a SAME border kept in RAM around whole words, by the word calls
        assert "mrt_copy_words_s8" in link_map
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, (1, la["h"], la["w"], la["cin"])).astype(np.int8)
              for la in layers]
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {i} ({layers[i]}) differs from TFLite Micro"
