"""StableHLO's linear-algebra ops into graph ops: batch_norm_training, batch_norm_grad,
cholesky and triangular_solve.

Each becomes one graph op of the same name with StableHLO's attributes as plain values
(toolchain/graph/ops.py has their type rules). The reference executes them with numpy
(toolchain/reference/linalg.py) and passes/linalg.py rewrites them into ops the graph
already compiles (reductions, elementwise ops, `while` loops of dynamic slices and
dot_generals) only before scheduling, so `--check` compares two independent
computations. The converters here only read attributes; their errors are LinalgError,
which the StableHLO importer reports at the op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolchain.mlir.ir import BoolAttr, FloatAttr, IntAttr, OpaqueAttr, Operation

__all__ = ["LINALG_CONVERTERS", "LinalgError"]


class LinalgError(Exception):
    """An attribute missing or of the wrong kind (the importer adds the op's location)."""


def _float(op: Operation, key: str) -> float:
    a = op.attr(key)
    if not isinstance(a, FloatAttr):
        raise LinalgError(f"missing float attribute '{key}'")
    return float(a.value)


def _int(op: Operation, key: str) -> int:
    a = op.attr(key)
    if not isinstance(a, IntAttr):
        raise LinalgError(f"missing integer attribute '{key}'")
    return a.value


def _bool(op: Operation, key: str, default: bool | None = None) -> bool:
    a = op.attr(key)
    if a is None and default is not None:
        return default
    if not isinstance(a, BoolAttr):
        raise LinalgError(f"attribute '{key}' must be true or false")
    return a.value


def _enum(op: Operation, key: str) -> str:
    """`#stablehlo<transpose ADJOINT>` -> "ADJOINT"."""
    a = op.attr(key)
    if not isinstance(a, OpaqueAttr):
        raise LinalgError(f"missing attribute '{key}'")
    return a.body.split()[-1]


def _batch_norm(name: str) -> Callable[[Operation], tuple[str, dict[str, Any]]]:
    return lambda op: (name, {"epsilon": _float(op, "epsilon"),
                              "feature_index": _int(op, "feature_index")})


def _cholesky(op: Operation) -> tuple[str, dict[str, Any]]:
    # `lower` is optional in the dialect and false when absent.
    return "cholesky", {"lower": _bool(op, "lower", False)}


def _triangular_solve(op: Operation) -> tuple[str, dict[str, Any]]:
    return "triangular_solve", {"left_side": _bool(op, "left_side"),
                                "lower": _bool(op, "lower"),
                                "unit_diagonal": _bool(op, "unit_diagonal"),
                                "transpose_a": _enum(op, "transpose_a")}


LINALG_CONVERTERS: dict[str, Callable[[Operation], tuple[str, dict[str, Any]]]] = {
    "stablehlo.batch_norm_training": _batch_norm("batch_norm_training"),
    "stablehlo.batch_norm_grad": _batch_norm("batch_norm_grad"),
    "stablehlo.cholesky": _cholesky,
    "stablehlo.triangular_solve": _triangular_solve,
}
