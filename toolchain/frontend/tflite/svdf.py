"""SVDF: TFLite Micro's svdf_common.cc, as graph primitives.

A rank-R SVDF keeps, per batch row, the last M activations of F = units * R feature
filters in a variable tensor [batch, F * M]. One invocation shifts every filter's
history left by one, writes the filters' new activation (input x weights_feature^T) in
the last slot, takes each filter's dot product with its time weights [F, M], sums each
unit's R filters and adds the bias.

TFLite Micro computes it in float32, or int8 with an int16 or int8 state (and time
weights of the state's type): the activation is rescaled into the state's scale and
clamped to its type before the state's zero point is added (the sum is stored as C
stores it, wrapping); the output is rescaled to int8 without the fused activation (the
integer kernel ignores it). The state is read and written through variable_state.py.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.activations import apply_named
from toolchain.frontend.tflite.context import OpContext, int_range
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.reader import TensorInfo
from toolchain.frontend.tflite.variable_state import state_in, state_out
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build
from toolchain.quant.fixedpoint import quantize_multiplier
from toolchain.types import dtype

FEATURE_WEIGHTS, TIME_WEIGHTS, BIAS, STATE = 1, 2, 3, 4
I32 = dtype("i32")


def _sizes(ctx: OpContext, x: Tensor) -> tuple[int, int, int, int, int]:
    """(batch, filters, memory, units, rank), checked as PrepareSvdf checks them."""
    if x.type.rank != 2:
        raise Unsupported(f"the input has shape {list(x.type.shape)}; [batch, input size] is "
                          "expected")
    batch, features = x.type.shape
    rank = int(ctx.option("rank"))
    wf, wt = ctx.info(FEATURE_WEIGHTS), ctx.info(TIME_WEIGHTS)
    if len(wf.shape) != 2 or wf.shape[1] != features:
        raise Unsupported(f"the feature weights have shape {list(wf.shape)}; [filters, "
                          f"{features}] is expected")
    filters = wf.shape[0]
    if rank <= 0 or filters % rank:
        raise Unsupported(f"rank {rank} does not divide the {filters} filters")
    if len(wt.shape) != 2 or wt.shape[0] != filters:
        raise Unsupported(f"the time weights have shape {list(wt.shape)}; [{filters}, memory] "
                          "is expected")
    memory = wt.shape[1]
    units = filters // rank
    state = ctx.info(STATE)
    if tuple(state.shape) != (batch, filters * memory):
        raise Unsupported(f"the state has shape {list(state.shape)}; "
                          f"{[batch, filters * memory]} is expected")
    if ctx.has_input(BIAS) and tuple(ctx.info(BIAS).shape) != (units,):
        raise Unsupported(f"the bias has shape {list(ctx.info(BIAS).shape)}; [{units}] is "
                          "expected")
    if tuple(ctx.output_type().shape) != (batch, units):
        raise Unsupported(f"the output has shape {list(ctx.output_type().shape)}; "
                          f"{[batch, units]} is expected")
    if memory == 0:
        raise Unsupported("the time weights have no memory columns")
    return batch, filters, memory, units, rank


def _constant(ctx: OpContext, i: int, types: tuple[str, ...], what: str) -> TensorInfo:
    info = ctx.info(i)
    if info.data is None or info.type not in types:
        raise Unsupported(f"the {what} must be a constant {' or '.join(types)} tensor")
    return info


def _shifted(ctx: OpContext, state: Tensor, activation: Tensor) -> Tensor:
    """The state [batch, filters, memory] shifted left by one slot, the new activation
    [batch, filters] in the last. (TFLite Micro shifts the flat buffer by one element: each
    filter's last slot receives the next filter's first, which the activation then
    overwrites, so the shift is per filter.)"""
    batch, filters, memory = state.type.shape
    fresh = ctx.reshape(activation, (batch, filters, 1))
    if memory == 1:
        return fresh
    kept = ctx.node("slice", [state], start=(0, 0, 1), limit=(batch, filters, memory),
                    strides=(1, 1, 1))
    return ctx.node("concatenate", [kept, fresh], dimension=2)


def _unit_sums(ctx: OpContext, per_filter: Tensor, units: int, rank: int) -> Tensor:
    """[batch, filters] -> [batch, units]: the sum of each unit's `rank` filters."""
    batch = per_filter.type.shape[0]
    if rank == 1:
        return per_filter
    grouped = ctx.reshape(per_filter, (batch, units, rank))
    return ctx.node("reduce", [grouped, ctx.scalar(0, per_filter)], kind="add", dims=(2,))


def _require_bias(ctx: OpContext) -> None:
    if not ctx.has_input(BIAS):
        raise Unsupported("the SVDF needs its bias (input 3): TFLite Micro's kernel reads it "
                          "unconditionally (its issue 1751)")


def _state(ctx: OpContext, filters: int, memory: int) -> Tensor:
    state = state_in(ctx, STATE)
    return ctx.reshape(state, (state.type.shape[0], filters, memory))


