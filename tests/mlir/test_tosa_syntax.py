"""TOSA's pretty forms (toolchain/mlir/tosa_syntax.py): each parses to the tree its
generic form gives, `print_generic` output parses back to the same text, and malformed
TOSA gets a located error.

The snippets follow upstream MLIR's own spellings: LLVM 20/21's `{attr = value}`
dictionaries with bare enum words, the newest MLIR's bound properties (`axis(0)`,
`values(dense<...>)`), `!tosa.shape<N>` types, the region ops' headers.
"""

from __future__ import annotations

import pytest

from toolchain.diagnostics import CompileError
from toolchain.mlir import parse_text
from toolchain.mlir.ir import DenseAttr, IntAttr, OpaqueAttr, Operation, StringAttr
from toolchain.mlir.printer import print_generic
from toolchain.types import OpaqueType

HEADER = "func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %q: tensor<4xi8>, " \
         "%c: tensor<i1>, %s: tensor<i32>) {\n"


def ops(body: str) -> list[Operation]:
    module = parse_text(HEADER + body + "\n  return\n}\n", "t.mlir")
    return module.regions[0].blocks[0].ops[0].regions[0].blocks[0].ops[:-1]


def roundtrip(body: str) -> None:
    text = print_generic(parse_text(HEADER + body + "\n  return\n}\n", "t.mlir"))
    assert print_generic(parse_text(text, "g.mlir")) == text


PRETTY = {
    "binary": "%0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>",
    "enum words": "%0 = tosa.clamp %a {min_val = 0.0 : f32, max_val = 1.0 : f32, "
                  "nan_mode = IGNORE} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "quoted keys and string enums": '%0 = tosa.maximum %a, %b {"nan_mode" = "PROPAGATE"} '
                                    ": (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>",
    "enum attribute": "%0 = tosa.maximum %a, %b {nan_mode = #tosa.nan_mode<IGNORE>} "
                      ": (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>",
    "const_shape and reshape": "%s0 = tosa.const_shape {values = dense<[3, 2]> : "
                               "tensor<2xindex>} : () -> !tosa.shape<2>\n"
                               "%0 = tosa.reshape %a, %s0 : (tensor<2x3xf32>, "
                               "!tosa.shape<2>) -> tensor<3x2xf32>",
    "bound properties": "%s0 = tosa.const_shape values(dense<[3, 2]> : tensor<2xindex>) "
                        ": () -> !tosa.shape<2>\n"
                        "%0 = tosa.transpose %a perms([1, 0]) : (tensor<2x3xf32>) -> "
                        "tensor<3x2xf32>\n"
                        "%1 = tosa.reduce_max %a axis(0) : (tensor<2x3xf32>) -> "
                        "tensor<1x3xf32>",
    "no space before the colon": "%s0 = tosa.const_shape {values = dense<[2, 1]> : "
                                 "tensor<2xindex>} : () -> !tosa.shape<2>\n"
                                 "%0 = tosa.tile %a, %s0: (tensor<2x3xf32>, !tosa.shape<2>) "
                                 "-> tensor<4x3xf32>",
    "several results": "%0, %1 = tosa.rfft2d %a : (tensor<2x3xf32>) -> (tensor<2x3xf32>, "
                       "tensor<2x3xf32>)",
    "rescale": '%m = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}> : () -> '
               "tensor<1xi32>\n"
               '%h = "tosa.const"() <{values = dense<30> : tensor<1xi8>}> : () -> '
               "tensor<1xi8>\n"
               '%z = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
               "%0 = tosa.rescale %q, %m, %h, %z, %z {rounding_mode = DOUBLE_ROUND, scale32 = "
               "true, per_channel = false, input_unsigned = false, output_unsigned = false} : "
               "(tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> "
               "tensor<4xi8>",
    "cond_if": "%0 = tosa.cond_if %c : tensor<i1> -> tensor<2x3xf32> {\n"
               "  %1 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>\n"
               "  tosa.yield %1 : tensor<2x3xf32>\n"
               "} else {\n"
               "  tosa.yield %a : tensor<2x3xf32>\n"
               "}",
    "cond_if with arguments": "%0 = tosa.cond_if %c (%x = %a) : tensor<i1> "
                              "(tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
                              "^bb0(%x: tensor<2x3xf32>):\n"
                              "  tosa.yield %x : tensor<2x3xf32>\n"
                              "} else {\n"
                              "^bb0(%x: tensor<2x3xf32>):\n"
                              "  tosa.yield %x : tensor<2x3xf32>\n"
                              "}",
    "while_loop": "%0:2 = tosa.while_loop (%i = %s, %v = %a) : (tensor<i32>, tensor<2x3xf32>) "
                  "-> (tensor<i32>, tensor<2x3xf32>) {\n"
                  "  %1 = tosa.greater_equal %s, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
                  "  tosa.yield %1 : tensor<i1>\n"
                  "} do {\n"
                  "^bb0(%i: tensor<i32>, %v: tensor<2x3xf32>):\n"
                  "  tosa.yield %i, %v : tensor<i32>, tensor<2x3xf32>\n"
                  "}",
    "const spellings": "%0 = tosa.const values(dense<[1, 2]> : tensor<2xi32>) : tensor<2xi32>\n"
                       "%1 = tosa.const {values = dense<3> : tensor<2xi32>} : () -> "
                       "tensor<2xi32>",
    "variables": "tosa.variable_write @state, %a : tensor<2x3xf32>\n"
                 "%0 = tosa.variable_read @state : tensor<2x3xf32>",
}


