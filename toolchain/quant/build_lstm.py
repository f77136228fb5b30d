"""The integer steps of TFLite Micro's LSTM kernel (lstm_eval.cc) as graph primitives.

TFLite Micro computes a quantized LSTM cell with int16 intermediates whatever its
activation type: every gate's pre-activation is a fully-connected layer rescaled to
int16 at scale 2**-12 (Q3.12), the gates are int16 sigmoids / tanhs in Q0.15 computed
by interpolation in one 256-entry table, the products are MulElementwise rescales and
the sums saturate to int16. This module builds those steps; the converter
(toolchain/frontend/tflite/lstm.py) wires them into the recurrence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.quant.build import rescale
from toolchain.quant.fixedpoint import quantize_multiplier
from toolchain.types import QuantParams, dtype

I16, I32 = dtype("i16"), dtype("i32")
INT16_MIN, INT16_MAX = -32768, 32767

# The gates' pre-activation scale (Q3.12) and their output scale (Q0.15).
GATE_INPUT_SCALE = 2.0 ** -12
GATE_OUTPUT_SCALE = 2.0 ** -15

# TFLite's int16 sigmoid / tanh interpolate in a table of sigmoid(i / 24) in 0.16 fixed
# point. Its entries are round(65536 * sigmoid(i / 24)) (at most 65535) raised by one at
# these indices; the values must be TFLite's own for the interpolation to be bit-exact.
_TABLE_RAISED = (4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34,
                 35, 37, 39, 40, 41, 43, 44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93,
                 100, 103, 112, 116, 135, 255)


def sigmoid_table() -> np.ndarray:
    """TFLite's 256-entry sigmoid_table_uint16, as int32."""
    i = np.arange(256, dtype=np.float64)
    table = np.minimum(np.floor(65536.0 / (1.0 + np.exp(-i / 24.0)) + 0.5), 65535)
    table = table.astype(np.int64)
    table[list(_TABLE_RAISED)] += 1
    return table.astype(np.int32)


@dataclass(frozen=True)
class MulParams:
    """One of TFLite Micro's inter-gate MulElementwise parameter sets
    (CreateInterGateMulParams): symmetric inputs, the output's zero point and range."""

    multiplier: int
    shift: int
    output_zp: int
    act_min: int
    act_max: int


# The storage range of each integer type an inter-gate product is narrowed to.
_RANGES = {"i8": (-128, 127), "i16": (INT16_MIN, INT16_MAX)}


def mul_params(input1_scale: float, input2_scale: float, output_scale: float,
               out: str = "i16", output_zp: int = 0) -> MulParams:
    """CreateInterGateMulParams: double(s1) * double(s2) / double(s_out), quantized."""
    real = float(np.float32(input1_scale)) * float(np.float32(input2_scale))
    mult, shift = quantize_multiplier(real / float(np.float32(output_scale)))
    lo, hi = _RANGES[out]
    return MulParams(mult, shift, output_zp, lo, hi)


def cell_scale_power(cell_scale: float) -> int:
    """CheckedLog2 of the cell state's scale: log2 rounded to the nearest integer (TFLite
    Micro does not check that the scale is a power of two)."""
    return int(round(math.log2(float(np.float32(cell_scale)))))


def quantized_cell_clip(cell_clip: float, cell_scale: float) -> int:
    """CreateLstmCellStateInfo: cell_clip / scale in double, clamped to int16, truncated."""
    value = float(np.float32(cell_clip)) / float(np.float32(cell_scale))
    return int(min(max(value, -32768.0), 32767.0))


def _splat(b: GraphBuilder, value: int, like: Tensor) -> Tensor:
    return b.splat(value, like.type.dtype, tuple(like.type.shape))


def _i32(b: GraphBuilder, x: Tensor) -> Tensor:
    return x if x.type.dtype == I32 else b.op("convert", [x], dtype="i32")


def _narrow16(b: GraphBuilder, x: Tensor, lo: int = INT16_MIN, hi: int = INT16_MAX,
              out: str = "i16", quant: QuantParams | None = None) -> Tensor:
    x = b.op("clamp", [b.const(lo, I32), x, b.const(hi, I32)])
    return b.op("convert", [x], quant=quant, dtype=out)


def saturating_add(b: GraphBuilder, x1: Tensor, x2: Tensor) -> Tensor:
    """AddElementWise on int16: the int32 sum clamped to int16."""
    return _narrow16(b, b.op("add", [_i32(b, x1), _i32(b, x2)]))


def clip(b: GraphBuilder, x: Tensor, limit: int) -> Tensor:
    """Clipping of the int16 cell state to [-limit, limit]."""
    return b.op("clamp", [b.const(-limit, I16), x, b.const(limit, I16)])


def mul(b: GraphBuilder, x1: Tensor, x2: Tensor, p: MulParams, out: str = "i16",
        quant: QuantParams | None = None) -> Tensor:
    """MulElementwise of two symmetric int16 tensors: the int32 product rescaled by
    MultiplyByQuantizedMultiplier, + the output zero point, clamped and narrowed."""
    v = rescale(b, b.op("multiply", [_i32(b, x1), _i32(b, x2)]), p.multiplier, p.shift)
    if p.output_zp:
        v = b.op("add", [v, _splat(b, p.output_zp, v)])
    return _narrow16(b, v, p.act_min, p.act_max, out, quant)


