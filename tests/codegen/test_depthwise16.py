"""The 16x8 depthwise 3x3 microkernel (runtime_c/ukernel/dsp/mrt_dw16_dsp.c,
toolchain/codegen/depthwise16.py, loops/depthwise16.py, schedule/depthwise16_records.py).

Which layers take it (16x8 depthwise 3x3 of stride 1 or 2 on DSP targets, records whose
sums stay exact in int32), and the firmware under QEMU bit for bit against the numpy
reference and TFLite Micro over a sweep: channels 1, 2, 3, 7, 16, 61, maps 10x10 and
19x6 (an odd last row), stride 1 and 2, depth multiplier 1 and 2, SAME and VALID, fused
ReLU, chained layers, on cortex-m4, and a few of them on cortex-m7, cortex-m33 and
cortex-m55 (the kernel takes its DSP extension: 12x12x61 441,436 -> 146,198
instructions there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from depthwise16_models import Layer, dw16_model
from elftools.elf.elffile import ELFFile
from tflite_models import run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.pipeline import schedule_for_board
from toolchain.target import load_board


def _taken(path: Path, board: str) -> list[str]:
    """Per window step of the model at `path` on `board`: "up" where it calls the
    microkernel top-down, "down" bottom-up, "" where it does not."""
    program = schedule_for_board(load_graph(path), load_board(board))
    return [next((("down" if n.reverse else "up") for n in s.schedule.nests
                  if n.depthwise16), "") if s.schedule else ""
            for s in program.steps if isinstance(s.kernel, Kernel)
            and len(s.kernel.domain) == 7]


def _run(layers: list[Layer], board: str, tmp_path: Path, seed: int,
         big_bias: bool = False, chain: bool = False) -> tuple[list[str], set[str]]:
    """Builds the layers for `board`, checks every output against the reference and
    TFLite Micro, and returns which layers took the kernel (`_taken`) and the image's
    symbols."""
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    model, xs = dw16_model(layers, seed, big_bias, chain)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "dw16.tflite"
    path.write_bytes(model)
    build = minirt.build(path, board, out_dir=tmp_path / "b")
    rng = np.random.default_rng(seed + 1)
    inputs = [rng.integers(-32768, 32768, x.shape).astype(np.int16) for x in xs]
    run = build.run(inputs, check=True)  # raises minirt.Mismatch on any difference
    want, _ = run_tflm(model, inputs)
    for i, (a, b) in enumerate(zip(want, run.outputs, strict=True)):
        assert np.array_equal(a, b), f"output {i} differs from TFLite Micro"
        # (a ReLU zeroes about half: a small map keeps few distinct values)
        assert len(np.unique(b)) > min(4, b.size // 4), f"output {i} nearly constant"
    with open(build.elf, "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    return _taken(path, board), symbols


CHANNELS = [1, 2, 3, 7, 16, 61]
MAPS = [(10, 10), (19, 6)]
SWEEP = [(h, w, c, mult, 1, pad, act)
         for (h, w) in MAPS for c in CHANNELS for mult in (1, 2)
         for pad, act in (("SAME", "NONE"), ("VALID", "RELU"))]


@pytest.mark.parametrize("part", range(4))
def test_sweep_bit_exact_cortex_m4(tmp_path: Path, part: int) -> None:
    layers = SWEEP[part::4]
    taken, symbols = _run(layers, "cortex-m4", tmp_path, seed=part)
    assert "mrt_dw16_s16" in symbols
    # One input channel is a convolution once lowered (its channel padded to a pair,
    # schedule/pad_channels16.py), which the int16 steps compute.
    want = ["up" if c != 1 else "" for (_, _, c, *_) in layers]
    assert taken == want


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33", "cortex-m55"])
def test_other_dsp_boards(tmp_path: Path, board: str) -> None:
    layers = [(10, 10, 7, 1, 1, "SAME", "RELU"), (19, 6, 16, 2, 1, "VALID", "NONE"),
              (19, 6, 61, 1, 1, "SAME", "NONE"), (9, 7, 13, 1, 2, "SAME", "NONE")]
    taken, _ = _run(layers, board, tmp_path, seed=7)
    assert taken == ["up"] * 4


def test_not_on_targets_without_dsp(tmp_path: Path) -> None:
    layers = [(10, 10, 7, 1, 1, "SAME", "NONE")]
    model, _ = dw16_model(layers, 3)
    path = tmp_path / "dw16.tflite"
    path.write_bytes(model)
    assert _taken(path, "cortex-m3") == [""]


# Stride 2: odd and even maps (SAME's border at the top-left or only bottom-right), the
# same channel counts.
STRIDE2 = [(h, w, c, mult, 2, pad, act)
           for (h, w) in ((10, 10), (19, 6), (9, 7)) for c in CHANNELS for mult in (1, 2)
           for pad, act in (("SAME", "NONE"), ("VALID", "RELU"))
           if (h, w) != (9, 7) or (c in (7, 16) and mult == 1)]


@pytest.mark.parametrize("part", range(2))
def test_stride2_bit_exact_cortex_m4(tmp_path: Path, part: int) -> None:
    layers = STRIDE2[part::2]
    taken, _ = _run(layers, "cortex-m4", tmp_path, seed=10 + part)
    assert taken == ["up" if c != 1 else "" for (_, _, c, *_) in layers]


def test_edge_maps_bit_exact(tmp_path: Path) -> None:
    """One row, one column, a 2x2 map at stride 2 (every window over the border), a
    VALID 3x3 map (one output), and a fused ReLU6 (a clamp the kernel does not do: the
    generated tiles keep it), each exact."""
    layers = [(1, 7, 16, 1, 1, "SAME", "NONE"), (5, 1, 7, 1, 1, "SAME", "RELU"),
              (2, 2, 7, 2, 2, "SAME", "NONE"), (3, 3, 16, 1, 1, "VALID", "NONE"),
              (10, 10, 16, 1, 1, "SAME", "RELU6")]
    taken, _ = _run(layers, "cortex-m4", tmp_path, seed=21)
    assert taken == ["up", "up", "up", "up", ""]


def test_sums_past_int32_keep_the_tiles(tmp_path: Path) -> None:
    """A bias near 2**31 would wrap the kernel's int32 sum: no records, the generated
    tiles (exact in int64), still bit-exact."""
    layers = [(10, 10, 7, 1, 1, "SAME", "NONE"), (6, 6, 16, 1, 2, "SAME", "NONE")]
    taken, _ = _run(layers, "cortex-m4", tmp_path, seed=9, big_bias=True)
    assert taken == ["", ""]


def test_chained_layers_over_their_inputs(tmp_path: Path) -> None:
    """Chained layers whose results the arena plan places over their dying inputs:
    below the input (the kernel top-down) and above it (bottom-up, flags' REVERSE),
    each exact. The second layer (multiplier 2: its result outgrows its input) keeps
    the plan's generated tiles, where the walk finds the kernel's order unsafe."""
    layers = [(12, 12, 16, 1, 1, "SAME", "RELU"), (12, 12, 16, 2, 1, "SAME", "RELU"),
              (12, 12, 32, 1, 1, "SAME", "NONE"), (12, 12, 32, 1, 1, "SAME", "RELU"),
              (12, 12, 32, 1, 1, "SAME", "NONE")]
    taken, _ = _run(layers, "cortex-m4", tmp_path, seed=0, chain=True)
    assert taken == ["up", "", "down", "up", "up"]
