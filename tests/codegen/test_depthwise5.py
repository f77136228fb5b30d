"""The depthwise 5x5 microkernels (runtime_c/ukernel/dsp/mrt_dw5_dsp.c, codegen/
depthwise5.py, loops/depthwise5.py, schedule/depthwise5_records.py) under QEMU, bit for
bit against the numpy reference and TFLite Micro's interpreter.

int8 5x5 depthwise layers of stride 1 with multipliers 1 and 2 over odd and even channel
counts (3 to 67: rows not word-aligned are staged by single-word loads; 61 and 67 on
10x10 pass the stack budget in one group, so their staged rows are made a group of
channels at a time), SAME and VALID padding, odd heights (the last row alone), biases
too large for the doubled records, chains of layers placed over their inputs, a
HARD_SWISH after the layer, on cortex-m4 and one firmware each on cortex-m7 and
cortex-m33; on cortex-m55 every layer of stride 1 (at most cortex-m4's instructions) and
of stride 2 those whose channels are no whole vectors; and stride 2 (4 staged pairs a call,
mrt_dw5_s2_s8). One-channel layers (their bias added in the epilogue, their input's
channel index the reduced one) at both strides, x1 and x2, on cortex-m4, cortex-m7,
cortex-m33 and cortex-m55. Layers it does not take (no DSP extension, --optimize
size, cortex-m55's whole vectors at stride 2) stay exact through the generated tiles or
lanes. One firmware holds a group of layers, each with its own graph input and output; a
group the kernel takes must link its symbol, one it does not must not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from depthwise_models import run_depthwise
from elftools.elf.elffile import ELFFile
from tflite_models import Op, Tensor, build_model, int8_layer_op, layer_counts, run_tflm

import minirt
from toolchain.codegen.depthwise5 import (
    KERNEL_SYMBOL,
    KERNEL_X2_SYMBOL,
    S2_SYMBOL,
    S2_X2_SYMBOL,
    SYMBOLS,
)
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise import STACK_BYTES
from toolchain.loops.depthwise5 import channel_group, stack_bytes
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

KERNELS = set(SYMBOLS.values())
PAIRS = {KERNEL_SYMBOL, KERNEL_X2_SYMBOL}  # a stride of 1

# (h, w, channels, multiplier, padding)
CHANNELS = [(10, 10, c, 1, "SAME") for c in (3, 5, 7, 13, 16, 31, 61, 67)]
SHAPES = [(9, 7, 13, 1, "SAME"), (10, 10, 13, 1, "VALID"), (11, 9, 7, 1, "VALID"),
          (5, 5, 8, 1, "SAME"), (2, 12, 9, 1, "SAME"), (7, 30, 24, 1, "SAME"),
          (9, 40, 23, 1, "VALID")]
MULTIPLIER2 = [(10, 10, c, 2, "SAME") for c in (3, 4, 13, 33)] + \
    [(9, 7, 13, 2, "SAME"), (11, 9, 7, 2, "VALID"), (7, 30, 25, 2, "SAME")]
# A stride of 2 (maps of 256 outputs and more: smaller ones' per-channel constants are
# broadcast over the pixels by the importer, which no microkernel takes).
STRIDE2 = [(10, 10, 16, 1, "SAME"), (12, 11, 13, 1, "SAME"), (13, 12, 31, 1, "VALID"),
           (9, 10, 67, 1, "SAME"), (10, 10, 13, 2, "SAME"), (13, 11, 7, 2, "VALID"),
           (6, 40, 61, 1, "SAME"), (12, 12, 9, 2, "SAME"), (14, 14, 24, 1, "SAME")]
# 1-2 channels on 10x10 (at most 256 outputs): their per-channel constants stay
# broadcasts (passes/fold.py), so the requantization folds to records and they are taken.
SMALL = [(10, 10, 1, 1, "SAME"), (10, 10, 2, 1, "SAME")]
# One input channel, by stride: odd sizes, SAME and VALID, multipliers 1 and 2 (a layer
# of one output channel adds its bias in the epilogue; the input's channel index is the
# reduced channel whatever the output channel). They ran the generated tiles at 0.105-
# 0.149 MAC per instruction on cortex-m4 (10x10 and 12x12 SAME).
ONE_CHANNEL = {1: [(10, 10, 1, 1, "SAME"), (9, 7, 1, 1, "VALID"), (11, 9, 1, 1, "SAME"),
                   (7, 30, 1, 1, "VALID"), (10, 10, 1, 2, "SAME"), (9, 7, 1, 2, "VALID")],
               2: [(10, 10, 1, 1, "SAME"), (13, 11, 1, 1, "VALID"), (9, 10, 1, 1, "SAME"),
                   (12, 12, 1, 2, "SAME"), (13, 11, 1, 2, "VALID")]}


def _run(layers, board: str, tmp_path: Path, seed: int, chain: bool = False,
         big_bias: bool = False, stride: int = 1, optimize: str = "auto") -> set[str]:
    """tests/depthwise_models.py run_depthwise over (h, w, c, multiplier, padding)
    layers of a 5x5 window at `stride`."""
    return run_depthwise([(h, w, c, m, 5, 5, stride, 1, pad) for h, w, c, m, pad in layers],
                         board, tmp_path, seed, chain, big_bias, optimize)


@pytest.mark.parametrize("group", ["channels", "shapes"])
def test_depthwise5_on_cortex_m4(group: str, tmp_path: Path) -> None:
    symbols = _run(CHANNELS if group == "channels" else SHAPES, "cortex-m4", tmp_path,
                   seed=len(group))
    # Each its own section, dropped unless called.
    assert KERNEL_SYMBOL in symbols and KERNEL_X2_SYMBOL not in symbols


def test_depthwise5_multiplier2_on_cortex_m4(tmp_path: Path) -> None:
    symbols = _run(MULTIPLIER2, "cortex-m4", tmp_path, seed=2)
    assert KERNEL_X2_SYMBOL in symbols and KERNEL_SYMBOL not in symbols


@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33"])
def test_depthwise5_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    symbols = _run([(9, 7, 13, 1, "SAME"), (10, 10, 7, 2, "VALID")], board, tmp_path / "a",
                   seed=7)
    assert symbols >= PAIRS
    symbols = _run([(10, 10, 13, 1, "SAME"), (12, 12, 9, 2, "SAME")], board, tmp_path / "b",
                   seed=8, stride=2)
    assert symbols >= {S2_SYMBOL, S2_X2_SYMBOL}



def _counts(layers, board: str, tmp_path: Path, stride: int = 1,
            optimize: str = "auto") -> tuple[set[str], list[int]]:
    """The symbols linked and each layer's instructions of a firmware of `layers` (h,
    w, channels, multiplier, padding) at `stride`, run exact (`run_depthwise`)."""
    symbols = _run(layers, board, tmp_path, seed=17, stride=stride, optimize=optimize)
    path = tmp_path / "dw.tflite"
    build = minirt.build(path, board, out_dir=tmp_path / "b", optimize=optimize)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
              for h, w, c, _, _ in layers]
    return symbols, layer_counts(build, inputs, len(layers))


# The 5x5 layers of bench/shapes.py's small grid (10x10, stride 1) whose channels fill
# Helium's vectors (16, 64) or do not (61, 13), which cortex-m55 ran in lanes at 1.23-
# 2.12x cortex-m4's instructions (61: 448,159 against 211,657), and one 14x14.
M55_STRIDE1 = [(10, 10, c, 1, "SAME") for c in (16, 61, 64, 13)] + [(14, 14, 48, 1, "SAME")]


def test_cortex_m55_takes_the_kernel_at_stride_1(tmp_path: Path) -> None:
    """cortex-m55 runs every 5x5 layer of stride 1 in the microkernel (loops/
    depthwise5.py takes_depthwise5: 34 instructions an output against its lanes' 42),
    its requantization folded for it; exact, and at most cortex-m4's instructions."""
    symbols, m55 = _counts(M55_STRIDE1, "cortex-m55", tmp_path / "m55")
    assert KERNEL_SYMBOL in symbols
    _, m4 = _counts(M55_STRIDE1, "cortex-m4", tmp_path / "m4")
    for layer, a, b in zip(M55_STRIDE1, m55, m4, strict=True):
        assert a <= b, (layer, m55, m4)


def test_cortex_m55_keeps_lanes_where_they_win(tmp_path: Path) -> None:
    """Stride 2 over whole vectors keeps Helium's lanes (42 an output against the
    kernel's 44; 61 channels, 13 of them past the last vector, take the kernel), and so
    does --optimize size, which binds no records in flash (the folded layer would run
    the generated tiles: 0.48 MAC per instruction against the lanes' 0.59); exact."""
    layers = [(10, 10, 16, 1, "SAME"), (10, 10, 64, 1, "SAME")]
    assert not KERNELS & _run(layers, "cortex-m55", tmp_path / "a", seed=18, stride=2)
    assert S2_SYMBOL in _run([(10, 10, 61, 1, "SAME")], "cortex-m55", tmp_path / "b",
                             seed=19, stride=2)
    assert not KERNELS & _run(layers, "cortex-m55", tmp_path / "c", seed=20,
                              optimize="size")
    # Fewer channels than a vector: folded, and the kernel takes them (0.125 -> 0.72).
    assert KERNEL_SYMBOL in _run([(10, 10, 7, 1, "SAME")], "cortex-m55", tmp_path / "d",
                                 seed=21)


def test_biases_too_large_to_double(tmp_path: Path) -> None:
    """A bias beyond +-2**29: the records keep the layer's own weights and bias, and the
    kernel the 64-bit requantization (SMLAL), in every slot rotation."""
    layers = [(10, 10, 13, 1, "SAME"), (11, 9, 8, 2, "VALID"), (7, 30, 24, 1, "SAME")]
    assert _run(layers, "cortex-m4", tmp_path / "a", seed=9, big_bias=True) >= PAIRS
    assert _run(STRIDE2[3:5], "cortex-m4", tmp_path / "b", seed=10, big_bias=True,
                stride=2) >= {S2_SYMBOL, S2_X2_SYMBOL}


@pytest.mark.parametrize("layers", [
    [(10, 10, 16, 1, "SAME")] * 3,
    [(9, 7, 13, 1, "SAME")] * 2 + [(9, 7, 13, 2, "SAME")],
])
def test_a_chain_of_5x5_layers(tmp_path: Path, layers) -> None:
    """Each layer's input dies at it, so the arena places a result over it with the
    generated tiles' schedule; the kernel takes that step where the walk finds it safe
    at the arena's distance (schedule/depthwise5_records.py `_overlap_safe`): every
    layer takes it here, exact."""
    _run(layers, "cortex-m4", tmp_path, seed=3, chain=True)
    program = schedule_for_board(prepare_graph(load_graph(tmp_path / "dw.tflite")),
                                 load_board("cortex-m4"))
    nests = [s.schedule.nests[0] for s in program.steps if isinstance(s.kernel, Kernel)
             and s.kernel.combine is not None]
    assert len(nests) == 3 and all(n.depthwise5 for n in nests)


def test_small_outputs(tmp_path: Path) -> None:
    assert KERNELS & _run(SMALL, "cortex-m4", tmp_path, seed=11)


def _every_layer_takes_it(tmp_path: Path, board: str) -> None:
    """Every depthwise layer of the firmware `_run` built in `tmp_path` is scheduled for
    the microkernel on `board` (a firmware's symbols show one layer took it, not all)."""
    program = schedule_for_board(prepare_graph(load_graph(tmp_path / "dw.tflite")),
                                 load_board(board))
    nests = [s.schedule.nests[0] for s in program.steps if isinstance(s.kernel, Kernel)
             and s.kernel.combine is not None]
    assert nests and all(n.depthwise5 for n in nests)


@pytest.mark.parametrize("stride", [1, 2])
def test_one_channel_on_cortex_m4(stride: int, tmp_path: Path) -> None:
    """One-channel layers take the kernel of their stride, x1 and x2, exact; and with a
    bias beyond +-2**29 (the epilogue's, moved into the undoubled records)."""
    symbols = _run(ONE_CHANNEL[stride], "cortex-m4", tmp_path / "a", seed=40 + stride,
                   stride=stride)
    assert {SYMBOLS[(stride, 1)], SYMBOLS[(stride, 2)]} <= symbols
    _every_layer_takes_it(tmp_path / "a", "cortex-m4")
    _run(ONE_CHANNEL[stride][:3], "cortex-m4", tmp_path / "b", seed=42 + stride,
         big_bias=True, stride=stride)
    _every_layer_takes_it(tmp_path / "b", "cortex-m4")


# cortex-m55 too: one channel is no whole vector, so it takes the kernel (loops/
# depthwise5.py takes_depthwise5), not Helium's lanes (16,463 against 4,208 on 10x10).
@pytest.mark.parametrize("board", ["cortex-m7", "cortex-m33", "cortex-m55"])
def test_one_channel_on_the_other_dsp_boards(board: str, tmp_path: Path) -> None:
    for stride in (1, 2):
        layers = [ONE_CHANNEL[stride][0], ONE_CHANNEL[stride][-1]]
        _run(layers, board, tmp_path / str(stride), seed=44 + stride, stride=stride)
        _every_layer_takes_it(tmp_path / str(stride), board)


def test_layers_it_does_not_take_stay_exact(tmp_path: Path) -> None:
    # No records under --optimize size (no flash room): the generated tiles.
    assert not KERNELS & _run(CHANNELS[2:4], "cortex-m4", tmp_path / "b", seed=12,
                              optimize="size")
    # No DSP extension.
    assert not KERNELS & _run(SHAPES[:2], "riscv32", tmp_path / "c", seed=5)


def test_stride2(tmp_path: Path) -> None:
    """Two output rows a call from 4 staged pairs, odd output heights (the last row
    alone, its fourth pair not staged) and even, groups of channels, x1 and x2."""
    symbols = _run(STRIDE2, "cortex-m4", tmp_path, seed=21, stride=2)
    assert {S2_SYMBOL, S2_X2_SYMBOL} <= symbols
    assert KERNEL_SYMBOL not in symbols and KERNEL_X2_SYMBOL not in symbols


def test_a_hard_swish_after_the_layer(tmp_path: Path) -> None:
    """MobileNetV3's 5x5 layers end in a HARD_SWISH operator, which fusion puts in the
    layer's epilogue: split off again (schedule/split_tail.py) so the layer takes the
    kernel, the table a dispatch after it; exact with TFLite Micro."""
    rng = np.random.default_rng(31)
    op, x, y = int8_layer_op(rng, "depthwise", 10, 10, 13, 13, 5, 5, name="dw")
    z = Tensor(y.shape, "int8", scale=0.02, zero_point=-90, name="act")
    path = tmp_path / "dw5_hard_swish.tflite"
    path.write_bytes(build_model([op, Op("HARD_SWISH", [y], [z])], [x], [z]))
    build = minirt.build(path, "cortex-m4", out_dir=tmp_path / "b")
    inputs = [rng.integers(-128, 128, x.shape).astype(np.int8)]
    run = build.run(inputs, check=True)
    (want,), _ = run_tflm(path.read_bytes(), inputs)
    assert np.array_equal(np.asarray(run.outputs[0]).reshape(want.shape), want)
    with open(build.elf, "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    assert KERNEL_SYMBOL in symbols


def test_channel_groups_fit_the_stack() -> None:
    """The staged input channels a group holds: all of them where the 3 slots and the
    pad row fit STACK_BYTES, else the fewest equal groups that fit (a group fewer would
    not)."""
    assert channel_group(10, 48) == 48  # 8,064 + 480 bytes
    for w_in, channels in ((10, 61), (10, 67), (14, 480), (7, 1152), (700, 1)):
        group = channel_group(w_in, channels)
        assert group is not None and stack_bytes(w_in, channels, group) <= STACK_BYTES
        groups = -(-channels // group)
        assert groups > 1 or channels == 1
        if groups > 1:
            assert stack_bytes(w_in, channels, -(-channels // (groups - 1))) > STACK_BYTES
    assert channel_group(1000, 1) is None
