"""The names MLIR locations give ops (mlir/locations.py), carried to the graph nodes
and to the dispatches they are fused into (schedule/sources.py)."""

from __future__ import annotations

import pytest

from toolchain.loader import load_graph
from toolchain.mlir.locations import location_name
from toolchain.mlir.parser import parse_text
from toolchain.mlir.type_attribute_parser import OpaqueAttr
from toolchain.pipeline import prepare_graph
from toolchain.report.layers import layers_of_program
from toolchain.schedule import schedule

ALIASES = {"loc1": OpaqueAttr("loc", '"model.py":3:4'),
           "loc2": OpaqueAttr("loc", '"dense/matmul"(#loc1)'),
           "self": OpaqueAttr("loc", "#self")}


@pytest.mark.parametrize("body, name", [
    ('"conv1"', "conv1"),
    ('"conv1"("model.py":3:4)', "conv1"),
    ('"model.py":3:4', ""),
    ("unknown", ""),
    ("#loc2", "dense/matmul"),
    ("#loc1", ""),
    ("#missing", ""),
    ("#self", ""),  # a cyclic alias names nothing, and ends
    ('fused["relu", "bias"]', "relu;bias"),
    ('fused<"meta">["a"("f.py":1:1), #loc2]', "a;dense/matmul"),
    ('callsite("inner" at "outer")', "inner"),
    (r'"quote\"d"', 'quote"d'),
])
def test_location_forms(body: str, name: str) -> None:
    assert location_name(body, ALIASES) == name


# JAX prints its location aliases after the module, as here.
MODEL = """module {
  func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>) -> tensor<2xf32> {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
         : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc(#loc3)
    %z = stablehlo.constant dense<0.0> : tensor<2x3xf32> loc(#loc1)
    %1 = stablehlo.maximum %0, %z : tensor<2x3xf32> loc(fused["relu1", "act"])
    %2 = stablehlo.exponential %1 : tensor<2x3xf32>
    %s = stablehlo.constant dense<0.0> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %s) applies stablehlo.add across dimensions = [1]
         : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32> loc("head/sum")
    return %3 : tensor<2xf32>
  }
}
#loc1 = loc("model.py":3:4)
#loc3 = loc("jit(f)/jit(main)/dense1/dot_general"(#loc1))
"""


def test_ops_keep_their_location_names(tmp_path) -> None:
    module = parse_text(MODEL)
    names = [op.loc_name for op in module.walk() if op.name.startswith("stablehlo.")]
    assert "jit(f)/jit(main)/dense1/dot_general" in names and "relu1;act" in names
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    graph = load_graph(path)
    by_op = {n.op: n.source for n in graph.nodes}
    assert by_op["dot_general"].name == "jit(f)/jit(main)/dense1/dot_general"
    assert by_op["dot_general"].origin.startswith("mlir stablehlo.dot_general at ")
    assert by_op["maximum"].name == "relu1;act"
    assert by_op["exponential"] is None  # no loc: no name


def test_a_fused_dispatch_lists_its_ops_and_is_named_after_the_heaviest(tmp_path) -> None:
    path = tmp_path / "model.mlir"
    path.write_text(MODEL)
    graph = load_graph(path)
    prepare_graph(graph)
    layers = layers_of_program(schedule(graph))
    dot = next(layer for layer in layers if layer.kind == "dot_general")
    # The ReLU (and the unnamed exponential) are the dot's epilogue: one dispatch, both
    # names, labelled by the dot's layer with the jit wrappers dropped.
    assert [s["name"] for s in dot.sources][:2] == ["jit(f)/jit(main)/dense1/dot_general",
                                                    "relu1;act"]
    assert dot.label == "dense1"
    assert dot.function.startswith("d") and "dot_general" in dot.function
