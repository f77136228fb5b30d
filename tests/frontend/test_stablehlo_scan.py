"""chlo.scan unrolled at import (frontend/stablehlo_scan.py), on the reference: the
cases of StableHLO's chlo.scan interpreter tests (cumulative sum along dims 0 and 1, a
running max with its argmax over two inputs and two carries, the reverse suffix sum),
with the scanned values as function arguments and numpy computing what is expected; a
body capturing an outer value; and located errors for ill-formed scans."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.reference import run_graph


def _run(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return run_graph(import_module(parse_text(text, "scan.mlir")), inputs)


CUMSUM = """func.func @main(%x: tensor<2x3xi32>) -> (tensor<2x3xi32>, tensor<2xi32>) {
  %init = stablehlo.constant dense<0> : tensor<2xi32>
  %0:2 = chlo.scan(%x) inits(%init) dimension=1 {
  ^bb0(%a: tensor<2xi32>, %c: tensor<2xi32>):
    %1 = stablehlo.add %a, %c : tensor<2xi32>
    stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>
  } : (tensor<2x3xi32>, tensor<2xi32>) -> (tensor<2x3xi32>, tensor<2xi32>)
  return %0#0, %0#1 : tensor<2x3xi32>, tensor<2xi32>
}"""


def test_cumulative_sum_along_dim_1() -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out, carry = _run(CUMSUM, [x])
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))  # [[1, 3, 6], [4, 9, 15]]
    np.testing.assert_array_equal(carry, [6, 15])


def test_reverse_scan_gives_suffix_sums() -> None:
    text = """func.func @main(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<i32>) {
  %init = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = chlo.scan(%x) inits(%init) dimension=0 attributes {is_reverse = true} {
  ^bb0(%a: tensor<i32>, %c: tensor<i32>):
    %1 = stablehlo.add %a, %c : tensor<i32>
    stablehlo.return %1, %1 : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  return %0#0, %0#1 : tensor<4xi32>, tensor<i32>
}"""
    out, carry = _run(text, [np.array([1, 2, 3, 4], np.int32)])
    np.testing.assert_array_equal(out, [10, 9, 7, 4])
    assert carry == 10


def test_running_max_with_argmax_and_a_captured_value() -> None:
    """Two inputs, two carries, two outputs; the body also reads %bias from outside."""
    text = """func.func @main(%x: tensor<5xf32>, %bias: tensor<f32>)
    -> (tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i32>) {
  %iota = stablehlo.iota dim = 0 : tensor<5xi32>
  %v0 = stablehlo.constant dense<-1.0e30> : tensor<f32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %0:4 = chlo.scan(%x, %iota) inits(%v0, %i0) dimension=0 {
  ^bb0(%cv: tensor<f32>, %ci: tensor<i32>, %rv: tensor<f32>, %ri: tensor<i32>):
    %s = stablehlo.add %cv, %bias : tensor<f32>
    %gt = stablehlo.compare GT, %rv, %s : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %nv = stablehlo.select %gt, %rv, %s : tensor<i1>, tensor<f32>
    %ni = stablehlo.select %gt, %ri, %ci : tensor<i1>, tensor<i32>
    stablehlo.return %nv, %ni, %nv, %ni : tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>
  } : (tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i32>)
      -> (tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i32>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<5xf32>, tensor<5xi32>, tensor<f32>, tensor<i32>
}"""
    x = np.array([3, 1, 4, 1, 5], np.float32)
    vals, idx, v, i = _run(text, [x, np.float32(0.5)])
    np.testing.assert_array_equal(vals, np.maximum.accumulate(x) + 0.5)
    np.testing.assert_array_equal(idx, [0, 0, 2, 2, 4])
    assert v == 5.5 and i == 4


@pytest.mark.parametrize("change, message", [
    ("dimension=1", "inputs must all have dimension 1"),
    ("stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>",
     "body returns 1 values, the scan has 2 results"),
])
def test_ill_formed_scans_are_located_errors(change: str, message: str) -> None:
    text = CUMSUM.replace("%x: tensor<2x3xi32>", "%x: tensor<3xi32>").replace(
        "(tensor<2x3xi32>, tensor<2xi32>) ->", "(tensor<3xi32>, tensor<2xi32>) ->") \
        if change == "dimension=1" else CUMSUM.replace(change, "stablehlo.return %1 : "
                                                       "tensor<2xi32>")
    with pytest.raises(CompileError, match=rf"scan\.mlir:\d+:\d+: .*{message}"):
        _run(text, [np.zeros((2, 3), np.int32)])
