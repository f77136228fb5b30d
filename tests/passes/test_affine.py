"""Per-channel affine folding (batch norm into the convolution / dot_general before it)."""

from __future__ import annotations

import numpy as np

from toolchain.frontend import import_module
from toolchain.graph.verify import verify_graph
from toolchain.loader import load_graph, random_inputs
from toolchain.mlir import parse_text
from toolchain.passes import fold_affine, fold_constants
from toolchain.reference import run_graph

BN = """
func.func @main(%x: tensor<1x6x6x2xf32>) -> tensor<1x6x6x3xf32> {
  %w = stablehlo.constant dense<[[[[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]]]]> : tensor<1x1x2x3xf32>
  %mean = stablehlo.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf32>
  %std = stablehlo.constant dense<[2.0, 0.5, 4.0]> : tensor<3xf32>
  %gamma = stablehlo.constant dense<[1.5, 1.0, -0.5]> : tensor<3xf32>
  %beta = stablehlo.constant dense<[0.0, 0.25, 1.0]> : tensor<3xf32>
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x6x6x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x6x6x3xf32>
  %m = stablehlo.broadcast_in_dim %mean, dims = [3] : (tensor<3xf32>) -> tensor<1x6x6x3xf32>
  %s = stablehlo.broadcast_in_dim %std, dims = [3] : (tensor<3xf32>) -> tensor<1x6x6x3xf32>
  %g = stablehlo.broadcast_in_dim %gamma, dims = [3] : (tensor<3xf32>) -> tensor<1x6x6x3xf32>
  %b = stablehlo.broadcast_in_dim %beta, dims = [3] : (tensor<3xf32>) -> tensor<1x6x6x3xf32>
  %0 = stablehlo.subtract %c, %m : tensor<1x6x6x3xf32>
  %1 = stablehlo.divide %0, %s : tensor<1x6x6x3xf32>
  %2 = stablehlo.multiply %1, %g : tensor<1x6x6x3xf32>
  %3 = stablehlo.add %2, %b : tensor<1x6x6x3xf32>
  return %3 : tensor<1x6x6x3xf32>
}
"""


def _graph(text: str = BN):
    return fold_constants(import_module(parse_text(text, "bn.mlir")))


def test_batch_norm_becomes_conv_plus_bias() -> None:
    x = np.random.default_rng(0).standard_normal((1, 6, 6, 2)).astype(np.float32)
    want = run_graph(_graph(), [x])[0]
    graph = fold_affine(_graph())
    verify_graph(graph)
    ops = [n.op for n in graph.nodes if n.op != "constant"]
    assert ops == ["convolution", "broadcast_in_dim", "add"]
    np.testing.assert_allclose(run_graph(graph, [x])[0], want, rtol=1e-6, atol=1e-6)


def test_shared_intermediate_is_not_folded_into_weights() -> None:
    text = BN.replace("return %3 : tensor<1x6x6x3xf32>",
                      "%4 = stablehlo.add %3, %c : tensor<1x6x6x3xf32>\n"
                      "  return %4 : tensor<1x6x6x3xf32>")
    x = np.random.default_rng(1).standard_normal((1, 6, 6, 2)).astype(np.float32)
    want = run_graph(_graph(text), [x])[0]
    graph = fold_affine(_graph(text))
    conv = next(n for n in graph.nodes if n.op == "convolution")
    w = conv.inputs[1].producer.attrs["value"]
    assert w[0, 0, 0, 1] == -2.0  # the weights still feed the conv's other user unscaled
    np.testing.assert_allclose(run_graph(graph, [x])[0], want, rtol=1e-6, atol=1e-6)


def test_models_keep_their_outputs(shared_model) -> None:
    graph = load_graph(shared_model)
    inputs = random_inputs(graph, seed=7)
    want = run_graph(graph, inputs)
    folded = fold_affine(fold_constants(load_graph(shared_model)))
    verify_graph(folded)
    for got, w in zip(run_graph(folded, inputs), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


QUANTIZE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = stablehlo.constant dense<7.000000e-04> : tensor<4xf32>
  %0 = stablehlo.divide %x, %s : tensor<4xf32>
  %1 = stablehlo.round_nearest_afz %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def test_a_division_that_is_rounded_stays_a_division() -> None:
    """4.6735497 / 7e-4 is 6676.4995 in f32, but 4.6735497 * (1 / 7e-4) is 6676.5: as
    QUANTIZE's division before its rounding, the reciprocal would move the integer."""
    graph = fold_affine(_graph(QUANTIZE))
    verify_graph(graph)
    assert [n.op for n in graph.nodes if n.op in ("divide", "multiply")] == ["divide"]
    x = np.array([4.6735497, 1.0, -2.0, 0.0], np.float32)
    assert run_graph(graph, [x])[0][0] == 6676.0
