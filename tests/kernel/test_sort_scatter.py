"""sort (kernel/sort.py), scatter (kernel/scatter.py) and gather with general dimension
numbers: scheduled and run on the host (tests/host_program.py), exactly against the
reference, on the spec's examples and JAX's (0.10.2) outputs for batching dimensions."""

from __future__ import annotations

import numpy as np
from host_program import run_program

from toolchain.frontend.stablehlo import import_module
from toolchain.kernel.scatter import Scatter
from toolchain.kernel.sort import Sort
from toolchain.mlir.parser import parse_text
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule


def compile_and_run(text: str, inputs: list[np.ndarray]):
    graph = import_module(parse_text(text, "test.mlir"))
    want = run_graph(graph, inputs)
    program = schedule(fold_constants(graph))
    got = run_program(program, inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return program, got


def compare(direction: str, a: str, b: str, ty: str, kind: str) -> str:
    return (f"stablehlo.compare {direction}, {a}, {b}, {kind} : ({ty}, {ty}) -> tensor<i1>")


# Sorting along the middle dimension by distance to a captured scalar, with a payload;
# and descending by TOTALORDER along the last, with NaNs and signed zeros.
SORTS = """
func.func @main(%x: tensor<2x7x3xf32>, %c: tensor<f32>, %k: tensor<3x9xf32>)
    -> (tensor<2x7x3xf32>, tensor<2x7x3xi32>, tensor<3x9xf32>) {
  %i = stablehlo.iota dim = 1 : tensor<2x7x3xi32>
  %r:2 = "stablehlo.sort"(%x, %i) <{dimension = 1 : i64, is_stable = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %ia: tensor<i32>, %ib: tensor<i32>):
    %da = stablehlo.subtract %a, %c : tensor<f32>
    %db = stablehlo.subtract %b, %c : tensor<f32>
    %aa = stablehlo.abs %da : tensor<f32>
    %ab = stablehlo.abs %db : tensor<f32>
    %lt = %CMP1%
    "stablehlo.return"(%lt) : (tensor<i1>) -> ()
  }) : (tensor<2x7x3xf32>, tensor<2x7x3xi32>) -> (tensor<2x7x3xf32>, tensor<2x7x3xi32>)
  %s = "stablehlo.sort"(%k) <{dimension = -1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %gt = %CMP2%
    "stablehlo.return"(%gt) : (tensor<i1>) -> ()
  }) : (tensor<3x9xf32>) -> tensor<3x9xf32>
  return %r#0, %r#1, %s : tensor<2x7x3xf32>, tensor<2x7x3xi32>, tensor<3x9xf32>
}
""".replace("%CMP1%", compare("LT", "%aa", "%ab", "tensor<f32>", "FLOAT")).replace(
    "%CMP2%", compare("GT", "%a", "%b", "tensor<f32>", "TOTALORDER"))


def test_sorts() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(-4, 5, (2, 7, 3)).astype(np.float32)  # many ties in distance
    k = rng.standard_normal((3, 9)).astype(np.float32)
    k[0, :5] = [np.nan, -0.0, 0.0, -np.nan, np.inf]
    program, (xs, order, ks) = compile_and_run(SORTS, [x, np.float32(0.5), k])
    assert sum(isinstance(s.kernel, Sort) for s in program.steps) == 2
    # Stable: ties in |x - 0.5| keep their original order.
    for b in range(2):
        for c in range(3):
            dist = np.abs(x[b, :, c] - 0.5)
            np.testing.assert_array_equal(order[b, :, c], np.argsort(dist, kind="stable"))
    assert np.isnan(ks[0, 0]) and not np.signbit(ks[0, 0]) and np.signbit(ks[0, -1])


def test_sort_spec_example_and_total_order() -> None:
    from reference.test_reference_regions import SORT, SORT_TOTAL

    compile_and_run(SORT, [np.array([[1, 2, 3], [3, 2, 1]], np.int64),
                           np.array([[3, 2, 1], [1, 2, 3]], np.int64)])
    k = np.array([1, 0.0, np.nan, -0.0, 1, -np.nan, -np.inf, 0.0, -2], np.float32)
    _, (_, payload) = compile_and_run(SORT_TOTAL, [k, np.arange(9, dtype=np.int32)])
    np.testing.assert_array_equal(payload, [5, 6, 8, 3, 1, 7, 0, 4, 2])


# JAX 0.10.2's lax.scatter_add and lax.gather with batching dimensions (the spec's
# scatter example), exported as below; JAX's results are the expected values.
BATCHED = """
func.func @main(%a: tensor<2x3x4x2xi64>, %i: tensor<2x2x3x2xi64>, %u: tensor<2x2x3x2x2xi64>)
    -> (tensor<2x3x4x2xi64>, tensor<2x2x3x2x2xi64>) {
  %0 = "stablehlo.scatter"(%a, %i, %u) <{indices_are_sorted = false,
      scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [3, 4],
      inserted_window_dims = [1], input_batching_dims = [0],
      scatter_indices_batching_dims = [1], scatter_dims_to_operand_dims = [2, 1],
      index_vector_dim = 3>, unique_indices = false}> ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    %s = stablehlo.add %x, %y : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>, tensor<2x2x3x2x2xi64>) -> tensor<2x3x4x2xi64>
  %1 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [3, 4],
      collapsed_slice_dims = [1], operand_batching_dims = [0],
      start_indices_batching_dims = [1], start_index_map = [2, 1], index_vector_dim = 3>,
      indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 2, 2>}>
    : (tensor<2x3x4x2xi64>, tensor<2x2x3x2xi64>) -> tensor<2x2x3x2x2xi64>
  return %0, %1 : tensor<2x3x4x2xi64>, tensor<2x2x3x2x2xi64>
}
"""
BATCHED_INDICES = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                            [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]], np.int64)
JAX_SCATTER = [[[[3, 4], [6, 7], [6, 7], [7, 8]], [[9, 10], [11, 12], [15, 16], [17, 18]],
                [[17, 18], [19, 20], [22, 23], [24, 25]]],
               [[[25, 26], [28, 29], [30, 31], [31, 32]], [[35, 36], [38, 39], [38, 39],
                                                          [39, 40]],
                [[41, 42], [44, 45], [46, 47], [47, 48]]]]
