"""int8 forms of TFLite Micro's kernels that their rows lacked: ADD_N and DIV, bit for
bit (docs/int8.md).
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.activations import activation_name, quantized_range
from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.more_types import quantized
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build
from toolchain.quant.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from toolchain.quant.tflm_div import div_int8_table
from toolchain.types import dtype


def add_n_int8(ctx: OpContext) -> Tensor:
    """ADD_N on int8 (inputs of one shape, scale and zero point, as TFLite Micro
    requires): reference_ops::AddN's arithmetic. Each value, offset and shifted left by
    20, is halved by MultiplyByQuantizedMultiplierSmallerThanOneExp (a 256-entry int32
    table here); the kernel's sum starts from the same of the bare offset (-zp, a
    constant); the int32 sum is rescaled by 2 * scale / (2**20 * output scale), + the
    output zero point, clamped to int8."""
    xs = [ctx.input(i) for i in range(len(ctx.op.inputs))]
    out = ctx.output_type()
    s, z = quantized(xs[0].type, "first input", "i8")
    for k, x in enumerate(xs[1:], 1):
        if x.type.shape != xs[0].type.shape or quantized(x.type, f"input {k}", "i8") != (s, z):
            raise Unsupported(f"input {k} differs from input 0 in shape, scale or zero point "
                              "(TFLite Micro's ADD_N requires them equal)")
    so, zo = quantized(out, "output", "i8")
    twice = 2 * s
    m_in, s_in = quantize_multiplier(s / twice)
    m_out, s_out = quantize_multiplier(twice / ((1 << _ADD_N_SHIFT) * so))
    if s_in > 0 or s_out > 0:
        raise Unsupported("its scales give a rescale above one, which TFLite Micro's ADD_N "
                          "does not define")
    values = np.arange(-128, 128, dtype=np.int64)
    table = multiply_by_quantized_multiplier((values - z) << _ADD_N_SHIFT, m_in, s_in)
    start = int(multiply_by_quantized_multiplier(np.int64(-z) << _ADD_N_SHIFT, m_in, s_in))
    g = GraphBuilder(ctx.graph)
    total = g.splat(start, dtype("i32"), tuple(out.shape))
    for x in xs:
        total = g.op("add", [total, build.lookup(g, x, table.astype(np.int32))])
    return build.requantize(g, total, m_out, s_out, axis=None, output_zp=zo, quant=out.quant)


_ADD_N_SHIFT = 20  # add_n.cc's kAddNIntegerShift


def div_int8(ctx: OpContext) -> Tensor:
    """DIV on int8 (per tensor): TFLite Micro's DivElementwise for every pair of int8
    values, a 256 x 256 table (quant/tflm_div.py, the fused activation's clamp in it),
    read at (a + 128) * 256 + (b + 128) after broadcasting."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output_type()
    s1, z1 = quantized(a.type, "first input", "i8")
    s2, z2 = quantized(b.type, "second input", "i8")
    so, zo = quantized(out, "output", "i8")
    lo, hi = quantized_range(activation_name(ctx.option("fused_activation_function")), out)
    table = div_int8_table(s1, z1, s2, z2, so, zo, lo, hi)
    shape = broadcast_shape(a.type.shape, b.type.shape)
    g = GraphBuilder(ctx.graph)
    row = g.op("multiply", [build._offset(g, a, -128, shape),
                            g.splat(256, dtype("i32"), shape)])
    index = g.op("add", [row, build._offset(g, b, -128, shape)])
    return g.op("gather", [g.const(table, dtype("i8"), out.quant), index], offset_dims=(),
                collapsed_slice_dims=(0,), operand_batching_dims=(),
                start_indices_batching_dims=(), start_index_map=(0,),
                index_vector_dim=len(shape), slice_sizes=(1,), quant=out.quant)


__all__ = ["add_n_int8", "div_int8"]
