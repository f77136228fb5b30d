"""Dense layers' output rows in one call of the dense-rows kernel (loops/dense_rows.py,
codegen/dense_rows.py, runtime_c/ukernel/dsp/mrt_dense_dsp.c) on the DSP boards under
QEMU, bit for bit against the numpy reference and TFLite Micro.

The sweep covers what the kernel's paths depend on: input counts that are whole words
(steps of 4: 2, 4, 16, 32: the pairs' passes of 4 entered at the start; 18 and 19 are in
tests/codegen/test_dot_ukernel.py) and ones padded to whole words with the pad fused
(5, 7, 13, 27, 61, 67, 250: the last word padded by the kernel, 1 to 3 real bytes, and
odd step counts); output counts of one row, odd and even, one tile (10, 13) and several
(32, 40: the later tiles read the input the first one paired, the last tile smaller);
and convolution windows with 2 to 16 output channels, one call per pixel over the
window staged by the 1x4 kernel's staging (5x5, 3x3, 1x7, stride 2, dilation 2, VALID,
input channels padded to whole words).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain.frontend.tflite.importer import load_tflite
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.loops import choose_schedule, rules
from toolchain.loops.dense_rows import (
    COPY_WORDS_SYMBOL,
    DENSE_ROWS_KIND,
    DENSE_ROWS_S8_SYMBOL,
    DENSE_ROWS_SYMBOL,
    dense_rows_dim,
    padded_tail,
    weights_paired,
    window_rows_candidates,
    window_rows_dim,
)
from toolchain.loops.tiny_dense import TINY_DENSE_KIND
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board, load_target
from toolchain.types import TensorType, dtype

# (inputs, outputs)
SWEEP = [(8, 10), (16, 10), (64, 10), (128, 10), (5, 10), (7, 10), (13, 10), (27, 10),
         (61, 10), (67, 10), (250, 10), (64, 32), (67, 32), (31, 32), (13, 40), (64, 1),
         (61, 2), (27, 3), (16, 13), (67, 7)]
# A pair's every entry (steps mod 4, and steps 2 and 3: no pass of 4) with pairs and a
# lone row, the input's last 1-3 words paired after its passes of 4, and the
# converter models' small layers (issue 21): 9 -> 36 (steps 3, several tiles), 16 -> 5,
# 16 -> 4, 10 -> 6 (steps 3), 6 -> 7 (steps 2, padded), 21 -> 9 (6 steps), 37 -> 3.
ENTRIES = [(9, 36), (16, 5), (16, 4), (10, 6), (6, 7), (21, 9), (37, 3), (27, 10),
           (64, 10), (67, 32)]
# A 1x1 convolution on a 1x1 map is a dense layer: it takes the call too (the
# squeeze-excite layers of mobilenet_block_int8: 36 -> 9, 9 -> 36).
POINTWISE_1X1 = [dict(h=1, w=1, cin=c, cout=n, kh=1, kw=1)
                 for c, n in ((36, 9), (9, 36), (27, 10), (16, 5), (64, 10), (67, 32))]


# A window's output channels (2 to 16) in one call per pixel over its staged window:
# int8_layer_op's conv keywords (h, w, cin, cout, kh, kw, stride, dilation, padding).
WINDOWS = [dict(h=7, w=5, cin=32, cout=4, kh=5, kw=5), dict(h=7, w=5, cin=32, cout=3, kh=5, kw=5),
           dict(h=7, w=5, cin=32, cout=7, kh=3, kw=3), dict(h=6, w=5, cin=32, cout=13, kh=1, kw=7),
           dict(h=7, w=6, cin=13, cout=5, kh=3, kw=3),  # input channels padded to 16
           dict(h=8, w=8, cin=16, cout=6, kh=3, kw=3, stride=2),
           dict(h=7, w=6, cin=8, cout=3, kh=3, kw=3, dilation=2),
           dict(h=7, w=5, cin=12, cout=2, kh=3, kw=3, padding="VALID"),
           dict(h=5, w=5, cin=8, cout=16, kh=5, kw=5)]


def _model(tmp_path: Path, layers: list[tuple[int, int] | dict]
           ) -> tuple[Path, list[np.ndarray]]:
    rng = np.random.default_rng(21)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        if isinstance(layer, dict):
            op, x, y = int8_layer_op(rng, "conv", name=f"L{i}", **layer)
        else:
            cin, cout = layer
            op, x, y = int8_layer_op(rng, "dense", 1, 1, cin, cout, name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "dense.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8) for x in xs]
    return path, inputs


def _check(tmp_path: Path, board: str, layers: list[tuple[int, int] | dict],
           optimize: str = "speed", symbol: str = DENSE_ROWS_SYMBOL) -> None:
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    path, inputs = _model(tmp_path, layers)
    build = minirt.build(path, board, out_dir=tmp_path / board, optimize=optimize)
    run = build.run(inputs, check=True)  # raises Mismatch unless bit-exact
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {layers[i]} differs from TFLite Micro on {board}"
    with open(build.elf, "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    assert symbol in symbols


def test_dense_sweep_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    _check(tmp_path, "cortex-m4", SWEEP)


def test_every_pair_entry_bit_exact_on_cortex_m4(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The small layers here are written out in the dispatch by the rules
    (loops/tiny_dense.py); without that choice they take the call's every entry."""
    monkeypatch.setattr(rules, "tiny_dense_candidates", lambda *args: [])
    _check(tmp_path, "cortex-m4", ENTRIES)
    monkeypatch.undo()
    path, _ = _model(tmp_path, ENTRIES)
    program = schedule_for_board(prepare_graph(load_tflite(path)), load_board("cortex-m4"),
                                 "speed")
    assert any(nest.dot == TINY_DENSE_KIND for s in program.steps
               if isinstance(s.kernel, Kernel) and s.kernel.is_reduction
               for nest in choose_schedule(s.kernel, load_target("cortex-m4")).nests)


