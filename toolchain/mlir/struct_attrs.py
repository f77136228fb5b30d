"""Dialect attributes whose body is a list of `key = value` parameters.

`#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>`
and its relatives are structs: StableHLO's parser takes the fields in any order, once
each, with a trailing comma allowed before the `>`, and the printer writes them in a
fixed order, leaving out empty dimension lists. The table below gives each struct's
fields in that order with their kind and default, so every spelling of one attribute
(pretty or generic, fields reordered, defaults written or omitted, trailing comma or
not) becomes one `StructAttr` with its fields in table order and defaults left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolchain.mlir.ir import BoolAttr, FloatAttr, StructAttr, TypeAttr
from toolchain.types import DTYPES, OpaqueType

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser

# Marks a field that is always kept, even when it equals the default: convolution
# dimension numbers name every dimension, so readers can rely on all of them.
REQUIRED = object()


@dataclass(frozen=True)
class Field:
    """One parameter: `dims` is `[1, 2]` (a tuple of ints), `int` a bare integer,
    `value` any attribute (a bare word such as `tf32` is a type)."""

    name: str
    kind: str
    default: Any


def _dims(*names: str) -> tuple[Field, ...]:
    return tuple(Field(n, "dims", ()) for n in names)


def _ints(*names: str, default: Any = 0) -> tuple[Field, ...]:
    return tuple(Field(n, "int", default) for n in names)


_CONV = (
    *_ints("input_batch_dimension", "input_feature_dimension", default=REQUIRED),
    Field("input_spatial_dimensions", "dims", REQUIRED),
    *_ints("kernel_input_feature_dimension", "kernel_output_feature_dimension",
           default=REQUIRED),
    Field("kernel_spatial_dimensions", "dims", REQUIRED),
    *_ints("output_batch_dimension", "output_feature_dimension", default=REQUIRED),
    Field("output_spatial_dimensions", "dims", REQUIRED),
)

STRUCTS: dict[str, tuple[Field, ...]] = {
    "stablehlo.dot": _dims("lhs_batching_dimensions", "rhs_batching_dimensions",
                           "lhs_contracting_dimensions", "rhs_contracting_dimensions"),
    "stablehlo.gather": (*_dims("offset_dims", "collapsed_slice_dims",
                                "operand_batching_dims", "start_indices_batching_dims",
                                "start_index_map"), *_ints("index_vector_dim")),
    "stablehlo.scatter": (*_dims("update_window_dims", "inserted_window_dims",
                                 "input_batching_dims", "scatter_indices_batching_dims",
                                 "scatter_dims_to_operand_dims"), *_ints("index_vector_dim")),
    "stablehlo.conv": _CONV,
    "stablehlo.output_operand_alias": (*_dims("output_tuple_indices"),
                                       *_ints("operand_index"),
                                       *_dims("operand_tuple_indices")),
    "stablehlo.dot_algorithm": (
        Field("lhs_precision_type", "value", None), Field("rhs_precision_type", "value", None),
        Field("accumulation_type", "value", None),
        *_ints("lhs_component_count", "rhs_component_count", "num_primitive_operations"),
        Field("allow_imprecise_accumulation", "value", BoolAttr(False))),
    "stablehlo.channel_handle": _ints("handle", "type"),
    "stablehlo.result_accuracy": (Field("atol", "value", FloatAttr(0.0)),
                                  Field("rtol", "value", FloatAttr(0.0)),
                                  *_ints("ulps"), Field("mode", "value", None)),
    "chlo.ragged_dot": _dims("lhs_batching_dimensions", "rhs_batching_dimensions",
                             "lhs_contracting_dimensions", "rhs_contracting_dimensions",
                             "lhs_ragged_dimensions", "rhs_group_dimensions"),
}


def parse_struct_body(p: Parser, name: str, opening: int) -> StructAttr:
    """The fields of struct attribute `name` up to and including the closing `>`
    (the `<` and, for convolutions, the `raw` keyword are already consumed)."""
    fields = {f.name: f for f in STRUCTS[name]}
    values: dict[str, Any] = {}
    while not p.parse_optional_punct(">"):
        key_tok = p.peek()
        if key_tok.kind != "bare" or key_tok.text not in fields:
            expected = ", ".join(f"'{f}'" for f in fields)
            raise p.error(f"expected one of {expected} in '#{name}', found "
                          f"{p._describe(key_tok)}", key_tok)
        p.lex.next()
        if key_tok.text in values:
            raise p.error(f"'{key_tok.text}' appears twice in '#{name}'", key_tok)
        p.parse_punct("=", f"after '{key_tok.text}'")
        values[key_tok.text] = _parse_value(p, fields[key_tok.text])
        # A comma may end the list too: `rhs_contracting_dimensions = [0],\n>`.
        if not p.parse_optional_punct(","):
            p.parse_punct(">", f"to close '#{name}'")
            break
    params = []
    for f in STRUCTS[name]:
        if f.name not in values:
            if f.default is REQUIRED:
                raise p.lex.error(f"'#{name}' lacks '{f.name}'", opening)
            continue
        if f.default is REQUIRED or values[f.name] != f.default:
            params.append((f.name, values[f.name]))
    return StructAttr(name, tuple(params))


def _parse_value(p: Parser, field: Field) -> Any:
    if field.kind == "dims":
        p.parse_punct("[", f"to open '{field.name}'")
        return tuple(p.parse_comma_list(lambda: _dim(p), "]"))
    if field.kind == "int":
        return p.parse_integer(f"integer for '{field.name}'")
    tok = p.peek()
    # Element types without a tensor type of their own (tf32, f8E4M3FN) are kept as
    # opaque types: they only name a precision here.
    if tok.kind == "bare" and tok.text not in ("true", "false") and tok.text not in DTYPES:
        p.lex.next()
        return TypeAttr(OpaqueType(tok.text))
    return p.parse_attribute()


def _dim(p: Parser) -> int | None:
    """A dimension number; `?` (a dynamic bound) is None."""
    if p.parse_optional_punct("?"):
        return None
    return p.parse_integer("dimension")


__all__ = ["STRUCTS", "Field", "parse_struct_body"]