def _scaled_input(b: GraphBuilder, x: Tensor, left_shift: int) -> Tensor:
    """The input step of TFLite's int16 Logistic / Tanh with input_multiplier 0 when
    `left_shift` >= 0 (x * (3 << left_shift)), else with input_multiplier 3 and a
    rounding right shift: (x * 3 + 2**(s - 1)) >> s, s = -left_shift."""
    v = _i32(b, x)
    if left_shift >= 0:
        return b.op("multiply", [v, _splat(b, 3 << left_shift, v)])
    s = -left_shift
    v = b.op("add", [b.op("multiply", [v, _splat(b, 3, v)]), _splat(b, 1 << (s - 1), v)])
    return b.op("shift_right_arithmetic", [v, _splat(b, s, v)])


def table_constant(b: GraphBuilder) -> Tensor:
    """The sigmoid table as a graph constant: made once per operator and shared by all
    its gates and time steps (each constant is its own bytes of flash)."""
    return b.const(sigmoid_table(), I32)


def _interpolate(b: GraphBuilder, a: Tensor, bits: int, table: Tensor
                 ) -> tuple[Tensor, Tensor]:
    """(table[h] << bits) + t * (table[h + 1] - table[h]) for h = a >> bits, t = the low
    `bits` of a, and whether h reaches the table's end (h >= 255)."""
    shape = tuple(a.type.shape)
    h = b.op("shift_right_logical", [a, _splat(b, bits, a)])
    beyond = b.op("compare", [h, _splat(b, 255, h)], direction="GE")
    h = b.op("minimum", [h, _splat(b, 254, h)])  # in range; `beyond` overrides the result

    def lookup(index: Tensor) -> Tensor:
        return b.op("gather", [table, index], offset_dims=(), collapsed_slice_dims=(0,),
                    operand_batching_dims=(), start_indices_batching_dims=(),
                    start_index_map=(0,), index_vector_dim=len(shape), slice_sizes=(1,))

    ua = lookup(h)
    ub = lookup(b.op("add", [h, _splat(b, 1, h)]))
    t = b.op("subtract", [a, b.op("shift_left", [h, _splat(b, bits, h)])])
    value = b.op("add", [b.op("shift_left", [ua, _splat(b, bits, ua)]),
                         b.op("multiply", [t, b.op("subtract", [ub, ua])])])
    return value, beyond


def logistic16(b: GraphBuilder, x: Tensor, table: Tensor, left_shift: int = 0) -> Tensor:
    """reference_integer_ops::Logistic on int16 (input_multiplier 0): Q3.12 -> Q0.15;
    `table` is table_constant's."""
    v = _scaled_input(b, x, left_shift)
    a = b.op("abs", [v])
    r, beyond = _interpolate(b, a, 9, table)
    r = b.op("select", [beyond, _splat(b, 0x7FFF << 10, r), r])
    positive = b.op("compare", [v, _splat(b, 0, v)], direction="GE")
    r = b.op("select", [positive, b.op("add", [r, _splat(b, 1 << 9, r)]),
                        b.op("subtract", [_splat(b, (1 << 25) + (1 << 9) - 1, r), r])])
    r = b.op("shift_right_logical", [r, _splat(b, 10, r)])
    return b.op("convert", [r], dtype="i16")


def tanh16(b: GraphBuilder, x: Tensor, table: Tensor, left_shift: int = 0) -> Tensor:
    """reference_integer_ops::Tanh on int16 (input_multiplier 0 or 3): Q0.15 out;
    `table` is table_constant's."""
    v = _scaled_input(b, x, left_shift)
    a = b.op("abs", [v])
    r, beyond = _interpolate(b, a, 8, table)
    r = b.op("select", [beyond, _splat(b, 0xFFFF << 8, r), r])
    positive = b.op("compare", [v, _splat(b, 0, v)], direction="GE")
    bias = (1 << 23) - (1 << 7)
    r = b.op("select", [positive, b.op("subtract", [r, _splat(b, bias, r)]),
                        b.op("subtract", [_splat(b, (1 << 23) + (1 << 7) - 1, r), r])])
    r = b.op("shift_right_arithmetic", [r, _splat(b, 8, r)])
    return b.op("convert", [r], dtype="i16")


def tanh_left_shift(cell_power: int) -> int:
    """The input shift of the cell state's tanh: (15 + log2(cell scale)) - 3."""
    return 15 + cell_power - 3


__all__ = [
    "GATE_INPUT_SCALE",
    "GATE_OUTPUT_SCALE",
    "MulParams",
    "cell_scale_power",
    "clip",
    "logistic16",
    "mul",
    "mul_params",
    "quantized_cell_clip",
    "saturating_add",
    "sigmoid_table",
    "table_constant",
    "tanh16",
    "tanh_left_shift",
]
