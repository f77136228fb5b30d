"""The cycle model on synthetic block records: taken branches from fall-through counts,
the load pipelining rule, flash wait states, per-row splitting, and its error paths."""

from __future__ import annotations

import dataclasses

import pytest

from toolchain.emu.cycles import (
    Block,
    CycleError,
    block_cycles,
    cycles_by_row,
    describe_estimate,
    estimate_cycles,
    parse_blocks,
)
from toolchain.emu.isa_arm import classify_thumb
from toolchain.target import load_board
from toolchain.target.timing import load_timing

M4 = load_timing("cortex-m4")
LDR, ADDS, BNE, POP_PC = (bytes.fromhex(h) for h in ("0148", "8818", "02d1", "10bd"))


def test_taken_branches_come_from_fall_throughs() -> None:
    # 10 runs, 3 fell through: 7 taken (1+P = 3 cycles), 3 not taken (1).
    block = Block(0x100, runs=10, fell=3, insns=(ADDS, BNE))
    assert block_cycles(block, M4, classify_thumb, 0) == 10 * 1 + 7 * 3 + 3 * 1


def test_back_to_back_loads_pipeline() -> None:
    # M4 TRM §3.3.2: LDR 2, each LDR right after an LDR 1 more; ADDS breaks the run.
    block = Block(0, runs=1, fell=1, insns=(LDR, LDR, LDR, ADDS, LDR))
    assert block_cycles(block, M4, classify_thumb, 0) == 2 + 1 + 1 + 1 + 2


def test_wait_states_per_32_bit_fetch() -> None:
    block = Block(0, runs=5, fell=5, insns=(ADDS, ADDS, ADDS))  # 6 bytes: 2 fetches
    assert block_cycles(block, M4, classify_thumb, 5) == 5 * (3 + 2 * 5)


def test_wait_states_only_without_a_cache() -> None:
    board = load_board("netduinoplus2")  # 5 WS behind the ART accelerator
    blocks = [Block(0, runs=4, fell=0, insns=(ADDS, ADDS))]
    cached = estimate_cycles(board, blocks, 8)
    uncached = estimate_cycles(dataclasses.replace(board, flash_cache=""), blocks, 8)
    assert cached is not None and uncached is not None
    assert (cached.cycles, uncached.cycles) == (8, 8 + 4 * 5)
    assert cached.ms == pytest.approx(8 / 168e6 * 1e3)


def test_mismatched_records_are_an_error() -> None:
    with pytest.raises(CycleError, match="hold 2 instructions, its count says 3"):
        estimate_cycles(load_board("cortex-m4"), [Block(0, 1, 1, (ADDS, ADDS))], 3)


def test_hosted_boards_have_no_estimate() -> None:
    board = load_board("x86-64")
    assert estimate_cycles(board, [], 0) is None
    assert describe_estimate(board, None).startswith("estimated cycles: n/a (x86-64 runs as a")


def test_parse_blocks() -> None:
    blocks = parse_blocks("1a0 5 1 -1 8818.02d1\n200 2 0 3 10bd\n")
    assert blocks == [Block(0x1A0, 5, 1, (ADDS, BNE), -1), Block(0x200, 2, 0, (POP_PC,), 3)]
    with pytest.raises(CycleError, match="record 1 is malformed"):
        parse_blocks("1a0 5 1 zz\n")


def test_cycles_by_row_adds_up() -> None:
    board = load_board("cortex-m4")
    blocks = [Block(0x100, 4, 4, (ADDS,)),  # row 0's own code
              Block(0x200, 2, 2, (LDR,), owner=1),  # callee code the plugin saw run for row 1
              Block(0x200, 3, 3, (LDR,)),  # callee code without an owner: shared out
              Block(0x900, 1, 1, (ADDS,))]  # in no range: the last row
    estimate = estimate_cycles(board, blocks, 10)
    assert estimate is not None
    ranges = [(0x100, 0x180, "d", 0), (0x200, 0x280, "c", 0)]
    rows = cycles_by_row(estimate, ranges, callee_instructions=[3, 2, 0])
    # Row 0: its own 4; row 1: its owned 2 x LDR = 4. The 6 unowned callee cycles go 3:2
    # by callee instructions (3 and 2, the remainder of the division to the larger row).
    assert rows == [4 + 3 + 1, 4 + 2, 1]
    assert sum(rows) == estimate.cycles
