"""Firmware of int8 depthwise layers checked bit for bit, shared by the depthwise kernel
tests (tests/codegen/test_depthwise_pairs.py, test_depthwise_s2.py, test_depthwise5.py):
the layers built into one .tflite, independent or chained, run under QEMU against the
numpy reference and TFLite Micro's interpreter."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from checked_build import build_and_check
from tflite_models import Op, build_model, int8_layer_op

# (h, w, channels, depth multiplier, kh, kw, stride, dilation, padding)
Layer = tuple[int, int, int, int, int, int, int, int, str]


def run_depthwise(layers: Sequence[Layer], board: str, tmp_path: Path, seed: int,
                  chain: bool = False, big_bias: bool = False,
                  optimize: str = "auto") -> set[str]:
    """Builds the layers (independent, or each reading the previous one's output with
    `chain`) for `board`, checks the outputs against the reference and TFLite Micro,
    and returns the linked image's symbols. `big_bias`: every other channel's bias
    beyond +-2**29 (past the doubled records' bound)."""
    rng = np.random.default_rng(seed)
    ops, xs, ys = [], [], []
    for i, (h, w, c, m, kh, kw, s, d, pad) in enumerate(layers):
        scale, zp = (ys[-1].scale, ys[-1].zero_point) if chain and ys else (0.05, -3)
        op, x, y = int8_layer_op(rng, "depthwise", h, w, c, c * m, kh, kw, s, d,
                                 padding=pad, name=f"L{i}", in_scale=scale, in_zp=zp)
        if big_bias:
            bias = op.inputs[2]
            data = np.asarray(bias.data, dtype=np.int64)
            data[::2] += np.where(data[::2] < 0, -1, 1) * ((1 << 29) + 12345)
            op = Op(op.opcode, [op.inputs[0], op.inputs[1],
                                dataclasses.replace(bias, data=data.astype(np.int32))],
                    op.outputs, op.options)
        if chain and ys:
            op = Op(op.opcode, [ys[-1], *op.inputs[1:]], op.outputs, op.options)
        else:
            xs.append(x)
        ops.append(op)
        ys.append(y)
    if chain:
        ys = ys[-1:]
    model = build_model(ops, xs, ys)
    return build_and_check(model, xs, board, tmp_path, rng, "dw", optimize=optimize)


def reverse_row_pairs(monkeypatch) -> None:
    """Makes the builds under `monkeypatch` run every row-pair nest (stride 1 and 2) in
    reverse, the last row pair first, staged from the bottom: the order a result placed
    above its operand takes (schedule/program.py reversed_tiles)."""
    from toolchain.codegen import image
    from toolchain.schedule.program import reversed_tiles
    chosen = image.choose_schedule

    def reversed_schedule(k, target):
        s = chosen(k, target)
        return reversed_tiles(s) if any(n.row_pairs for n in s.nests) else s

    monkeypatch.setattr(image, "choose_schedule", reversed_schedule)
