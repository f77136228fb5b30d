"""Host evaluation of the kernel kinds other than Kernel (what kernel/interpret.py is
for the generic form): each kind's own runner, found by type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _runners() -> dict[type, Callable[[Any, list[np.ndarray]], list[np.ndarray]]]:
    from toolchain.kernel.custom_call import CustomCall, run_custom_call_kernel
    from toolchain.kernel.reduction import Reduction, run_reduction
    from toolchain.kernel.scatter import Scatter, run_scatter
    from toolchain.kernel.select_and_scatter import SelectAndScatter, run_select_and_scatter
    from toolchain.kernel.sort import Sort, run_sort

    return {Reduction: run_reduction, Sort: run_sort, Scatter: run_scatter,
            SelectAndScatter: run_select_and_scatter, CustomCall: run_custom_call_kernel}


def run_other_kind(kernel: Any, args: list[np.ndarray]) -> list[np.ndarray]:
    """The results of a Reduction / sort / scatter kernel on `args` (one array per
    operand, then, for kinds that update their results in place, one per result)."""
    runner = _runners().get(type(kernel))
    if runner is None:
        raise TypeError(f"no host runner for {type(kernel).__name__}")
    return runner(kernel, args)
