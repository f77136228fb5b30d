"""Det: the determinant of each trailing [M, M] matrix, as the sum over permutations
p of sign(p) * prod a[i, p(i)] (Leibniz's formula). It needs no pivoting, so it is exact
in its products for any matrix, singular ones included; its M! terms limit it to small
matrices (up to MAX_ORDER, what the models minirt targets hold: 2x2 to 4x4 transforms).
"""

from __future__ import annotations

import itertools

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

MAX_ORDER = 5  # 120 terms of 5 factors


def _sign(perm: tuple[int, ...]) -> int:
    """+1 for an even permutation, -1 for an odd one (by counting inversions)."""
    inversions = sum(1 for i, j in itertools.combinations(range(len(perm)), 2)
                     if perm[i] > perm[j])
    return -1 if inversions % 2 else 1


def det(ctx: OpContext) -> Tensor:
    """Det of X [..., M, M] -> [...]."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if len(shape) < 2 or shape[-1] != shape[-2] or not x.type.dtype.is_float:
        raise Unsupported(f"input of {x.type} (float [..., M, M] expected)")
    m = shape[-1]
    if m > MAX_ORDER:
        raise Unsupported(f"a {m}x{m} determinant: minirt computes them up to "
                          f"{MAX_ORDER}x{MAX_ORDER}")
    batch = shape[:-2]
    flat = ctx.reshape(x, (*batch, m * m))
    rank = len(batch) + 1

    def element(i: int, j: int) -> Tensor:
        e = i * m + j
        return ctx.reshape(ctx.node("slice", [flat], start=(0,) * (rank - 1) + (e,),
                                    limit=(*batch, e + 1), strides=(1,) * rank), batch)

    total = None
    for perm in itertools.permutations(range(m)):
        term = element(0, perm[0])
        for i in range(1, m):
            term = ctx.node("multiply", [term, element(i, perm[i])])
        if total is None:
            total = term if _sign(perm) > 0 else ctx.node("negate", [term])
        else:
            total = ctx.node("add" if _sign(perm) > 0 else "subtract", [total, term])
    assert total is not None
    return total


__all__ = ["MAX_ORDER", "det"]
