"""The random generator's builders for the batch norms and linear algebra (cholesky,
triangular_solve).

These are only well defined on well-conditioned operands: batch norms read bounded
operands and a variance kept away from 0, cholesky a positive definite matrix made as
M M^T + n I, triangular_solve a diagonally dominant triangle; each docstring says why
its bounds hold.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Tensor
from toolchain.testing.gen_context import FLOATS, Gen, source
from toolchain.testing.input_values import InputSpec
from toolchain.types import TensorType

__all__ = ["batch_norm_inference", "batch_norm_training", "batch_norm_grad", "cholesky",
           "triangular_solve"]


# The epsilons are exact in f32, so the attribute survives an MLIR round trip bit for bit.
EPSILONS = (2.0**-10, 2.0**-17, 0.0009765625 * 1.5)


def batch_norm_inference(g: Gen) -> bool:
    x = source(g, FLOATS, min_rank=1)
    fi = g.rng.randrange(x.type.rank)
    vec = TensorType((x.type.shape[fi],), x.type.dtype)
    scale, offset, mean = (g.operand(vec) for _ in range(3))
    var = g.operand(vec, spec=InputSpec("positive", 0.05, 2.0))
    if not g.is_exact(var) or g.chance(0.3):
        var = g.positive(var)  # variance + epsilon must stay away from 0
    g.op("batch_norm_inference", [x, scale, offset, mean, var], epsilon=g.rng.choice(EPSILONS),
         feature_index=fi)
    return True


# The bound operands of the batch norms are clamped to (clamp also takes infinities to
# the bound; a NaN stays and is NaN on both sides): f16's largest intermediate of
# batch_norm_grad (passes/linalg.py, the spec's i3 * centered / (variance + epsilon))
# is then 96 elements * 2 * 4 * 4 / 0.25 = 12,288, well inside its 65,504.
NORM_BOUND = 2.0
# A linear-algebra matrix is at most 6 x 6 (MAX_DIM) and the op's tensors stay small.
LINALG_ELEMENTS = 72


def _norm_operands(g: Gen) -> tuple[Tensor, int, TensorType]:
    """A batch norm's operand (rank >= 1, bounded), its feature index and the type of
    a per-feature vector."""
    x = g.bounded(source(g, FLOATS, min_rank=1), NORM_BOUND)
    fi = g.rng.randrange(x.type.rank)
    return x, fi, TensorType((x.type.shape[fi],), x.type.dtype)


def batch_norm_training(g: Gen) -> bool:
    """batch_norm_training over bounded operands: the mean, biased variance and
    normalized values (three results, all in the pool)."""
    x, fi, vec = _norm_operands(g)
    scale, offset = (g.bounded(g.operand(vec), NORM_BOUND) for _ in range(2))
    g.node("batch_norm_training", [x, scale, offset],
           {"epsilon": g.rng.choice(EPSILONS), "feature_index": fi})
    return True


def batch_norm_grad(g: Gen) -> bool:
    """batch_norm_grad with bounded operands and a variance kept >= 0.25 (|v| + c, or a
    new input in [0.25, 2]): d operand, d scale, d offset."""
    x, fi, vec = _norm_operands(g)
    scale, mean = (g.bounded(g.operand(vec), NORM_BOUND) for _ in range(2))
    var = g.operand(vec, spec=InputSpec("positive", 0.25, 2.0)) if g.chance(0.5) \
        else g.positive(g.bounded(g.operand(vec), NORM_BOUND))
    grad = g.bounded(g.operand(x.type), NORM_BOUND)
    g.node("batch_norm_grad", [x, scale, mean, var, grad],
           {"epsilon": g.rng.choice(EPSILONS), "feature_index": fi})
    return True


def _matrix_type(g: Gen, n: int, last: int) -> tuple[TensorType, list[int]] | None:
    """A float type batch + (n, last) with 0 to 2 batch dims, or None when too big."""
    batch = [g.rng.randint(1, 3) for _ in range(g.rng.choice([0, 0, 1, 2]))]
    shape = tuple(batch + [n, last])
    if int(np.prod(shape)) > LINALG_ELEMENTS:
        return None
    return TensorType(shape, g.dtype(names=FLOATS)), batch


def _identity(g: Gen, ty: TensorType, scale: float) -> Tensor:
    """scale * I on every matrix of a batch of type `ty` (a constant)."""
    eye = np.broadcast_to(np.eye(ty.shape[-1]) * scale, ty.shape)
    return g.const(ty, eye)


def cholesky(g: Gen) -> bool:
    """cholesky of A = M M^T + n I, M of shape (n, k) with entries in [-1, 1] (a new
    input or constant: no NaN or infinity): A's eigenvalues lie in [n, n + k n], so its
    condition number is at most 1 + k <= 7 and every pivot is far above 0 in every
    element type. Sometimes some matrices of the batch are negated (negative definite:
    the first pivot is <= -n, so the result is NaN on both sides, the batch's other
    matrices unaffected). Both triangles are drawn."""
    n, k = g.rng.randint(1, 6), g.rng.randint(1, 6)
    made = _matrix_type(g, n, k)
    if made is None or int(np.prod(made[0].shape[:-1])) * n > LINALG_ELEMENTS:
        return False
    mty, batch = made
    m = g.fresh(mty, InputSpec("positive", -1.0, 1.0))
    dims = tuple(range(len(batch)))
    a = g.op("dot_general", [m, m], lhs_batch=dims, rhs_batch=dims,
             lhs_contract=(len(batch) + 1,), rhs_contract=(len(batch) + 1,),
             dtype=mty.dtype.name)
    a = g.op("add", [a, _identity(g, a.type, float(n))])
    if batch and g.chance(0.25):
        signs = g.nrng.choice([-1.0, 1.0], size=tuple(batch) + (1, 1))
        a = g.op("multiply", [a, g.const(a.type, np.broadcast_to(signs, a.type.shape))])
    g.op("cholesky", [a], lower=g.chance(0.5))
    return True


def triangular_solve(g: Gen) -> bool:
    """triangular_solve with A = M + n I, M's entries in [-0.5, 0.5] (a new input or
    constant): the triangle read is diagonally dominant (|off-diagonal row sum| <= (n -
    1) / 2 < n - 1/2 <= the diagonal), and with unit_diagonal its inverse grows at most
    1.5**(n - 1) < 8, so op(A) is well conditioned; the other triangle holds the rest of
    M + n I, which must not be read. B is any pool operand of the right type, bounded."""
    n, m = g.rng.randint(1, 6), g.rng.randint(1, 6)
    left = g.chance(0.5)
    made = _matrix_type(g, n, n)
    if made is None:
        return False
    aty, batch = made
    bty = TensorType(tuple(batch) + ((n, m) if left else (m, n)), aty.dtype)
    if bty.num_elements > LINALG_ELEMENTS:
        return False
    a = g.op("add", [g.fresh(aty, InputSpec("positive", -0.5, 0.5)),
                     _identity(g, aty, float(n))])
    b = g.bounded(g.operand(bty), 8.0)
    g.op("triangular_solve", [a, b], left_side=left, lower=g.chance(0.5),
         unit_diagonal=g.chance(0.3),
         transpose_a=g.rng.choice(["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]))
    return True
