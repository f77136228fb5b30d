"""The 16x8 depthwise 3x3 microkernel (runtime_c/ukernel/dsp/mrt_dw16_dsp.c,
toolchain/codegen/depthwise16.py, loops/depthwise16.py, schedule/depthwise16_records.py).

Which layers take it (16x8 depthwise 3x3 of stride 1 or 2 on DSP targets, records whose
sums stay exact in int32), and the firmware under QEMU bit for bit against the numpy
reference and TFLite Micro over a sweep: channels 1, 2, 3, 7, 16, 61, maps 10x10 and
19x6 (an odd last row), stride 1 and 2, depth multiplier 1 and 2, SAME and VALID, fused
ReLU, chained layers, on cortex-m4, and a few of them on cortex-m7, cortex-m33 and
cortex-m55 (the kernel takes its DSP extension: 12x12x61 441,436 -> 149,242
instructions there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from tflite_models import Op, Tensor, build_model, run_tflm

import minirt
from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise16 import depthwise16_plan
from toolchain.pipeline import schedule_for_board
from toolchain.schedule.depthwise16_records import depthwise16_records
from toolchain.schedule.step_records import constant_operands
from toolchain.target import load_board

# (h, w, input channels, depth multiplier, stride, padding, fused activation)
Layer = tuple[int, int, int, int, int, str, str]


def dw16_op(rng: np.random.Generator, layer: Layer, name: str,
            big_bias: bool = False) -> tuple[Op, Tensor, Tensor]:
    """A 16x8 depthwise 3x3 layer as TFLite's converter writes it (int16 activations of
    zero point 0, int8 per-channel weights, int64 bias). The output scale keeps about
    3 standard deviations of the sums in range. `big_bias`: every other channel's bias
    near 2**31, past the kernel's int32 sums (the generated tiles take the layer)."""
    h, w, c, mult, stride, padding, act = layer
    outs = c * mult
    in_scale = 1.0 / 4096
    x = Tensor((1, h, w, c), "int16", scale=in_scale, zero_point=0, name=f"{name}_in")
    w_scale = rng.uniform(0.005, 0.02, outs).astype(np.float32)
    wdata = rng.integers(-127, 128, (1, 3, 3, outs)).astype(np.int8)
    std = 18918.0 * 74.0 * 3
    bias = rng.integers(-int(std), int(std) + 1, outs).astype(np.int64)
    if big_bias:
        bias[::2] = np.where(bias[::2] < 0, -1, 1) * ((1 << 31) - 1000)
    b_scale = (in_scale * w_scale).astype(np.float32)
    out_scale = float(3 * std * in_scale * float(w_scale.mean()) / 32768)
    wt = Tensor((1, 3, 3, outs), "int8", scale=list(w_scale), zero_point=[0] * outs,
                quantized_dimension=3, data=wdata, name=f"{name}_w")
    bt = Tensor((outs,), "int64", scale=list(b_scale), zero_point=[0] * outs, data=bias,
                name=f"{name}_b")
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - 3) // stride + 1, (w - 3) // stride + 1
    y = Tensor((1, oh, ow, outs), "int16", scale=out_scale, zero_point=0, name=name)
    opts = dict(padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=mult,
                fused_activation_function=act)
    return Op("DEPTHWISE_CONV_2D", [x, wt, bt], [y], opts), x, y


def _model(layers: list[Layer], seed: int, big_bias: bool = False, chain: bool = False
           ) -> tuple[bytes, list[Tensor]]:
    """The layers as one model: independent, or each reading the previous one's output
    with `chain` (one input, the last layer's output)."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = dw16_op(rng, layer, f"L{i}", big_bias)
        if chain and ys:
            op = Op(op.opcode, [ys[-1], *op.inputs[1:]], op.outputs, op.options)
        else:
            xs.append(x)
        ops.append(op)
        ys.append(y)
    return build_model(ops, xs, ys[-1:] if chain else ys), xs


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
    model, xs = _model(layers, seed, big_bias, chain)
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
    model, _ = _model(layers, 3)
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


def test_records_hold_the_exact_requantization(tmp_path: Path) -> None:
    """Per channel: the weight words (w0, w1), (w1, w2) of each window column, the bias
    and M = m << (32 - t), and SMMULR(x, M) (rounded high word) equals TFLite's int64
    (x * m + 2**(t-1)) >> t for sums over the whole int32 range."""
    model, _ = _model([(10, 10, 16, 1, 1, "SAME", "NONE")], 4)
    path = tmp_path / "dw16.tflite"
    path.write_bytes(model)
    program = schedule_for_board(load_graph(path), load_board("cortex-m4"))
    (step,) = [s for s in program.steps if isinstance(s.kernel, Kernel)
               and len(s.kernel.domain) == 7]
    k = step.kernel
    plan = depthwise16_plan(k)
    operands = constant_operands(program, step)
    records = depthwise16_records(k, plan, operands).reshape(16, 8).astype(np.int64)
    m = np.asarray(operands[plan.multiplier.operand], np.int64)
    t = np.asarray(operands[plan.shift.operand], np.int64)
    assert np.array_equal(records[:, 6], np.asarray(operands[plan.bias.operand]))
    assert np.array_equal(records[:, 7], m << (32 - t))
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 5000), [-(1 << 31), (1 << 31) - 1]])
    for c in range(16):
        want = (x * m[c] + (1 << (int(t[c]) - 1))) >> int(t[c])
        got = (x * int(records[c, 7]) + (1 << 31)) >> 32  # SMMULR
        assert np.array_equal(want, got)
