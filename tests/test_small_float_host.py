"""The host side of the small floats (toolchain/small_floats.py, types.py): rounding from
wider types once, codes and values, MLIR literals and their printed form, --inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from toolchain.frontend import import_module
from toolchain.loader import UsageError, check_input
from toolchain.mlir import parse_text
from toolchain.mlir.printer import print_generic
from toolchain.reference import run_graph
from toolchain.small_floats import FORMATS
from toolchain.types import TensorType, dtype, from_storage_bits, storage_bits, to_dtype


def test_wide_values_round_once() -> None:
    """f64 and i64 values near a tie round on their own side of it: through f32 to
    nearest they would land on the tie first (1 + 2**-4 + 2**-40 is 1.125 in E4M3FN, not
    1.0), and an integer past 2**24 likewise."""
    e4m3, e8m0 = dtype("f8E4M3FN"), dtype("f8E8M0FNU")
    x = np.array([1 + 2.0**-4 + 2.0**-40, -(1 + 2.0**-4 + 2.0**-40), 1 + 2.0**-4])
    np.testing.assert_array_equal(to_dtype(x, e4m3), [1.125, -1.125, 1.0])
    # e8m0 ties (1.5 * 2**k) go up: 3 * 2**24 - 1 is below the tie, f32 would round onto it
    n = np.array([3 * 2**24 - 1, 3 * 2**24], np.int64)
    np.testing.assert_array_equal(to_dtype(n, e8m0), [2.0**25, 2.0**26])
    assert to_dtype(n, e8m0).dtype == np.float32


@pytest.mark.parametrize("name", list(FORMATS))
def test_codes_and_values(name: str) -> None:
    dt = dtype(name)
    assert dt.itemsize == 1 and dt.is_float
    codes = np.arange(1 << dt.bits)
    values = from_storage_bits(codes, dt)
    back = storage_bits(values, dt)
    nan = np.isnan(values)
    np.testing.assert_array_equal(back[~nan], codes[~nan])  # every non-NaN code is its own
    finite = values[np.isfinite(values)]
    assert float(finite.max()) == float(ml_dtypes.finfo(FORMATS[name].ml_dtype).max)


def test_literals_parse_and_print_back() -> None:
    text = """func.func @main() -> (tensor<4xf8E4M3FN>, tensor<3xf4E2M1FN>) {
  %0 = stablehlo.constant dense<[0.1, -448.0, 0xFF, 1e-3]> : tensor<4xf8E4M3FN>
  %1 = stablehlo.constant dense<[0.1, -7.0, 3.0]> : tensor<3xf4E2M1FN>
  return %0, %1 : tensor<4xf8E4M3FN>, tensor<3xf4E2M1FN>
}"""
    a, b = run_graph(import_module(parse_text(text, "x.mlir")), [])
    np.testing.assert_array_equal(a[[0, 1, 3]], np.float32([0.1015625, -448.0, 2.0**-9]))
    assert np.isnan(a[2]) and np.signbit(a[2])  # 0xFF: E4M3FN's negative NaN
    np.testing.assert_array_equal(b, np.float32([0.0, -6.0, 3.0]))  # f4 saturates at 6
    printed = print_generic(parse_text(text, "x.mlir"))
    assert 'dense<"0x1DFEFF01"> : tensor<4xf8E4M3FN>' in printed
    assert print_generic(parse_text(printed, "y.mlir")) == printed


def test_inputs_round_to_the_format_or_are_refused() -> None:
    t = TensorType((3,), dtype("f8E4M3FN"))
    np.testing.assert_array_equal(check_input(np.array([0.1, 1.0, -3.3]), t, "x"),
                                  np.float32([0.1015625, 1.0, -3.25]))
    with pytest.raises(UsageError, match=r"x\[1\] is 1000.0, outside f8E4M3FN's range"):
        check_input(np.array([0.1, 1000.0, 1.0]), t, "x")
