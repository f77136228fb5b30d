"""StableHLO regions -> closed graph regions: values a region uses from outside become
explicit operands (captures), through any nesting, shared by all regions of a node."""

from __future__ import annotations

import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend.regions import MAX_REGION_DEPTH
from toolchain.frontend.stablehlo import import_module
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_text


def load(text: str):
    g = import_module(parse_text(text, "test.mlir"))
    verify_graph(g)
    return g


# lax.switch as JAX 0.10.2 exports it: the branches read %arg1 from the function body.
SWITCH = """
func.func @main(%arg0: tensor<i32>, %arg1: tensor<3x5xf32>, %arg2: tensor<f32>)
    -> tensor<3x5xf32> {
  %0 = "stablehlo.case"(%arg0) ({
    %2 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %3 = stablehlo.add %arg1, %2 : tensor<3x5xf32>
    stablehlo.return %3 : tensor<3x5xf32>
  }, {
    %3 = stablehlo.negate %arg1 : tensor<3x5xf32>
    stablehlo.return %3 : tensor<3x5xf32>
  }) : (tensor<i32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
"""


def test_captures_become_operands_shared_by_all_branches() -> None:
    g = load(SWITCH)
    (case,) = g.nodes
    # Operands: the index, then the captures in order of first use (%arg2, then %arg1).
    assert case.inputs == [g.inputs[0], g.inputs[2], g.inputs[1]]
    for branch in case.regions:
        assert [t.type for t in branch.inputs] == [g.inputs[2].type, g.inputs[1].type]
    # Branch 1 never reads %arg2 but takes it like every branch.
    (neg,) = case.regions[1].nodes
    assert neg.inputs == [case.regions[1].inputs[1]]


NESTED = """
func.func @main(%p: tensor<i1>, %q: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xf32>)
    -> tensor<4xf32> {
  %0 = "stablehlo.if"(%p) ({
    %1 = "stablehlo.if"(%q) ({
      %2 = func.call @twice(%y) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %2 : tensor<4xf32>
    }, {
      stablehlo.return %x : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    stablehlo.return %1 : tensor<4xf32>
  }, {
    stablehlo.return %y : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_nested_regions_capture_through_each_level_and_inline_calls() -> None:
    g = load(NESTED)
    (outer,) = g.nodes
    assert outer.inputs == [g.inputs[0], g.inputs[1], g.inputs[3], g.inputs[2]]
    then = outer.regions[0]
    (inner,) = then.nodes
    # The inner `if` captures %y and %x from the outer region's inputs for them.
    assert inner.inputs == [then.inputs[0], then.inputs[1], then.inputs[2]]
    assert [n.op for n in inner.regions[0].nodes] == ["add"]  # @twice, inlined


UNSUPPORTED_INSIDE = """
func.func @main(%p: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.if"(%p) ({
    %1 = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    stablehlo.return %1 : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_an_unsupported_op_inside_a_region_is_located() -> None:
    with pytest.raises(CompileError) as info:
        load(UNSUPPORTED_INSIDE)
    assert info.value.message == "unsupported op 'foo.bar'"
    assert info.value.loc.line_col == (4, 10)


def nested_ifs(depth: int) -> str:
    """A function of `depth` nested `if`s passing %x through."""
    text = "stablehlo.return %x : tensor<f32>"
    for level in range(depth):
        ret = "func.return" if level == depth - 1 else "stablehlo.return"
        text = (f'%r{level} = "stablehlo.if"(%p) ({{\n{text}\n}}, {{\n'
                'stablehlo.return %x : tensor<f32>\n}) : (tensor<i1>) -> tensor<f32>\n'
                f'{ret} %r{level} : tensor<f32>')
    return f"func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {{\n{text}\n}}\n"


def test_regions_nested_too_deep_are_refused() -> None:
    load(nested_ifs(MAX_REGION_DEPTH))
    with pytest.raises(CompileError, match=f"regions nested more than {MAX_REGION_DEPTH} deep"):
        load(nested_ifs(MAX_REGION_DEPTH + 1))
