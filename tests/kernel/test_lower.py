"""Lowering rules, checked through the kernel interpreter against the reference."""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import Apply, postorder
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


def test_narrow_float_products_are_formed_in_the_accumulator(tmp_path) -> None:
    """A bf16 / f16 dot or convolution multiplies in f32, its accumulator: a product
    rounded to bf16 first made 0.3047 * 3.5 - 0.2412 * 4.25 come out 0.0391 instead of
    0.0413 (found by the random graph fuzzer)."""
    text = """
func.func @main(%a: tensor<1x2xbf16>, %b: tensor<2x1xbf16>, %x: tensor<1x1x2xf16>,
                %w: tensor<1x1x2xf16>) -> (tensor<1x1xbf16>, tensor<1x1x1xf16>) {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
       : (tensor<1x2xbf16>, tensor<2x1xbf16>) -> tensor<1x1xbf16>
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
       window = {} {feature_group_count = 1 : i64, batch_group_count = 1 : i64}
       : (tensor<1x1x2xf16>, tensor<1x1x2xf16>) -> tensor<1x1x1xf16>
  return %d, %c : tensor<1x1xbf16>, tensor<1x1x1xf16>
}
"""
    path = tmp_path / "narrow.mlir"
    path.write_text(text)
    graph = load_graph(path)
    for node in graph.nodes:
        k = lower_node(node)
        assert k.body.op == "multiply" and k.body.dtype.name == "f32", node.op
        assert k.result.dtype == node.output.type.dtype


def test_gather_clamps_starts_in_the_index_type(tmp_path) -> None:
    """A ui32 start of 4294967295 clamps to the last valid start, not through INDEX,
    where it wrapped to -1 and clamped to 0 (found by the random graph fuzzer)."""
    text = """
func.func @main(%x: tensor<5x3xi8>, %i: tensor<2x1xui32>) -> tensor<2x3xi8> {
  %g = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
       collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
       slice_sizes = array<i64: 1, 3>}> : (tensor<5x3xi8>, tensor<2x1xui32>) -> tensor<2x3xi8>
  return %g : tensor<2x3xi8>
}
"""
    path = tmp_path / "gather.mlir"
    path.write_text(text)
    graph = load_graph(path)
    k = lower_node(graph.nodes[-1])
    clamps = [e for e in postorder(k.body) if isinstance(e, Apply) and e.op == "clamp"]
    assert [e.dtype.name for e in clamps] == ["ui32"]
    x = np.arange(15, dtype=np.int8).reshape(5, 3)
    i = np.array([[4294967295], [1]], dtype=np.uint32)
    np.testing.assert_array_equal(run_graph(graph, [x, i])[0], x[[4, 1]])
