"""Pointwise int8 layers over 5-32 input channels through the im2col kernel, their input
read as it is (schedule/pad_channels.py `PadRow.staged_pointwise`, the pipeline's
second schedule where the kernel refuses a layer, codegen/first_layers.py,
runtime_c/ukernel/dsp/mrt_im2col_dsp.c's 7- and 8-word only chunks, its 6-word last
chunk), and the packed
steps' staged input from two tiles of outputs (loops/tables.py STAGE_MIN_TILES: 1x1 to
8 outputs), under QEMU, bit for bit against the numpy reference and TFLite Micro.

Channel counts of every remainder modulo 4 from 5 to 32, strides, odd output channel
counts, a SAME 3x3 over 5 channels (a window, which keeps its widened pad), the layers
the kernel refuses after all (its records not bound, --optimize size), maps of at most
256 outputs (taken since their constants stay per-channel broadcasts) and riscv32, which
has no such kernel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import build_model, int8_layer_op, run_tflm

import minirt
from toolchain import pipeline
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

PAD_CALL = "mrt_pad_rows_s8"  # codegen/pad_rows.py: a kept channel pad's copy
I2C = "mrt_i2c_"

# (h, w, cin, cout, kh, kw, stride, padding)
UNPADDED = [(19, 6, c, 32, 1, 1, 1, "SAME") for c in (5, 7, 9, 11, 13, 15)] + [
    (10, 10, 17, 16, 1, 1, 1, "SAME"), (10, 10, 21, 19, 1, 1, 1, "SAME"),
    (9, 7, 23, 9, 1, 1, 2, "VALID"), (10, 10, 29, 32, 1, 1, 1, "SAME"),
    (8, 9, 30, 20, 1, 1, 1, "SAME"), (11, 5, 14, 17, 1, 1, 2, "SAME"),
    (19, 6, 31, 32, 1, 1, 1, "SAME"), (7, 6, 31, 33, 1, 1, 1, "SAME"),
    (6, 5, 32, 64, 1, 1, 1, "SAME")]
# 31 channels to 8 outputs keep the packed steps and their pad (first_layer_records
# takes_pointwise), a 3x3 over 5 channels its widened border, 32 -> 8 and 32 -> 9 the
# packed steps with a staged input.
OTHERS = [(19, 6, 31, 8, 1, 1, 1, "SAME"), (19, 6, 5, 32, 3, 3, 1, "SAME"),
          (19, 6, 32, 8, 1, 1, 1, "SAME"), (10, 10, 32, 9, 1, 1, 1, "SAME")]
# At most 256 outputs: their per-channel constants stay broadcasts (passes/fold.py), so
# the im2col kernel takes them unpadded too. Beside them 7 -> 3, never padded.
SMALL = [(2, 2, 7, 32, 1, 1, 1, "SAME"), (4, 4, 13, 8, 1, 1, 1, "SAME"),
         (19, 6, 7, 3, 1, 1, 1, "SAME")]


def _model(layers, tmp_path: Path, seed: int) -> tuple[Path, list[tuple[int, ...]]]:
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (h, w, ci, co, kh, kw, s, pad) in enumerate(layers):
        op, x, y = int8_layer_op(rng, "conv", h, w, ci, co, kh, kw, s, 1, padding=pad,
                                 name=f"L{i}")
        ops.append(op)
        xs.append(x)
        ys.append(y)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "pointwise.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    return path, [x.shape for x in xs]


def _run(layers, board: str, tmp_path: Path, seed: int, optimize: str = "auto") -> set[str]:
    """Builds the (independent) layers for `board`, checks them against the reference
    and TFLite Micro, and returns the image's symbols."""
    path, shapes = _model(layers, tmp_path, seed)
    build = minirt.build(path, board, out_dir=tmp_path / "b", optimize=optimize)
    rng = np.random.default_rng(seed + 1)
    inputs = [rng.integers(-128, 128, s).astype(np.int8) for s in shapes]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch on any difference
    want, _ = run_tflm(path.read_bytes(), inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"layer {layers[i]} differs from TFLite Micro's"
    with open(build.elf, "rb") as f:
        return {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}


def _pads(layers, tmp_path: Path, optimize: str = "auto") -> int:
    """The pad dispatches of the layers' program on cortex-m4."""
    path, _ = _model(layers, tmp_path, 0)
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board("cortex-m4"),
                                 optimize)
    return sum(isinstance(s.kernel, Kernel) and s.kernel.name.endswith("_pad")
               for s in program.steps)


def test_odd_channels_read_unpadded_on_cortex_m4(tmp_path: Path) -> None:
    symbols = _run(UNPADDED, "cortex-m4", tmp_path, seed=1)
    assert PAD_CALL not in symbols  # no layer copies its input
    # 13-16 channels (7, 8 words), 29-30 (15 words, chunks of 5) and 31-32 (16 words:
    # 5, 5 and 6) among the loops.
    assert {"mrt_i2c_only7_s8", "mrt_i2c_only8_s8", "mrt_i2c_first5_s8",
            "mrt_i2c_mid5_s8", "mrt_i2c_last5_s8", "mrt_i2c_last6_s8"} <= symbols
    assert _pads(UNPADDED, tmp_path / "s") == 0


def test_the_other_layers_stay_exact(tmp_path: Path) -> None:
    symbols = _run(OTHERS, "cortex-m4", tmp_path, seed=2)
    assert PAD_CALL in symbols  # 31 -> 8: the packed steps' pad
    assert "mrt_dot_s16_paired_2x4" in symbols  # 32 -> 8: two tiles, staged


def test_small_maps_take_the_kernel_unpadded(tmp_path: Path) -> None:
    assert _pads(SMALL, tmp_path / "s") == 0
    symbols = _run(SMALL, "cortex-m4", tmp_path, seed=3)
    assert PAD_CALL not in symbols and "mrt_i2c_only4_s8" in symbols


def test_layers_the_kernel_refuses_keep_their_pads(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Records not bound (as when the flash room runs out): the pipeline schedules the
    graph again with every pad, and the packed steps read the padded input."""
    monkeypatch.setattr(pipeline, "store_first_layer_records",
                        lambda program, target, room, declined=None: 0)
    layers = UNPADDED[:3]
    assert _pads(layers, tmp_path / "s") == 3
    symbols = _run(layers, "cortex-m4", tmp_path, seed=6)
    assert PAD_CALL in symbols and not {s for s in symbols if s.startswith(I2C)}


def test_optimize_size_keeps_the_pads(tmp_path: Path) -> None:
    layers = UNPADDED[:3]
    assert _pads(layers, tmp_path / "s", "size") == 3  # 5, 7 and 9 channels
    symbols = _run(layers, "cortex-m4", tmp_path, seed=4, optimize="size")
    assert not {s for s in symbols if s.startswith(I2C)}


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33", "riscv32"])
def test_other_boards(board: str, tmp_path: Path) -> None:
    layers = UNPADDED[1::3] + OTHERS[1:3]
    symbols = _run(layers, board, tmp_path, seed=5)
    assert bool({s for s in symbols if s.startswith(I2C)}) == (board != "riscv32")
