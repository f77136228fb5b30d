"""Struct attributes (`#stablehlo.dot<...>` and relatives): fields in any order, once
each, an optional trailing comma; one canonical StructAttr whatever the spelling."""

from __future__ import annotations

import pytest
from mlir_trees import assert_roundtrip

from toolchain.diagnostics import CompileError
from toolchain.mlir import parse_text
from toolchain.mlir.ir import BoolAttr, StructAttr, TypeAttr
from toolchain.mlir.struct_attrs import STRUCTS
from toolchain.types import OpaqueType, dtype


def attr(text: str) -> StructAttr:
    """The value of `#a = <text>` as the parser reads it."""
    module = parse_text(f"#a = {text}\nfunc.func @f() attributes {{x = #a}} {{\n  return\n}}\n")
    func = module.regions[0].blocks[0].ops[0]
    assert_roundtrip(module)
    return func.attr("x")


# The held-out failure: a trailing comma before `>`, as some exporters print them.
@pytest.mark.parametrize("text", [
    "#stablehlo.dot<lhs_contracting_dimensions = [1],\n rhs_contracting_dimensions = [0],\n>",
    "#stablehlo.dot<rhs_contracting_dimensions = [0], lhs_contracting_dimensions = [1]>",
    "#stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [],"
    " lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>",
])
def test_dot_spellings_are_one_attribute(text: str) -> None:
    assert attr(text) == StructAttr("stablehlo.dot", (("lhs_contracting_dimensions", (1,)),
                                                      ("rhs_contracting_dimensions", (0,))))


@pytest.mark.parametrize("text, fields", [
    ("#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
     "scatter_dims_to_operand_dims = [0], index_vector_dim = 1,>",
     (("update_window_dims", (1,)), ("inserted_window_dims", (0,)),
      ("scatter_dims_to_operand_dims", (0,)), ("index_vector_dim", 1))),
    ("#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
     "start_index_map = [0], index_vector_dim = 0,\n>",
     (("offset_dims", (1,)), ("collapsed_slice_dims", (0,)), ("start_index_map", (0,)))),
    ("#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 1,"
     " operand_tuple_indices = [],>",
     (("output_tuple_indices", (0,)), ("operand_index", 1))),
    ("#stablehlo.channel_handle<handle = 1, type = 2,>", (("handle", 1), ("type", 2))),
    ("#chlo.ragged_dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], "
     "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2], "
     "lhs_ragged_dimensions = [1], rhs_group_dimensions = [0],>",
     (("lhs_batching_dimensions", (0,)), ("rhs_batching_dimensions", (1,)),
      ("lhs_contracting_dimensions", (2,)), ("rhs_contracting_dimensions", (2,)),
      ("lhs_ragged_dimensions", (1,)), ("rhs_group_dimensions", (0,)))),
])
def test_trailing_commas_and_defaults(text: str, fields: tuple) -> None:
    a = attr(text)
    assert a.params == fields


def test_conv_raw_form_with_trailing_comma_equals_the_layout_form() -> None:
    raw = attr("#stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3, "
               "input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, "
               "kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], "
               "output_batch_dimension = 0, output_feature_dimension = 3, "
               "output_spatial_dimensions = [1, 2],\n>")
    assert raw == attr("#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>")


def test_dot_algorithm_types_and_flags() -> None:
    a = attr("#stablehlo.dot_algorithm<lhs_precision_type = tf32, rhs_precision_type = f32,"
             " accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1,"
             " num_primitive_operations = 1, allow_imprecise_accumulation = true,>")
    assert a.get("lhs_precision_type") == TypeAttr(OpaqueType("tf32"))
    assert a.get("rhs_precision_type") == TypeAttr(dtype("f32"))
    assert a.get("allow_imprecise_accumulation") == BoolAttr(True)


@pytest.mark.parametrize("text, message", [
    ("#stablehlo.dot<lhs_contracting_dimensions = [1], lhs_contracting_dimensions = [1]>",
     "'lhs_contracting_dimensions' appears twice"),
    ("#stablehlo.gather<offset_dims = [1] collapsed_slice_dims = [0]>",
     "expected '>' to close '#stablehlo.gather'"),
    ("#stablehlo.scatter<,>", "expected one of 'update_window_dims'"),
    ("#stablehlo.conv<raw input_batch_dimension = 0>", "lacks 'input_feature_dimension'"),
])
def test_malformed_structs_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(CompileError, match=message) as info:
        attr(text)
    assert info.value.loc is not None


def test_struct_field_names_are_unique() -> None:
    for name, fields in STRUCTS.items():
        assert len({f.name for f in fields}) == len(fields), name
