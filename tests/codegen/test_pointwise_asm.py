"""A 1x1 layer over 2-3 input channels as its own assembly kernel (codegen/pointwise_asm.py,
schedule/pointwise_asm_records.py).

Under QEMU, bit for bit against the reference and TFLite Micro, on every DSP board: 2 and
3 input channels to odd output counts 1-67, both sweep maps and others (blocks of pixels
of two sizes, every entry into the loop's body), per-tensor and per-channel weights
(one shift or several: a loop per shift), shifts to the right, zero and to the left, no
activation, RELU and RELU6, negative zero points. The layers the kernel does not take
(a shift of 0 or to the left, an activation's clamp narrower than int8's) stay exact on
their other kernels; under --optimize size (no flash room) no layer takes it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from checked_build import build_and_check
from tflite_models import Op, build_model, int8_layer_op

from toolchain.codegen import pointwise_asm
from toolchain.schedule import first_layer_records
from toolchain.schedule.pointwise_asm_records import (
    LOOP_PIXELS,
    STAGED_BYTES,
    UNIT_PIXELS,
    asm_records,
    blocks,
    code_bytes,
    groups,
)

DSP_BOARDS = ["cortex-m4", "cortex-m7", "cortex-m33"]

# (h, w, cin, cout, per_channel, ratio, activation, out_zp): `ratio` scales the layer's
# real multiplier (input scale x weight scale / output scale): 1 keeps int8_layer_op's
# (a right shift of about 9), 2**8 about 1 (TFLite's shift 0), 2**10 a left shift.
Layer = tuple[int, int, int, int, bool, float, str, int]
TAKEN: list[Layer] = [
    (19, 6, 2, 32, True, 1.0, "NONE", 5), (19, 6, 3, 32, True, 1.0, "NONE", -7),
    (10, 10, 2, 3, True, 1.0, "NONE", -100), (10, 10, 3, 3, False, 1.0, "NONE", 3),
    (19, 6, 2, 5, False, 4.0, "RELU", -128), (10, 10, 3, 7, True, 0.25, "NONE", -128),
    (19, 6, 3, 13, True, 1.0, "RELU", -128), (10, 10, 2, 31, False, 1.0, "NONE", -60),
    (19, 6, 2, 67, True, 1.0, "NONE", 0), (10, 10, 3, 67, True, 2.0, "NONE", -1),
    (13, 5, 2, 9, True, 1.0, "NONE", 11), (1, 7, 3, 11, True, 1.0, "NONE", -20),
    (3, 3, 2, 17, False, 1.0, "NONE", 2), (40, 29, 2, 15, True, 1.0, "NONE", -3),
    (23, 21, 3, 3, True, 1.0, "NONE", 9), (7, 1, 3, 5, False, 1.0, "NONE", -128),
]
# One output channel: its bias added in the epilogue (first_layer_plan's `bias`).
ONE: list[Layer] = [(10, 10, 2, 1, True, 1.0, "NONE", -100),
                    (7, 1, 3, 1, False, 1.0, "NONE", -128), (19, 6, 3, 1, True, 1.0, "RELU", -128)]
# Stride 2 (the dispatch stages the pixels; the kernel stages a dense layer's itself),
# by (h, w, outputs).
# 60x50 over 3 channels stages 750 pixels in a loop of 3 blocks.
STRIDED = {(21, 7, 5), (10, 10, 9), (9, 11, 1), (60, 50, 3)}
TAKEN += ONE + [(21, 7, 2, 5, True, 1.0, "NONE", -4), (10, 10, 3, 9, True, 1.0, "NONE", 6),
                (9, 11, 3, 1, False, 1.0, "NONE", -9), (60, 50, 3, 3, True, 1.0, "NONE", 1)]
# Past the kernel: shifts of 0 and to the left, RELU6's clamp (the folded form takes
# the clamp of int8 only), per-tensor and per-channel.
OTHERS: list[Layer] = [
    (10, 10, 2, 9, False, 2.0 ** 8.4, "NONE", -5), (19, 6, 3, 5, True, 2.0 ** 10, "NONE", 4),
    (10, 10, 3, 11, True, 1.0, "RELU6", -128), (19, 6, 2, 3, False, 2.0 ** 12, "RELU", -128),
]


def _op(rng: np.random.Generator, layer: Layer, i: int):
    h, w, cin, cout, per_channel, ratio, act, zp = layer
    # a layer of 2x a channel's outputs reads every other pixel (stride 2: the
    # dispatch stages the pixels, the kernel reads no input)
    stride = 2 if (h, w, cout) in STRIDED else 1
    op, x, y = int8_layer_op(rng, "conv", h, w, cin, cout, stride=stride, name=f"L{i}")
    wt, bt = op.inputs[1], op.inputs[2]
    if not per_channel:  # one weight scale: one multiplier and shift
        wt = dataclasses.replace(wt, scale=[wt.scale[0]] * cout)
        bt = dataclasses.replace(bt, scale=[bt.scale[0]] * cout)
    y = dataclasses.replace(y, scale=float(y.scale) / ratio, zero_point=zp)
    opts = dict(op.options, fused_activation_function=act)
    return Op("CONV_2D", [x, wt, bt], [y], opts), x, y


def _run(layers: list[Layer], board: str, tmp_path: Path, seed: int,
         optimize: str = "auto") -> set[str]:
    """Builds the layers for `board`, checks them against the reference and TFLite
    Micro, and returns the image's symbols."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, layer in enumerate(layers):
        op, x, y = _op(rng, layer, i)
        ops.append(op)
        xs.append(x)
        ys.append(y)
    model = build_model(ops, xs, ys)
    return build_and_check(model, xs, board, tmp_path, rng, "pw", optimize=optimize)


