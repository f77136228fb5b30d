"""Tables the firmware uses in place of TFLite Micro's int8 element-wise kernels and SOFTMAX.

An int8 -> int8 element-wise op is a function of 256 inputs, so the firmware stores its
output for each: `lookup_table(op, params)[x + 128]`. The tables are computed by running
our exact kernels (`toolchain.quant.tflm*`) on every int8 value, so they are exactly
TFLite Micro's outputs.

SOFTMAX int8 is not element-wise, but everything it computes per element depends only on
d = x - row max, an integer in [-255, 0]. `softmax_exp_table` tabulates, for
index k = -d (0..255), the Q0.31 exp TFLite computes and the Q12.19 term that goes into
the row sum; the firmware then needs only integer ops:

    row max -> k = max - x -> sum of acc_term[k] (int32)
            -> softmax_reciprocal(sum) -> (scale, exponent)
            -> softmax_output(exp[k], scale, exponent)

`softmax_from_sum` composes the last two; the tests prove the composition equals
`toolchain.quant.tflm_activations.softmax`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.quant import fixedpoint as fp
from toolchain.quant import tflm, tflm_activations
from toolchain.quant.tflm_activations import (
    SOFTMAX_ACCUMULATION_BITS,
    SoftmaxParams,
    softmax_scaled_diff_exp,
)

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)

# Op name -> the exact kernel `f(x, params)` the table is computed from.
ELEMENTWISE_KERNELS: dict[str, Callable[[np.ndarray, Any], np.ndarray]] = {
    "LOGISTIC": tflm_activations.logistic,
    "TANH": tflm_activations.tanh,
    "HARD_SWISH": tflm_activations.hard_swish,
    "RELU": tflm_activations.relu,
    "RELU6": tflm_activations.relu6,
    "LEAKY_RELU": tflm_activations.leaky_relu,
    "REQUANTIZE": tflm.requantize,
}


def lookup_table(op: str, params: Any) -> np.ndarray:
    """The int8 output for every int8 input of an element-wise op: table[x + 128].

    `op` is a key of ELEMENTWISE_KERNELS and `params` the matching params object
    (e.g. `tflm_activations.logistic_params(...)`, `tflm.requantize_params(...)`).
    """
    if op not in ELEMENTWISE_KERNELS:
        raise ValueError(f"no lookup table for {op!r}; tables exist for "
                         f"{', '.join(ELEMENTWISE_KERNELS)}")
    table = ELEMENTWISE_KERNELS[op](ALL_INT8, params)
    return np.asarray(table, dtype=np.int8)


def softmax_exp_table(params: SoftmaxParams) -> tuple[np.ndarray, np.ndarray]:
    """(exp[256], acc_term[256]) int32, indexed by k = row max - x in [0, 255].

    exp[k] is the Q0.31 exp TFLite computes for the difference -k (0 where -k is below
    diff_min: TFLite skips those elements and writes -128, which softmax_output gives
    for a zero exp); acc_term[k] = Rescale<12>(exp[k]), the Q12.19 amount it adds to
    the row sum.
    """
    exp = softmax_scaled_diff_exp(-np.arange(256, dtype=np.int64), params)
    return exp, fp.rescale(exp, 0, SOFTMAX_ACCUMULATION_BITS)


def softmax_reciprocal(total: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """From the int32 row sum of acc_term: (Q0.31 scale, exponent) for the outputs.

    GetReciprocal of the Q12.19 sum gives the scale and the bits over unit; the output
    exponent is bits over unit + 31 - 8 and must be in [0, 31].
    """
    scale, bits_over_unit = fp.get_reciprocal(fp.wrap_int32(total), SOFTMAX_ACCUMULATION_BITS)
    exponent = bits_over_unit + np.int32(31 - 8)
    if np.any((exponent < 0) | (exponent > 31)):
        raise ValueError("SOFTMAX: reciprocal exponent outside [0, 31] (TFLite Micro aborts)")
    return scale, exponent


def softmax_output(exp_values: np.ndarray, scale: np.ndarray | int,
                   exponent: np.ndarray | int) -> np.ndarray:
    """int8 outputs from table exps and a row's (scale, exponent):
    clamp(RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(scale, exp), exponent) - 128)."""
    prod = fp.saturating_rounding_doubling_high_mul(scale, exp_values)
    out = fp.rounding_divide_by_pot(prod, exponent).astype(np.int64) - 128
    return np.clip(out, -128, 127).astype(np.int8)


def softmax_from_sum(exp_values: np.ndarray, total: np.ndarray | int) -> np.ndarray:
    """A row's int8 outputs from its table exps and its int32 sum of acc_term."""
    scale, exponent = softmax_reciprocal(total)
    return softmax_output(exp_values, scale, exponent)


def softmax_by_tables(x: np.ndarray, params: SoftmaxParams) -> np.ndarray:
    """SOFTMAX over the last axis, the way the firmware computes it: max, table, sum,
    reciprocal, outputs."""
    x = np.asarray(x, dtype=np.int64)
    exp_table, acc_table = softmax_exp_table(params)
    k = x.max(axis=-1, keepdims=True) - x
    total = acc_table[k].astype(np.int64).sum(axis=-1, keepdims=True)
    return softmax_from_sum(exp_table[k], total)
