"""Lowering rules, checked through the kernel interpreter against the reference."""

from __future__ import annotations

import numpy as np

from toolchain.kernel.interpret import run_kernel
from toolchain.kernel.lower import lower_node
from toolchain.loader import load_graph, random_inputs
from toolchain.reference import run_graph


def _run_lowered(graph, inputs):
    env = {id(t): x for t, x in zip(graph.inputs, inputs)}
    for node in graph.nodes:
        if node.op == "constant":
            env[id(node.output)] = node.attrs["value"]
        else:
            env[id(node.output)] = run_kernel(lower_node(node), [env[id(t)] for t in node.inputs])
    return [env[id(t)] for t in graph.outputs]


def test_every_node_of_every_model_lowers_exactly(shared_model) -> None:
    graph = load_graph(shared_model)
    inputs = random_inputs(graph, seed=3)
    for got, want in zip(_run_lowered(graph, inputs), run_graph(graph, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ops_the_models_do_not_use(tmp_path) -> None:
    text = """
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2xi32>) -> (tensor<5x6xf32>, tensor<4x3xf32>,
    tensor<3x8xf32>, tensor<2x4xf32>, tensor<3x4xf32>) {
  %z = stablehlo.constant dense<0.5> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [1, -1], high = [1, 0], interior = [0, 1]
       : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x6xf32>
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %c = stablehlo.concatenate %x, %x, dim = 1
       : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
       collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
       slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  %r = stablehlo.reverse %x, dims = [0, 1] : tensor<3x4xf32>
  return %p, %t, %c, %g, %r : tensor<5x6xf32>, tensor<4x3xf32>, tensor<3x8xf32>,
         tensor<2x4xf32>, tensor<3x4xf32>
}
"""
    path = tmp_path / "ops.mlir"
    path.write_text(text)
    graph = load_graph(path)
    inputs = [np.arange(12, dtype=np.float32).reshape(3, 4), np.array([2, -5], np.int32)]
    for got, want in zip(_run_lowered(graph, inputs), run_graph(graph, inputs)):
        np.testing.assert_array_equal(got, want)
