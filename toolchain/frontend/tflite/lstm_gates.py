"""The gates' fully-connected layers of UNIDIRECTIONAL_SEQUENCE_LSTM, per element type.

Each builder returns the input projection of every time step at once (the input's last
axis contracted with the four gates' stacked weights, [4 * units, features] in the order
of INPUT_WEIGHTS, bias included) and a function that projects a hidden state
[batch, units] with the stacked recurrent weights. Quantized, both are TFLite Micro's
FullyConnected to int16 at scale 2**-12 (CreateGateParams), one multiplier per gate: per
channel of the stacked result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.reader import Quantization
from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import build, tflm
from toolchain.quant.build_lstm import GATE_INPUT_SCALE, INT16_MAX, INT16_MIN
from toolchain.quant.tflm16 import reduced_multipliers
from toolchain.types import QuantParams, dtype

I32 = dtype("i32")

# The gates' inputs (lstm_shared.h), stacked in the order input, forget, output, cell
# (TFLite's is input, forget, cell, output): the three sigmoid gates are then one
# contiguous block of the stacked result, activated together.
INPUT_WEIGHTS = (1, 2, 4, 3)
RECURRENT_WEIGHTS = (5, 6, 8, 7)
BIASES = (12, 13, 15, 14)

Recur = Callable[[Tensor], Tensor]


def _stacked(ctx: OpContext, indices: tuple[int, ...], types: tuple[str, ...], what: str
             ) -> tuple[np.ndarray, list]:
    """The constant tensors `indices` stacked along their first axis, and their infos."""
    infos = [ctx.info(i) for i in indices]
    for i, info in zip(indices, infos, strict=True):
        if info.data is None or info.type not in types:
            raise Unsupported(f"input {i} ({what}) must be a constant "
                              f"{' or '.join(types)} tensor")
    return np.concatenate([info.data for info in infos], axis=0), infos


def _contract(ctx: OpContext, x: Tensor, w: Tensor) -> Tensor:
    """x's last axis against w's columns: [..., 4 * units]."""
    return ctx.node("dot_general", [x, w], lhs_batch=(), rhs_batch=(),
                    lhs_contract=(x.type.rank - 1,), rhs_contract=(1,),
                    dtype=x.type.dtype.name)


def float_gate_contraction(ctx: OpContext, x: Tensor, h0: Tensor, units: int
                           ) -> tuple[Tensor, Recur]:
    """float32: x W^T + b for all steps, and h -> h R^T."""
    del h0, units
    w, _ = _stacked(ctx, INPUT_WEIGHTS, ("FLOAT32",), "weights")
    r, _ = _stacked(ctx, RECURRENT_WEIGHTS, ("FLOAT32",), "weights")
    bias, _ = _stacked(ctx, BIASES, ("FLOAT32",), "a bias")
    projected = _contract(ctx, x, ctx.const(w, "f32"))
    projected = ctx.node("add", [projected, ctx.broadcast(ctx.const(bias, "f32"),
                                                          projected.type.shape)])
    recurrent = ctx.const(r, "f32")
    return projected, lambda h: _contract(ctx, h, recurrent)


def _scale(q: QuantParams | Quantization | None, what: str) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor quantization (a graph type's or a file's)."""
    if q is None or len(q.scales) != 1:
        raise Unsupported(f"the {what} must be quantized per tensor")
    return float(np.float32(q.scales[0])), int(q.zero_points[0])


