"""Records made at build time for a dispatch's microkernel, bound as one more constant.

The depthwise row pairs (row_pair_records.py) and the im2col first layers
(first_layer_records.py) both read their layer's constant operands (weights, bias,
requantization), fold them into one table of words in the microkernel's order, and give
the dispatch that table as an extra constant operand that its kernel's `records` names.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.schedule.program import Buffer, Program, Step
from toolchain.types import TensorType, dtype

__all__ = ["bind_records", "constant_operands"]


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
