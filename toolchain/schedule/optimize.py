"""`--optimize auto|speed|size`: what a build trades between flash and instructions.

The choice is the int8 weights' layout on targets whose packed steps read them
pre-extended to 16 bits (schedule/paired.py): twice their bytes in flash, an LDRD per
word pair instead of a load and two SXTB16 (kws_ref_model on cortex-m4: 36.6 -> 55.6 KB
of weights, 5.56 M -> 3.35 M instructions). Each mode is a row of OPTIMIZE_MODES: the
flash the pre-extended weights may add. `auto`, the default, is what builds did before
the option: pre-extended while the image fits the board's flash budget. The choice a
build made is recorded in the program (Program.optimize) and the size report states it.

The loops are not a choice of the modes: the microcontroller loop budget
(loops/tables.py BUDGETS "size") is both the smaller and the faster on cortex-m4.
Measured with int8 weights on kws_ref_model: max_copies 18 (from 72) took code 7,344 ->
8,280 B and 5.56 M -> 6.35 M instructions, 36 -> 10,240 B and 6.80 M, a code cap of 400
(from 800) changed nothing; the hosted budget "speed" with pre-extended weights: kws
-0.3% instructions for +700 B of code, vww_96_int8 +5.9%, pretrainedResnet_quant +0.6%.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from toolchain.schedule.first_layer_records import records_bound
from toolchain.schedule.paired import pair_weights, pairable_weights
from toolchain.schedule.program import Program
from toolchain.schedule.widen16 import widen_int16_weights, widenable_weights
from toolchain.target import Board

__all__ = ["CODE_ALLOWANCE", "DEFAULT_OPTIMIZE", "OPTIMIZE_MODES", "OptimizeChoice",
           "OptimizeMode", "optimize_weights"]

# Flash a build leaves for everything but the constants when it decides how many
# weights to store pre-extended under `auto`: the largest MLPerf Tiny int8 code on a DSP
# board is 41 KB (vww_96_int8 on cortex-m4), so 64 KB leaves room to spare.
CODE_ALLOWANCE = 64 * 1024


def _budget_room(program: Program, board: Board) -> int:
    """Bytes the paired layout may add to the constants and still leave the code its
    allowance in the board's flash budget."""
    constants = sum(np.asarray(c).nbytes for c in program.constants)
    return max(0, board.budgets.flash - CODE_ALLOWANCE - constants)


@dataclass(frozen=True)
class OptimizeMode:
    """What a mode takes: the flash the pre-extended weights may add (a function of the
    program and board), and what it means, for --help."""

    paired_room: Callable[[Program, Board], int]
    means: str


OPTIMIZE_MODES: dict[str, OptimizeMode] = {
    # Today's trade, and the default: speed while it fits.
    "auto": OptimizeMode(_budget_room,
                         "weights pre-extended for speed while the image fits the board's "
                         "flash budget"),
    # However much flash: the size report flags an image over the budget as it does any
    # other.
    "speed": OptimizeMode(lambda program, board: sys.maxsize,
                          "every weight the packed steps read pre-extended, even over the "
                          "flash budget"),
    "size": OptimizeMode(lambda program, board: 0, "int8 weights at their own size"),
}
DEFAULT_OPTIMIZE = "auto"


@dataclass(frozen=True)
class OptimizeChoice:
    """What a build chose under its mode: the constants' bytes as the model holds them
    (int8 at their own size) and as stored, and how many weights were stored
    pre-extended of those the target's packed steps could read so."""

    mode: str
    int8_bytes: int
    stored_bytes: int
    paired: int
    pairable: int

    def describe(self) -> str:
        """One line for the size tables: 'weights: int8, 37.5 KB (optimize size)' or
        'weights: pre-extended 56.4 KB of 37.5 KB int8 (optimize auto: fits the budget)'."""
        if not self.pairable:  # no packed step to read them pre-extended: no choice
            return (f"weights: {_kb(self.stored_bytes)} (optimize {self.mode}: no packed "
                    "int8 step reads them, nothing to pre-extend)")
        if not self.paired:
            why = "" if self.mode == "size" else ": none fits the budget"
            return f"weights: int8, {_kb(self.int8_bytes)} (optimize {self.mode}{why})"
        if self.paired == self.pairable:
            why = ": fits the budget" if self.mode == "auto" else ""
        else:
            why = f": {self.paired} of {self.pairable} fit the budget"
        return (f"weights: pre-extended {_kb(self.stored_bytes)} of "
                f"{_kb(self.int8_bytes)} int8 (optimize {self.mode}{why})")

    def to_json(self) -> dict[str, int | str]:
        """The record in size.json and the dispatches file (minirt-size reads it)."""
        return {"mode": self.mode, "int8_bytes": self.int8_bytes,
                "stored_bytes": self.stored_bytes, "paired": self.paired,
                "pairable": self.pairable,
                "weights": self.describe().removeprefix("weights: ")}

    @classmethod
    def from_json(cls, data: dict) -> OptimizeChoice:
        """The record to_json wrote. Raises KeyError, TypeError or ValueError for
        another."""
        return cls(str(data["mode"]), int(data["int8_bytes"]), int(data["stored_bytes"]),
                   int(data["paired"]), int(data["pairable"]))


def _kb(n: int) -> str:
    return f"{n / 1000:.1f} KB"


def optimize_weights(program: Program, board: Board, mode: str) -> OptimizeChoice:
    """Stores `program`'s weights as mode `mode` says (pair_weights with its room,
    rewriting the program in place) and records the choice in Program.optimize."""
    row = OPTIMIZE_MODES[mode]
    target = board.target_info
    # The first layers' records (schedule/first_layer_records.py, bound before in the
    # same room) are weights stored pre-extended too, not the model's int8 bytes.
    first_layers, first_bytes = records_bound(program)
    int8_bytes = sum(np.asarray(c).nbytes for c in program.constants) - first_bytes
    pairable = len(pairable_weights(program, target))
    paired = pair_weights(program, target, row.paired_room(program, board)) \
        if pairable else []
    # 16x8 layers' int8 weights stored as int16 (schedule/widen16.py): counted with
    # the paired ones, pre-extended too.
    widenable = len(widenable_weights(program, target))
    if widenable:
        pairable += widenable
        paired = paired + widen_int16_weights(program, target,
                                              row.paired_room(program, board))
    choice = OptimizeChoice(mode, int8_bytes,
                            sum(np.asarray(c).nbytes for c in program.constants),
                            len(paired) + first_layers, pairable + first_layers)
    program.optimize = choice
    return choice
