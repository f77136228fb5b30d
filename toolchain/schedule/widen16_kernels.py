"""Which 16x8 kernels read their int8 weights widened to int16 (schedule/widen16.py),
apart from the pass itself so that the arena plan (schedule/program.py), which runs
before it, can ask too."""

from __future__ import annotations

from dataclasses import replace

from toolchain.kernel.form import Kernel, Load, postorder
from toolchain.loops import LoopSchedule, choose_schedule
from toolchain.loops.patterns import int16_by_int8
from toolchain.loops.rules import SIMD
from toolchain.target.descriptors import Target
from toolchain.types import TensorType, dtype

__all__ = ["takes_widened", "widened_kernel", "widened_schedule"]


def widened_kernel(k: Kernel, j: int) -> Kernel:
    """`k` reading its operand j (int8) as int16."""
    ops = list(k.operands)
    ops[j] = TensorType(ops[j].shape, dtype("i16"), ops[j].quant)
    return replace(k, operands=tuple(ops))


def takes_widened(k: object, j: int, target: Target) -> bool:
    """Whether the step with kernel `k` reads its operand j as the int8 side of an int16
    x int8 sum of products whose every nest, as the rules choose them with the operand
    widened, packs it. (A schedule the arena plan fixed is re-chosen where the plan's
    place allows, schedule/paired.py `_rechosen`, else kept: scalar, still exact.)"""
    if not isinstance(k, Kernel):
        return False
    found = int16_by_int8(k)
    if found is None or found[1].operand != j:
        return False
    loads = [e for root in k.roots for e in postorder(root)
             if isinstance(e, Load) and e.operand == j]
    if any(e.pad is not None or e.valid is not None for e in loads):
        return False
    schedule = choose_schedule(widened_kernel(k, j), target)
    return bool(schedule.nests) and all(n.dot for n in schedule.nests)


def widened_schedule(k: object, target: Target) -> LoopSchedule | None:
    """The loop schedule of kernel `k` once its int8 weights are widened, where `k` is
    a 16x8 sum of products the target's int16 packed steps would read so (None
    elsewhere). The arena plan (schedule/program.py `_overlaps`) places a result over
    its dying operand only at a distance safe for this schedule too: widening happens
    after the plan (schedule/optimize.py) and re-chooses the schedule, which is kept
    scalar where the plan's place does not allow it (schedule/paired.py `_rechosen`)."""
    if not isinstance(k, Kernel) or not SIMD[target.capabilities.simd].int16_dot:
        return None
    found = int16_by_int8(k)
    if found is None or not takes_widened(k, found[1].operand, target):
        return None
    return replace(choose_schedule(widened_kernel(k, found[1].operand), target), kernel=k)
