"""The firmware's tables (toolchain.quant.tflm_tables) are TFLite Micro's outputs.

Element-wise tables are compared with the interpreter run on all 256 int8 values, and
looked up for random tensors; SOFTMAX's phases (table, sum, reciprocal, outputs) are
composed and compared with our softmax (itself proven against the interpreter) on many
rows and parameters, and with the interpreter directly.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from tflm_oracle import assert_exact, q, rand_int8, run_single

from toolchain.quant import tflm, tflm_activations, tflm_tables
from toolchain.quant.fixedpoint import INT32_MAX

ALL = np.arange(-128, 128, dtype=np.int8)

# op -> (params for lookup_table, how to run that op in the interpreter):
# (opcode, input (scale, zp), output (scale, zp), options)
TABLE_CASES = {
    "logistic": ("LOGISTIC", tflm_activations.logistic_params(0.07, -10),
                 "LOGISTIC", (0.07, -10), (1 / 256, -128), {}),
    "logistic_wide": ("LOGISTIC", tflm_activations.logistic_params(1.3, 100),
                      "LOGISTIC", (1.3, 100), (1 / 256, -128), {}),
    "tanh": ("TANH", tflm_activations.tanh_params(0.03, 5), "TANH", (0.03, 5), (1 / 128, 0), {}),
    "hard_swish": ("HARD_SWISH", tflm_activations.hard_swish_params(0.05, 7, 0.03, -40),
                   "HARD_SWISH", (0.05, 7), (0.03, -40), {}),
    "relu": ("RELU", tflm_activations.relu_params(0.05, 7, 0.03, -128), "RELU", (0.05, 7),
             (0.03, -128), {}),
    "relu6": ("RELU6", tflm_activations.relu6_params(0.04, -20), "RELU6", (0.04, -20),
              (0.04, -20), {}),
    "leaky_relu": ("LEAKY_RELU", tflm_activations.leaky_relu_params(0.05, 3, 0.04, -9, 0.1),
                   "LEAKY_RELU", (0.05, 3), (0.04, -9), {"alpha": 0.1}),
    "requantize": ("REQUANTIZE", tflm.requantize_params(0.05, 3, 0.11, -60), "QUANTIZE",
                   (0.05, 3), (0.11, -60), {}),
}


@pytest.mark.parametrize("case", list(TABLE_CASES))
def test_table_is_tflm_on_every_input(case: str) -> None:
    op, params, opcode, (si, zi), (so, zo), options = TABLE_CASES[case]
    table = tflm_tables.lookup_table(op, params)
    assert table.shape == (256,) and table.dtype == np.int8
    expected = run_single(opcode, [q(ALL.shape, si, zi)], q(ALL.shape, so, zo), [ALL], **options)
    assert_exact(expected, table, f"{op} table")
    # Indexing by x + 128 reproduces the op on any tensor.
    x = rand_int8(np.random.default_rng(zlib.crc32(case.encode())), (3, 7, 5))
    expected = run_single(opcode, [q(x.shape, si, zi)], q(x.shape, so, zo), [x], **options)
    assert_exact(expected, table[x.astype(np.int64) + 128], f"{op} lookup")


def test_unknown_table_is_refused() -> None:
    with pytest.raises(ValueError, match="no lookup table for 'SOFTMAX'"):
        tflm_tables.lookup_table("SOFTMAX", None)


SOFTMAX_PARAMS = [(1e-6, 1.0), (0.0039, 1.0), (0.05, 1.0), (0.1, 0.7), (0.25, 2.0),
                  (1.0, 1.0), (6.0, 1.0), (1e3, 1.0)]


@pytest.mark.parametrize(("scale", "beta"), SOFTMAX_PARAMS)
def test_softmax_phases_compose_to_softmax(scale: float, beta: float) -> None:
    params = tflm_activations.softmax_params(scale, beta)
    rng = np.random.default_rng(zlib.crc32(f"{scale}{beta}".encode()))
    for depth in (1, 2, 3, 10, 64, 256):
        x = rand_int8(rng, (20, depth))
        x[0] = 5                                   # a flat row
        x[1, :] = -128
        x[1, -1] = 127                             # the widest spread
        got = tflm_tables.softmax_by_tables(x, params)
        assert_exact(tflm_activations.softmax(x, params), got, f"softmax depth {depth}")


def test_softmax_table_entries() -> None:
    params = tflm_activations.softmax_params(0.1, 1.0)
    exp, acc = tflm_tables.softmax_exp_table(params)
    assert exp.shape == acc.shape == (256,) and exp.dtype == acc.dtype == np.int32
    assert exp[0] == INT32_MAX                    # exp(0) is Q0.31 "one"
    assert acc[0] == 1 << 19                      # ... rescaled to Q12.19
    assert np.all(np.diff(exp.astype(np.int64)) <= 0)   # exp decreases with the distance
    # k beyond the cut-off is skipped by TFLite: zero exp, zero contribution.
    capped = tflm_activations.softmax_params(1e3, 1.0)
    exp, acc = tflm_tables.softmax_exp_table(capped)
    assert capped.diff_min == 0 and exp[0] == INT32_MAX
    assert not exp[1:].any() and not acc[1:].any()


def test_softmax_phases_one_row_by_hand() -> None:
    """One row through the firmware's steps, against the interpreter."""
    params = tflm_activations.softmax_params(0.125, 1.0)
    x = np.array([[3, -20, 3, 100, 0, -128, 99]], dtype=np.int8)
    exp, acc = tflm_tables.softmax_exp_table(params)
    k = 100 - x.astype(np.int64)
    total = int(acc[k].sum())
    scale, exponent = tflm_tables.softmax_reciprocal(total)
    out = tflm_tables.softmax_output(exp[k], scale, exponent)
    expected = run_single("SOFTMAX", [q(x.shape, 0.125, 0)], q(x.shape, 1 / 256, -128), [x],
                          beta=1.0)
    assert_exact(expected, out, "SOFTMAX by phases")
    assert_exact(expected, tflm_tables.softmax_from_sum(exp[k], total), "softmax_from_sum")
