"""The dynamic_* ops with constant shape operands, imported as their static forms
(frontend/stablehlo_dynamic.py) and run on the reference executor.

Each case is the StableHLO interpreter's own test (../shared/suites/stablehlo_interpret/
dynamic_*.mlir, expected values copied from its check lines), with the data operand made
a function argument so that only the shape operands are constants. Refusals: a shape
operand that is a function argument, and a result-shape operand that disagrees with the
declared result type, each one located error.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.reference import run_graph


def _run(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return run_graph(import_module(parse_text(text, "dyn.mlir")), inputs)


def test_dynamic_iota_both_dims() -> None:
    text = """func.func @main() -> (tensor<3x4xi64>, tensor<3x4xi64>) {
  %s = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<3x4xi64>
  %1 = stablehlo.dynamic_iota %s, dim = 1 : (tensor<2xi64>) -> tensor<3x4xi64>
  return %0, %1 : tensor<3x4xi64>, tensor<3x4xi64>
}"""
    a, b = _run(text, [])
    np.testing.assert_array_equal(a, [[0] * 4, [1] * 4, [2] * 4])
    np.testing.assert_array_equal(b, [[0, 1, 2, 3]] * 3)


def test_dynamic_reshape_with_a_computed_shape() -> None:
    """The shape is an add of two constants: folded by the reference kernels."""
    text = """func.func @main(%x: tensor<1x6xi64>) -> tensor<2x3xi64> {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %b = stablehlo.constant dense<[1, 1]> : tensor<2xi64>
  %s = stablehlo.add %a, %b : tensor<2xi64>
  %r = stablehlo.dynamic_reshape %x, %s : (tensor<1x6xi64>, tensor<2xi64>) -> tensor<2x3xi64>
  return %r : tensor<2x3xi64>
}"""
    (got,) = _run(text, [np.array([[1, 2, 3, 4, 5, 6]])])
    np.testing.assert_array_equal(got, [[1, 2, 3], [4, 5, 6]])


def test_dynamic_broadcast_in_dim() -> None:
    text = """func.func @main(%x: tensor<3x1xi64>) -> tensor<3x2x2xi64> {
  %s = stablehlo.constant dense<[3, 2, 2]> : tensor<3xi64>
  %r = "stablehlo.dynamic_broadcast_in_dim"(%x, %s) {
    broadcast_dimensions = array<i64: 0, 2>, known_expanding_dimensions = array<i64: 1>,
    known_nonexpanding_dimensions = array<i64: 0>
  } : (tensor<3x1xi64>, tensor<3xi64>) -> tensor<3x2x2xi64>
  return %r : tensor<3x2x2xi64>
}"""
    (got,) = _run(text, [np.array([[1], [2], [3]])])
    np.testing.assert_array_equal(got, np.repeat(np.arange(1, 4), 4).reshape(3, 2, 2))


def test_dynamic_pad_with_negative_and_interior_padding() -> None:
    text = """func.func @main(%x: tensor<5x4xi64>, %v: tensor<i64>) -> tensor<7x5xi64> {
  %lo = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %in = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %r = stablehlo.dynamic_pad %x, %v, %lo, %hi, %in
    : (tensor<5x4xi64>, tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
    -> tensor<7x5xi64>
  return %r : tensor<7x5xi64>
}"""
    x = np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 4, 0], [0, 5, 6, 0], [0, 0, 0, 0]])
    (got,) = _run(text, [x, np.array(-1)])
    want = [[-1] * 5, [-1, 0, -1, 0, -1], [-1, 1, -1, 2, -1], [-1, 3, -1, 4, -1],
            [-1, 5, -1, 6, -1], [-1, 0, -1, 0, -1], [-1] * 5]
    np.testing.assert_array_equal(got, want)


def test_dynamic_gather() -> None:
    text = """func.func @main(%x: tensor<3x4x2xi64>, %i: tensor<2x3x2xi64>) -> tensor<2x3x2x2xi64> {
  %s = stablehlo.constant dense<[1, 2, 2]> : tensor<3xi64>
  %r = "stablehlo.dynamic_gather"(%x, %i, %s) {
    dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0],
      start_index_map = [1, 0], index_vector_dim = 2>,
    indices_are_sorted = false
  } : (tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<3xi64>) -> tensor<2x3x2x2xi64>
  return %r : tensor<2x3x2x2xi64>
}"""
    x = np.arange(1, 25).reshape(3, 4, 2)
    idx = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]])
    (got,) = _run(text, [x, idx])
    want = [[[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
            [[[9, 10], [11, 12]], [[11, 12], [13, 14]], [[17, 18], [19, 20]]]]
    np.testing.assert_array_equal(got, want)


def test_dynamic_conv() -> None:
    text = """func.func @main(%x: tensor<1x4x4x1xi64>) -> tensor<1x2x2x1xi64> {
  %w = stablehlo.constant dense<1> : tensor<3x3x1x1xi64>
  %p = stablehlo.constant dense<1> : tensor<2x2xi64>
  %r = "stablehlo.dynamic_conv"(%x, %w, %p) {
    window_strides = array<i64: 4, 4>, lhs_dilation = array<i64: 2, 2>,
    rhs_dilation = array<i64: 1, 1>, window_reversal = array<i1: false, false>,
    dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
    batch_group_count = 1 : i64, feature_group_count = 1 : i64
  } : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>, tensor<2x2xi64>) -> tensor<1x2x2x1xi64>
  return %r : tensor<1x2x2x1xi64>
}"""
    x = np.array([[1, 2, 5, 6], [3, 4, 7, 8], [10, 11, 14, 15], [12, 13, 16, 17]])
    (got,) = _run(text, [x.reshape(1, 4, 4, 1)])
    np.testing.assert_array_equal(got.reshape(2, 2), [[1, 5], [10, 14]])


def test_real_dynamic_slice() -> None:
    text = """func.func @main(%x: tensor<4x5xi32>) -> tensor<2x2xi32> {
  %b = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %e = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %s = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r = stablehlo.real_dynamic_slice %x, %b, %e, %s
    : (tensor<4x5xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xi32>
  return %r : tensor<2x2xi32>
}"""
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    (got,) = _run(text, [x])
    np.testing.assert_array_equal(got, x[1:3, 0:4:2])


@pytest.mark.parametrize("body, message", [
    ("%r = stablehlo.dynamic_reshape %x, %s : (tensor<6xi64>, tensor<2xi64>) -> "
     "tensor<2x3xi64>", "needs the result shape as a constant"),
    ("%c = stablehlo.constant dense<[3, 2]> : tensor<2xi64>\n  %r = stablehlo."
     "dynamic_reshape %x, %c : (tensor<6xi64>, tensor<2xi64>) -> tensor<2x3xi64>",
     r"has result shape operand \[3, 2\] but declares \[2, 3\]"),
])
def test_refusals_are_located(body: str, message: str) -> None:
    text = ("func.func @main(%x: tensor<6xi64>, %s: tensor<2xi64>) -> tensor<2x3xi64> {\n"
            f"  {body}\n  return %r : tensor<2x3xi64>\n}}")
    with pytest.raises(CompileError, match=rf"dyn\.mlir:\d+:\d+: .*{message}"):
        _run(text, [np.arange(6), np.array([2, 3])])
