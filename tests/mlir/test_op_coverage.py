"""Every op of the StableHLO spec and of CHLO has a pretty-form parser, and the
inherent-attribute table moves an op's own attributes to its properties."""

from __future__ import annotations

import pytest

from toolchain.diagnostics import CompileError
from toolchain.mlir import parse_text
from toolchain.mlir.chlo_syntax import CHLO_OPS
from toolchain.mlir.custom_syntax import SYNTAX
from toolchain.mlir.inherent import INHERENT
from toolchain.mlir.stablehlo_ops import SPEC_OPS

# CHLO's ops as its op definitions name them (stablehlo/dialect/ChloOps.td).
CHLO_DEFINED = """_asin_acos_kernel acos acosh asin asinh atan atanh bessel_i1e
broadcast_add broadcast_and broadcast_atan2 broadcast_compare broadcast_complex
broadcast_divide broadcast_maximum broadcast_minimum broadcast_multiply
broadcast_next_after broadcast_or broadcast_polygamma broadcast_power broadcast_remainder
broadcast_select broadcast_shift_left broadcast_shift_right_arithmetic
broadcast_shift_right_logical broadcast_subtract broadcast_xor broadcast_zeta conj constant
constant_like cosh digamma erf erf_inv erfc is_inf is_neg_inf is_pos_inf lgamma mulhi
next_after polygamma ragged_dot scan sinh square tan top_k zeta""".split()  # noqa: SIM905


def test_every_stablehlo_op_has_a_parser() -> None:
    # cross-replica-sum cannot be a bare name (a '-' ends it): it is read quoted only.
    missing = [n for n in SPEC_OPS if f"stablehlo.{n}" not in SYNTAX and "-" not in n]
    assert missing == []
    extra = [k for k in SYNTAX if k.startswith("stablehlo.")
             and k.removeprefix("stablehlo.") not in SPEC_OPS]
    assert extra == ["stablehlo.return"]


def test_every_chlo_op_has_a_parser() -> None:
    assert sorted(f"chlo.{n}" for n in CHLO_DEFINED) == CHLO_OPS


def test_spec_table_has_the_spec_ops() -> None:
    spec = [n for n, op in SPEC_OPS.items() if op.origin == "spec"]
    assert len(spec) == 108  # the op sections under "Ops" in the spec (v1.20)
    assert {"while", "if", "case", "sort", "scatter", "fft", "rng_bit_generator"} <= set(spec)


def test_inherent_table_names_known_ops() -> None:
    unknown = [n for n in INHERENT if n not in SYNTAX and n != "stablehlo.cross-replica-sum"]
    assert unknown == []


@pytest.mark.parametrize("where", ["{%s}", "<{%s}>"])
def test_inherent_attributes_are_properties_wherever_written(where: str) -> None:
    attrs = "comparison_direction = #stablehlo<comparison_direction  LT>, mhlo.x = 1"
    text = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xi1> {\n"
            f'  %0 = "stablehlo.compare"(%a, %a) {where % attrs} : '
            "(tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>\n  return %0 : tensor<2xi1>\n}\n")
    op = parse_text(text).regions[0].blocks[0].ops[0].regions[0].blocks[0].ops[0]
    # The enum's spacing does not matter either.
    assert str(op.properties["comparison_direction"]) == "#stablehlo<comparison_direction LT>"
    # A discardable attribute stays where it was written.
    assert ("mhlo.x" in op.attributes) == (where == "{%s}")


def test_unknown_ops_of_a_complete_dialect_are_named() -> None:
    for name in ("chlo.foo", "stablehlo.frob"):
        with pytest.raises(CompileError, match=f"unknown operation '{name}'") as info:
            parse_text(f"func.func @f(%a: tensor<f32>) -> tensor<f32> {{\n"
                       f"  %0 = {name} %a : tensor<f32> -> tensor<f32>\n"
                       "  return %0 : tensor<f32>\n}\n")
        assert info.value.loc.line_col == (2, 8)
