"""The few-output kernel's view of a convolution's requantization (schedule/fewout_records.py).

first_layer_plan (and loops/depthwise.py `_requantization`) read kernel/requant.py's
folded requantization in the form it takes with per-channel records: the sum started
from the bias, M, K_hi and the shift loaded by output channel. Convolutions with few
outputs on small maps come in two other forms (the shape sweep's 19x6 to 1 or 2
channels, 114-228 outputs), which this module reads as that one:

- the imported graph's per-channel constants broadcast over the pixels (a constant of
  shape (1, H, W, C, 5) read at (n, y, x, c)): where the constant is the same along a
  pixel dim, its index there is 0 (`pinned`, an equivalent kernel);
- the per-tensor fold: the bias added to the sum in the epilogue (`acc + b` wherever the
  sum is read) and the output zero point added after the shift (`(hi >> a) + zp`): the
  bias becomes the sum's start, and the zero point is returned apart, for the records
  to fold into K_hi (`(hi >> a) + zp == (hi + zp * 2**a) >> a`); the low word of K,
  which the per-channel form leaves at 2**30, is returned too, for the records to check.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from toolchain.kernel.form import (
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.loops.depthwise import _channel_only
from toolchain.types import dtype

__all__ = ["FewoutForm", "fewout_form", "pinned"]

PIXEL_DIMS = (0, 1, 2)  # n, y, x of an NHWC convolution's domain
_I32_MIN = -(1 << 31)
_INDEX = dtype("i32")  # the lowered kernels' constant indices


@dataclass(frozen=True)
class FewoutForm:
    """A kernel rewritten into the per-channel folded form (its sum from the bias),
    the output zero point that form leaves out (None: 0) and the low word of K."""

    kernel: Kernel
    zero_point: Expr | None
    low: Expr | None


def pinned(k: Kernel, operands: list[np.ndarray | None]) -> Kernel | None:
    """`k` with the pixel indices of its init's and epilogue's constant loads set to 0
    where the constant is the same along them (the same kernel), or None where one is
    not."""
    uniform = True

    def pin(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        nonlocal uniform
        if not isinstance(e, Load) or operands[e.operand] is None:
            return with_children(e, kids)
        arr = np.asarray(operands[e.operand])
        index = list(e.index)
        for axis, i in enumerate(e.index):
            if isinstance(i, Index) and i.dim in PIXEL_DIMS:
                first = np.take(arr, [0], axis=axis)
                if not np.array_equal(np.broadcast_to(first, arr.shape), arr):
                    uniform = False
                    return e
                index[axis] = Const(0, _INDEX)
        return replace(e, index=tuple(index))

    init = None if k.init is None else rewrite(k.init, pin)
    epilogue = None if k.epilogue is None else rewrite(k.epilogue, pin)
    return replace(k, init=init, epilogue=epilogue) if uniform else None


def _is(e: Expr, op: str, n: int) -> bool:
    return isinstance(e, Apply) and e.op == op and len(e.args) == n


def _const(e: Expr, v: int) -> bool:
    return isinstance(e, Const) and e.value == v


def fewout_form(k: Kernel) -> FewoutForm | None:
    """`k`'s requantization in the per-channel form (module docstring), or None."""
    e = k.epilogue
    if e is None or k.init is None:
        return None
    biases: set[Expr] = set()
    marker = Apply("fewout.biased", (), k.accumulator)

    def unbias(node: Expr, kids: tuple[Expr, ...]) -> Expr:
        if _is(node, "add", 2):
            a, b = kids
            if isinstance(b, Acc):
                a, b = b, a
            if isinstance(a, Acc) and _channel_only(b):
                biases.add(b)
                return marker
        return Apply(node.op, kids, node.dtype) if isinstance(node, Apply) else node

    init = k.init
    if any(isinstance(n, Acc) for n in postorder(rewrite(e, unbias))) or len(biases) > 1:
        biases.clear()  # a bare sum read beside the biased ones: leave the epilogue
    elif biases:
        if not _const(k.init, 0):
            return None
        init = next(iter(biases))
        e = rewrite(rewrite(e, unbias), lambda n, kids: Acc(k.accumulator) if n is marker
                    else Apply(n.op, kids, n.dtype) if isinstance(n, Apply) else n)
    zero_point = None
    # convert(clamp(-128, (hi >> a) + zp, 127)) -> convert(clamp(-128, hi >> a, 127))
    if _is(e, "convert", 1) and _is(e.args[0], "clamp", 3):
        lo, mid, hi = e.args[0].args
        if _is(mid, "add", 2):
            a, b = mid.args
            if _is(b, "shift_right_arithmetic", 2):
                a, b = b, a
            if _is(a, "shift_right_arithmetic", 2) and _channel_only(b):
                zero_point = b
                e = Apply("convert", (Apply("clamp", (lo, a, hi), e.args[0].dtype),),
                          e.dtype)
    low = None
    for n in postorder(e):
        if _is(n, "or", 2) and _is(n.args[0], "and", 2) and \
                isinstance(n.args[0].args[0], Acc) and _const(n.args[0].args[1], _I32_MIN):
            low = n.args[1]
    return FewoutForm(replace(k, init=init, epilogue=e), zero_point, low)
