"""TFLite SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (rank-4 NHWC, as TFLite Micro's
reference kernels lay the blocks out) and BATCH_MATMUL (float32, int8).

The block moves are pad / reshape / transpose / slice of stored values, so float32 and
int8 share one converter. SPACE_TO_BATCH_ND pads with real zero (the output's zero
point), as TFLite's kernel does: TFLite Micro memsets its params' output_offset, which
it never sets, so its padding bytes are whatever that memory held.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.shape_ops import _zero
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build
from toolchain.quant.fixedpoint import quantize_multiplier


def _blocks(ctx: OpContext) -> tuple[Tensor, int, int, list[int]]:
    """The rank-4 float32 / int8 input, the block height and width, and the four
    paddings or crops (top, bottom, left, right)."""
    x = ctx.input(0)
    if x.type.dtype.name not in ("f32", "i8") or x.type.rank != 4:
        raise Unsupported(f"{ctx.op.opcode} of a rank-{x.type.rank} {x.type.dtype} input is "
                          "not supported (rank-4 float32 or int8)")
    block = ctx.value(1, "block_shape").reshape(-1)
    edges = ctx.value(2, "paddings or crops")
    if block.shape != (2,) or (block < 1).any() or edges.shape != (2, 2) or (edges < 0).any():
        raise Unsupported(f"block shape {block.tolist()} and paddings {edges.tolist()} do not "
                          "fit a rank-4 input")
    return x, int(block[0]), int(block[1]), [int(v) for v in edges.reshape(-1)]


def space_to_batch_nd(ctx: OpContext) -> Tensor:
    """Pad, cut H and W into blocks, move the block offsets to the front of the batch."""
    x, bh, bw, (top, bottom, left, right) = _blocks(ctx)
    pad = _zero(ctx, x)
    x = ctx.node("pad", [x, pad], low=(0, top, left, 0), high=(0, bottom, right, 0),
                 interior=(0, 0, 0, 0))
    n, h, w, c = x.type.shape
    if h % bh or w % bw:
        raise Unsupported(f"the padded {h}x{w} does not divide into {bh}x{bw} blocks")
    y = ctx.reshape(x, (n, h // bh, bh, w // bw, bw, c))
    y = ctx.node("transpose", [y], permutation=(2, 4, 0, 1, 3, 5))
    return ctx.reshape(y, (bh * bw * n, h // bh, w // bw, c))


def batch_to_space_nd(ctx: OpContext) -> Tensor:
    """The inverse of SPACE_TO_BATCH_ND, then the crops."""
    x, bh, bw, (top, bottom, left, right) = _blocks(ctx)
    nb, h, w, c = x.type.shape
    if nb % (bh * bw):
        raise Unsupported(f"batch {nb} is not a multiple of the {bh}x{bw} block")
    n = nb // (bh * bw)
    y = ctx.reshape(x, (bh, bw, n, h, w, c))
    y = ctx.node("transpose", [y], permutation=(2, 3, 0, 4, 1, 5))
    y = ctx.reshape(y, (n, h * bh, w * bw, c))
    if top + bottom > h * bh or left + right > w * bw:
        raise Unsupported("the crops remove more than the output holds")
    return ctx.node("slice", [y], start=(0, top, left, 0),
                    limit=(n, h * bh - bottom, w * bw - right, c), strides=(1, 1, 1, 1))


def _matmul(ctx: OpContext, a: Tensor, b: Tensor, dt: str) -> Tensor:
    """a [..., M, K] @ b [..., K, N] (adj_x / adj_y transpose the last two dimensions),
    the batch dimensions broadcast numpy-style, accumulated in `dt`."""
    if a.type.rank < 2 or b.type.rank < 2:
        raise Unsupported("BATCH_MATMUL takes inputs of rank 2 or more")
    batch = broadcast_shape(a.type.shape[:-2], b.type.shape[:-2])
    a = ctx.broadcast(a, batch + a.type.shape[-2:])
    b = ctx.broadcast(b, batch + b.type.shape[-2:])
    nb = len(batch)
    adj_x, adj_y = bool(ctx.option("adj_x")), bool(ctx.option("adj_y"))
    return ctx.node("dot_general", [a, b], lhs_batch=tuple(range(nb)),
                    rhs_batch=tuple(range(nb)), lhs_contract=(nb if adj_x else nb + 1,),
                    rhs_contract=(nb + 1 if adj_y else nb,), dtype=dt)


def batch_matmul(ctx: OpContext) -> Tensor:
    """float32 BATCH_MATMUL."""
    a, b = ctx.input(0), ctx.input(1)
    if a.type.dtype.name != "f32" or b.type.dtype.name != "f32":
        raise Unsupported(f"BATCH_MATMUL of {a.type.dtype} and {b.type.dtype} is not "
                          "supported here (float32)")
    return _matmul(ctx, a, b, "f32")


def batch_matmul_int8(ctx: OpContext) -> Tensor:
    """int8 BATCH_MATMUL as TFLite Micro: sum of (a - za) * (b - zb) in int32, times
    float32(sa * sb) / so by MultiplyByQuantizedMultiplier, + zo, clamped to int8."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    params = []
    for ty, what in ((a.type, "first input"), (b.type, "second input"), (out, "output")):
        if ty.dtype.name != "i8" or ty.quant is None or len(ty.quant.scales) != 1:
            raise Unsupported(f"its {what} must be int8, quantized per tensor")
        params.append((ty.quant.scales[0], ty.quant.zero_points[0]))
    (sa, za), (sb, zb), (so, zo) = params
    g = GraphBuilder(ctx.graph)
    a, b = (build._offset(g, t, z, t.type.shape) for t, z in ((a, za), (b, zb)))
    acc = _matmul(ctx, a, b, "i32")
    real = float(np.float32(sa) * np.float32(sb)) / float(np.float32(so))
    multiplier, shift = quantize_multiplier(real)
    return build.requantize(g, acc, multiplier, shift, axis=None, output_zp=zo,
                            quant=out.quant)


__all__ = ["batch_matmul", "batch_matmul_int8", "batch_to_space_nd", "space_to_batch_nd"]