def _weights(ctx: OpContext, indices: tuple[int, ...]) -> tuple[np.ndarray, list[float]]:
    """The stacked int8 weights, each gate's zero point taken out (TFLite's weights
    offset; stored as int16 then), and each gate's scale."""
    w, infos = _stacked(ctx, indices, ("INT8",), "weights")
    scales, zps = zip(*(_scale(info.quant, f"weights {i}") for i, info in
                        zip(indices, infos, strict=True)), strict=True)
    if any(zps):
        offsets = np.repeat(np.asarray(zps, np.int16), w.shape[0] // len(indices))
        w = w.astype(np.int16) - offsets[:, None]
    return w, list(scales)


def _multipliers(input_scale: float, scales: list[float], units: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each gate's FullyConnected multiplier to Q3.12, repeated over its units."""
    mult, shift = tflm.fully_connected_params(input_scale, scales, GATE_INPUT_SCALE)
    return np.repeat(mult, units), np.repeat(shift, units)


def _attrs(rank: int) -> dict:
    return dict(lhs_batch=(), rhs_batch=(), lhs_contract=(rank - 1,), rhs_contract=(1,))


class _PerChannel:
    """Per-channel constants of the stacked gates ([4 * units]), made once and broadcast
    along the last axis at each use: the recurrence reuses them at every time step, and
    every constant is its own bytes of flash."""

    def __init__(self, b: GraphBuilder, values: np.ndarray, dt: str):
        self.b = b
        self.values = np.asarray(values)
        self.const = b.const(self.values, dtype(dt))

    def at(self, shape: tuple[int, ...]) -> Tensor:
        return self.b.op("broadcast_in_dim", [self.const], dims=(len(shape) - 1,),
                         shape=shape)


def _narrow16(b: GraphBuilder, x: Tensor) -> Tensor:
    x = b.op("clamp", [b.const(INT16_MIN, I32), x, b.const(INT16_MAX, I32)])
    return b.op("convert", [x], dtype="i16")


def _recurrent_int8(b: GraphBuilder, r: np.ndarray, h_zp: int, mult: np.ndarray,
                    shift: np.ndarray) -> Recur:
    """h -> FullyConnected<int8, int8, int16, int32>(h, R) without bias: the hidden
    state's zero point folded into a constant per channel, MultiplyByQuantizedMultiplier
    per channel (build.rescale's steps), narrowed to int16."""
    weights = b.const(r, dtype("i8") if r.dtype == np.int8 else dtype("i16"))
    # sum((h - zp) * r) = sum(h * r) - zp * sum(r): the zero point's share, wrapped to
    # int32 as the C accumulator wraps.
    share = -np.int64(h_zp) * r.astype(np.int64).sum(axis=1)
    correction = _PerChannel(b, (share + (1 << 31)) % (1 << 32) - (1 << 31), "i32")
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    lefts = _PerChannel(b, left, "i32") if left.any() else None
    rights = _PerChannel(b, right, "i32") if right.any() else None
    mults = _PerChannel(b, mult, "i32")

    def recur(h: Tensor) -> Tensor:
        acc = b.op("dot_general", [h, weights], dtype="i32", **_attrs(2))
        shape = tuple(acc.type.shape)
        acc = b.op("add", [acc, correction.at(shape)])
        if lefts is not None:
            acc = b.op("shift_left", [acc, lefts.at(shape)])
        acc = b.op("saturating_rounding_doubling_high_mul", [acc, mults.at(shape)])
        if rights is not None:
            acc = b.op("rounding_divide_by_pot", [acc, rights.at(shape)])
        return _narrow16(b, acc)

    return recur


def int8_gate_contraction(ctx: OpContext, x: Tensor, h0: Tensor, units: int
                          ) -> tuple[Tensor, Recur]:
    """int8 activations: FullyConnected<int8, int8, int16, int32> (int32 accumulator)."""
    x_scale, x_zp = _scale(x.type.quant, "input")
    h_scale, h_zp = _scale(h0.type.quant, "hidden state")
    w, w_scales = _weights(ctx, INPUT_WEIGHTS)
    r, r_scales = _weights(ctx, RECURRENT_WEIGHTS)
    bias, _ = _stacked(ctx, BIASES, ("INT32",), "a bias")
    b = GraphBuilder(ctx.graph)
    in_mult, in_shift = _multipliers(x_scale, w_scales, units)
    rec_mult, rec_shift = _multipliers(h_scale, r_scales, units)
    acc = build.dot_general(b, x, w, bias.astype(np.int32), attrs=_attrs(x.type.rank),
                            input_zp=x_zp)
    projected = build.requantize(b, acc, in_mult, in_shift, axis=x.type.rank - 1,
                                 output_zp=0, act_min=INT16_MIN, act_max=INT16_MAX, out="i16")
    return projected, _recurrent_int8(b, r, h_zp, rec_mult, rec_shift)


def _fc_int64(b: GraphBuilder, w: np.ndarray, bias: np.ndarray | None, mult: np.ndarray,
              shift: np.ndarray) -> Recur:
    """x -> FullyConnected<int16, int8, int16, int64>(x, w) on x's last axis, constants
    made once: int64 sums (+ the int64 bias), the int64 MultiplyByQuantizedMultiplier
    ((acc * multiplier rounded to Q15 + rounding) >> total shift, as build16 does it),
    narrowed to int16. Where no sum can leave int32 (|x| <= 2**15, so a unit's sum is
    at most 2**15 * sum |w| over its row; below 2**31 for every unit, a build-time check
    on the constant weights) the sums are int32, widened once: the same integers, and an
    int32 sum of int16 x int8 products is what the DSP targets' SMLAD steps take
    (codegen/dot.py `dsp16`), as quant/build16.py's FULLY_CONNECTED does."""
    weights = b.const(w, dtype("i8") if w.dtype == np.int8 else dtype("i16"))
    bound = (1 << 15) * np.abs(np.asarray(w, np.int64)).sum(axis=-1).max(initial=0)
    acc_type = "i32" if bound < (1 << 31) else "i64"
    reduced, total = reduced_multipliers(mult, shift)
    biases = None if bias is None else _PerChannel(b, np.asarray(bias, np.int64), "i64")
    reduced_c = _PerChannel(b, np.asarray(reduced, np.int64), "i64")
    rounding = _PerChannel(b, np.left_shift(np.int64(1), np.asarray(total, np.int64) - 1),
                           "i64")
    totals = _PerChannel(b, np.asarray(total, np.int64), "i64")

    def fc(x: Tensor) -> Tensor:
        acc = b.op("dot_general", [x, weights], dtype=acc_type, **_attrs(x.type.rank))
        if acc_type == "i32":
            acc = b.op("convert", [acc], dtype="i64")
        shape = tuple(acc.type.shape)
        if biases is not None:
            acc = b.op("add", [acc, biases.at(shape)])
        acc = b.op("multiply", [acc, reduced_c.at(shape)])
        acc = b.op("add", [acc, rounding.at(shape)])
        acc = b.op("shift_right_arithmetic", [acc, totals.at(shape)])
        return _narrow16(b, b.op("convert", [acc], dtype="i32"))

    return fc


def int16_gate_contraction(ctx: OpContext, x: Tensor, h0: Tensor, units: int
                           ) -> tuple[Tensor, Recur]:
    """16x8: FullyConnected<int16, int8, int16, int64>; TFLite Micro requires the int16
    activations' zero points to be 0."""
    x_scale, x_zp = _scale(x.type.quant, "input")
    h_scale, h_zp = _scale(h0.type.quant, "hidden state")
    if x_zp or h_zp:
        raise Unsupported("the int16 input and hidden state must have zero point 0")
    w, w_scales = _weights(ctx, INPUT_WEIGHTS)
    r, r_scales = _weights(ctx, RECURRENT_WEIGHTS)
    bias, _ = _stacked(ctx, BIASES, ("INT64",), "a bias")
    b = GraphBuilder(ctx.graph)
    in_mult, in_shift = _multipliers(x_scale, w_scales, units)
    rec_mult, rec_shift = _multipliers(h_scale, r_scales, units)
    projected = _fc_int64(b, w, bias.astype(np.int64), in_mult, in_shift)(x)
    return projected, _fc_int64(b, r, None, rec_mult, rec_shift)


__all__ = ["float_gate_contraction", "int16_gate_contraction", "int8_gate_contraction"]
