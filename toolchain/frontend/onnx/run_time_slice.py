"""An ONNX Slice whose starts are computed at run time but whose extent is known: ends
computed as starts plus constants (`x[i:i + 1]` in a loop body, as exported from
Python indexing: Slice(x, Unsqueeze(i), Unsqueeze(Add(i, 1)))). The result's shape is
then static, and the Slice is the graph's dynamic_slice.

The extent is proven on the graph, not assumed: both operands are followed back
through reshapes and additions or subtractions of constants to one common tensor, and
their offsets from it differ by constants. A negative start counts from the end, as
ONNX says. A start past the last full window is clamped to it (dynamic_slice's rule),
where ONNX would return fewer elements: a shape known at run time only, which a static
graph has no form for.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def _constant(t: Tensor) -> np.ndarray | None:
    """The values of a constant tensor (a constant, or a broadcast of one)."""
    p = t.producer
    if p is None:
        return None
    if p.op == "constant":
        return np.asarray(p.attrs["value"])
    if p.op == "broadcast_in_dim":
        inner = _constant(p.inputs[0])
        if inner is not None:
            shape = [1] * len(p.attrs["shape"])
            for src, dst in enumerate(p.attrs["dims"]):
                shape[dst] = inner.shape[src]
            return np.broadcast_to(inner.reshape(shape), p.attrs["shape"])
    return None


def _affine(t: Tensor) -> tuple[Tensor, np.ndarray]:
    """(base, offsets): t's elements are base's plus offsets (flattened, row-major),
    followed through reshapes and additions / subtractions of constants."""
    p = t.producer
    size = t.type.num_elements
    if p is not None and p.op == "reshape":
        return _affine(p.inputs[0])
    if p is not None and p.op in ("add", "subtract"):
        for k in ((1, 0) if p.op == "add" else (1,)):
            c = _constant(p.inputs[k])
            if c is not None:
                base, off = _affine(p.inputs[1 - k])
                sign = -1 if p.op == "subtract" else 1
                return base, off + sign * c.reshape(-1).astype(np.int64)
    return t, np.zeros(size, np.int64)


def extents(starts: Tensor, ends: Tensor) -> np.ndarray | None:
    """ends - starts, elementwise, when the graph proves it constant; else None."""
    base_s, off_s = _affine(starts)
    base_e, off_e = _affine(ends)
    if base_s is not base_e or starts.type.num_elements != ends.type.num_elements:
        return None
    return np.broadcast_to(off_e - off_s, (starts.type.num_elements,))


def run_time_slice(ctx: OpContext, axes: list[int], steps: list[int]) -> Tensor | None:
    """The Slice as a dynamic_slice when its extents are proven constant; None when
    they are not (the caller then asks for constant starts and ends)."""
    starts, ends = ctx.input(1), ctx.input(2)
    sizes = extents(starts, ends)
    if sizes is None:
        return None
    x = ctx.input(0)
    shape = list(x.type.shape)
    if any(s != 1 for s in steps):
        raise Unsupported(f"steps {steps} with starts computed at run time (1 only)")
    if not starts.type.dtype.is_integer:
        raise Unsupported(f"starts of element type {starts.type.dtype}")
    out = list(shape)
    index = [ctx.constant(0, starts.type.dtype) for _ in shape]
    flat = ctx.reshape(starts, (len(sizes),))
    for k, (axis, size) in enumerate(zip(axes, sizes)):
        axis = axis_of(axis, len(shape))
        if not 0 < size <= shape[axis]:
            raise Unsupported(f"the slice of axis {axis} has {size} elements; 1 to "
                              f"{shape[axis]} fit")
        start = ctx.reshape(ctx.node("slice", [flat], start=(k,), limit=(k + 1,),
                                     strides=(1,)), ())
        negative = ctx.node("compare", [start, ctx.scalar(0, start)], direction="LT")
        from_end = ctx.node("add", [start, ctx.scalar(shape[axis], start)])
        index[axis] = ctx.node("select", [negative, from_end, start])
        out[axis] = int(size)
    return ctx.node("dynamic_slice", [x, *index], slice_sizes=tuple(out))


__all__ = ["extents", "run_time_slice"]
