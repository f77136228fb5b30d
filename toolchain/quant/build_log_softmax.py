"""LOG_SOFTMAX int8 as a graph of integer ops, TFLite Micro's arithmetic
(toolchain/quant/tflm_log_softmax.py is the same computation in numpy, and the tests
hold the two equal).

Everything per element depends only on k = row max - x in [0, 255], so the Q5.26
rescaled difference and the Q12.19 exp term the row sum adds are two 256-entry
constant tables, gathered at k. Per row, the sum's logarithm (gemmlowp's
log_x_for_x_greater_than_or_equal_to_1, its data-dependent shifts included) and the
cut-off are int32 graph ops; per element, one subtract, a rounding shift and a select.
"""

from __future__ import annotations

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant import tflm_log_softmax as ls
from toolchain.quant.build import _one_over_one_plus_x, _saturating_shift_left
from toolchain.quant.fixedpoint import INT32_MAX, INT32_MIN
from toolchain.types import DType, QuantParams, dtype

I8, I32, I64 = dtype("i8"), dtype("i32"), dtype("i64")


class _Rows:
    """int32 fixed-point steps on tensors of one shape (a row's values)."""

    def __init__(self, b: GraphBuilder, shape: tuple[int, ...]) -> None:
        self.b, self.shape = b, shape

    def k(self, value: int, dt: DType = I32) -> Tensor:
        return self.b.splat(value, dt, self.shape)

    def op(self, name: str, x: Tensor, y: Tensor | int) -> Tensor:
        return self.b.op(name, [x, self.k(y) if isinstance(y, int) else y])

    def mul(self, x: Tensor, y: Tensor | int) -> Tensor:
        """gemmlowp's FixedPoint `*`: SaturatingRoundingDoublingHighMul."""
        return self.op("saturating_rounding_doubling_high_mul", x, y)

    def shift_down(self, x: Tensor, e: int) -> Tensor:
        return self.op("rounding_divide_by_pot", x, e)

    def sat_shift(self, x: Tensor, e: Tensor | int) -> Tensor:
        """SaturatingRoundingMultiplyByPOTParam, exponent in [0, 31] (a tensor: data
        dependent): x * 2**e, saturated; the threshold 2**(31 - e) - 1 is INT32_MAX >> e."""
        if isinstance(e, int):
            return _saturating_shift_left(self.b, x, e) if e else x
        threshold = self.op("shift_right_arithmetic", self.k(INT32_MAX), e)
        below = self.b.op("negate", [threshold])
        shifted = self.op("shift_left", x, e)
        low = self.b.op("select", [self.compare(x, "LT", below), self.k(INT32_MIN), shifted])
        return self.b.op("select", [self.compare(x, "GT", threshold), self.k(INT32_MAX),
                                    low])

    def compare(self, x: Tensor, direction: str, y: Tensor) -> Tensor:
        return self.b.op("compare", [x, y], direction=direction)

    def saturating(self, name: str, x: Tensor, y: Tensor | int) -> Tensor:
        """x + y or x - y in int64, clamped to int32."""
        wide = self.b.op(name, [self.b.op("convert", [x], dtype="i64"),
                                self.b.op("convert", [self.k(y) if isinstance(y, int) else y],
                                          dtype="i64")])
        clamped = self.b.op("clamp", [self.b.const(INT32_MIN, I64), wide,
                                      self.b.const(INT32_MAX, I64)])
        return self.b.op("convert", [clamped], dtype="i32")

    def half_sum(self, x: Tensor, y: int) -> Tensor:
        """gemmlowp RoundingHalfSum: (x + y + sign) / 2, truncating, in int64."""
        total = self.b.op("add", [self.b.op("convert", [x], dtype="i64"), self.k(y, I64)])
        positive = self.b.op("compare", [total, self.k(0, I64)], direction="GE")
        nudged = self.b.op("add", [total, self.b.op("select", [positive, self.k(1, I64),
                                                               self.k(-1, I64)])])
        return self.b.op("convert", [self.b.op("divide", [nudged, self.k(2, I64)])],
                         dtype="i32")


