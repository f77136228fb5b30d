"""LRN (local response normalization across channels, AlexNet's):
y = x / (bias + alpha / size * sum of x^2 over the `size` channels around c) ** beta,
the window from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), cut at the ends:
a reduce_window of the squares along the channel axis, zero-padded.
"""

from __future__ import annotations

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def lrn(ctx: OpContext) -> Tensor:
    """LRN of X [N, C, ...] with attributes size, alpha, beta, bias."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    size = ctx.attr("size")
    if not isinstance(size, int) or size < 1:
        raise Unsupported(f"size {size!r} must be an integer >= 1")
    if len(shape) < 3 or not x.type.dtype.is_float:
        raise Unsupported(f"input of {x.type} (a float [N, C, ...] tensor expected)")
    alpha, beta = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    bias = float(ctx.attr("bias", 1.0))
    rank = len(shape)
    window, pad = [1] * rank, [(0, 0)] * rank
    window[1] = size
    pad[1] = ((size - 1) // 2, size - 1 - (size - 1) // 2)
    squares = ctx.node("multiply", [x, x])
    sums = ctx.node("reduce_window", [squares, ctx.scalar(0, x)], kind="add",
                    window=tuple(window), strides=(1,) * rank, base_dilations=(1,) * rank,
                    window_dilations=(1,) * rank, padding=tuple(pad))
    scaled = ctx.node("add", [ctx.filled(bias, x),
                              ctx.node("multiply", [sums, ctx.filled(alpha / size, x)])])
    return ctx.node("divide", [x, ctx.node("power", [scaled, ctx.filled(beta, x)])])


__all__ = ["lrn"]
