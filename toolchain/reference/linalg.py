"""The reference meaning of batch_norm_training, batch_norm_grad, cholesky and
triangular_solve, in float64 numpy and rounded once to the result type.

These are written from the formulas, independently of passes/linalg.py (the loops the
firmware runs), so `--check` holds one against the other:

- batch norm: the mean and the biased variance over every dim but the feature's, and
  batch_norm_grad's closed form: the gradient of batch_norm_training's output
  y = (x - mean) / sqrt(var + eps) * scale + offset through x, mean and var alike, the
  operands `mean` and `variance` being x's batch statistics (StableHLO's definition);
- cholesky: numpy.linalg.cholesky of each matrix of the batch, made symmetric from the
  triangle StableHLO reads (the lower one when `lower`, else the upper); the other
  triangle of the result is 0, and a matrix that is not positive definite (a pivot <= 0
  or NaN) gives NaN in every element of its result, as JAX's cholesky does;
- triangular_solve: plain substitution over op(a) (the triangle read, the diagonal 1
  when `unit_diagonal`, transposed for TRANSPOSE and ADJOINT, which are the same on
  real numbers), row by row for a left-side solve, column by column for a right-side
  one, forward or backward as the effective matrix is lower or upper.
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.graph.ir import Node
from toolchain.types import to_dtype

__all__ = ["KERNELS"]


def _out(node: Node, x: np.ndarray, i: int = 0) -> np.ndarray:
    return to_dtype(np.asarray(x), node.outputs[i].type.dtype)


def _feature_axes(node: Node, x: np.ndarray) -> tuple[tuple[int, ...], list[int]]:
    """(the dims reduced over, the shape that broadcasts a per-feature vector)."""
    fi = node.attrs["feature_index"]
    axes = tuple(i for i in range(x.ndim) if i != fi)
    return axes, [-1 if i == fi else 1 for i in range(x.ndim)]


def batch_norm_training(node: Node, x: np.ndarray, scale: np.ndarray,
                        offset: np.ndarray) -> tuple[np.ndarray, ...]:
    """(normalized, batch mean, biased batch variance)."""
    axes, shape = _feature_axes(node, x)
    x64 = x.astype(np.float64)
    count = math.prod(x.shape[i] for i in axes)
    with np.errstate(all="ignore"):  # no element per feature: 0 / 0, NaN as in the spec
        mean = x64.sum(axis=axes) / count
        var = ((x64 - mean.reshape(shape)) ** 2).sum(axis=axes) / count
        y = ((x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + node.attrs["epsilon"])
             * scale.astype(np.float64).reshape(shape) + offset.astype(np.float64).reshape(shape))
    return _out(node, y, 0), _out(node, mean, 1), _out(node, var, 2)


def batch_norm_grad(node: Node, x: np.ndarray, scale: np.ndarray, mean: np.ndarray,
                    var: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, ...]:
    """(d loss / d x, d loss / d scale, d loss / d offset), `grad` being d loss / d y."""
    axes, shape = _feature_axes(node, x)
    n = math.prod(x.shape[i] for i in axes)
    g = grad.astype(np.float64)
    with np.errstate(all="ignore"):
        inv_std = 1.0 / np.sqrt(var.astype(np.float64) + node.attrs["epsilon"])
        xhat = (x.astype(np.float64) - mean.astype(np.float64).reshape(shape)) * \
            inv_std.reshape(shape)
        grad_offset = g.sum(axis=axes)
        grad_scale = (g * xhat).sum(axis=axes)
        grad_x = (scale.astype(np.float64) * inv_std).reshape(shape) * (
            g - grad_offset.reshape(shape) / n - xhat * grad_scale.reshape(shape) / n)
    return _out(node, grad_x, 0), _out(node, grad_scale, 1), _out(node, grad_offset, 2)


def _cholesky_one(a: np.ndarray, lower: bool) -> np.ndarray:
    tri = np.tril(a) if lower else np.triu(a).T  # the triangle read, as a lower one
    sym = tri + np.tril(tri, -1).T
    try:
        low = np.linalg.cholesky(sym)
    except np.linalg.LinAlgError:
        return np.full_like(a, np.nan)
    if not np.all(np.diag(low) > 0):
        return np.full_like(a, np.nan)
    return low if lower else low.T


def cholesky(node: Node, a: np.ndarray) -> np.ndarray:
    a64 = a.astype(np.float64)
    out = np.empty_like(a64)
    for idx in np.ndindex(*a64.shape[:-2]):
        out[idx] = _cholesky_one(a64[idx], node.attrs["lower"])
    return _out(node, out)


def _substitute_rows(m: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """x with m @ x = b, m triangular (rows solved first to last when lower)."""
    n = m.shape[0]
    x = np.zeros_like(b)
    for i in (range(n) if lower else reversed(range(n))):
        known = slice(0, i) if lower else slice(i + 1, n)
        x[i] = (b[i] - m[i, known] @ x[known]) / m[i, i]
    return x


def _substitute_columns(m: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """x with x @ m = b, m triangular (columns solved last to first when lower)."""
    n = m.shape[0]
    x = np.zeros_like(b)
    for j in (reversed(range(n)) if lower else range(n)):
        known = slice(j + 1, n) if lower else slice(0, j)
        x[:, j] = (b[:, j] - x[:, known] @ m[known, j]) / m[j, j]
    return x


def triangular_solve(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    at = node.attrs
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out = np.empty_like(b64)
    lower = at["lower"]
    transposed = at["transpose_a"] != "NO_TRANSPOSE"  # ADJOINT: the same on real values
    for idx in np.ndindex(*a64.shape[:-2]):
        m = np.tril(a64[idx]) if lower else np.triu(a64[idx])
        if at["unit_diagonal"]:
            np.fill_diagonal(m, 1.0)
        if transposed:
            m = m.T
        m_lower = lower != transposed
        with np.errstate(all="ignore"):
            if at["left_side"]:
                out[idx] = _substitute_rows(m, b64[idx], m_lower)
            else:
                out[idx] = _substitute_columns(m, b64[idx], m_lower)
    return _out(node, out)


KERNELS = {"batch_norm_training": batch_norm_training, "batch_norm_grad": batch_norm_grad,
           "cholesky": cholesky, "triangular_solve": triangular_solve}
