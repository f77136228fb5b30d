"""Col2Im (opset 18): columns of image blocks [N, C * prod(block), L] summed back into
an image [N, C, *image_shape], the inverse layout of im2col (overlapping blocks add up),
with strides, dilations and pads.

Each position of the block is one interior-padded placement: the column of that
position, [N, C, L1..Lr], spread `stride` apart (interior padding) and moved to its
offset (low padding) within the padded image, then all positions are added and the pads
cut off. image_shape and block_shape must be constants (shape_operands.py).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def col2im(ctx: OpContext) -> Tensor:
    """Col2Im: input [N, C * prod(block), L] -> [N, C, *image_shape]."""
    x = ctx.input(0)
    image = [int(v) for v in np.asarray(ctx.const(1, "image_shape")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.const(2, "block_shape")).reshape(-1)]
    r = len(image)
    if r < 1 or len(block) != r or any(v < 1 for v in image + block):
        raise Unsupported(f"image_shape {image} and block_shape {block} must be as many "
                          "sizes >= 1")
    strides = ctx.ints_per_dim("strides", r, 1, 1)
    dilations = ctx.ints_per_dim("dilations", r, 1, 1)
    pads = ctx.ints_per_dim("pads", 2 * r, 0, 0)
    shape = tuple(x.type.shape)
    if len(shape) != 3 or shape[1] % math.prod(block):
        raise Unsupported(f"input {list(shape)} is not [N, C * {math.prod(block)}, L]")
    n, c = shape[0], shape[1] // math.prod(block)
    padded = [image[d] + pads[d] + pads[d + r] for d in range(r)]
    counts = [(padded[d] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1
              for d in range(r)]
    if any(v < 1 for v in counts) or math.prod(counts) != shape[2]:
        raise Unsupported(f"{shape[2]} blocks do not tile image {image} with blocks {block}"
                          f" (strides {strides}, dilations {dilations}, pads {pads})")
    cols = ctx.reshape(x, (n, c, *block, *counts))
    zero = ctx.scalar(0, x)
    total = None
    for offset in itertools.product(*(range(b) for b in block)):
        start = (0, 0, *offset, *([0] * r))
        part = ctx.node("slice", [cols], start=start,
                        limit=(n, c, *(o + 1 for o in offset), *counts),
                        strides=(1,) * (2 + 2 * r))
        part = ctx.reshape(part, (n, c, *counts))
        low = [o * dilations[d] for d, o in enumerate(offset)]
        span = [(counts[d] - 1) * strides[d] + 1 for d in range(r)]
        high = [padded[d] - low[d] - span[d] for d in range(r)]
        placed = ctx.node("pad", [part, zero], low=(0, 0, *low), high=(0, 0, *high),
                          interior=(0, 0, *(s - 1 for s in strides)))
        total = placed if total is None else ctx.node("add", [total, placed])
    assert total is not None
    if not any(pads):
        return total
    return ctx.node("slice", [total], start=(0, 0, *pads[:r]),
                    limit=(n, c, *(pads[d] + image[d] for d in range(r))),
                    strides=(1,) * (2 + r))


__all__ = ["col2im"]
