"""The table from op name to reference kernel, below everything that fills or reads it.

The ops with regions (reference/regions.py) run their sub-graphs with the executor,
and the executor looks every op up here, region ops included: the evaluation is
recursive, so the imports would be circular if the table lived with the kernels. It
lives here instead, empty; reference/kernels.py fills it when imported (with the
kernels of regions.py, special.py and linalg.py), and the package's __init__ imports
kernels.py, so any import of toolchain.reference finds the table full.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A kernel takes the node (for its attributes and result types) and one numpy array
# per operand; it returns the result, or a tuple of them for a node with several.
Kernel = Callable[..., Any]

KERNELS: dict[str, Kernel] = {}

__all__ = ["KERNELS", "Kernel"]
