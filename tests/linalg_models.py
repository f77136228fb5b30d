"""StableHLO text and inputs for batch_norm_training, batch_norm_grad, cholesky and
triangular_solve (tests/frontend, tests/reference, tests/passes and tests/e2e share them).

Inputs are chosen so that a float64 answer rounded to f32 is a fair oracle for an f32
computation: positive definite matrices A = M M^T + n I (condition number a few times
n), and triangular matrices with a dominant diagonal (|a_ii| in [2, 3], the rest in
[-0.5, 0.5]: substitution then loses at most a few ulp). The triangle a solve does not
read holds 1e4, so reading it would show.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.mlir import parse_text

TRANSPOSES = ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")


def ttype(shape: tuple[int, ...], dt: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dt + ">"


def load(text: str) -> Graph:
    """The verified graph of MLIR `text`."""
    graph = import_module(parse_text(text, "m.mlir"))
    verify_graph(graph)
    return graph


def func(args: list[str], body: list[str], results: list[str], returned: list[str]) -> str:
    """`func.func @main(args) -> results { body; return returned }`."""
    lines = "\n".join(f"  {line}" for line in body)
    ret = ", ".join(returned)
    return (f"func.func @main({', '.join(args)}) -> ({', '.join(results)}) {{\n{lines}\n"
            f"  return {ret} : {', '.join(results)}\n}}\n")


def cholesky_op(result: str, a: str, shape: tuple[int, ...], lower: bool | None,
                dt: str = "f32", generic: bool = False) -> str:
    t = ttype(shape, dt)
    if generic:
        attr = "" if lower is None else f" {{lower = {str(lower).lower()}}}"
        return f'{result} = "stablehlo.cholesky"({a}){attr} : ({t}) -> {t}'
    attr = "" if lower is None else f", lower = {str(lower).lower()}"
    return f"{result} = stablehlo.cholesky {a}{attr} : {t}"


def solve_op(result: str, a: str, b: str, a_shape: tuple[int, ...],
             b_shape: tuple[int, ...], left_side: bool, lower: bool, unit_diagonal: bool,
             transpose_a: str, dt: str = "f32") -> str:
    ta, tb = ttype(a_shape, dt), ttype(b_shape, dt)
    flag = lambda v: str(v).lower()  # noqa: E731
    return (f'{result} = "stablehlo.triangular_solve"({a}, {b}) <{{left_side = '
            f"{flag(left_side)}, lower = {flag(lower)}, transpose_a = #stablehlo<transpose "
            f"{transpose_a}>, unit_diagonal = {flag(unit_diagonal)}}}> : ({ta}, {tb}) -> {tb}")


def bn_training_op(results: str, x: str, scale: str, offset: str, shape: tuple[int, ...],
                   feature_index: int, epsilon: float, dt: str = "f32") -> str:
    tx, tf = ttype(shape, dt), ttype((shape[feature_index],), dt)
    return (f'{results} = "stablehlo.batch_norm_training"({x}, {scale}, {offset}) '
            f"<{{epsilon = {epsilon:.8E} : f32, feature_index = {feature_index} : i64}}> : "
            f"({tx}, {tf}, {tf}) -> ({tx}, {tf}, {tf})")


def bn_grad_op(results: str, x: str, scale: str, mean: str, var: str, grad: str,
               shape: tuple[int, ...], feature_index: int, epsilon: float,
               dt: str = "f32") -> str:
    tx, tf = ttype(shape, dt), ttype((shape[feature_index],), dt)
    return (f'{results} = "stablehlo.batch_norm_grad"({x}, {scale}, {mean}, {var}, {grad}) '
            f"<{{epsilon = {epsilon:.8E} : f32, feature_index = {feature_index} : i64}}> : "
            f"({tx}, {tf}, {tf}, {tf}, {tx}) -> ({tx}, {tf}, {tf})")


def spd(rng: np.random.Generator, shape: tuple[int, ...], dt=np.float32) -> np.ndarray:
    """A batch of symmetric positive definite matrices, M M^T + n I."""
    n = shape[-1]
    m = rng.standard_normal(shape)
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dt)


def triangular(rng: np.random.Generator, shape: tuple[int, ...], lower: bool,
               dt=np.float32) -> np.ndarray:
    """Well-conditioned `lower` (else upper) triangular matrices; the other triangle
    holds 1e4 (StableHLO leaves it unread)."""
    n = shape[-1]
    a = rng.uniform(-0.5, 0.5, shape)
    diag = rng.uniform(2, 3, shape[:-1]) * rng.choice([-1, 1], shape[:-1])
    a[..., np.arange(n), np.arange(n)] = diag
    other = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    return np.where(other.astype(bool), 1e4, a).astype(dt)