JAX_GATHER = [[[[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
               [[[33, 34], [35, 36]], [[35, 36], [37, 38]], [[41, 42], [43, 44]]]],
              [[[[1, 2], [3, 4]], [[13, 14], [15, 16]], [[21, 22], [23, 24]]],
               [[[43, 44], [45, 46]], [[33, 34], [35, 36]], [[27, 28], [29, 30]]]]]


def test_batching_dimensions_match_jax() -> None:
    a = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    program, (scattered, gathered) = compile_and_run(
        BATCHED, [a, BATCHED_INDICES, np.ones((2, 2, 3, 2, 2), np.int64)])
    np.testing.assert_array_equal(scattered, JAX_SCATTER)
    np.testing.assert_array_equal(gathered, JAX_GATHER)
    assert any(isinstance(s.kernel, Scatter) for s in program.steps)


# Scalar indices (index_vector_dim = rank), indices far outside any i32 (skipped, not
# wrapped into range), and a non-commutative update applied in order.
SCATTERS = """
func.func @main(%a: tensor<5x3xf32>, %i: tensor<4xi64>, %u: tensor<4x3xf32>)
    -> tensor<5x3xf32> {
  %0 = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers =
      #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %h = stablehlo.constant dense<0.5> : tensor<f32>
    %m = stablehlo.multiply %x, %h : tensor<f32>
    %s = stablehlo.add %m, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5x3xf32>, tensor<4xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}
"""


def test_scalar_indices_far_outside_and_repeats() -> None:
    a = np.arange(15, dtype=np.float32).reshape(5, 3)
    u = np.arange(100, 112, dtype=np.float32).reshape(4, 3)
    i = np.array([2, 2**32 + 1, 2, -(2**40)], np.int64)
    _, (got,) = compile_and_run(SCATTERS, [a, i, u])
    want = a.copy()
    want[2] = (want[2] * 0.5 + u[0]) * 0.5 + u[2]
    np.testing.assert_array_equal(got, want)


def test_select_and_scatter() -> None:
    """The spec's example, and a max pool's gradient with padding, strides smaller than
    the window (positions selected twice add up) and ties (the first is kept)."""
    from reference.test_reference_regions import SELECT_AND_SCATTER

    _, (got,) = compile_and_run(SELECT_AND_SCATTER, [
        np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64), np.array([[5, 6], [7, 8]],
                                                                        np.int64)])
    np.testing.assert_array_equal(got, [[0, 0], [0, 0], [5, 14], [7, 0]])
    text = SELECT_AND_SCATTER.replace("tensor<4x2xi64>", "tensor<5x4xi64>").replace(
        "tensor<2x2xi64>, tensor<i64>", "tensor<3x2xi64>, tensor<i64>").replace(
        "%s: tensor<2x2xi64>", "%s: tensor<3x2xi64>").replace(
        "array<i64: 3, 1>, window_strides = array<i64: 2, 1>",
        "array<i64: 3, 3>, window_strides = array<i64: 2, 2>").replace(
        "dense<[[0, 1], [0, 0]]>", "dense<[[1, 1], [1, 0]]>")
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (5, 4)).astype(np.int64)  # many ties
    compile_and_run(text, [x, rng.integers(1, 9, (3, 2)).astype(np.int64)])


# The StableHLO interpreter's sort test for its issue 2440: columns sorted along
# dimension 0 (a stride between the sorted elements), with ties.
SORT_COLUMNS = """
func.func @main(%x: tensor<5x7xi64>) -> tensor<5x7xi64> {
  %r = "stablehlo.sort"(%x) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<5x7xi64>) -> tensor<5x7xi64>
  return %r : tensor<5x7xi64>
}
"""


def test_sort_columns() -> None:
    x = np.array([[0, 1, 1, -3, -3, -2, 0], [4, -1, 3, 0, 4, 0, -3], [1, 0, 0, 0, 0, 2, 3],
                  [-3, -4, -4, -2, 0, 3, 3], [0, 5, 2, -2, 0, -2, 0]], np.int64)
    _, (got,) = compile_and_run(SORT_COLUMNS, [x])
    np.testing.assert_array_equal(got, [[-3, -4, -4, -3, -3, -2, -3], [0, -1, 0, -2, 0, -2, 0],
                                        [0, 0, 1, -2, 0, 0, 0], [1, 1, 2, 0, 0, 2, 3],
                                        [4, 5, 3, 0, 4, 3, 3]])
