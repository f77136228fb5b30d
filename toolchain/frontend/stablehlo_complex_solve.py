"""Complex `triangular_solve` as one real triangular_solve of twice the size.

A complex number z is the real 2x2 block [[re z, -im z], [im z, re z]], and that map
turns complex matrix products into real ones: a complex n x n matrix A becomes a real
2n x 2n matrix R(A) of such blocks, and A x = b becomes R(A) x' = b', x' and b' the
vectors with each complex element's real and imaginary parts on consecutive rows. R(A)
is block triangular but its diagonal blocks are full 2x2; dividing each row of A by its
diagonal element first (and b's row by the same) makes every diagonal element 1, whose
block is the identity: R(A) is then unit triangular, solved by the real op with
unit_diagonal (which never reads the diagonal).

The other forms reduce to that one on the graph: op(A) = A^T or A^H is materialized by a
transpose (and a conjugation), flipping `lower`; the right-side x op(A) = b is the
left-side op(A)^T x^T = b^T, transposed back. `unit_diagonal` skips the row scaling (the
stored diagonal is not read; its block is set to the identity all the same).
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.graph.ops import ShapeError
from toolchain.types import complex_part

__all__ = ["expand_complex_triangular_solve"]


def _swap_last(b: GraphBuilder, x: Tensor, conjugate: bool = False) -> Tensor:
    """x with its last two dims swapped (conjugated too for the adjoint)."""
    rank = x.type.rank
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    t = b.op("transpose", [x], permutation=perm)
    if not conjugate:
        return t
    return b.op("complex", [b.op("real", [t]), b.op("negate", [b.op("imag", [t])])])


def _diagonal(b: GraphBuilder, a: Tensor) -> Tensor:
    """The diagonal of the last two dims (..., n): a strided slice of the flattened
    matrix, every (n + 1)-th element."""
    shape = tuple(a.type.shape)
    n, batch = shape[-1], shape[:-2]
    flat = b.op("reshape", [a], shape=batch + (n * n,))
    rank = len(batch) + 1
    return b.op("slice", [flat], start=(0,) * rank, limit=batch + (n * n,),
                strides=(1,) * len(batch) + (n + 1,))


def _stack(b: GraphBuilder, parts: list[Tensor], axis: int) -> Tensor:
    """The tensors (one shape) stacked on a new dim at `axis` (counted from the end)."""
    shape = tuple(parts[0].type.shape)
    at = len(shape) + 1 + axis
    grown = shape[:at] + (1,) + shape[at:]
    return b.op("concatenate", [b.op("reshape", [p], shape=grown) for p in parts],
                dimension=at)


def _left_lower_or_upper(b: GraphBuilder, a: Tensor, rhs: Tensor, lower: bool,
                         unit: bool) -> Tensor:
    """x with A x = rhs, A (..., n, n) complex triangular, rhs (..., n, m)."""
    shape = tuple(a.type.shape)
    n, batch = shape[-1], shape[:-2]
    m = rhs.type.shape[-1]
    part = complex_part(a.type.dtype)
    if not unit:
        d = _diagonal(b, a)
        rows = tuple(range(len(batch) + 1))
        a = b.op("divide", [a, b.op("broadcast_in_dim", [d], dims=rows, shape=shape)])
        rhs = b.op("divide", [rhs, b.op("broadcast_in_dim", [d], dims=rows,
                                        shape=tuple(rhs.type.shape))])
    off = b.op("broadcast_in_dim", [b.const(1.0 - np.eye(n), part)],
               dims=(len(batch), len(batch) + 1), shape=shape)
    re = b.op("real", [a])
    im = b.op("multiply", [b.op("imag", [a]), off])  # the diagonal blocks: identity
    # (..., n, 2, n, 2): [p, q] = [[re, -im], [im, re]]
    top = _stack(b, [re, b.op("negate", [im])], -1)
    bottom = _stack(b, [im, re], -1)
    blocks = _stack(b, [top, bottom], -3)
    big = b.op("reshape", [blocks], shape=batch + (2 * n, 2 * n))
    parts = _stack(b, [b.op("real", [rhs]), b.op("imag", [rhs])], -2)  # (..., n, 2, m)
    flat = b.op("reshape", [parts], shape=batch + (2 * n, m))
    x = b.op("triangular_solve", [big, flat], left_side=True, lower=lower,
             unit_diagonal=True, transpose_a="NO_TRANSPOSE")
    x = b.op("reshape", [x], shape=batch + (n, 2, m))
    rank = len(batch) + 3

    def row(p: int) -> Tensor:
        s = b.op("slice", [x], start=(0,) * (rank - 2) + (p, 0),
                 limit=batch + (n, p + 1, m), strides=(1,) * rank)
        return b.op("reshape", [s], shape=batch + (n, m))

    return b.op("complex", [row(0), row(1)])


def _check_shapes(a: Tensor, rhs: Tensor, left: bool) -> None:
    """The op's shape rule (graph/type_rules.py's, which takes real types only), so an
    ill-shaped solve is told in its own terms, not a node of the expansion's."""
    at, bt = a.type, rhs.type
    if at.rank < 2 or at.shape[-1] != at.shape[-2]:
        raise ShapeError(f"triangular_solve's a must be a batch of square matrices, not {at}")
    if bt.dtype != at.dtype or bt.rank != at.rank or bt.shape[:-2] != at.shape[:-2]:
        raise ShapeError(f"b ({bt}) must have a's ({at}) element type and batch dims")
    side = -2 if left else -1
    if bt.shape[side] != at.shape[-1]:
        raise ShapeError(f"b's dim {bt.rank + side} must be {at.shape[-1]} (a's size) when "
                         f"left_side is {str(left).lower()}, not {bt.shape[side]}")


def expand_complex_triangular_solve(b: GraphBuilder, inputs: list[Tensor],
                                    attrs: dict) -> list[Tensor]:
    """The real graph ops solving op(a) x = rhs (left_side) or x op(a) = rhs for
    complex a and rhs (attrs: left_side, lower, unit_diagonal, transpose_a)."""
    a, rhs = inputs
    _check_shapes(a, rhs, bool(attrs["left_side"]))
    lower = bool(attrs["lower"])
    mode = attrs["transpose_a"]
    if mode != "NO_TRANSPOSE":  # op(A) itself: the triangle moves to the other side
        a, lower = _swap_last(b, a, conjugate=mode == "ADJOINT"), not lower
    if attrs["left_side"]:
        return [_left_lower_or_upper(b, a, rhs, lower, bool(attrs["unit_diagonal"]))]
    # x A = rhs  <=>  A^T x^T = rhs^T
    xt = _left_lower_or_upper(b, _swap_last(b, a), _swap_last(b, rhs), not lower,
                              bool(attrs["unit_diagonal"]))
    return [_swap_last(b, xt)]
