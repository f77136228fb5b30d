"""StableHLO import: op conversion, call inlining, entry selection, error collection."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.cli import build
from toolchain.diagnostics import CompileError
from toolchain.frontend import import_module
from toolchain.graph.ir import Graph
from toolchain.mlir import parse_text
from toolchain.reference import run_graph


def load(text: str, entry: str = "main") -> Graph:
    return import_module(parse_text(text, "m.mlir"), entry)


def errors(text: str, entry: str = "main") -> list[tuple[str, tuple[int, int] | None]]:
    with pytest.raises(CompileError) as info:
        load(text, entry)
    all_errors = [info.value, *info.value.notes]
    return [(e.message, e.loc.line_col if e.loc else None) for e in all_errors]


NESTED = """
func.func private @inner(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @middle(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = call @inner(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = func.call @inner(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = stablehlo.add %1, %y : tensor<3xf32>
  return %2, %0 : tensor<3xf32>, tensor<3xf32>
}
func.func @main(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0:2 = call @middle(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#1, %0#0 : tensor<3xf32>, tensor<3xf32>
}
func.func @other(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.negate %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def test_nested_calls_are_inlined() -> None:
    g = load(NESTED)
    assert [n.op for n in g.nodes] == ["multiply", "multiply", "add"]
    a = np.array([1.0, 2.0, -3.0], np.float32)
    sq, quad_plus = run_graph(g, [a])
    np.testing.assert_array_equal(sq, a * a)
    np.testing.assert_array_equal(quad_plus, a**4 + a)
    # Inlined nodes point at the callee's source lines.
    assert g.nodes[0].loc.line_col == (3, 8)


def test_entry_selects_another_function() -> None:
    g = load(NESTED, "other")
    assert g.name == "other" and [n.op for n in g.nodes] == ["negate"]


def test_entry_on_the_command_line(tmp_path, capsys) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(NESTED)
    assert build.main(["--dump-ir", str(path), "--entry", "other"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph @other(%arg0: tensor<3xf32>)") and "negate" in out
    assert build.main(["--dump-ir", str(path), "--entry", "inner"]) == 0
    assert "graph @inner" in capsys.readouterr().out


def test_unknown_entry_lists_the_functions() -> None:
    ((message, _),) = errors(NESTED, "nope")
    assert message == ("no function '@nope' in the module "
                       "(functions: @inner, @middle, @main, @other)")


def test_recursion_is_an_error() -> None:
    text = """
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = call @f(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @f(%a: tensor<f32>) -> tensor<f32> {
  %0 = call @g(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @g(%a: tensor<f32>) -> tensor<f32> {
  %0 = call @f(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
"""
    assert errors(text) == [("recursive call to '@f' cannot be inlined", (11, 8))]


def test_call_result_types_must_match_callee() -> None:
    text = """
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
func.func @main(%a: tensor<2xf32>) -> tensor<2xi32> {
  %0 = call @f(%a) : (tensor<2xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
"""
    ((message, loc),) = errors(text)
    assert "do not match the signature of '@f'" in message and loc == (6, 8)


def test_function_without_arguments_is_a_model() -> None:
    g = load("""
func.func @main() -> (tensor<2x3xi32>, tensor<f32>) {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  %1 = stablehlo.constant dense<2.5> : tensor<f32>
  return %0, %1 : tensor<2x3xi32>, tensor<f32>
}
""")
    assert g.inputs == []
    iota, c = run_graph(g, [])
    np.testing.assert_array_equal(iota, [[0, 1, 2], [0, 1, 2]])
    assert c.shape == () and c == 2.5


def test_scalar_types_and_arith_constant() -> None:
    g = load("""
func.func @main(%a: f32) -> f32 {
  %c = arith.constant 2.0 : f32
  %0 = stablehlo.multiply %a, %c : f32
  return %0 : f32
}
""")
    (out,) = run_graph(g, [np.float32(3.0)])
    assert out.shape == () and out == 6.0


def test_returning_an_argument_directly() -> None:
    g = load("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
             "  return %a : tensor<2xf32>\n}\n")
    assert g.nodes == [] and g.outputs == g.inputs


def test_pretty_and_generic_dot_become_dot_general() -> None:
    g = load("""
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.dot %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
""")
    (node,) = g.nodes
    assert node.op == "dot_general"
    assert (node.attrs["lhs_contract"], node.attrs["rhs_contract"]) == ((1,), (0,))


def test_reduction_bodies() -> None:
    text = """
func.func @main(%a: tensor<2x4xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.multiply across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = stablehlo.reduce(%0 init: %c) across dimensions = [] : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.subtract %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
  return %1 : tensor<2xf32>
}
"""  # noqa: E501
    # A single-op body is the `kind` fast path; any other body stays a region.
    g = load(text)
    assert [n.op for n in g.nodes] == ["constant", "reduce", "reduce_region"]
    assert g.nodes[1].attrs["kind"] == "multiply"
    (body,) = g.nodes[2].regions
    assert [n.op for n in body.nodes] == ["subtract"]


def test_all_problems_are_reported_together() -> None:
    text = """
func.func @main(%a: tensor<?xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "foo.bar"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.reshape %0 : (tensor<4xf32>) -> tensor<5xf32>
  %2 = call @missing(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "stablehlo.while"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""
    got = errors(text)
    assert [loc for _, loc in got] == [(2, 1), (3, 8), (4, 8), (5, 8), (6, 8)]
    assert "argument 0" in got[0][0]
    assert "unsupported op 'foo.bar'" in got[1][0]
    assert "element count" in got[2][0]
    assert "unknown function '@missing'" in got[3][0]
    assert "'while' takes 2 regions, got 0" in got[4][0]


def test_unsupported_attribute_values_are_reported() -> None:
    text = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.reverse"(%a) {dimensions = "zero"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "stablehlo.compare"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xf32>
}
"""
    got = errors(text)
    assert got[0] == ("'stablehlo.reverse': attribute 'dimensions' must be a list of integers",
                      (3, 8))
    assert got[1] == ("'stablehlo.compare': missing attribute 'comparison_direction'", (4, 8))


def test_deeply_nested_calls_are_an_error_not_a_recursion_error() -> None:
    from generated_models import nested_calls

    from toolchain.frontend.stablehlo import MAX_CALL_DEPTH

    graph = import_module(parse_text(nested_calls(MAX_CALL_DEPTH)))
    assert [n.op for n in graph.nodes] == ["add"]
    with pytest.raises(CompileError) as info:
        import_module(parse_text(nested_calls(1000)))
    assert info.value.message == f"calls nested more than {MAX_CALL_DEPTH} deep cannot be inlined"
    assert info.value.loc is not None and info.value.loc.line_col == (4 * MAX_CALL_DEPTH + 2, 8)


def test_oversized_argument_is_located() -> None:
    text = ("func.func @main(%a: tensor<100000x100000xf32>) -> tensor<2xf32> {\n"
            "  %0 = stablehlo.constant dense<0.0> : tensor<2xf32>\n"
            "  return %0 : tensor<2xf32>\n}\n")
    with pytest.raises(CompileError) as info:
        import_module(parse_text(text))
    assert info.value.loc is not None and info.value.loc.line_col == (1, 1)
    assert "argument 0 of '@main': 'tensor<100000x100000xf32>' takes 40000000000 bytes" in \
        info.value.message
