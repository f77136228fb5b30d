"""The depthwise row-pair records made at build time (schedule/row_pair_records.py): per
channel the bias, the window columns' weight words (w0, w1) and (w1, w2) as 16-bit
halves, then M, K_hi and s - 1, doubled where every sum stays within +-2**30, and the
flags word after them; bound as one more constant operand to the row-pair dispatches of
the DSP boards only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from tflite_models import Op, build_model, int8_layer_op

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise import (
    ASM_ROOM_CHANNELS,
    QUAD_RECORD_WORDS,
    TAIL_COLUMN_END,
    TAIL_NEXT_A,
    TAIL_NEXT_B,
    TAIL_RETURN,
    TAILS_FLAG,
)
from toolchain.pipeline import prepare_graph, schedule_for_board
from toolchain.schedule.row_pair_records import DOUBLED_FLAG
from toolchain.target import load_board


def _program(tmp_path: Path, board: str, bias_shift: int = 0, multiplier: int = 1,
             channels: int = 8):
    rng = np.random.default_rng(2)
    op, x, y = int8_layer_op(rng, "depthwise", 19, 6, channels, channels * multiplier, 3, 3,
                             name="L")
    if bias_shift:
        bias = op.inputs[2]
        data = np.asarray(bias.data, dtype=np.int64) + bias_shift
        op = Op(op.opcode, [op.inputs[0], op.inputs[1],
                            dataclasses.replace(bias, data=data.astype(np.int32))],
                op.outputs, op.options)
    path = tmp_path / "dw.tflite"
    path.write_bytes(build_model([op], [x], [y]))
    weights = np.asarray(op.inputs[1].data, dtype=np.int64)[0]  # (3, 3, channels)
    return schedule_for_board(prepare_graph(load_graph(path)), load_board(board)), weights


def _records(program) -> tuple[Kernel, np.ndarray]:
    (step,) = [s for s in program.steps if isinstance(s.kernel, Kernel)
               and s.kernel.records >= 0]
    buf = step.buffers[step.kernel.records]
    return step.kernel, np.asarray(program.constants[buf.index])


def _halves(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = words.astype(np.int64) & 0xFFFFFFFF
    return ((u & 0xFFFF) ^ 0x8000) - 0x8000, ((u >> 16) ^ 0x8000) - 0x8000


def test_doubled_records(tmp_path: Path) -> None:
    # Past the channels the per-layer assembly tiles take (ASM_ROOM_CHANNELS: they lay
    # their records out their own way, schedule/row_pair_records.py _asm_rows), still
    # within the records over the row: the tails kernel's records.
    c = ASM_ROOM_CHANNELS + 1
    program, w = _program(tmp_path, "cortex-m4", channels=c)
    k, records = _records(program)
    # 19 rows: 4-row tiles, whose records have the tails kernel's two words, repeated
    # for each of the row's 6 output columns (14 channels: 4,032 B).
    assert records.shape == (6 * c * QUAD_RECORD_WORDS + 1,)
    assert records[-1] == DOUBLED_FLAG | TAILS_FLAG
    rows = records[:-1].reshape(6 * c, QUAD_RECORD_WORDS).astype(np.int64)
    table = rows[:c]
    assert np.all(table[:, 2] % 2 == 0)  # the bias, doubled, after column 0's weights
    for kx, at in enumerate((0, 3, 5)):
        lo, hi = _halves(table[:, at])
        assert np.array_equal(lo, 2 * w[0, kx]) and np.array_equal(hi, 2 * w[1, kx])
        lo, hi = _halves(table[:, at + 1])
        assert np.array_equal(lo, 2 * w[1, kx]) and np.array_equal(hi, 2 * w[2, kx])
    shift = table[:, 9] & 0xFF
    assert np.all(shift >= 2)
    # The last channel's shift word ends the 4-row kernel's channel loop.
    assert list(table[:, 9] >> 8) == [0] * (c - 1) + [1]
    # The tails kernel: s as its TBH index, then the next head (the column's end last).
    assert np.array_equal(table[:, 10], shift)
    # Each column's last channel goes on to the next column's first (head A), the row's
    # last to the return: the column's end never runs.
    assert np.array_equal(rows[:, :11], np.tile(table[:, :11], (6, 1)))
    assert list(rows[:, 11]) == [TAIL_NEXT_A] * (6 * c - 1) + [TAIL_RETURN]


def test_records_of_many_channels_are_not_repeated(tmp_path: Path) -> None:
    """Over ROW_RECORDS_BYTES (64 channels x 6 columns: 18 KB) the records are one
    column's, the column's end after the last channel."""
    program, _ = _program(tmp_path, "cortex-m4", channels=64)
    _, records = _records(program)
    assert records.shape == (64 * QUAD_RECORD_WORDS + 1,)
    table = records[:-1].reshape(64, QUAD_RECORD_WORDS).astype(np.int64)
    assert list(table[:, 11]) == [TAIL_NEXT_A] * 63 + [TAIL_COLUMN_END]


def test_tails_of_a_depth_multiplier_of_2_alternate_heads(tmp_path: Path) -> None:
    program, _ = _program(tmp_path, "cortex-m4", multiplier=2)
    _, records = _records(program)
    assert records[-1] == DOUBLED_FLAG | TAILS_FLAG
    table = records[:-1].reshape(16, QUAD_RECORD_WORDS).astype(np.int64)
    assert list(table[:, 11]) == [TAIL_NEXT_B, TAIL_NEXT_A] * 7 + [TAIL_NEXT_B,
                                                                  TAIL_COLUMN_END]


def test_large_biases_keep_the_records_as_they_are(tmp_path: Path) -> None:
    program, w = _program(tmp_path, "cortex-m4", bias_shift=(1 << 30) - 1000)
    _, records = _records(program)
    assert records[-1] == 0  # neither doubled nor for the tails kernel
    table = records[:-1].reshape(8, QUAD_RECORD_WORDS).astype(np.int64)
    lo, hi = _halves(table[:, 0])
    assert np.array_equal(lo, w[0, 0]) and np.array_equal(hi, w[1, 0])
    assert np.all(table[:, 9] & 0xFF >= 1)  # s - 1


def test_no_records_without_the_dsp_extension(tmp_path: Path) -> None:
    for board in ("cortex-m3", "riscv32"):
        program, _ = _program(tmp_path, board)
        assert all(s.kernel.records < 0 for s in program.steps
                   if isinstance(s.kernel, Kernel))
