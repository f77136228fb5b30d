"""schedule/depthwise5_records.py: the 5x5 kernel's records, word by word against the
layer's weights, bias and zero point, and where they are bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_models import build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise import DOUBLED_FLAG
from toolchain.loops.depthwise5 import RECORD_WORDS, S2_RECORD_WORDS
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.target import load_board

IN_ZP = -3


def _program(tmp_path: Path, board: str, optimize: str = "auto", channels: int = 7,
             multiplier: int = 1, stride: int = 1):
    rng = np.random.default_rng(5)
    op, x, y = int8_layer_op(rng, "depthwise", 10, 10, channels, channels * multiplier,
                             5, 5, stride, name="L0", in_zp=IN_ZP)
    path = tmp_path / "m.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    program = schedule_for_board(prepare_graph(load_graph(path)), load_board(board),
                                 optimize)
    (step,) = [s for s in program.steps if isinstance(s.kernel, Kernel)
               and s.kernel.combine is not None]
    return program, step, op


def _halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return ((lo.astype(np.int64) & 0xFFFF) | ((hi.astype(np.int64) & 0xFFFF) << 16))


@pytest.mark.parametrize("stride", [1, 2])
def test_records_word_by_word(tmp_path: Path, stride: int) -> None:
    program, step, op = _program(tmp_path, "cortex-m4", channels=7, multiplier=2,
                                 stride=stride)
    k = step.kernel
    assert k.records >= 0 and step.schedule.nests[0].depthwise5
    words = np.asarray(program.constants[step.buffers[k.records].index]).astype(np.int64)
    outs = 14
    size = RECORD_WORDS if stride == 1 else S2_RECORD_WORDS
    assert words.shape == (size * outs + 3,)
    flags, pair, pad_bytes = words[-3:] & 0xFFFFFFFF
    assert flags == DOUBLED_FLAG  # the sweep's biases: doubled records
    assert pair == 0xFFFDFFFD and pad_bytes == 0xFDFDFDFD  # the input zero point, -3
    w = np.asarray(op.inputs[1].data, dtype=np.int64)[0]  # (ky, kx, output channel)
    bias = np.asarray(op.inputs[2].data, dtype=np.int64)
    table = (words[:-3] & 0xFFFFFFFF).reshape(outs, size)
    for c in range(outs):
        want = []
        # The sum starts from the bias with the input zero point's products folded in.
        start = 2 * (bias[c] - IN_ZP * w[:, :, c].sum())
        for kx in range(5):
            col = 2 * w[:, kx, c]
            w01, w23 = _halves(col[0], col[1]), _halves(col[2], col[3])
            w12, w34 = _halves(col[1], col[2]), _halves(col[3], col[4])
            if stride == 1:
                want += [w01, w23, start, w12, w34] if kx == 0 else [w01, w23, w12, w34]
            else:
                want += [w01, w23, w34, start] if kx == 0 else [w01, w23, w34]
        got = table[c, :len(want)]
        assert [int(v) & 0xFFFFFFFF for v in want] == [int(v) for v in got], c


def test_not_bound_without_flash_room_or_dsp(tmp_path: Path) -> None:
    for board, optimize in (("cortex-m4", "size"), ("riscv32", "auto")):
        _, step, _ = _program(tmp_path, board, optimize)
        assert step.kernel.records < 0, board
        assert step.schedule is None or not step.schedule.nests[0].depthwise5, board
