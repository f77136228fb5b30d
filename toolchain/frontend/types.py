"""The types of MLIR values and functions as the MLIR frontends read them.

The importer (frontend/stablehlo.py), the StableHLO op converters
(frontend/stablehlo_ops.py) and the region and block importers the importer calls
(frontend/regions.py, frontend/cfg.py) all read these. They live here, below every one
of them, so that a region or block importer never imports the importer back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from toolchain.mlir.ir import Operation, StringAttr, TypeAttr
from toolchain.types import DType, FunctionType, TensorType

__all__ = ["UNKNOWN", "as_tensor_type", "func_type", "known_or_unknown", "sym"]

# Stands for a value whose type could not be read (an error is already reported): the
# import goes on, so that one run reports every error, and nothing is built from it.
UNKNOWN = TensorType((), DType("?", np.dtype("f4"), 0, "?"))


def as_tensor_type(t: Any) -> TensorType | None:
    """`t` as the graph holds it: a tensor type as it is, a scalar element type as a
    rank-0 tensor; None for any other type."""
    if isinstance(t, TensorType):
        return t
    if isinstance(t, DType):
        return TensorType((), t)
    return None


def known_or_unknown(t: Any) -> TensorType:
    """`t` as a tensor type, or UNKNOWN when it is none."""
    return as_tensor_type(t) or UNKNOWN


def declared_result(op: Operation, i: int, error: type[Exception]) -> TensorType:
    """The declared type of `op`'s result i as a graph tensor type; raises `error` when
    the op has no result i or that result is not a tensor (a mutated or hand-written
    model may drop a result or give it a `!tosa.shape` type)."""
    if i >= len(op.results):
        raise error(f"has {len(op.results)} results; it needs at least {i + 1}")
    t = as_tensor_type(op.results[i].type)
    if t is None:
        raise error(f"result {i} has type '{op.results[i].type}', not a tensor")
    return t


def func_type(func: Operation) -> FunctionType:
    """The signature of `func.func` op `func` (an empty one when it lacks it)."""
    t = func.attr("function_type")
    return t.type if isinstance(t, TypeAttr) else FunctionType((), ())


def sym(func: Operation) -> str:
    """The symbol name of `func.func` op `func`, or '?'."""
    s = func.attr("sym_name")
    return s.value if isinstance(s, StringAttr) else "?"