def _kernels(symbols: set[str]) -> set[str]:
    return {s for s in symbols if s.startswith(f"{pointwise_asm.STEM}_")}


@dataclasses.dataclass
class _Shape:
    """What `blocks` reads of a kernel: its domain's output rows and columns."""

    h: int
    w: int

    @property
    def domain(self) -> tuple[int, ...]:
        return (1, self.h, self.w, 1, 1, 1, 1)


@pytest.mark.parametrize("board", DSP_BOARDS)
def test_exact_on_every_dsp_board(board: str, tmp_path: Path) -> None:
    """Every layer of TAKEN by its own kernel (two pixel block sizes on 40x29), exact."""
    symbols = _run(TAKEN, board, tmp_path, seed=21)
    # a kernel a layer and block size (40x29 over 2 channels: blocks of 387 and 386)
    sizes = [len(set(blocks(_Shape(-(-h // 2), -(-w // 2)) if (h, w, co) in STRIDED else
                            _Shape(h, w), cin)))  # type: ignore[arg-type]
             for h, w, cin, co, *_ in TAKEN]
    assert len(_kernels(symbols)) == sum(sizes) and max(sizes) == 2


def test_others_stay_exact(tmp_path: Path) -> None:
    """Shifts of 0 and to the left and RELU6 go to other kernels, exact; so does every
    layer under --optimize size."""
    assert not _kernels(_run(OTHERS, "cortex-m4", tmp_path / "others", seed=22))
    assert not _kernels(_run(TAKEN[:6], "cortex-m4", tmp_path / "size", seed=23,
                             optimize="size"))


def test_one_channel_on_the_im2col_kernel(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Where this kernel declines a layer of one output channel (no room for its code),
    the im2col kernel computes it from the same records, the epilogue's bias in them:
    exact too."""
    monkeypatch.setattr(first_layer_records, "upgrade", lambda hit, plan, room: (hit, 0))
    symbols = _run(ONE, "cortex-m4", tmp_path, seed=24)
    assert not _kernels(symbols) and "mrt_i2c_only1_s8" in symbols
    assert "mrt_i2c_only2_s8" in symbols


def test_every_entry_into_the_body() -> None:
    """A block of any pixel count enters the loop's body at the pixel that leaves
    whole loops: every entry a label, the LDM holding it done first (and a pair's
    first pixel's sum where it enters at the second)."""
    for cin in (2, 3):
        loop = LOOP_PIXELS[cin]
        for pixels in range(1, 2 * loop + 1):
            body = pointwise_asm.kernel_body(cin, (3, 3, 7), pixels, 20)
            j = (loop - pixels % loop) % loop
            assert body.count("ssat") == 2 * loop  # two shifts: two loops
            assert (f"b {102 + j}f" in body) == (j > 0)
            # staging a dense block itself: 4 pixels a pass, the rest by halfwords or
            # bytes (a 3-channel block entered at a pair's second: its first pair)
            staging = pointwise_asm.kernel_body(cin, (3,), pixels, 20, stages=True)
            lead = j % 2 if cin == 3 else 0
            assert (f"9{cin - 2}:" in staging) == (pixels - lead >= 4)
            tail = staging.count("ldrh") if cin == 2 else staging.count("ldrsb")
            assert tail == ((pixels % 4) if cin == 2 else 3 * lead + 6 * ((pixels - lead) % 4 // 2))
            # the words of whole units before the block's first pixel's unit
            assert ("sub r0, r0" in body) == (j >= UNIT_PIXELS[cin])
            if cin == 3 and j % 2:  # a pair's second pixel: its sum before the branch
                entry = body[:body.index(f"b {102 + j}f")].rstrip().splitlines()
                assert entry[-1].strip().startswith("smlatb")


def test_records_sorted_by_shift() -> None:
    """The channels by shift (stable), each record's last word its channel; a shift
    past SSAT's 1-31 or more than MAX_GROUPS of them declines."""
    cout, fields = 5, 6  # 3 channels: bias, 2 weight words, M, 2 K_hi, s
    rows = np.arange(cout * fields).reshape(cout, fields)
    rows[:, -1] = [9, 7, 9, 7, 8]
    records = np.concatenate([[0x01010101], rows.reshape(-1)]).astype(np.int32)
    table, shifts = asm_records(records, 3, cout)
    assert shifts == (7, 7, 8, 9, 9) and groups(shifts) == [(7, 2), (8, 1), (9, 2)]
    got = table[1:].reshape(cout, fields)
    assert got[:, -1].tolist() == [1, 3, 4, 0, 2]
    assert got[:, 0].tolist() == [6, 18, 24, 0, 12]
    rows[0, -1] = 32
    bad = np.concatenate([[0], rows.reshape(-1)]).astype(np.int32)
    assert asm_records(bad, 3, cout) is None


def test_blocks_and_code() -> None:
    """Blocks of pixels within STAGED_BYTES, of at most two sizes; the estimate of the
    code grows with the shifts and with a second block size."""
    sizes = blocks(_Shape(40, 29), 2)  # type: ignore[arg-type]
    assert sum(sizes) == 40 * 29 and max(sizes) * 4 <= STAGED_BYTES
    assert len(set(sizes)) <= 2
    one = code_bytes(2, (5,) * 8, [114])
    assert code_bytes(2, (5,) * 4 + (6,) * 4, [114]) > one
    assert code_bytes(2, (5,) * 8, [100, 101]) == 2 * one
