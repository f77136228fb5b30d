"""Reductions with a body (kernel/reduction.py): reduce and reduce_window over several
operands, scheduled and run on the host (tests/host_program.py) against the reference,
exactly (the generated code folds in the reference's order)."""

from __future__ import annotations

import numpy as np
import pytest
from host_program import run_program

from toolchain.diagnostics import CompileError
from toolchain.frontend.stablehlo import import_module
from toolchain.kernel.reduction import Reduction
from toolchain.mlir.parser import parse_text
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule

RNG = np.random.default_rng(3)

# jnp.argmin over int8 rows, as JAX exports it (the index is an iota, inlined into the
# reduction), and a 3-operand reduce: sum, max and the count of positives together.
ARGMIN_AND_FRIENDS = """
func.func @main(%x: tensor<3x40xi8>, %y: tensor<5x3xf32>, %bias: tensor<f32>)
    -> (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %iota = stablehlo.iota dim = 1 : tensor<3x40xi32>
  %big = stablehlo.constant dense<127> : tensor<i8>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %big), (%iota init: %zero) across dimensions = [1]
      : (tensor<3x40xi8>, tensor<3x40xi32>, tensor<i8>, tensor<i32>)
        -> (tensor<3xi8>, tensor<3xi32>)
   reducer(%a: tensor<i8>, %b: tensor<i8>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %b, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
    %first = stablehlo.compare LT, %ia, %ib, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %first : tensor<i1>
    %keep = stablehlo.or %lt, %tie : tensor<i1>
    %v = stablehlo.select %lt, %a, %b : tensor<i1>, tensor<i8>
    %i = stablehlo.select %keep, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<i8>, tensor<i32>
  }
  %yt = stablehlo.transpose %y, dims = [1, 0] : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %fz = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %one = stablehlo.constant dense<1> : tensor<3x5xi32>
  %s:3 = stablehlo.reduce(%yt init: %fz), (%yt init: %ninf), (%one init: %zero)
      across dimensions = [1]
      : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xi32>, tensor<f32>, tensor<f32>,
         tensor<i32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi32>)
   reducer(%s0: tensor<f32>, %e0: tensor<f32>) (%m0: tensor<f32>, %e1: tensor<f32>)
          (%c0: tensor<i32>, %e2: tensor<i32>) {
    %t = stablehlo.add %e0, %bias : tensor<f32>
    %sum = stablehlo.add %s0, %t : tensor<f32>
    %mx = stablehlo.maximum %m0, %e1 : tensor<f32>
    %pos = stablehlo.compare GT, %e1, %fz, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %inc = stablehlo.add %c0, %e2 : tensor<i32>
    %cnt = stablehlo.select %pos, %inc, %c0 : tensor<i1>, tensor<i32>
    stablehlo.return %sum, %mx, %cnt : tensor<f32>, tensor<f32>, tensor<i32>
  }
  return %r#1, %s#0, %s#1, %s#2 : tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}
"""

# Max pooling that also returns where each maximum is (a 2-operand reduce_window), with
# padding, strides and a base dilation.
POOL_WITH_INDEX = """
func.func @main(%x: tensor<6x7xf32>) -> (tensor<3x5xf32>, tensor<3x5xi32>) {
  %pos = stablehlo.iota dim = 0 : tensor<42xi32>
  %where = stablehlo.reshape %pos : (tensor<42xi32>) -> tensor<6x7xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %none = stablehlo.constant dense<-1> : tensor<i32>
  %r:2 = "stablehlo.reduce_window"(%x, %where, %ninf, %none) ({
  ^bb0(%a: tensor<f32>, %ia: tensor<i32>, %b: tensor<f32>, %ib: tensor<i32>):
    %ge = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %ge, %a, %b : tensor<i1>, tensor<f32>
    %i = stablehlo.select %ge, %ia, %ib : tensor<i1>, tensor<i32>
    "stablehlo.return"(%v, %i) : (tensor<f32>, tensor<i32>) -> ()
  }) {window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 3>,
      base_dilations = array<i64: 1, 2>, padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>}
    : (tensor<6x7xf32>, tensor<6x7xi32>, tensor<f32>, tensor<i32>)
      -> (tensor<3x5xf32>, tensor<3x5xi32>)
  return %r#0, %r#1 : tensor<3x5xf32>, tensor<3x5xi32>
}
"""


def compile_and_run(text: str, inputs: list[np.ndarray]):
    graph = import_module(parse_text(text, "test.mlir"))
    want = run_graph(graph, inputs)
    program = schedule(fold_constants(graph))
    got = run_program(program, inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return program, got


def test_argmin_and_a_three_operand_reduce() -> None:
    x = RNG.integers(-128, 128, (3, 40)).astype(np.int8)
    x[1, [5, 30]] = -128  # a tie: the first wins
    y = RNG.standard_normal((5, 3)).astype(np.float32)
    program, (argmin, total, mx, count) = compile_and_run(
        ARGMIN_AND_FRIENDS, [x, y, np.float32(0.25)])
    np.testing.assert_array_equal(argmin, np.argmin(x, axis=1))
    np.testing.assert_array_equal(count, (y.T > 0).sum(axis=1))
    np.testing.assert_allclose(total, (y.T + 0.25).sum(axis=1), rtol=1e-6)
    # The iota and the transpose are read inside the reductions, not stored.
    assert [type(s.kernel) for s in program.steps] == [Reduction, Reduction]


def test_pool_with_index() -> None:
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    _, (value, where) = compile_and_run(POOL_WITH_INDEX, [x])
    flat = x.reshape(-1)
    inside = where >= 0
    np.testing.assert_array_equal(value[inside], flat[where[inside]])


def test_a_body_with_other_than_scalar_work_is_a_located_error() -> None:
    text = POOL_WITH_INDEX.replace(
        '%i = stablehlo.select %ge, %ia, %ib : tensor<i1>, tensor<i32>',
        '%i = stablehlo.select %ge, %ia, %ib : tensor<i1>, tensor<i32>\n'
        '    %w = stablehlo.broadcast_in_dim %ia, dims = [] : (tensor<i32>) -> tensor<2xi32>')
    graph = import_module(parse_text(text, "test.mlir"))
    with pytest.raises(CompileError) as info:
        schedule(graph)
    assert "'broadcast_in_dim' computes tensor<2xi32>" in info.value.message
    assert info.value.loc.line_col == (7, 10)