@pytest.mark.parametrize("body", PRETTY.values(), ids=PRETTY)
def test_pretty_form_round_trips(body: str) -> None:
    roundtrip(body)


def test_pretty_and_generic_forms_give_the_same_op() -> None:
    pretty = ops(PRETTY["rescale"])[-1]
    generic = ops(PRETTY["rescale"].rsplit("\n", 1)[0] + "\n"
                  '%0 = "tosa.rescale"(%q, %m, %h, %z, %z) <{rounding_mode = '
                  "#tosa<rounding_mode DOUBLE_ROUND>, scale32 = true, per_channel = false, "
                  "input_unsigned = false, output_unsigned = false}> : (tensor<4xi8>, "
                  "tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> "
                  "tensor<4xi8>")[-1]
    assert pretty.name == generic.name == "tosa.rescale"
    assert pretty.properties == generic.properties
    assert [v.type for v in pretty.results] == [v.type for v in generic.results]


def test_attribute_spellings() -> None:
    clamp = ops(PRETTY["enum words"])[0]
    assert clamp.attr("nan_mode") == OpaqueAttr("tosa", "nan_mode IGNORE")
    assert ops(PRETTY["quoted keys and string enums"])[0].attr("nan_mode") == \
        StringAttr("PROPAGATE")
    shape, transpose, reduce = ops(PRETTY["bound properties"])
    assert isinstance(shape.attr("values"), DenseAttr)
    assert shape.results[0].type == OpaqueType("!tosa.shape<2>")
    assert [i.value for i in transpose.attr("perms").items] == [1, 0]
    assert reduce.attr("axis") == IntAttr(0)


def test_region_ops_keep_their_regions() -> None:
    (if_op,) = ops(PRETTY["cond_if with arguments"])
    assert len(if_op.operands) == 2 and len(if_op.regions) == 2
    assert [len(b.args) for r in if_op.regions for b in r.blocks] == [1, 1]
    (loop,) = ops(PRETTY["while_loop"])
    assert len(loop.results) == 2
    cond, body = loop.regions
    # The condition's arguments are the header's names; the body spells its own.
    assert [a.name for a in cond.blocks[0].args] == ["i", "v"]
    assert len(body.blocks[0].args) == 2


@pytest.mark.parametrize("body, message", [
    ("%0 = tosa.add %a, %b : (tensor<2x3xf32>) -> tensor<2x3xf32>",
     "operation has 2 operands but its type lists 1"),
    ("%0 = tosa.add %a, %b {axis = } : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>",
     "expected attribute value"),
    ("%0 = tosa.transpose %a perms([1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>",
     "expected ')' to close 'perms('"),
    ("%0 = tosa.cond_if %c : tensor<i1> -> tensor<2x3xf32> {\n tosa.yield %a : "
     "tensor<2x3xf32>\n}", "expected 'else'"),
])
def test_malformed_tosa_is_located(body: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        ops(body)
    assert message in info.value.message
    assert info.value.loc is not None and info.value.loc.line_col[0] >= 2
