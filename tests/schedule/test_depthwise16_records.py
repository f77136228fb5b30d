"""The 16x8 depthwise kernel's records (toolchain/schedule/depthwise16_records.py): their
words, the exactness of the one-SMMULR requantization they encode against TFLite's int64
form, and the layers they refuse (sums past int32, shifts SMMULR cannot take)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from depthwise16_models import dw16_model

from toolchain.kernel.form import Kernel
from toolchain.loader import load_graph
from toolchain.loops.depthwise16 import depthwise16_plan
from toolchain.pipeline import schedule_for_board
from toolchain.schedule.depthwise16_records import depthwise16_records
from toolchain.schedule.program import Program, Step
from toolchain.schedule.step_records import constant_operands
from toolchain.target import load_board


def _step(tmp_path: Path, big_bias: bool = False) -> tuple[Program, Step]:
    """A 10x10x16 16x8 depthwise layer scheduled for cortex-m4: the program and the
    layer's step."""
    model, _ = dw16_model([(10, 10, 16, 1, 1, "SAME", "NONE")], 4, big_bias)
    path = tmp_path / "dw16.tflite"
    path.write_bytes(model)
    program = schedule_for_board(load_graph(path), load_board("cortex-m4"))
    (step,) = [s for s in program.steps if isinstance(s.kernel, Kernel)
               and len(s.kernel.domain) == 7]
    return program, step


def test_records_hold_the_exact_requantization(tmp_path: Path) -> None:
    """Per channel: the weight words (w0, w1), (w1, w2) of each window column, the bias
    and M = m << (32 - t), and SMMULR(x, M) (rounded high word) equals TFLite's int64
    (x * m + 2**(t-1)) >> t for sums over the whole int32 range."""
    program, step = _step(tmp_path)
    k = step.kernel
    plan = depthwise16_plan(k)
    operands = constant_operands(program, step)
    records = depthwise16_records(k, plan, operands).reshape(16, 8).astype(np.int64)
    w = np.asarray(operands[plan.w.operand], np.int64)[0]  # (ky, kx, channel)
    for kx in range(3):
        for j, (lo, hi) in enumerate(((0, 1), (1, 2))):
            word = records[:, 2 * kx + j] & 0xFFFFFFFF
            assert np.array_equal(word & 0xFFFF, w[lo, kx] & 0xFFFF)
            assert np.array_equal(word >> 16, w[hi, kx] & 0xFFFF)
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


def test_refuses_sums_past_int32(tmp_path: Path) -> None:
    program, step = _step(tmp_path, big_bias=True)
    k = step.kernel
    assert depthwise16_records(k, depthwise16_plan(k), constant_operands(program, step)) \
        is None


def test_refuses_shifts_smmulr_cannot_take(tmp_path: Path) -> None:
    """A total shift t of 33 (m << -1) or 15 (m << 17 past int32 for m >= 2**14): no
    records; 16 and 32 are taken."""
    program, step = _step(tmp_path)
    k = step.kernel
    plan = depthwise16_plan(k)
    operands = constant_operands(program, step)
    m = np.full(16, 0x7000, np.int64)
    for t, ok in ((33, False), (15, False), (32, True), (16, True)):
        ops = list(operands)
        ops[plan.multiplier.operand] = m
        ops[plan.shift.operand] = np.full(16, t, np.int64)
        ops[plan.rounding.operand] = np.full(16, 1 << (t - 1), np.int64)
        assert (depthwise16_records(k, plan, ops) is not None) == ok, t
    # A rounding that is not 2**(t-1) is not the form SMMULR computes.
    ops = list(operands)
    ops[plan.rounding.operand] = np.asarray(operands[plan.rounding.operand]) + 1
    assert depthwise16_records(k, plan, ops) is None
