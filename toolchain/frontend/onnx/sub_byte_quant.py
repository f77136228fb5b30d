"""DequantizeLinear of ONNX's sub-byte integers (INT4, UINT4, INT2, UINT2).

minirt's integer kernels (quant.py's QDQ patterns, TFLite's arithmetic) are 8- and
16-bit, so a sub-byte DequantizeLinear is never a QView those patterns could take: it
is its float value at once. A constant one (int4 weights, the reason the type exists)
becomes a graph `dequantize` of a sub-byte constant, which constant folding leaves
alone (passes/fold.py) so that the module stores it bit-packed, two or four values to a
byte (schedule/sub_byte.py), and the kernel that reads it widens each value; its zero
point is subtracted at build time. A tensor computed at run time (a model input)
becomes scale * (x - zero point) in the graph.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext, axis_of
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.reader import SUB_BYTE_ARRAYS
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build
from toolchain.types import F32, DType, TensorType, dtype

__all__ = ["dequantize_sub_byte", "sub_byte_type"]


def sub_byte_type(q: object) -> DType | None:
    """The sub-byte element type of a DequantizeLinear's input (an ml_dtypes array of a
    constant, or a graph tensor), else None."""
    if isinstance(q, np.ndarray):
        name = SUB_BYTE_ARRAYS.get(q.dtype.name)
        return dtype(name) if name else None
    if isinstance(q, Tensor) and q.type.dtype.is_integer and q.type.dtype.bits < 8:
        return q.type.dtype
    return None


def _params(ctx: OpContext, q_type: DType, shape: tuple[int, ...]
            ) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(f32 scale, int64 zero point, axis or None): constant, the scale positive and
    finite, the zero point of the input's own type, one per element of `axis` or one."""
    if ctx.attr("block_size"):
        raise Unsupported("blocked quantization (block_size) is not supported")
    raw = ctx.const(1, "the scale")
    if raw.dtype.kind != "f":
        raise Unsupported(f"the scale is {raw.dtype}; a float tensor is expected")
    with np.errstate(over="ignore"):
        scale = raw.astype(np.float32)
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise Unsupported("the scale must be positive and finite")
    zp = np.zeros(scale.shape, np.int64)
    if ctx.has_input(2):
        raw_zp = ctx.const(2, "the zero point")
        if SUB_BYTE_ARRAYS.get(raw_zp.dtype.name) != q_type.name:
            raise Unsupported(f"the zero point is {raw_zp.dtype}, but the quantized values "
                              f"are {q_type}")
        zp = raw_zp.astype(np.int64)
    if scale.ndim > 1 or zp.shape != scale.shape:
        raise Unsupported(f"the scale {list(scale.shape)} and zero point "
                          f"{list(zp.shape)} must be scalars or matching 1-D tensors")
    if scale.size == 1:
        return scale.reshape(()), zp.reshape(()), None
    axis = axis_of(ctx.attr("axis", 1), len(shape), "the axis")
    if shape[axis] != scale.size:
        raise Unsupported(f"{scale.size} scales do not match dimension {axis} of shape "
                          f"{list(shape)}")
    return scale, zp, axis


def _range(dt: DType) -> tuple[int, int]:
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def _narrowest(values: np.ndarray, q_type: DType) -> DType:
    """The type that stores q - zero point: the input's own, the other signedness of its
    width, or a byte."""
    kinds = [q_type.name, q_type.name[1:] if q_type.kind == "u" else f"u{q_type.name}",
             "i8", "i16"]
    for name in kinds:
        lo, hi = _range(dtype(name))
        if values.size == 0 or (values.min() >= lo and values.max() <= hi):
            return dtype(name)
    raise Unsupported("the zero point puts the values outside 16 bits")


def dequantize_sub_byte(ctx: OpContext, q_type: DType) -> Tensor:
    """DequantizeLinear of a sub-byte input: its f32 tensor (module docstring)."""
    q = ctx.value(0)
    shape = tuple(q.shape) if isinstance(q, np.ndarray) else tuple(q.type.shape)
    scale, zp, axis = _params(ctx, q_type, shape)
    if isinstance(q, Tensor):
        b = GraphBuilder(ctx.graph)
        if axis is None:
            return build.dequantize(b, q, scale=float(scale), zero_point=int(zp))
        return build.dequantize(b, q, scale=scale, zero_point=zp, axis=axis)
    values = q.astype(np.int64)
    if zp.any():
        values = values - (zp if axis is None else
                           zp.reshape([-1 if d == axis else 1 for d in range(len(shape))]))
    stored = _narrowest(values, q_type)
    g = ctx.graph
    qt = g.add("constant", [], [TensorType(shape, stored)],
               {"value": values.astype(stored.np_dtype)}).output
    st = g.add("constant", [], [TensorType(scale.shape, F32)], {"value": scale}).output
    return g.add("dequantize", [qt, st], [TensorType(shape, F32)], {"axis": axis}).output