def log_x_ge_1(b: GraphBuilder, x: Tensor) -> Tensor:
    """ls.log_x_ge_1 (Q12 input, Q5 output) of a positive int32 tensor, in graph ops."""
    r = _Rows(b, tuple(x.type.shape))
    accum_bits = ls.INPUT_INTEGER_BITS + 1  # the log's output bits, plus one of headroom
    quarter = ls.ONE_QUARTER >> accum_bits  # Rescale of a multiple of 2**accum_bits: exact
    headroom_a = b.op("count_leading_zeros", [x])
    r_a = r.sat_shift(r.mul(r.sat_shift(x, r.op("subtract", headroom_a, 1)), ls.SQRT_HALF), 1)
    in_bits = ls.ACCUMULATION_INTEGER_BITS
    pow_a = r.saturating("add", r.sat_shift(r.op("subtract", r.k(in_bits), headroom_a),
                                            31 - accum_bits), quarter)
    z_b = r.mul(x, ls.SQRT_HALF)
    headroom_b = r.op("subtract", b.op("count_leading_zeros", [z_b]), 1)
    r_b = r.sat_shift(x, headroom_b)
    pow_b = r.saturating("subtract", r.sat_shift(r.op("subtract", r.k(in_bits), headroom_b),
                                                 31 - accum_bits), quarter)
    rr = b.op("minimum", [r_a, r_b])
    pow_adj = b.op("maximum", [pow_a, pow_b])
    p = r.half_sum(rr, ls.SQRT_SQRT_HALF)
    q = r.op("subtract", rr, ls.SQRT_SQRT_HALF)
    q = b.op("add", [q, q])
    common_sq = r.mul(q, q)
    num = b.op("add", [r.mul(q, rr), r.mul(r.mul(q, common_sq), ls.ALPHA_N)])
    inner = b.op("add", [r.op("add", q, ls.ALPHA_I), r.mul(r.k(ls.ALPHA_D), common_sq)])
    denom_minus_one = b.op("add", [r.mul(p, inner), r.mul(r.k(ls.ALPHA_F), q)])
    recip = _one_over_one_plus_x(b, denom_minus_one)
    num_scaled = r.shift_down(num, accum_bits)
    total = b.op("add", [r.mul(pow_adj, ls.LOG_2), r.mul(num_scaled, recip)])
    return r.sat_shift(total, accum_bits - ls.INPUT_INTEGER_BITS)


def log_softmax(b: GraphBuilder, x: Tensor, params: ls.LogSoftmaxParams,
                quant: QuantParams | None = None) -> Tensor:
    """LOG_SOFTMAX of int8 x over its last axis (output scale 16/256, zero point 127)."""
    shape = tuple(x.type.shape)
    last = len(shape) - 1
    rows = shape[:-1]
    scaled_table, term_table = ls.difference_terms(params)

    def per_row(t: Tensor) -> Tensor:
        return b.op("broadcast_in_dim", [t], dims=tuple(range(last)), shape=shape)

    top = b.op("reduce", [x, b.const(-128, I8)], kind="maximum", dims=(last,))

    def k() -> Tensor:  # built anew for each reader, so it fuses into it
        return b.op("subtract", [b.op("convert", [per_row(top)], dtype="i32"),
                                 b.op("convert", [x], dtype="i32")])

    def table(values: np.ndarray) -> Tensor:
        return b.op("gather", [b.const(np.asarray(values, np.int32), I32), k()],
                    offset_dims=(), collapsed_slice_dims=(0,), operand_batching_dims=(),
                    start_indices_batching_dims=(), start_index_map=(0,),
                    index_vector_dim=len(shape), slice_sizes=(1,))

    total = b.op("reduce", [table(term_table), b.const(0, I32)], kind="add", dims=(last,))
    log_sum = log_x_ge_1(b, total)
    r = _Rows(b, rows)
    shifted = r.op("add", log_sum, INT32_MIN)
    reverse = r.shift_down(r.mul(shifted, params.reverse_scaling_divisor),
                           params.reverse_scaling_right_shift)
    cut = b.op("maximum", [reverse, r.k(params.diff_min - 1)])
    e = _Rows(b, shape)
    diff = b.op("subtract", [table(scaled_table), per_row(log_sum)])
    out = e.op("add", e.shift_down(diff, ls.OUTPUT_SHIFT), ls.OUTPUT_ZERO_POINT)
    out = b.op("clamp", [b.const(-128, I32), out, b.const(127, I32)])
    kept = b.op("compare", [b.op("negate", [k()]), per_row(cut)], direction="GT")
    out = b.op("select", [kept, out, e.k(-128)])
    return b.op("convert", [out], quant=quant, dtype="i8")


__all__ = ["log_softmax", "log_x_ge_1"]
