"""StableHLO on `!quant.uniform` types: the same int8 graph as a .tflite model gives.

StableHLO specifies quantized ops as "dequantize, compute in float, quantize"; minirt
computes them the way integer inference engines do, with TFLite's integer arithmetic
(toolchain/quant/build.py): an integer contraction, and requantization by a fixed-point
multiplier computed at build time from the scales. The two agree except where the
float result lies within rounding of a tie between two integers (docs/int8.md).

- `uniform_quantize` from float follows the spec: x / scale + zero point, clamped to the
  storage range, rounded to nearest even. Between quantized types it requantizes.
- `uniform_dequantize`: (x - zero point) * scale, per tensor or per axis.
- `convolution` / `dot_general` with quantized operands and constant quantized weights:
  an i32 result type (scale = lhs scale x rhs scale, zero point 0) is the accumulator
  itself, so a following `add` of an i32 bias and a `uniform_quantize` to int8 fuse
  into one kernel; an int8 result is requantized at once.
- `add` of two int8 tensors uses TFLite's ADD arithmetic; of two i32 accumulators of one
  scale, a plain add.
- `bitcast_convert` to or from a quantized type is the bitcast of its storage type
  (the spec's bitcast_convert of quantized tensors): same-width storage keeps the bits
  and only gains or loses the quantization.
- Ops that only move or select elements (reshape, transpose, broadcast, slice, pad,
  concatenate, maximum, ...) work on the stored integers when every quantized operand
  and result shares one quantization.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm
from toolchain.quant.fixedpoint import quantize_multiplier
from toolchain.types import QuantParams, TensorType, dtype

__all__ = ["LAYOUT_OPS", "QUANT_CONVERTERS", "QuantError", "is_quantized"]


class QuantError(Exception):
    """A quantized op instance minirt cannot compute."""


# Ops that move or select stored integers without arithmetic: right on quantized
# tensors when every quantized operand and result has the same quantization.
LAYOUT_OPS = {"reshape", "transpose", "broadcast_in_dim", "slice", "pad", "concatenate",
              "reverse", "gather", "maximum", "minimum", "clamp", "select", "constant",
              "reduce_window", "reduce"}


def is_quantized(types: list[TensorType | None]) -> bool:
    return any(t is not None and t.quant is not None for t in types)


def _f32(x) -> float:
    return float(np.float32(x))


def _channels(q: QuantParams) -> tuple[np.ndarray, np.ndarray, int | None]:
    return np.asarray(q.scales, np.float64), np.asarray(q.zero_points, np.int64), q.axis


def _storage_range(q: QuantParams) -> tuple[int, int]:
    info = np.iinfo(q.storage.np_dtype)
    lo = info.min if q.storage_min is None else q.storage_min
    hi = info.max if q.storage_max is None else q.storage_max
    return int(lo), int(hi)


def _constant(t: Tensor, what: str) -> np.ndarray:
    node = t.producer
    if node is None or node.op != "constant":
        raise QuantError(f"{what} must be a constant (quantized weights are read at build "
                         "time)")
    return np.asarray(node.attrs["value"])


def _per_tensor(q: QuantParams, what: str) -> tuple[float, int]:
    if q.axis is not None and len(set(q.scales)) + len(set(q.zero_points)) > 2:
        raise QuantError(f"{what} must be quantized per tensor")
    return _f32(q.scales[0]), int(q.zero_points[0])


def _uniform_quantize(b: GraphBuilder, inputs: list[Tensor], out: TensorType,
                      attrs: dict) -> Tensor:
    x = inputs[0]
    q = out.quant
    if q is None:
        raise QuantError("the result must have a quantized type")
    scales, zps, axis = _channels(q)
    shape = tuple(x.type.shape)
    lo, hi = _storage_range(q)
    if x.type.quant is None:  # float -> quantized: the spec's quantize()
        f = x.type.dtype

        def per(values: np.ndarray, dt) -> Tensor:
            return b.along(values, dt, shape, axis) if axis is not None else b.splat(
                values[0], dt, shape)

        v = b.op("divide", [x, per(scales.astype(f.np_dtype), f)])
        v = b.op("add", [v, per(zps.astype(f.np_dtype), f)])
        v = b.op("clamp", [b.const(lo, f), v, b.const(hi, f)])
        v = b.op("round_nearest_even", [v])
        return b.op("convert", [v], quant=q, dtype=q.storage.name)
    # quantized -> quantized: a fixed-point rescale by in_scale / out_scale, channel by
    # channel when either side is per axis (then both on one axis, or the input per
    # tensor), then + the output zero point, clamped to the storage range.
    in_scales, in_zps, in_axis = _channels(x.type.quant)
    if in_axis is not None and (axis is None or in_axis != axis):
        raise QuantError("requantizing a per-axis operand needs a result quantized on "
                         "the same axis")
    channels = shape[axis] if axis is not None else 1
    in_s = np.broadcast_to(in_scales, (channels,))
    in_z = np.broadcast_to(in_zps, (channels,))
    pairs = [quantize_multiplier(_f32(si) / _f32(so))
             for si, so in zip(in_s, np.broadcast_to(scales, (channels,)), strict=True)]
    i32 = dtype("i32")

    def per_channel(values: np.ndarray) -> Tensor:
        return b.along(values, i32, shape, axis) if axis is not None else b.splat(
            values[0], i32, shape)

    v = b.op("subtract", [b.op("convert", [x], dtype="i32"), per_channel(in_z)])
    v = build.rescale(b, v, [m for m, _ in pairs], [s for _, s in pairs], axis)
    v = b.op("add", [v, per_channel(np.broadcast_to(zps, (channels,)))])
    v = b.op("clamp", [b.const(lo, i32), v, b.const(hi, i32)])
    return b.op("convert", [v], quant=q, dtype=q.storage.name)


def _uniform_dequantize(b: GraphBuilder, inputs: list[Tensor], out: TensorType,
                        attrs: dict) -> Tensor:
    x = inputs[0]
    if x.type.quant is None or not out.dtype.is_float:
        raise QuantError("the operand must have a quantized type and the result a float one")
    scales, zps, axis = _channels(x.type.quant)
    v = build.dequantize(b, x, scale=scales.astype(np.float32), zero_point=zps, axis=axis)
    if out.dtype.name != "f32":
        v = b.op("convert", [v], dtype=out.dtype.name)
    return v


def _contraction(kind: str) -> Callable[..., Tensor]:
    """convolution / dot_general of a quantized input by constant quantized weights."""

    def convert(b: GraphBuilder, inputs: list[Tensor], out: TensorType,
                attrs: dict) -> Tensor:
        x, w = inputs
        xq, wq, oq = x.type.quant, w.type.quant, out.quant
        if xq is None or wq is None or oq is None:
            raise QuantError(f"a quantized {kind} needs quantized operands and result")
        in_scale, in_zp = _per_tensor(xq, f"the input of a quantized {kind}")
        if any(wq.zero_points):
            raise QuantError(f"quantized {kind} weights must be symmetric (zero point 0)")
        weights = _constant(w, f"the weights of a quantized {kind}")
        w_scales = np.asarray(wq.scales, np.float64)
        if kind == "convolution":
            if wq.axis not in (None, attrs["kernel_output"]):
                raise QuantError("convolution weights must be quantized per output feature")
            channel = attrs["output_feature"]
        else:
            free = [d for d in range(weights.ndim) if d not in attrs["rhs_contract"]]
            if wq.axis is not None and wq.axis not in free:
                raise QuantError("dot_general weights must be quantized along a free dim")
            lhs_free = x.type.rank - len(attrs["lhs_contract"])
            channel = lhs_free + free.index(wq.axis) if wq.axis is not None else None
        acc_scales = in_scale * np.array([_f32(s) for s in w_scales])
        if oq.storage.name == "i32":  # the accumulator type: no requantization
            o_scales, o_zps, _ = _channels(oq)
            if any(o_zps) or not np.allclose(o_scales, acc_scales, rtol=1e-6):
                raise QuantError(f"an i32 {kind} result must have scale lhs x rhs and zero "
                                 "point 0")
            mults = shifts = None
        else:
            out_scale, _ = _per_tensor(oq, f"the result of a quantized {kind}")
            pairs = [quantize_multiplier(s / out_scale) for s in acc_scales]
            mults, shifts = [m for m, _ in pairs], [s for _, s in pairs]
        lo, hi = _storage_range(oq)
        common = dict(input_zp=in_zp, multipliers=mults, shifts=shifts,
                      output_zp=int(oq.zero_points[0]), act_min=lo, act_max=hi,
                      quant=oq if mults is not None else None)
        if kind == "convolution":
            acc = build.convolution(b, x, weights, None, attrs=attrs, **common)
        else:
            acc = build.dot_general(b, x, weights, None, attrs=attrs, channel_axis=channel,
                                    **common)
        return acc if mults is not None else _annotate(b, acc, oq)

    return convert


def _annotate(b: GraphBuilder, t: Tensor, q: QuantParams) -> Tensor:
    """`t` typed with quantization `q` (a free reshape to its own shape)."""
    return b.op("reshape", [t], quant=q, shape=tuple(t.type.shape))


def _add(b: GraphBuilder, inputs: list[Tensor], out: TensorType, attrs: dict) -> Tensor:
    x1, x2 = inputs
    q1, q2, qo = x1.type.quant, x2.type.quant, out.quant
    if q1 is None or q2 is None or qo is None:
        raise QuantError("a quantized add needs quantized operands and result")
    if qo.storage.name == "i32":  # accumulators of one scale (a bias add)
        if (q1.scales, q1.zero_points) != (qo.scales, qo.zero_points) or \
                (q2.scales, q2.zero_points) != (qo.scales, qo.zero_points):
            raise QuantError("an i32 quantized add needs one quantization throughout")
        return _annotate(b, b.op("add", [x1, x2]), qo)
    (s1, z1), (s2, z2) = (_per_tensor(q, "a quantized add operand") for q in (q1, q2))
    so, zo = _per_tensor(qo, "the result of a quantized add")
    p = tflm.add_params(s1, z1, s2, z2, so, zo)
    lo, hi = _storage_range(qo)
    return build.add(b, x1, x2, left_shift=p.left_shift,
                     input1=(z1, p.input1_multiplier, p.input1_shift),
                     input2=(z2, p.input2_multiplier, p.input2_shift),
                     output=(zo, p.output_multiplier, p.output_shift),
                     act_min=max(lo, p.act_min), act_max=min(hi, p.act_max), quant=qo)


def _bitcast_convert(b: GraphBuilder, inputs: list[Tensor], out: TensorType,
                     attrs: dict) -> Tensor:
    """The bits of the operand's storage seen as the result's storage type, annotated
    with the result's quantization (if any)."""
    x = inputs[0]
    storage = out.quant.storage if out.quant is not None else out.dtype
    if storage == x.type.dtype:  # the same bits: only the annotation changes
        return b.op("reshape", [x], quant=out.quant, shape=tuple(out.shape)) \
            if out.quant is not None else b.op("bitcast_convert", [x], dtype=storage.name,
                                                 shape=tuple(out.shape))
    return b.op("bitcast_convert", [x], quant=out.quant, dtype=storage.name,
                shape=tuple(out.shape))


# Graph op name -> converter(builder, inputs, declared result type, graph attrs).
QUANT_CONVERTERS: dict[str, Callable[[GraphBuilder, list[Tensor], TensorType, dict], Tensor]] = {
    "uniform_quantize": _uniform_quantize,
    "uniform_dequantize": _uniform_dequantize,
    "convolution": _contraction("convolution"),
    "dot_general": _contraction("dot_general"),
    "add": _add,
    "bitcast_convert": _bitcast_convert,
}
