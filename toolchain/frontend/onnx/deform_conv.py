"""DeformConv (opset 19, 2-D): a convolution whose every kernel tap reads X at its
regular position moved by a run-time offset (per offset group, tap and output
position), bilinearly interpolated with zeros outside the image, optionally scaled by a
mask, as the spec defines it through GridSample (align_corners, zeros padding).

Built from existing graph ops: the sampled columns [N, C, kH, kW, oH, oW] come from
grid_sample.sample at the moved positions, then each group's columns are contracted with
its weights (a dot_general), as an im2col convolution.
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.grid_sample import sample
from toolchain.graph.ir import Tensor


def _cut(ctx: OpContext, t: Tensor, axis: int, start: int, stop: int) -> Tensor:
    shape = tuple(t.type.shape)
    lo = [0] * len(shape)
    hi = list(shape)
    lo[axis], hi[axis] = start, stop
    return ctx.node("slice", [t], start=tuple(lo), limit=tuple(hi),
                    strides=(1,) * len(shape))


def deform_conv(ctx: OpContext) -> Tensor:
    """DeformConv: X [N, C, H, W], W [OC, C / group, kH, kW], offset [N, OG * kH * kW * 2,
    oH, oW], optional B [OC] and mask [N, OG * kH * kW, oH, oW] -> [N, OC, oH, oW]."""
    x, w, offset = ctx.input(0), ctx.input(1), ctx.input(2)
    xs, ws, os_ = tuple(x.type.shape), tuple(w.type.shape), tuple(offset.type.shape)
    if len(xs) != 4 or len(ws) != 4 or len(os_) != 4:
        raise Unsupported(f"X {list(xs)}, W {list(ws)}, offset {list(os_)}: only 2-D "
                          "DeformConv (4-D tensors) is supported")
    if not x.type.dtype.is_float:
        raise Unsupported(f"DeformConv of element type {x.type.dtype}")
    n, c, ih, iw = xs
    oc, cpg, kh, kw = ws
    if ctx.ints("kernel_shape") not in (None, [kh, kw]):
        raise Unsupported(f"kernel_shape {ctx.ints('kernel_shape')} differs from W's")
    group, og = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    sh, sw = ctx.ints_per_dim("strides", 2, 1, 1)
    dh, dw = ctx.ints_per_dim("dilations", 2, 1, 1)
    ph, pw, ph_end, pw_end = ctx.ints_per_dim("pads", 4, 0, 0)
    oh = (ih + ph + ph_end - (kh - 1) * dh - 1) // sh + 1
    ow = (iw + pw + pw_end - (kw - 1) * dw - 1) // sw + 1
    k = kh * kw
    if group < 1 or og < 1 or cpg * group != c or oc % group or c % og or \
            os_ != (n, og * k * 2, oh, ow):
        raise Unsupported(f"X {list(xs)}, W {list(ws)}, offset {list(os_)} do not fit "
                          f"group {group}, offset_group {og} and a {oh}x{ow} output")
    dt = x.type.dtype
    # The regular tap positions of each output position: [kH, kW, oH, oW] per axis.
    base_h = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(oh) * sh - ph)[
        None, None, :, None] + np.zeros((kh, kw, oh, ow))
    base_w = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw - pw)[
        None, None, None, :] + np.zeros((kh, kw, oh, ow))
    moves = ctx.reshape(offset, (n, og, kh, kw, 2, oh, ow))
    mask = ctx.reshape(ctx.input(4), (n, og, kh, kw, oh, ow)) if ctx.has_input(4) else None
    if mask is not None and tuple(ctx.input(4).type.shape) != (n, og * k, oh, ow):
        raise Unsupported(f"mask {list(ctx.input(4).type.shape)} is not "
                          f"[{n}, {og * k}, {oh}, {ow}]")
    cols = []
    per = c // og
    for g in range(og):
        coords = []
        for axis, base, size in ((0, base_h, ih), (1, base_w, iw)):
            move = ctx.reshape(_cut(ctx, _cut(ctx, moves, 1, g, g + 1), 4, axis, axis + 1),
                               (n, kh, kw, oh, ow))
            at = ctx.node("add", [move, ctx.broadcast(ctx.constant(base, dt),
                                                      (n, kh, kw, oh, ow), (1, 2, 3, 4))])
            # GridSample's normalized coordinate of pixel position `at` (align_corners)
            scale = ctx.filled(2.0 / (size - 1) if size > 1 else 0.0, at)
            coords.append(ctx.node("subtract", [ctx.node("multiply", [at, scale]),
                                                ctx.filled(1.0, at)]))
        grid = ctx.node("concatenate", [ctx.reshape(coords[1], (n, kh, kw, oh, ow, 1)),
                                        ctx.reshape(coords[0], (n, kh, kw, oh, ow, 1))],
                        dimension=5)
        got = sample(ctx, _cut(ctx, x, 1, g * per, (g + 1) * per), grid, "linear", "zeros",
                     True)  # [N, C / OG, kH, kW, oH, oW]
        if mask is not None:
            m = ctx.reshape(_cut(ctx, mask, 1, g, g + 1), (n, kh, kw, oh, ow))
            got = ctx.node("multiply", [got, ctx.broadcast(m, tuple(got.type.shape),
                                                           (0, 2, 3, 4, 5))])
        cols.append(got)
    columns = cols[0] if og == 1 else ctx.node("concatenate", cols, dimension=1)
    columns = ctx.reshape(columns, (n, c * k, oh * ow))
    weights = ctx.reshape(w, (oc, cpg * k))
    outs = []
    opg = oc // group
    for g in range(group):
        y = ctx.node("dot_general", [_cut(ctx, weights, 0, g * opg, (g + 1) * opg),
                                     _cut(ctx, columns, 1, g * cpg * k, (g + 1) * cpg * k)],
                     lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(1,),
                     dtype=dt.name)  # [OC / group, N, P]
        outs.append(ctx.node("transpose", [y], permutation=(1, 0, 2)))
    y = outs[0] if group == 1 else ctx.node("concatenate", outs, dimension=1)
    if ctx.has_input(3):
        b = ctx.input(3)
        if tuple(b.type.shape) != (oc,):
            raise Unsupported(f"B {list(b.type.shape)} is not [{oc}]")
        y = ctx.node("add", [y, ctx.broadcast(b, tuple(y.type.shape), (1,))])
    assert math.prod(y.type.shape) == n * oc * oh * ow
    return ctx.reshape(y, (n, oc, oh, ow))


__all__ = ["deform_conv"]
