"""TFLite TILE: the input repeated a constant number of times along each dimension
(numpy.tile with one multiple per dimension).

Keras 3's UpSampling2D(interpolation="nearest") converts to RESHAPE / TILE / RESHAPE
(it repeats rows and columns with ops.repeat), so a fresh Keras 3 U-Net or upsampling
decoder holds TILE. TFLite's kernel copies stored values, so one converter takes every
element type: int8 / int16 values move as stored and the output's declared quantization
says what they mean (the converter gives TILE its input's). TFLite Micro registers no
TILE; the oracle is TFLite's reference kernel, which is numpy.tile.
"""

from __future__ import annotations

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.more_shapes import _data
from toolchain.graph.ir import Tensor


def tile(ctx: OpContext) -> Tensor:
    """TILE by constant multiples: the input broadcast to [m0, d0, m1, d1, ...] (an
    axis m_i only where m_i > 1) and reshaped to [m0 * d0, m1 * d1, ...], two index
    remaps that fusion reads through, so a chain of them copies once. (Keras 3's
    upsampling, RESHAPE / TILE / RESHAPE / TILE / RESHAPE over 1,280 int8 outputs: 70K
    instructions on cortex-m4 as concatenates of the input with itself; as remaps, with
    the reshapes' divisions per group of dims (kernel/lower.py), see
    bench/results/converter_models.md.)"""
    x = _data(ctx)
    multiples = [int(m) for m in ctx.value(1, "multiples").reshape(-1)]
    shape = x.type.shape
    if len(multiples) != len(shape):
        raise Unsupported(f"multiples {multiples} do not fit the rank-{len(shape)} input")
    if any(m < 1 for m in multiples):
        raise Unsupported(f"multiples {multiples} must be at least 1 (an empty output is "
                          "not supported)")
    spread: list[int] = []
    dims: list[int] = []
    for m, n in zip(multiples, shape, strict=True):
        if m > 1:
            spread.append(m)
        dims.append(len(spread))
        spread.append(n)
    y = ctx.broadcast(x, tuple(spread), tuple(dims))
    return ctx.reshape(y, tuple(m * n for m, n in zip(multiples, shape, strict=True)))


__all__ = ["tile"]