def test_pointwise_on_one_pixel_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    """A 1x1 convolution on a 1x1 map is scheduled as the dense layer of its shape is
    (written out where it is small, else the call), and is bit-exact with the reference
    and TFLite Micro."""
    _check(tmp_path, "cortex-m4", POINTWISE_1X1)
    m4 = load_board("cortex-m4")

    def dots(layers: list) -> list[str]:
        path, _ = _model(tmp_path, layers)
        program = schedule_for_board(prepare_graph(load_tflite(path)), m4, "speed")
        return [nest.dot for s in program.steps
                if isinstance(s.kernel, Kernel) and s.kernel.is_reduction
                for nest in choose_schedule(s.kernel, m4.target_info).nests]

    convs = dots(POINTWISE_1X1)
    assert convs == dots([(d["cin"], d["cout"]) for d in POINTWISE_1X1])
    # The small ones written out in the dispatch (loops/tiny_dense.py), the others calls.
    assert convs == [TINY_DENSE_KIND] * 4 + [DENSE_ROWS_KIND] * 2, convs


# Tiles of 12 or more rows: their sums' start (a bias) copied by mrt_copy_words, 8 words
# at a time, then 4, 2, 1 (rows 12, 13, 16, 17 in 16-row tiles).
INIT_TILES = [(64, 32), (67, 32), (13, 40), (16, 12), (21, 17), (9, 45),
              dict(h=6, w=5, cin=32, cout=13, kh=1, kw=7)]


@pytest.mark.parametrize("optimize,symbol", [("speed", DENSE_ROWS_SYMBOL),
                                             ("size", DENSE_ROWS_S8_SYMBOL)])
def test_sums_start_copied_by_the_call_bit_exact_on_cortex_m4(tmp_path: Path, optimize: str,
                                                              symbol: str) -> None:
    _check(tmp_path, "cortex-m4", INIT_TILES, optimize=optimize, symbol=symbol)
    with open(tmp_path / "cortex-m4" / "firmware.elf", "rb") as f:
        names = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    assert COPY_WORDS_SYMBOL in names


def test_unpaired_weights_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    """--optimize size keeps the weights int8: the call's variant that unpacks them as it
    reads them (mrt_dense_s8_rows), padded inputs included."""
    _check(tmp_path, "cortex-m4", [(64, 10), (67, 10), (250, 10), (27, 32), (13, 3), (8, 1),
                                   (9, 36), (10, 6), (6, 7), (21, 9)],
           optimize="size", symbol=DENSE_ROWS_S8_SYMBOL)


def test_window_sweep_bit_exact_on_cortex_m4(tmp_path: Path) -> None:
    _check(tmp_path, "cortex-m4", WINDOWS)


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_dense_bit_exact_on_other_dsp_boards(tmp_path: Path, board: str) -> None:
    _check(tmp_path, board, [(64, 10), (67, 32), (13, 40), (250, 10), (27, 3), WINDOWS[0],
                             WINDOWS[3], WINDOWS[4], WINDOWS[6]])


def _dense(n_out: int, n_in: int, real: int | None = None, paired: bool = True) -> Kernel:
    """y[0, j] = sum_k int32(x[0, k]) * int32(w[j, k]) with the weights paired; with
    `real`, x holds `real` elements and its load is padded with 0 past them."""
    i8, i32 = dtype("i8"), dtype("i32")
    pad = Const(0, i8) if real is not None else None
    x = Apply("convert", (Load(0, (Index(0), Index(2)), pad=pad),), i32)
    w = Apply("convert", (Load(1, (Index(1), Index(2))),), i32)
    wt = TensorType((n_out, n_in), dtype("i16") if paired else i8)
    return Kernel("dense", (1, n_out, n_in), 2, (TensorType((1, real or n_in), i8), wt),
                  TensorType((1, n_out), i32), Apply("multiply", (x, w), i32),
                  combine="add", init=Const(0, i32), paired=(1,) if paired else ())


