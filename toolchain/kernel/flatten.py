"""Elementwise kernels over whole, contiguous tensors become one flat loop.

A kernel without reduction whose every load reads its operand at exactly the loop
indices, over an operand of the loop's shape, and whose body uses the indices nowhere
else, touches element k of each buffer at iteration k of the row-major walk: the same
kernel over the 1-D domain (product of the dims) with every operand and the result
viewed as 1-D computes the same bytes. The emitter then makes one loop instead of a
nest: one counter and no per-row pointer updates, which is less code (the 4x4 seed's
multiply-add: 64 bytes of Thumb-2 become 46) and fewer instructions per element.

Anything else (reductions, broadcasts, transposes, windows, padded or gathered loads,
per-channel quantized operands, index arithmetic) is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import replace

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load
from toolchain.types import TensorType

__all__ = ["flatten_elementwise"]


def _identity(index: tuple[Expr, ...], rank: int) -> bool:
    return len(index) == rank and all(isinstance(e, Index) and e.dim == d
                                      for d, e in enumerate(index))


def _flat_body(e: Expr, rank: int) -> Expr | None:
    """The body over the flat domain, or None if `e` is not a pure elementwise body.
    Walks with an explicit stack (bodies may be deep; shared nodes are rewritten once)."""
    done: dict[int, Expr] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if isinstance(node, Const):
            done[id(node)] = node
        elif isinstance(node, Load):
            if node.pad is not None or node.valid is not None or not _identity(node.index,
                                                                                rank):
                return None
            done[id(node)] = replace(node, index=(Index(0),))
        elif isinstance(node, Apply):
            if not expanded:
                stack.append((node, True))
                stack.extend((a, False) for a in node.args)
            else:
                done[id(node)] = replace(node, args=tuple(done[id(a)] for a in node.args))
        else:  # Index outside a load, Acc: not elementwise over whole buffers
            return None
    return done[id(e)]


def _flat_type(t: TensorType, shape: tuple[int, ...]) -> TensorType | None:
    if t.shape != shape or (t.quant is not None and t.quant.axis is not None):
        return None
    return t.with_shape((math.prod(shape),))


def flatten_elementwise(kernel: object) -> object:
    """`kernel` over a 1-D domain when it is elementwise over whole contiguous buffers
    (see the module docstring), else `kernel` itself. Other dispatch kinds pass through."""
    if not isinstance(kernel, Kernel) or kernel.is_reduction:
        return kernel
    rank = len(kernel.domain)
    if rank < 2 or kernel.n_parallel != rank:
        return kernel
    types = [_flat_type(t, kernel.domain) for t in (*kernel.operands, kernel.result)]
    if any(t is None for t in types):
        return kernel
    body = _flat_body(kernel.body, rank)
    if body is None:
        return kernel
    return replace(kernel, domain=(math.prod(kernel.domain),), n_parallel=1,
                   operands=tuple(types[:-1]), result=types[-1], body=body)
