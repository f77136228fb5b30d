"""dynamic_slice and dynamic_update_slice (what lax.scan reads and writes its rows
with): the spec's examples, where start indices are clamped so that the window stays
inside, on the reference and through the kernel lowering (tests/host_program.py)."""

from __future__ import annotations

import numpy as np
from host_program import run_program

from toolchain.frontend.stablehlo import import_module
from toolchain.mlir.parser import parse_text
from toolchain.passes import fold_constants
from toolchain.reference import run_graph
from toolchain.schedule import schedule

SLICES = """
func.func @main(%x: tensor<4x4xi32>, %u: tensor<2x2xi32>, %i: tensor<i64>, %j: tensor<i64>)
    -> (tensor<2x2xi32>, tensor<4x4xi32>) {
  %s = stablehlo.dynamic_slice %x, %i, %j, sizes = [2, 2]
      : (tensor<4x4xi32>, tensor<i64>, tensor<i64>) -> tensor<2x2xi32>
  %d = stablehlo.dynamic_update_slice %x, %u, %i, %j
      : (tensor<4x4xi32>, tensor<2x2xi32>, tensor<i64>, tensor<i64>) -> tensor<4x4xi32>
  return %s, %d : tensor<2x2xi32>, tensor<4x4xi32>
}
"""


def run_both(x, u, i, j):
    graph = import_module(parse_text(SLICES, "test.mlir"))
    inputs = [x, u, np.int64(i), np.int64(j)]
    want = run_graph(graph, inputs)
    got = run_program(schedule(fold_constants(graph)), inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return want


def test_spec_examples_clamp_the_start() -> None:
    x = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], np.int32)
    sliced, _ = run_both(x, np.zeros((2, 2), np.int32), -1, 3)
    np.testing.assert_array_equal(sliced, [[1, 1], [1, 1]])
    x = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]], np.int32)
    _, updated = run_both(x, np.ones((2, 2), np.int32), -1, 3)
    np.testing.assert_array_equal(updated, np.ones((4, 4)))


def test_starts_far_outside_clamp_instead_of_wrapping() -> None:
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    u = np.array([[-1, -2], [-3, -4]], np.int32)
    sliced, updated = run_both(x, u, 2**32 + 1, -(2**40))
    np.testing.assert_array_equal(sliced, x[2:4, 0:2])
    want = x.copy()
    want[2:4, 0:2] = u
    np.testing.assert_array_equal(updated, want)