def test_which_kernels_the_call_takes() -> None:
    """Whole words, at least two steps, rows that follow one another; an input padded
    past its last word's real elements only."""
    assert dense_rows_dim(_dense(10, 64), "dsp") == 1
    assert dense_rows_dim(_dense(10, 64), "mve") is None  # no such kernel on Helium
    # weights left int8 (the unpacking variant): the operand that depends on the rows
    assert dense_rows_dim(_dense(10, 64, paired=False), "dsp") == 1
    assert not weights_paired(_dense(10, 64, paired=False))
    assert dense_rows_dim(_dense(10, 66), "dsp") is None  # not whole words
    assert dense_rows_dim(_dense(10, 4), "dsp") is None  # one step
    k = _dense(10, 68, real=67)
    assert dense_rows_dim(k, "dsp") == 1 and padded_tail(k, k.body.args[0].args[0], 2) == 67
    assert dense_rows_dim(_dense(10, 68, real=64), "dsp") is None  # a whole word of pad
    # The kernel clears the padded bytes (their mask made at build time): a pad other
    # than 0 is not taken.
    x = k.body.args[0].args[0]
    other = replace(k, body=Apply("multiply", (Apply("convert", (replace(
        x, pad=Const(5, dtype("i8"))),), dtype("i32")), k.body.args[1]), dtype("i32")))
    assert dense_rows_dim(other, "dsp") is None


def test_the_rules_choose_the_call_for_small_dense_layers() -> None:
    """On cortex-m4 a 64 -> 10 layer is one tile of 10 rows (one call); a padded input
    leaves no other candidate (the other tiles would gather it)."""
    m4 = load_target("cortex-m4")
    (nest,) = choose_schedule(_dense(10, 64), m4).nests
    assert nest.dot == DENSE_ROWS_KIND and nest.blocks == ((1, 10),), nest.format()
    (nest,) = choose_schedule(_dense(10, 68, real=67), m4).nests
    assert nest.dot == DENSE_ROWS_KIND, nest.format()
    # Fewer steps are written out in the dispatch (loops/tiny_dense.py).
    (nest,) = choose_schedule(_dense(10, 16, real=13), m4).nests
    assert nest.dot == TINY_DENSE_KIND, nest.format()


def _window(n_out: int, cin: int, taps: int = 3, interleaved: bool = False) -> Kernel:
    """y[0, i, c] = sum_t,k int32(x[0, i + t, k]) * int32(w[c, t, k]) over a window of
    `taps` rows (a 3x1 convolution, VALID), the weights paired."""
    i8, i32 = dtype("i8"), dtype("i32")
    x = Apply("convert", (Load(0, (Index(0), Apply("add", (Index(1), Index(3)),
                                                        dtype("i32")), Index(4))),), i32)
    w = Apply("convert", (Load(1, (Index(2), Index(3), Index(4))),), i32)
    return Kernel("window", (1, 6, n_out, taps, cin), 3,
                  (TensorType((1, 6 + taps - 1, cin), i8),
                   TensorType((n_out, taps, cin), dtype("i16"))),
                  TensorType((1, 6, n_out), i32), Apply("multiply", (x, w), i32),
                  combine="add", init=Const(0, i32), paired=(1,),
                  interleaved=(1,) if interleaved else ())


def test_which_windows_the_call_takes() -> None:
    """A window's 1-16 output channels (the innermost parallel dim) over whole words,
    its weights one row per channel in the staged order; not more than 16 channels, not
    one (no row to share the input with), nor weights interleaved for the 2x4 kernel."""
    assert window_rows_dim(_window(4, 32), "dsp") == 2
    assert window_rows_dim(_window(16, 8), "dsp") == 2
    assert window_rows_dim(_window(17, 8), "dsp") is None
    assert window_rows_dim(_window(1, 32), "dsp") is None
    assert window_rows_dim(_window(4, 30), "dsp") is None  # no whole words
    assert window_rows_dim(_window(4, 32, interleaved=True), "dsp") is None
    assert window_rows_dim(_window(4, 32), "mve") is None
    (candidate,) = window_rows_candidates(_window(4, 32), "dsp", 12)
    assert candidate[2] == {2: 4} and candidate[3] == (3,) and candidate[6] == DENSE_ROWS_KIND
