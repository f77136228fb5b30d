"""Round trip: model -> generic form -> parse -> import gives the same graph, and the
generic text is a fixed point of print(parse(.))."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.graph.printer import print_graph
from toolchain.mlir import parse_file, parse_text
from toolchain.mlir.printer import print_generic


def graph_text(graph: Graph) -> str:
    """print_graph without the `// file:line:col` comments (the files differ)."""
    return re.sub(r"  // .*$", "", print_graph(graph), flags=re.M)


def assert_same_graph(a: Graph, b: Graph) -> None:
    assert graph_text(a) == graph_text(b)
    assert len(a.nodes) == len(b.nodes)
    for x, y in zip(a.nodes, b.nodes, strict=True):
        assert x.op == y.op
        for key, v in x.attrs.items():
            w = y.attrs[key]
            if isinstance(v, np.ndarray):  # bit-exact, NaN payloads and -0.0 included
                assert v.dtype == w.dtype and v.shape == w.shape
                assert v.tobytes() == w.tobytes(), key
            else:
                assert v == w, key


def check_roundtrip(module, name: str) -> None:
    text = print_generic(module)
    again = parse_text(text, f"{name}.generic.mlir")
    assert print_generic(again) == text  # fixed point
    assert_same_graph(import_module(module), import_module(again))


def test_shared_model_roundtrip(shared_model: Path) -> None:
    check_roundtrip(parse_file(shared_model), shared_model.stem)


# Snippets in pretty form covering the constructs the models do not use.
SNIPPETS = {
    "elementwise": """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  %1 = stablehlo.tanh %0 : tensor<2x3xf32>
  %2 = stablehlo.compare GE, %1, %b, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %3 = stablehlo.select %2, %1, %a : tensor<2x3xi1>, tensor<2x3xf32>
  %4 = stablehlo.clamp %a, %3, %b : tensor<2x3xf32>
  return %4, %2 : tensor<2x3xf32>, tensor<2x3xi1>
}
""",  # noqa: E501 (MLIR lines as JAX prints them)
    "shapes": """
func.func @main(%a: tensor<2x3xf32>) -> tensor<3x8xf32> {
  %c = stablehlo.constant dense<[[1.0, -0.0, 0x7FC00001], [0xFF800000, 2.5, 1.0e-30]]> : tensor<2x3xf32>
  %0 = stablehlo.concatenate %a, %c, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.pad %1, %z, low = [0, 1], high = [0, -1], interior = [0, 1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x7xf32>
  %3 = stablehlo.slice %2 [0:3, 0:7:2] : (tensor<3x7xf32>) -> tensor<3x4xf32>
  %4 = stablehlo.reshape %3 : (tensor<3x4xf32>) -> tensor<3x2x2xf32>
  %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1, 2] : (tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
  %6 = stablehlo.reshape %5 : (tensor<3x2x2xf32>) -> tensor<3x4xf32>
  %7 = stablehlo.iota dim = 1 : tensor<3x4xi32>
  %8 = stablehlo.convert %7 : (tensor<3x4xi32>) -> tensor<3x4xf32>
  %9 = stablehlo.concatenate %6, %8, dim = 1 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  return %9 : tensor<3x8xf32>
}
""",  # noqa: E501 (MLIR lines as JAX prints them)
    "contractions": """
func.func @main(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x1x4xf32>, %m: tensor<2x4x5xbf16>) -> (tensor<1x3x3x4xf32>, tensor<2x5x5xf32>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {feature_group_count = 4 : i64} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x3x3x4xf32>
  %1 = stablehlo.dot_general %m, %m, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x4x5xbf16>, tensor<2x4x5xbf16>) -> tensor<2x5x5xf32>
  return %0, %1 : tensor<1x3x3x4xf32>, tensor<2x5x5xf32>
}
""",  # noqa: E501 (MLIR lines as JAX prints them)
    "reductions_calls_resources": """
#loc = loc("r.py":1:1)
!t = tensor<2x4xf32>
module @m {
  func.func private @"helper fn"(%a: !t) -> tensor<2xf32> {
    %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %c) applies stablehlo.maximum across dimensions = [1] : (!t, tensor<f32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func @main(%a: !t {jax.arg_info = "a"}) -> (tensor<2xf32> {jax.result_info = ""}) {
    %w = stablehlo.constant dense_resource<blob> : !t
    %0 = stablehlo.multiply %a, %w : !t loc(#loc)
    %1 = call @"helper fn"(%0) : (!t) -> tensor<2xf32>
    %i = stablehlo.constant dense<[true, false]> : tensor<2xi1>
    %2 = stablehlo.negate %1 : tensor<2xf32>
    %3 = stablehlo.select %i, %1, %2 : tensor<2xi1>, tensor<2xf32>
    return %3 : tensor<2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041"
    }
  }
#-}
""",  # noqa: E501 (MLIR lines as JAX prints them)
    "gather_batchnorm_window_int": """
func.func @main(%t: tensor<5x3xf32>, %i: tensor<2xi32>, %x: tensor<1x4x4x2xf32>, %s: tensor<2xf32>, %n: tensor<6xi8>) -> (tensor<2x3xf32>, tensor<1x2x2x2xf32>, tensor<6xi8>) {
  %0 = "stablehlo.gather"(%t, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}> : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  %1 = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) <{epsilon = 1.0E-3 : f32, feature_index = 3 : i64}> : (tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = "stablehlo.reduce_window"(%1, %c) <{padding = dense<[[0, 0], [1, 0], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, window_dilations = array<i64: 1, 1, 1, 1>}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>):
    %m = stablehlo.add %p, %q : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %k = stablehlo.constant dense<[-3, 3, 127, -128, 0x7F, -0x1]> : tensor<6xi8>
  %3 = stablehlo.divide %n, %k : tensor<6xi8>
  %4 = stablehlo.remainder %3, %k : tensor<6xi8>
  return %0, %2, %4 : tensor<2x3xf32>, tensor<1x2x2x2xf32>, tensor<6xi8>
}
""",  # noqa: E501 (MLIR lines as JAX prints them)
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_roundtrip(name: str) -> None:
    check_roundtrip(parse_text(SNIPPETS[name], f"{name}.mlir"), name)

