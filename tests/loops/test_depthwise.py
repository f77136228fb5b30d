"""Which kernels the depthwise row-pair microkernel takes (loops/depthwise.py): int8 3x3
depthwise convolutions of stride 1 (or 2) and dilation 1 and multiplier 1 or 2, SAME or VALID, whose
epilogue is the folded requantization clamped to int8, on the DSP targets only, and
whose staged buffers fit the stack budget; every other layer keeps the generated tiles.
The results themselves are checked under QEMU in tests/codegen/test_depthwise_pairs.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops import choose_schedule
from toolchain.loops.depthwise import STACK_BYTES, quad_rows, row_pair_plan
from toolchain.pipeline import prepare_graph
from toolchain.schedule import schedule
from toolchain.target import load_target

M4, M33, M3, M0 = (load_target(n) for n in ("cortex-m4", "cortex-m33", "cortex-m3",
                                            "cortex-m0plus"))

# (name, h, w, channels, multiplier, kernel, stride, dilation, padding, taken)
LAYERS = [
    ("same", 19, 6, 64, 1, 3, 1, 1, "SAME", True),
    ("valid", 10, 10, 13, 1, 3, 1, 1, "VALID", True),
    ("three_channels", 19, 6, 3, 1, 3, 1, 1, "SAME", True),
    ("one_row", 1, 40, 8, 1, 3, 1, 1, "SAME", True),
    # Small layers (up to about 256 outputs here; 1 or 2 channels on 19x6): their
    # per-channel constants stay broadcasts (passes/fold.py), so the requantization
    # folds to per-channel records; one channel adds its bias in the epilogue, and one
    # input channel is indexed by the reduced channel.
    ("two_channels", 19, 6, 2, 1, 3, 1, 1, "SAME", True),
    ("one_channel", 19, 6, 1, 1, 3, 1, 1, "SAME", True),
    ("one_to_two", 10, 10, 1, 2, 3, 1, 1, "SAME", True),
    ("small_map", 5, 5, 8, 1, 3, 1, 1, "SAME", True),
    ("stride2", 10, 10, 16, 1, 3, 2, 1, "SAME", True),  # tests/loops/test_depthwise_stride2.py
    ("dilated", 19, 6, 16, 1, 3, 1, 2, "SAME", False),
    ("five", 10, 10, 16, 1, 5, 1, 1, "SAME", False),
    ("multiplier2", 10, 10, 8, 2, 3, 1, 1, "SAME", True),
    ("multiplier3", 10, 10, 8, 3, 3, 1, 1, "SAME", False),
    ("too_wide", 10, 40, 64, 1, 3, 1, 1, "SAME", False),  # staged rows past STACK_BYTES
    ("wide_pairs", 10, 13, 64, 1, 3, 1, 1, "SAME", True),  # 2 slots fit, 3 do not
    # odd_cnn_int8's layer: 3 slots of 10,248 B, past STACK_BYTES, within QUAD_STACK_BYTES
    ("odd_cnn", 12, 12, 61, 1, 3, 1, 1, "SAME", True),
]


def _kernels(tmp_path: Path, layers, relu6: bool = False) -> dict[str, Kernel]:
    """The reduction kernel of each layer (a model of independent layers), by name."""
    rng = np.random.default_rng(5)
    ops, xs, ys = [], [], []
    for name, h, w, c, m, k, s, d, pad, _ in layers:
        op, x, y = int8_layer_op(rng, "depthwise", h, w, c, c * m, k, k, s, d, padding=pad,
                                 name=name)
        if relu6:
            op = Op(op.opcode, op.inputs, op.outputs,
                    {**op.options, "fused_activation_function": "RELU6"})
        ops.append(op)
        xs.append(x)
        ys.append(y)
    path = tmp_path / "dw.tflite"
    path.write_bytes(build_model(ops, xs, ys))
    program = schedule(prepare_graph(load_graph(path)), target=M4)
    kernels = [s.kernel for s in program.steps
               if isinstance(s.kernel, Kernel) and s.kernel.combine is not None]
    assert len(kernels) == len(layers)
    return {layer[0]: k for layer, k in zip(layers, kernels, strict=True)}


def test_the_row_pair_kernels(tmp_path: Path) -> None:
    kernels = _kernels(tmp_path, LAYERS)
    for name, *_, taken in LAYERS:
        k = kernels[name]
        plan = row_pair_plan(k)
        assert (plan is not None) == taken, name
        for target in (M4, M33):
            nests = choose_schedule(k, target).nests
            assert any(n.row_pairs for n in nests) == taken, (name, target.name)
        for target in (M3, M0):  # no DSP extension: the generated tiles
            assert not any(n.row_pairs for n in choose_schedule(k, target).nests), name
        if plan is not None:
            assert plan.stack_bytes(k) <= STACK_BYTES
            same = name != "valid"
            top = 0 if name in ("valid", "stride2") else -1  # stride 2 of even size: 0
            assert (plan.row, plan.col) == (top, top)
            assert plan.stride == (2 if name == "stride2" else 1)
            # SAME pads with the input's zero point (int8_layer_op's in_zp); VALID reads
            # no pad value (its rows past the input only feed a discarded scratch row).
            assert plan.pad == (-3 if same else 0)
            assert plan.depth_multiplier == (2 if name in ("multiplier2", "one_to_two") else 1)
    # 4 output rows a tile where their 3 slots of staged rows fit QUAD_STACK_BYTES and
    # the map has 4 rows, else 2.
    nest = next(n for n in choose_schedule(kernels["same"], M4).nests)
    assert nest.format() == "loops d0<1> d1x4<19> d3<64> d2x6<6> unroll d4<3> d5<3> d6<1> " \
                            "row pairs"
    assert quad_rows(nest)
    assert quad_rows(next(n for n in choose_schedule(kernels["odd_cnn"], M4).nests))
    for name in ("one_row", "wide_pairs"):
        nest = next(n for n in choose_schedule(kernels[name], M4).nests)
        assert nest.row_pairs and not quad_rows(nest), name


def test_a_clamp_narrower_than_int8_keeps_the_tiles(tmp_path: Path) -> None:
    """RELU6 clamps the requantized value to a range inside [-128, 127]: the kernel's
    SSAT alone would not do it, so the layer is left to the generated code."""
    layers = [LAYERS[0]]
    (k,) = _kernels(tmp_path, layers, relu6=True).values()
    assert row_pair_plan(k) is None


@pytest.mark.parametrize("board", ["cortex-m4"])
def test_stack_budget_is_what_the_emitter_allocates(board: str, tmp_path: Path) -> None:
    (k,) = _kernels(tmp_path, [LAYERS[0]]).values()
    plan = row_pair_plan(k)
    # 19x6 over 64 channels: staged rows 8 x 8 x 64 (the records are a constant; rows
    # outside the input come from the pad columns' pair, no row of pad values).
    assert plan.stack_bytes(k) == 8 * 8 * 64
    assert plan.stack_bytes(k, 3) == 12 * 8 * 64  # 4-row tiles' 3 slots
