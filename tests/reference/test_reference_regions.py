"""Reference semantics of the ops with regions, from the StableHLO spec's examples and
rules (https://openxla.org/stablehlo/spec): each program is imported from MLIR (the
generic form, which every one of these ops has), verified and run on the reference.

The expected values are the spec's, or numpy's where the spec defines the op by a
formula (argmax, sorting, scatter-add). Integers compare exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.frontend.stablehlo import import_module
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_text
from toolchain.reference import run_graph


def run(text: str, *inputs: np.ndarray) -> list[np.ndarray]:
    graph = import_module(parse_text(text, "test.mlir"))
    verify_graph(graph)
    return run_graph(graph, list(inputs))


def cmp(direction: str, a: str, b: str, ty: str, kind: str = "FLOAT") -> str:
    return (f'"stablehlo.compare"({a}, {b}) <{{comparison_direction = '
            f'#stablehlo<comparison_direction {direction}>, compare_type = '
            f'#stablehlo<comparison_type {kind}>}}> : ({ty}, {ty}) -> tensor<i1>')


# The spec's `while` example: count to 10, adding one to a sum each time.
WHILE = """
func.func @main(%one: tensor<i64>, %ten: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %init_i = stablehlo.constant dense<1> : tensor<i64>
  %init_sum = stablehlo.constant dense<0> : tensor<i64>
  %r:2 = "stablehlo.while"(%init_i, %init_sum) ({
  ^bb0(%i: tensor<i64>, %sum: tensor<i64>):
    %c = %CMP%
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i64>, %sum: tensor<i64>):
    %s = stablehlo.add %sum, %one : tensor<i64>
    %n = stablehlo.add %i, %one : tensor<i64>
    "stablehlo.return"(%n, %s) : (tensor<i64>, tensor<i64>) -> ()
  }) : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<i64>)
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}
""".replace("%CMP%", cmp("LT", "%i", "%ten", "tensor<i64>", "SIGNED"))


def test_while_counts_with_captured_values() -> None:
    i, total = run(WHILE, np.int64(1), np.int64(10))
    assert (int(i), int(total)) == (10, 9)
    # A condition false from the start runs the body zero times.
    i, total = run(WHILE, np.int64(1), np.int64(0))
    assert (int(i), int(total)) == (1, 0)


IF = """
func.func @main(%pred: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "stablehlo.if"(%pred) ({
    %a = stablehlo.add %x, %x : tensor<2xf32>
    "stablehlo.return"(%a) : (tensor<2xf32>) -> ()
  }, {
    %n = stablehlo.negate %x : tensor<2xf32>
    "stablehlo.return"(%n) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
"""


def test_if_picks_a_branch() -> None:
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(run(IF, np.bool_(True), x)[0], 2 * x)
    np.testing.assert_array_equal(run(IF, np.bool_(False), x)[0], -x)


CASE = """
func.func @main(%index: tensor<i32>, %x: tensor<2xi64>) -> tensor<2xi64> {
  %r = "stablehlo.case"(%index) ({
    %c = stablehlo.constant dense<0> : tensor<2xi64>
    "stablehlo.return"(%c) : (tensor<2xi64>) -> ()
  }, {
    "stablehlo.return"(%x) : (tensor<2xi64>) -> ()
  }, {
    %m = stablehlo.multiply %x, %x : tensor<2xi64>
    "stablehlo.return"(%m) : (tensor<2xi64>) -> ()
  }) : (tensor<i32>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}
"""


@pytest.mark.parametrize("index,want", [(0, [0, 0]), (1, [3, -4]), (2, [9, 16]),
                                        (-1, [9, 16]), (3, [9, 16]), (2**31 - 1, [9, 16])])
def test_case_runs_the_last_branch_out_of_range(index: int, want: list[int]) -> None:
    (got,) = run(CASE, np.int32(index), np.array([3, -4], np.int64))
    np.testing.assert_array_equal(got, want)


# jnp.argmax as JAX 0.10.2 exports it: a 2-operand reduce over (value, index) whose body
# keeps the larger value, NaN first, and on ties the lower index.
ARGMAX = """
func.func @main(%x: tensor<4x6xf32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %iota = stablehlo.iota dim = 1 : tensor<4x6xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %ninf), (%iota init: %zero) across dimensions = [1]
      : (tensor<4x6xf32>, tensor<4x6xi32>, tensor<f32>, tensor<i32>)
        -> (tensor<4xf32>, tensor<4xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %nan = stablehlo.compare NE, %a, %a, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %keep = stablehlo.or %gt, %nan : tensor<i1>
    %eq = stablehlo.compare EQ, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %ia, %ib, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %first = stablehlo.or %keep, %tie : tensor<i1>
    %v = stablehlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %i = stablehlo.select %first, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<f32>, tensor<i32>
  }
  return %r#1, %r#0 : tensor<4xi32>, tensor<4xf32>
}
"""


def test_argmax_as_jax_exports_it() -> None:
    x = np.array([[1, 5, 5, -1, 0, 2],       # tie: the first 5
                  [-3, -2, -np.inf, -2, -9, -7],
                  [0, np.nan, 3, np.nan, 9, 1],  # NaN wins, the first one
                  [-0.0, 0.0, -0.0, -1, -1, -1]], np.float32)
    index, value = run(ARGMAX, x)
    np.testing.assert_array_equal(index, [1, 1, 1, 0])
    np.testing.assert_array_equal(index, np.argmax(x, axis=1))
    np.testing.assert_array_equal(value, np.nanmax(np.where(np.isnan(x), np.inf, x), axis=1)
                                  * np.where(np.isnan(x).any(axis=1), np.nan, 1))


# The spec's reduce_window example (padding, base and window dilation), through the
# region path: a body with two operands (a sum and a count of the window's elements).
REDUCE_WINDOW = """
func.func @main(%x: tensor<3x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xi64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %ones = stablehlo.constant dense<1> : tensor<3x2xi64>
  %r:2 = "stablehlo.reduce_window"(%x, %ones, %zero, %zero) ({
  ^bb0(%a: tensor<i64>, %n: tensor<i64>, %b: tensor<i64>, %m: tensor<i64>):
    %s = stablehlo.add %a, %b : tensor<i64>
    %c = stablehlo.add %n, %m : tensor<i64>
    "stablehlo.return"(%s, %c) : (tensor<i64>, tensor<i64>) -> ()
  }) {window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>,
      base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 3, 1>,
      padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>}
    : (tensor<3x2xi64>, tensor<3x2xi64>, tensor<i64>, tensor<i64>)
      -> (tensor<2x2xi64>, tensor<2x2xi64>)
  return %r#0, %r#1 : tensor<2x2xi64>, tensor<2x2xi64>
}
"""


def test_reduce_window_region_matches_the_spec_example() -> None:
    total, count = run(REDUCE_WINDOW, np.array([[1, 2], [3, 4], [5, 6]], np.int64))
    np.testing.assert_array_equal(total, [[0, 0], [3, 4]])
    # Padding and dilation holes hold the init value (0 here), real elements count 1.
    np.testing.assert_array_equal(count, [[0, 0], [1, 1]])


# The spec's sort example: two operands sorted along dimension 0 by the first, descending.
SORT = """
func.func @main(%x: tensor<2x3xi64>, %y: tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>) {
  %r:2 = "stablehlo.sort"(%x, %y) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>, %c: tensor<i64>, %d: tensor<i64>):
    %p = %CMP%
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }) : (tensor<2x3xi64>, tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>)
  return %r#0, %r#1 : tensor<2x3xi64>, tensor<2x3xi64>
}
""".replace("%CMP%", cmp("GT", "%a", "%b", "tensor<i64>", "SIGNED"))


def test_sort_spec_example() -> None:
    a, b = run(SORT, np.array([[1, 2, 3], [3, 2, 1]], np.int64),
               np.array([[3, 2, 1], [1, 2, 3]], np.int64))
    np.testing.assert_array_equal(a, [[3, 2, 3], [1, 2, 1]])
    np.testing.assert_array_equal(b, [[1, 2, 1], [3, 2, 3]])


# Sorting keys with a payload: ties keep their order (stable), TOTALORDER puts -0 before
# +0 and NaNs at the ends by sign.
SORT_TOTAL = """
func.func @main(%k: tensor<9xf32>, %v: tensor<9xi32>) -> (tensor<9xf32>, tensor<9xi32>) {
  %r:2 = "stablehlo.sort"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %p = %CMP%
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }) : (tensor<9xf32>, tensor<9xi32>) -> (tensor<9xf32>, tensor<9xi32>)
  return %r#0, %r#1 : tensor<9xf32>, tensor<9xi32>
}
""".replace("%CMP%", cmp("LT", "%a", "%b", "tensor<f32>", "TOTALORDER"))


def test_sort_total_order_is_stable() -> None:
    k = np.array([1, 0.0, np.nan, -0.0, 1, -np.nan, -np.inf, 0.0, -2], np.float32)
    k[5] = -np.float32(np.nan)  # a NaN with the sign bit set
    keys, payload = run(SORT_TOTAL, k, np.arange(9, dtype=np.int32))
    np.testing.assert_array_equal(payload, [5, 6, 8, 3, 1, 7, 0, 4, 2])
    assert np.signbit(keys[3]) and not np.signbit(keys[4]) and np.isnan(keys[[0, 8]]).all()


# The StableHLO interpreter's scatter test: window updates of 2x2 into operand dims 1, 2,
# two index vectors mapped to operand dims (1, 0); [0, 9] falls outside and is skipped.
SCATTER = """
func.func @main(%x: tensor<3x4x2xi64>, %idx: tensor<2x3x2xi64>, %u: tensor<2x3x2x2xi64>)
    -> tensor<3x4x2xi64> {
  %r = "stablehlo.scatter"(%x, %idx, %u) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %s = stablehlo.add %a, %b : tensor<i64>
    "stablehlo.return"(%s) : (tensor<i64>) -> ()
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2, 3],
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [1, 0],
      index_vector_dim = 2>, indices_are_sorted = false, unique_indices = false}
    : (tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<2x3x2x2xi64>) -> tensor<3x4x2xi64>
  return %r : tensor<3x4x2xi64>
}
"""


def test_scatter_interpreter_example() -> None:
    x = np.arange(1, 25, dtype=np.int64).reshape(3, 4, 2)
    idx = np.array([[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [0, 9]]], np.int64)
    (got,) = run(SCATTER, x, idx, np.ones((2, 3, 2, 2), np.int64))
    np.testing.assert_array_equal(got, [[[1, 2], [5, 6], [7, 8], [7, 8]],
                                        [[10, 11], [12, 13], [14, 15], [16, 17]],
                                        [[18, 19], [20, 21], [21, 22], [23, 24]]])


def test_scatter_applies_repeated_updates_in_order() -> None:
    """Scatter with a non-commutative update (b - a) onto the same element several
    times: the reference applies updates in row-major order of the update index."""
    text = SCATTER.replace("stablehlo.add %a, %b", "stablehlo.subtract %b, %a")
    x = np.zeros((3, 4, 2), np.int64)
    idx = np.zeros((2, 3, 2), np.int64)  # every window at [0, 0:2, 0:2]
    u = np.arange(24, dtype=np.int64).reshape(2, 3, 2, 2)
    (got,) = run(text, x, idx, u)
    want = np.zeros((3, 4, 2), np.int64)
    for w in np.ndindex(2, 3):
        want[0, 0:2, 0:2] = u[w] - want[0, 0:2, 0:2]
    np.testing.assert_array_equal(got, want)


# The spec's select_and_scatter example: max-pool's gradient.
SELECT_AND_SCATTER = """
func.func @main(%x: tensor<4x2xi64>, %s: tensor<2x2xi64>) -> tensor<4x2xi64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.select_and_scatter"(%x, %s, %zero) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %p = %CMP%
    "stablehlo.return"(%p) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %t = stablehlo.add %a, %b : tensor<i64>
    "stablehlo.return"(%t) : (tensor<i64>) -> ()
  }) {window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>,
      padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>}
    : (tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>
  return %r : tensor<4x2xi64>
}
""".replace("%CMP%", cmp("GE", "%a", "%b", "tensor<i64>", "SIGNED"))


def test_select_and_scatter_spec_example() -> None:
    (got,) = run(SELECT_AND_SCATTER, np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64),
                 np.array([[5, 6], [7, 8]], np.int64))
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [5, 14], [7, 0]])


# The StableHLO interpreter's map test, with a captured scalar added.
MAP = """
func.func @main(%x: tensor<2x2xi64>, %y: tensor<2x2xi64>, %c: tensor<i64>) -> tensor<2x2xi64> {
  %r = "stablehlo.map"(%x, %y) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %m = stablehlo.multiply %a, %b : tensor<i64>
    %s = stablehlo.add %m, %c : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %r : tensor<2x2xi64>
}
"""


def test_map() -> None:
    (got,) = run(MAP, np.array([[0, 1], [2, 3]], np.int64), np.array([[4, 5], [6, 7]], np.int64),
                 np.int64(0))
    np.testing.assert_array_equal(got, [[0, 5], [12, 21]])
    (got,) = run(MAP, np.array([[0, 1], [2, 3]], np.int64), np.array([[4, 5], [6, 7]], np.int64),
                 np.int64(-2))
    np.testing.assert_array_equal(got, [[-2, 3], [10, 19]])


# A body that also computes on a tensor (dead here): found by the random graph fuzzer,
# whose map bodies broke the reference's run of a body over all positions at once.
MAP_TENSOR_BODY = """
func.func @main(%x: tensor<3x5xi32>) -> tensor<3x5xi32> {
  %r = "stablehlo.map"(%x) ({
  ^bb0(%a: tensor<i32>):
    %k = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
    %d = stablehlo.clamp %a, %k, %k
         : (tensor<i32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
    %n = stablehlo.negate %a : tensor<i32>
    stablehlo.return %n : tensor<i32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<3x5xi32>) -> tensor<3x5xi32>
  return %r : tensor<3x5xi32>
}
"""


def test_map_body_with_a_tensor() -> None:
    x = np.arange(15, dtype=np.int32).reshape(3, 5)
    (got,) = run(MAP_TENSOR_BODY, x)
    np.testing.assert_array_equal(got, -x)


SCATTER_SCALAR = """
func.func @main(%x: tensor<5xf32>, %i: tensor<i32>, %u: tensor<f32>) -> tensor<5xf32> {
  %r = "stablehlo.scatter"(%x, %i, %u) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 0>}
     : (tensor<5xf32>, tensor<i32>, tensor<f32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}
"""


def test_scatter_of_one_scalar_update() -> None:
    # Rank-0 updates (one index, one element) once raised in the reference (found by
    # the random graph fuzzer); an index outside the operand skips the update.
    x = np.arange(5, dtype=np.float32)
    (got,) = run(SCATTER_SCALAR, x, np.int32(3), np.float32(10))
    assert got.tolist() == [0, 1, 2, 13, 4]
    (got,) = run(SCATTER_SCALAR, x, np.int32(7), np.float32(10))
    assert got.tolist() == [0, 1, 2, 3, 4]
