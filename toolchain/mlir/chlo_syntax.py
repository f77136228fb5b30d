"""Pretty (custom) syntax of the CHLO ops (StableHLO's "client HLO" dialect).

JAX writes CHLO for functions StableHLO lacks (`jnp.var` gives `chlo.square`,
`jax.nn.gelu(approximate=False)` gives `chlo.erfc`, `lax.top_k` gives `chlo.top_k`).
The forms follow the assembly formats of the CHLO op definitions: unary ops print
`chlo.erf %x : T -> R`, the `broadcast_*` ops `%a, %b {broadcast_dimensions = ...} :
(T1, T2) -> R`, `next_after` and friends `%a, %b : T1, T2 -> R`. Each parser builds
the Operation the generic form gives, as in stablehlo_syntax.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolchain.mlir.ir import BoolAttr, DenseArrayAttr, Operation, Region, Value
from toolchain.mlir.stablehlo_syntax import OpParser, p_constant, p_generic_only
from toolchain.mlir.syntax_parts import (
    I32,
    arrow_signature,
    functional,
    i64_attr,
    keyword_eq,
    make_op,
    operands,
)

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser


def p_arrow(p: Parser, name: str) -> Operation:
    """`chlo.erf %x {attrs} : T -> R`, `chlo.broadcast_add %a, %b : (T1, T2) -> R`,
    `chlo.next_after %a, %b : T1, T2 -> R`: operands, attributes, an arrow type."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, arrow_signature(p, values, toks), {}, attrs)


def p_top_k(p: Parser, name: str) -> Operation:
    """`chlo.top_k(%x, k = 2, is_stable = true) : T -> (T, I)`."""
    p.parse_punct("(", "after 'top_k'")
    values, toks = operands(p)
    keyword_eq(p, "k")
    props: dict = {"k": i64_attr(p.parse_integer("k"))}
    if p.parse_optional_punct(","):
        keyword_eq(p, "is_stable", comma=False)
        tok = p.peek()
        stable = p.parse_attribute()
        if not isinstance(stable, BoolAttr):
            raise p.error("expected true or false", tok)
        props["is_stable"] = stable
    p.parse_punct(")", "to close top_k's operands")
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, arrow_signature(p, values, toks), props, attrs)


def p_scan(p: Parser, name: str) -> Operation:
    """`chlo.scan (%xs) inits (%c) dimension=0 attributes {..} ({^bb0(...): ...}) :
    (T, C) -> (R, C)`."""
    p.parse_punct("(", "before the scanned inputs")
    inputs, toks = p.parse_operands_until(")")
    p.parse_keyword("inits")
    p.parse_punct("(", "before the scan's initial carries")
    inits, init_toks = p.parse_operands_until(")")
    keyword_eq(p, "dimension", comma=False)
    props: dict = {"dimension": i64_attr(p.parse_integer("dimension"))}
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    body: Region = p.parse_region()
    values = inputs + inits
    results: list[Value] = functional(p, values, toks + init_toks)
    outputs = len(results) - len(inits)
    if outputs < 0:
        raise p.error("chlo.scan has fewer results than carries")
    props["operandSegmentSizes"] = DenseArrayAttr(I32, (len(inputs), len(inits)))
    props["resultSegmentSizes"] = DenseArrayAttr(I32, (outputs, len(inits)))
    return make_op(name, values, results, props, attrs, [body])


_UNARY = """_asin_acos_kernel acos acosh asin asinh atan atanh bessel_i1e conj cosh
digamma erf erf_inv erfc is_inf is_neg_inf is_pos_inf lgamma sinh square tan""".split()  # noqa: SIM905
_BROADCAST = """add and atan2 compare complex divide maximum minimum multiply next_after
or polygamma power remainder select shift_left shift_right_arithmetic shift_right_logical
subtract xor zeta""".split()  # noqa: SIM905
_BINARY = ["next_after", "polygamma", "zeta", "mulhi"]

SYNTAX: dict[str, OpParser] = {
    **{f"chlo.{n}": p_arrow for n in _UNARY + _BINARY},
    **{f"chlo.broadcast_{n}": p_arrow for n in _BROADCAST},
    "chlo.constant": p_constant,
    "chlo.constant_like": p_generic_only,
    "chlo.ragged_dot": p_generic_only,
    "chlo.top_k": p_top_k,
    "chlo.scan": p_scan,
}

# The names of every CHLO op, for the op tables (docs/ops.md).
CHLO_OPS = sorted(SYNTAX)

__all__ = ["CHLO_OPS", "SYNTAX"]