def svdf_float(ctx: OpContext) -> Tensor:
    """SVDF, float32 (EvalFloatSvdfReference), with its fused activation."""
    x = ctx.input(0)
    batch, filters, memory, units, rank = _sizes(ctx, x)
    _require_bias(ctx)
    wf = _constant(ctx, FEATURE_WEIGHTS, ("FLOAT32",), "feature weights").data
    wt = _constant(ctx, TIME_WEIGHTS, ("FLOAT32",), "time weights").data
    state = _state(ctx, filters, memory)
    if state.type.dtype.name != "f32":
        raise Unsupported(f"the state is {state.type}; a float32 state is expected")
    activation = ctx.node("dot_general", [x, ctx.const(wf, "f32")], lhs_batch=(),
                          rhs_batch=(), lhs_contract=(1,), rhs_contract=(1,), dtype="f32")
    state = _shifted(ctx, state, activation)
    weighted = ctx.node("multiply", [state, ctx.broadcast(ctx.const(wt, "f32"),
                                                          state.type.shape)])
    per_filter = ctx.node("reduce", [weighted, ctx.scalar(0.0, weighted)], kind="add",
                          dims=(2,))
    y = _unit_sums(ctx, per_filter, units, rank)
    bias = _constant(ctx, BIAS, ("FLOAT32",), "bias").data
    y = ctx.node("add", [y, ctx.broadcast(ctx.const(bias, "f32"), (batch, units))])
    state_out(ctx, STATE, ctx.reshape(state, (batch, filters * memory)))
    return _float_activation(ctx, y)


def _float_activation(ctx: OpContext, y: Tensor) -> Tensor:
    """ActivationValFloat: the clamping activations, or TANH."""
    name = schema.ACTIVATIONS.get(ctx.option("fused_activation_function"))
    if name == "TANH":
        return ctx.node("tanh", [y])
    if name == "SIGN_BIT":
        raise Unsupported("fused activation SIGN_BIT is not supported")
    return apply_named(ctx, y, str(name))


def _per_tensor(info: TensorInfo, what: str) -> tuple[float, int]:
    q = info.quant
    if q is None or len(q.scales) != 1:
        raise Unsupported(f"the {what} must be quantized per tensor")
    return float(np.float32(q.scales[0])), int(q.zero_points[0])


def svdf_int8(ctx: OpContext) -> Tensor:
    """SVDF, int8 input and output with an int16 or int8 state and time weights
    (EvalIntegerSvdfReference): the multipliers from float32 scale products as PrepareSvdf
    forms them."""
    x = ctx.input(0)
    batch, filters, memory, units, rank = _sizes(ctx, x)
    out = ctx.output_type()
    if x.type.dtype.name != "i8" or out.dtype.name != "i8":
        raise Unsupported("an integer SVDF needs int8 input and output")
    wf_info = _constant(ctx, FEATURE_WEIGHTS, ("INT8",), "feature weights")
    state_info = ctx.info(STATE)
    if state_info.type not in ("INT8", "INT16"):
        raise Unsupported(f"the state is {state_info.type}; TFLite Micro's SVDF keeps an "
                          "INT16 or INT8 state")
    wt_info = _constant(ctx, TIME_WEIGHTS, (state_info.type,), "time weights")
    _require_bias(ctx)
    bias_info = _constant(ctx, BIAS, ("INT32",), "bias")
    in_scale, in_zp = _per_tensor(ctx.info(0), "input")
    wf_scale, _ = _per_tensor(wf_info, "feature weights")
    wt_scale, _ = _per_tensor(wt_info, "time weights")
    state_scale, state_zp = _per_tensor(state_info, "state")
    out_scale, out_zp = _per_tensor(ctx.output_info(), "output")
    bias_scale, _ = _per_tensor(bias_info, "bias")
    f32 = np.float32
    # PrepareSvdf forms both products in float32, then widens them to double.
    scale_1 = float(f32(f32(in_scale) * f32(wf_scale)) / f32(state_scale))
    scale_2 = float(f32(f32(state_scale) * f32(wt_scale)) / f32(out_scale))
    if abs(bias_scale - float(f32(f32(state_scale) * f32(wt_scale)))) >= 1e-5:
        raise Unsupported(f"the bias scale {bias_scale} is not the state's scale times the "
                          "time weights' (TFLite Micro requires it)")
    mult_1, shift_1 = quantize_multiplier(scale_1)
    mult_2, shift_2 = quantize_multiplier(scale_2)
    state_type = "i16" if state_info.type == "INT16" else "i8"
    lo, hi = int_range(dtype(state_type))
    b = GraphBuilder(ctx.graph)
    acc = build.dot_general(b, x, wf_info.data.astype(np.int8),
                            None, attrs=dict(lhs_batch=(), rhs_batch=(), lhs_contract=(1,),
                                             rhs_contract=(1,)), input_zp=in_zp)
    activation = build.rescale(b, acc, mult_1, shift_1)
    activation = b.op("clamp", [b.const(lo, I32), activation, b.const(hi, I32)])
    if state_zp:
        activation = b.op("add", [activation, b.splat(state_zp, I32, (batch, filters))])
    state = _state(ctx, filters, memory)
    # The sum of the clamped value and the zero point is stored as C stores it: wrapped.
    activation = b.op("convert", [activation], quant=state.type.quant, dtype=state_type)
    state = _shifted(ctx, state, activation)
    shape = tuple(state.type.shape)
    centred = b.op("subtract", [b.op("convert", [state], dtype="i32"),
                                b.splat(state_zp, I32, shape)])
    time_weights = b.op("convert", [b.const(wt_info.data, dtype(state_type))], dtype="i32")
    weighted = b.op("multiply", [centred, b.broadcast_to(time_weights, shape)])
    per_filter = b.op("reduce", [weighted, b.const(0, I32)], kind="add", dims=(2,))
    total = _unit_sums(ctx, per_filter, units, rank)
    total = b.op("add", [total, b.broadcast_to(b.const(bias_info.data.astype(np.int32), I32),
                                               (batch, units))])
    state_out(ctx, STATE, ctx.reshape(state, (batch, filters * memory)))
    return build.requantize(b, total, mult_2, shift_2, axis=None, output_zp=out_zp,
                            quant=out.quant)


__all__ = ["svdf_float", "svdf_int8"]
