"""Windows of 13-channel taps that do not follow one another: the 13th channels gathered.

A window over 13 input channels reads them padded to 16 (schedule/pad_channels.py).
Undilated, its rows merge (schedule/window_rows.py: 3 x 13 values staged as 40); a
dilated window's taps do not follow one another, so each stays 16 channels, 3 of them
zero weights: 3x3 dilation 2 over 13 channels on 19x6 (16 outputs) ran 231,492
instructions on cortex-m4 where 12 channels ran 180,277, 185 K of them in the 2x4
microkernel's 36 steps a pixel pair (0.922 MAC per instruction, the family's need
1.277 / 1.25 = 1.022).

Here such a layer's weights are stored with each tap's first 12 channels in tap order,
then every tap's 13th channel (its 16th to 14th are the zero weights, dropped), 4 a
step, and its schedule says so (Nest.tap_rest): the staging call (runtime_c's
mrt_pair2w3r_s8, codegen/dot_ukernel.py `_stage_window2`) writes the two pixels' input
in that order and the 2x4 calls run 30 steps a 3x3 window. The weights past those
steps stay in the constant, zeros (the kernel's shape is unchanged: every address the
code takes from it is the same); the sums are the same integers in another order.

Taken where: the DSP 2x4 staged nest (Nest.stage 2), its reduction one packed dim of 16
channels under two unrolled window dims of 9-12 taps, the input int8 and read without
bounds tests (a SAME border kept in RAM), the weights' constant read by this step
alone, interleaved and paired, with the 14th-16th channel zero for every row and tap
(then the input's values there, whatever they are, meet zeros).
"""

from __future__ import annotations

from dataclasses import replace
from math import prod

import numpy as np

from toolchain.kernel.form import Kernel
from toolchain.kernel.paired import from_paired_rows, to_paired_rows
from toolchain.loops import choose_schedule
from toolchain.loops.patterns import dot_operands
from toolchain.loops.rules import UKERNELS
from toolchain.schedule.program import Program
from toolchain.target.descriptors import Target

__all__ = ["KEPT", "TAP_CHANNELS", "gather_tap_rests", "tap_rest_steps"]

TAP_CHANNELS = 16  # a tap's channels as padded (13 of them real)
KEPT = 12  # a tap's channels staged with it; the 13th is gathered, the rest dropped
TAPS = range(9, 13)  # the gathered values fill 3 steps (mrt_pair2w3r_s8)


def tap_rest_steps(taps: int) -> int:
    """The packed steps of a window of `taps` taps under Nest.tap_rest: each tap's KEPT
    channels, then the taps' 13th channels, 4 a step (3 steps: TAPS)."""
    return taps * KEPT // 4 + 3


def gather_tap_rests(program: Program, target: Target) -> int:
    """Sets Nest.tap_rest, and reorders the weights, for every step it fits (module
    docstring); returns how many."""
    uk = UKERNELS.get("dsp")
    if uk is None or not uk.pair_two_tap_rest_symbol:
        return 0
    users: dict[int, int] = {}
    for step in program.steps:
        for b in step.buffers:
            if b.kind == "constant":
                users[b.index] = users.get(b.index, 0) + 1
    done = 0
    for step in program.steps:
        k = step.kernel
        if not isinstance(k, Kernel) or len(k.interleaved) != 1:
            continue
        (j,) = k.interleaved
        schedule = step.schedule or choose_schedule(k, target)
        if len(schedule.nests) != 1 or not _fits(k, schedule.nests[0]):
            continue
        c = step.buffers[j].index
        if step.buffers[j].kind != "constant" or users.get(c) != 1:
            continue
        value = from_paired_rows(program.constants[c])
        rows = value.reshape(value.shape[0], -1, TAP_CHANNELS)
        if np.any(rows[:, :, KEPT + 1:]):
            continue
        taps = rows.shape[1]
        new = np.zeros_like(rows.reshape(value.shape[0], -1))
        new[:, :taps * KEPT] = rows[:, :, :KEPT].reshape(value.shape[0], -1)
        new[:, taps * KEPT:taps * KEPT + taps] = rows[:, :, KEPT]
        program.constants[c] = to_paired_rows(new.reshape(value.shape))
        nest = replace(schedule.nests[0], tap_rest=True)
        step.schedule = replace(schedule, nests=(nest,))
        done += 1
    return done


def _fits(k: Kernel, nest) -> bool:
    """Whether `nest` of `k` is the staged two-pixel window the gathering takes."""
    if nest.stage != 2 or nest.dot != "dsp" or len(nest.unroll) != 2 or \
            len(nest.reduction) != 1 or nest.interior or nest.tap_rest:
        return False
    taps = prod(k.domain[u] for u in nest.unroll)
    if taps not in TAPS or k.domain[nest.reduction[0]] != TAP_CHANNELS or \
            len(k.domain) != k.n_parallel + 3 or \
            tuple(sorted((*nest.unroll, *nest.reduction))) != tuple(
                range(k.n_parallel, len(k.domain))):
        return False
    ops = dot_operands(k)
    if ops is None:
        return False
    x = next((ld for ld in ops if ld.operand not in k.paired), None)
    return x is not None and x.pad is None and x.valid is None and \
        k.operands[x.operand].dtype.name == "i8" and \
        k.operands[x.operand].shape[-1] == TAP_CHANNELS
