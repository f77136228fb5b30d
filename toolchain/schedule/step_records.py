"""Records made at build time for a dispatch's microkernel, bound as one more constant.

The depthwise row pairs (row_pair_records.py) and the im2col first layers
(first_layer_records.py) both read their layer's constant operands (weights, bias,
requantization), fold them into one table of words in the microkernel's order, and give
the dispatch that table as an extra constant operand that its kernel's `records` names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from toolchain.kernel.form import Kernel
from toolchain.loops.schedule import LoopSchedule
from toolchain.schedule.program import Buffer, Program, Step
from toolchain.types import TensorType, dtype

__all__ = ["bind_records", "bind_scheduled_records", "constant_operands"]


def constant_operands(program: Program, step: Step) -> list[np.ndarray | None]:
    """The values of `step`'s kernel operands that are constants, None for the others."""
    n = len(step.kernel.operands)
    return [np.asarray(program.constants[b.index]) if b.kind == "constant" else None
            for b in step.buffers[:n]]


def bind_records(program: Program, step: Step, records: np.ndarray) -> None:
    """Adds `records` (int32 words) to `program`'s constants and to `step` as its
    kernel's last operand, which the kernel's `records` then names."""
    k = step.kernel
    t = TensorType(records.shape, dtype("i32"))
    program.constants.append(records)
    program.constant_types.append(t)
    j = len(k.operands)
    step.buffers.insert(j, Buffer("constant", len(program.constants) - 1, records.nbytes))
    step.kernel = replace(k, operands=(*k.operands, t), records=j)


def bind_scheduled_records(program: Program, flash_room: int,
                           found: Callable[[Step], tuple[LoopSchedule, np.ndarray] | None]
                           ) -> int:
    """Binds, to each step of `program` whose kernel has no records yet and for which
    `found` gives the microkernel's schedule and its records, those records while their
    bytes fit `flash_room`, and the schedule (named for the step's kernel), rewriting
    `program` in place. Returns how many it bound."""
    done = 0
    for step in program.steps:
        if not isinstance(step.kernel, Kernel) or step.kernel.records >= 0:
            continue
        hit = found(step)
        if hit is None or hit[1].nbytes > flash_room:
            continue
        schedule, records = hit
        flash_room -= records.nbytes
        bind_records(program, step, records)
        step.schedule = replace(schedule, kernel=step.kernel.name)
        done += 1
    return done
