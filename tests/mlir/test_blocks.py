"""Blocks, branches and forward references: functions and regions with several blocks,
`cf.br` / `cf.cond_br` with block arguments, and values used before the (dominating)
block that defines them is printed, which MLIR allows."""

from __future__ import annotations

import pytest
from mlir_trees import assert_roundtrip

from toolchain.diagnostics import CompileError
from toolchain.mlir import parse_text


def blocks_of(text: str):
    module = parse_text(text, "blocks.mlir")
    assert_roundtrip(module)
    func = module.regions[0].blocks[0].ops[0]
    return func.regions[0].blocks


def test_a_loop_of_blocks_with_a_forward_reference() -> None:
    # ^exit uses %next, defined in ^body, which is printed after it.
    blocks = blocks_of("""
func.func @main(%n: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  cf.br ^head(%zero : tensor<i32>)
^head(%i: tensor<i32>):
  %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %c = "builtin.unrealized_conversion_cast"(%lt) : (tensor<i1>) -> i1
  cf.cond_br %c, ^body, ^exit
^exit:
  return %i : tensor<i32>
^body:
  %one = stablehlo.constant dense<1> : tensor<i32>
  %next = stablehlo.add %i, %one : tensor<i32>
  cf.br ^head(%next : tensor<i32>)
}
""")
    assert [len(b.args) for b in blocks] == [1, 1, 0, 0]
    entry, head, exit_, body = blocks
    assert entry.ops[-1].successors == [head]
    assert head.ops[-1].successors == [body, exit_]
    assert body.ops[-1].operands == [body.ops[1].results[0]]
    assert exit_.ops[0].operands == head.args


def test_forward_reference_to_a_later_block_value() -> None:
    blocks = blocks_of("""
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  cf.br ^def
^use:
  %u = stablehlo.add %v, %v : tensor<f32>
  return %u : tensor<f32>
^def:
  %v = stablehlo.negate %a : tensor<f32>
  cf.br ^use
}
""")
    use, define = blocks[1], blocks[2]
    assert use.ops[0].operands == [define.ops[0].results[0]] * 2


def test_block_labels_are_scoped_by_region() -> None:
    blocks = blocks_of("""
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  cf.br ^bb1
^bb1:
  %0 = "test.region"(%a) ({
    cf.br ^bb1
  ^bb1:
    "test.yield"(%a) : (tensor<f32>) -> ()
  }) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
""")
    inner = blocks[1].ops[0].regions[0].blocks
    assert inner[0].ops[0].successors == [inner[1]]
    assert blocks[0].ops[0].successors == [blocks[1]]


def test_a_use_in_a_closed_sibling_region_is_not_resolved_by_a_later_definition() -> None:
    text = """
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = "test.a"() ({
    "test.yield"(%x) : (tensor<f32>) -> ()
  }) : () -> tensor<f32>
  %1 = "test.b"() ({
    %x = stablehlo.negate %a : tensor<f32>
    "test.yield"(%x) : (tensor<f32>) -> ()
  }) : () -> tensor<f32>
  return %1 : tensor<f32>
}
"""
    with pytest.raises(CompileError, match="use of undefined value '%x'") as info:
        parse_text(text)
    assert info.value.loc.line_col == (4, 18)


def test_generic_successors_with_legacy_arguments_are_operands() -> None:
    # The LangRef's older `[^bb1(%a : T)]` spelling: the arguments are operands.
    new = blocks_of("""
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  "cf.br"(%a)[^bb1] : (tensor<f32>) -> ()
^bb1(%x: tensor<f32>):
  return %x : tensor<f32>
}
""")
    old = blocks_of("""
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  "cf.br"()[^bb1(%a : tensor<f32>)] : () -> ()
^bb1(%x: tensor<f32>):
  return %x : tensor<f32>
}
""")
    assert len(old[0].ops[0].operands) == len(new[0].ops[0].operands) == 1


def test_cf_assert_and_cond_br_without_arguments() -> None:
    blocks = blocks_of("""
func.func @main(%p: i1, %a: tensor<f32>) -> tensor<f32> {
  cf.assert %p, "p must hold"
  cf.cond_br %p, ^bb1, ^bb1
^bb1:
  return %a : tensor<f32>
}
""")
    assert blocks[0].ops[0].attr("msg").value == "p must hold"
    assert blocks[0].ops[1].successors == [blocks[1], blocks[1]]


def test_a_branch_outside_any_region_is_an_error() -> None:
    with pytest.raises(CompileError, match="a branch must be inside a region"):
        parse_text("cf.br ^bb1\n")
