"""Pretty (custom) syntax of every StableHLO op.

Each parser reads the form `stablehlo-opt` prints (the op's assembly format in
StableHLO's op definitions) and builds the Operation the generic form of the same op
gives, with StableHLO's generic attribute names and kinds (`broadcast_dimensions =
array<i64: ...>`, `dot_dimension_numbers = #stablehlo.dot<...>`, `fft_type =
#stablehlo<fft_type FFT>`), so `print_generic` output parses back to an identical tree.
Ops without a pretty form (`if`, `case`, `sort`, `scatter`, the collectives, ...) are
printed generically; after their bare name they take the generic body, as a constant
does when `stablehlo-opt` falls back to it (`stablehlo.constant() <{...}> : () -> T`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from toolchain.mlir.ir import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    Region,
    StringAttr,
    StructAttr,
    Value,
)
from toolchain.mlir.lexer import Token
from toolchain.mlir.literals import symbol_name
from toolchain.mlir.struct_attrs import parse_struct_body
from toolchain.mlir.syntax_parts import (
    I1,
    I32,
    bare_word,
    enum_attr,
    functional,
    i64_array,
    i64_attr,
    keyword_eq,
    make_op,
    operands,
    signature,
)
from toolchain.types import I64, OpaqueType, TensorType, dtype

if TYPE_CHECKING:
    from toolchain.mlir.op_parser import Parser

OpParser = Callable[["Parser", str], Operation]


# --------------------------------------------------------------------------- simple forms


def p_elementwise(p: Parser, name: str) -> Operation:
    """`op %a, %b {attrs} : T` or `: (T1, T2) -> R`: the elementwise ops and every op
    printed as `operands attr-dict : functional-type` (reshape, bitcast_convert, ...)."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), {}, attrs)


def p_select(p: Parser, name: str) -> Operation:
    """`select %pred, %t, %f : (T1, T2, T3) -> R` or `: pred_type, result_type`."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(values, list(fty.inputs), toks, ty_tok)
        return make_op(name, values, [Value(t) for t in fty.results], {}, attrs)
    types = p.parse_comma_list(p.parse_type)
    if len(types) != 2:
        raise p.error("select's short type form is 'pred_type, result_type'", ty_tok)
    p.check_operand_types(values, [types[0], types[1], types[1]], toks, ty_tok)
    return make_op(name, values, [Value(types[1])], {}, attrs)


def p_complex(p: Parser, name: str) -> Operation:
    """`complex %re, %im : tensor<4xcomplex<f32>>` (the operands are the real type of
    the result) or `: (T, T) -> R`."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(values, list(fty.inputs), toks, ty_tok)
        return make_op(name, values, [Value(t) for t in fty.results], {}, attrs)
    ty = p.parse_type()
    if not isinstance(ty, TensorType) or ty.dtype.kind != "c":
        raise p.error("expected a tensor type with complex elements", ty_tok)
    part = TensorType(ty.shape, dtype(ty.dtype.name[len("complex<"):-1]))
    p.check_operand_types(values, [part, part], toks, ty_tok)
    return make_op(name, values, [Value(ty)], {}, attrs)


def p_compare(p: Parser, name: str) -> Operation:
    """`compare GT, %a, %b, FLOAT : (T, T) -> R`."""
    direction = bare_word(p, "comparison direction")
    p.parse_punct(",", "after comparison direction")
    values, toks = operands(p)
    props = {"comparison_direction": enum_attr("stablehlo", "comparison_direction", direction)}
    if p.parse_optional_punct(","):
        ctype = bare_word(p, "comparison type")
        props["compare_type"] = enum_attr("stablehlo", "comparison_type", ctype)
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def _keyword_op(keyword: str, prop: str, read: Callable[[Parser], object]) -> OpParser:
    """`op %a, ..., keyword = value {attrs} : type`."""
    def parse(p: Parser, name: str) -> Operation:
        values, toks = operands(p)
        keyword_eq(p, keyword, comma=bool(values))
        props = {prop: read(p)}
        attrs = p.parse_optional_attr_dict()
        return make_op(name, values, signature(p, values, toks), props, attrs)

    return parse


def _int_list(p: Parser) -> DenseArrayAttr:
    return i64_array(p.parse_int_list())


def _i64(p: Parser) -> IntAttr:
    return i64_attr(p.parse_integer("integer"))


def _string(p: Parser) -> StringAttr:
    tok = p.peek()
    attr = p.parse_attribute()
    if not isinstance(attr, StringAttr):
        raise p.error("expected a string", tok)
    return attr


def _enum(dialect: str, kind: str) -> Callable[[Parser], OpaqueAttr]:
    return lambda p: enum_attr(dialect, kind, bare_word(p, kind.replace("_", " ")))


def p_concatenate(p: Parser, name: str) -> Operation:
    """`concatenate %a, %b, dim = 0 : (T, T) -> R`."""
    return _keyword_op("dim", "dimension", _i64)(p, name)


def p_slice(p: Parser, name: str) -> Operation:
    """`slice %x [0:2, 1:4:2] : (T) -> R`."""
    values, toks = operands(p)
    p.parse_punct("[", "before slice ranges")
    starts, limits, strides = [], [], []

    def one() -> None:
        starts.append(p.parse_integer("slice start"))
        p.parse_punct(":", "in slice range")
        limits.append(p.parse_integer("slice limit"))
        strides.append(p.parse_integer("slice stride") if p.parse_optional_punct(":") else 1)

    p.parse_comma_list(one, "]")
    props = {"start_indices": i64_array(starts), "limit_indices": i64_array(limits),
             "strides": i64_array(strides)}
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_dynamic_slice(p: Parser, name: str) -> Operation:
    """`dynamic_slice %x, %i, %j, sizes = [1, 4] : (T, I, I) -> R`."""
    return _keyword_op("sizes", "slice_sizes", _int_list)(p, name)


def p_pad(p: Parser, name: str) -> Operation:
    """`pad %x, %v, low = [..], high = [..], interior = [..] : (T, T) -> R`."""
    values, toks = operands(p)
    props = {}
    for word, prop in (("low", "edge_padding_low"), ("high", "edge_padding_high"),
                       ("interior", "interior_padding")):
        keyword_eq(p, word)
        props[prop] = i64_array(p.parse_int_list())
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_iota(p: Parser, name: str) -> Operation:
    """`iota dim = 0 : T`."""
    keyword_eq(p, "dim", comma=False)
    props = {"iota_dimension": i64_attr(p.parse_integer("dimension"))}
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the result type")
    return make_op(name, [], [Value(p.parse_type())], props, attrs)


def p_reduce_precision(p: Parser, name: str) -> Operation:
    """`reduce_precision %x, format = e8m10 : T`."""
    values, toks = operands(p)
    keyword_eq(p, "format")
    tok = p.peek()
    m = re.fullmatch(r"e([0-9]{1,9})m([0-9]{1,9})", p.parse_bare("format 'e#m#'").text)
    if not m:
        raise p.error("expected the format as e<exponent bits>m<mantissa bits>", tok)
    props = {"exponent_bits": IntAttr(int(m.group(1)), I32),
             "mantissa_bits": IntAttr(int(m.group(2)), I32)}
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_fft(p: Parser, name: str) -> Operation:
    """`fft %x, type = FFT, length = [16] : (T) -> R`."""
    values, toks = operands(p)
    keyword_eq(p, "type")
    props = {"fft_type": enum_attr("stablehlo", "fft_type", bare_word(p, "FFT type"))}
    keyword_eq(p, "length")
    props["fft_length"] = i64_array(p.parse_int_list())
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_cholesky(p: Parser, name: str) -> Operation:
    """`cholesky %a, lower = true : T`."""
    values, toks = operands(p)
    props = {}
    if p.parse_optional_punct(","):
        keyword_eq(p, "lower", comma=False)
        tok = p.peek()
        value = p.parse_attribute()
        if not isinstance(value, BoolAttr):
            raise p.error("expected true or false", tok)
        props["lower"] = value
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_get_tuple_element(p: Parser, name: str) -> Operation:
    """`get_tuple_element %t[0] : (tuple<...>) -> T`."""
    values, toks = operands(p)
    p.parse_punct("[", "before the tuple index")
    props = {"index": IntAttr(p.parse_integer("tuple index"), I32)}
    p.parse_punct("]", "after the tuple index")
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, functional(p, values, toks), props, attrs)


def p_tuple(p: Parser, name: str) -> Operation:
    """`tuple %a, %b : tuple<T1, T2>` (the operand types are the tuple's)."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the tuple type")
    ty_tok = p.peek()
    p.parse_keyword("tuple")
    p.parse_punct("<", "after 'tuple'")
    with p.nested(ty_tok):
        items = p.parse_comma_list(p.parse_type, ">")
    p.check_operand_types(values, items, toks, ty_tok)
    result = OpaqueType(f"tuple<{', '.join(str(t) for t in items)}>")
    return make_op(name, values, [Value(result)], {}, attrs)


def p_pairwise(p: Parser, name: str) -> Operation:
    """`optimization_barrier {attrs} %a, %b : T1, T2` (results of the operands' types)
    or `optimization_barrier()` with none."""
    attrs = p.parse_optional_attr_dict()
    if p.parse_optional_punct("("):
        p.parse_punct(")", "after 'optimization_barrier('")
        return make_op(name, [], [], {}, attrs)
    values, toks = operands(p)
    ty_tok = p.parse_punct(":", "before the operand types")
    types = p.parse_comma_list(p.parse_type)
    p.check_operand_types(values, types, toks, ty_tok)
    return make_op(name, values, [Value(t) for t in types], {}, attrs)


def p_rng(p: Parser, name: str) -> Operation:
    """`rng %a, %b, %shape, distribution = NORMAL : (T, T, S) -> R`."""
    values, toks = operands(p)
    keyword_eq(p, "distribution")
    props = {"rng_distribution": _enum("stablehlo", "rng_distribution")(p)}
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, functional(p, values, toks), props, attrs)


def p_rng_bit_generator(p: Parser, name: str) -> Operation:
    """`rng_bit_generator %state, algorithm = PHILOX : (S) -> (S, R)`."""
    values, toks = operands(p)
    keyword_eq(p, "algorithm")
    props = {"rng_algorithm": _enum("stablehlo", "rng_algorithm")(p)}
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, functional(p, values, toks), props, attrs)


def p_custom_call(p: Parser, name: str) -> Operation:
    """`custom_call @target(%a, %b) {attrs} : (T, T) -> R`."""
    tok = p.peek()
    if tok.kind != "symbol":
        raise p.error("expected the call target '@name'", tok)
    p.lex.next()
    p.parse_punct("(", "to open the custom_call operands")
    values, toks = p.parse_operands_until(")")
    props = {"call_target_name": StringAttr(symbol_name(tok.text))}
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, functional(p, values, toks), props, attrs)


def p_composite(p: Parser, name: str) -> Operation:
    """`composite "my.op" %a, %b {composite_attributes = {..}, decomposition = @f}
    : (T, T) -> R`, optionally with `(regions)` after the operands."""
    tok = p.peek()
    if tok.kind != "string":
        raise p.error("expected the composite's name as a string", tok)
    props = {"name": p.parse_attribute()}
    values, toks = operands(p)
    regions: list[Region] = []
    if p.parse_optional_punct("("):
        regions = p.parse_comma_list(p.parse_region, ")")
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, functional(p, values, toks), props, attrs, regions)


def p_constant(p: Parser, name: str) -> Operation:
    """`stablehlo.constant {attrs} dense<...> : T`, `arith.constant 1.0 : f32`, or the
    generic body after the name when the value's type is not the result's
    (`stablehlo.constant() <{value = dense<1> : tensor<2xi8>}> : () -> T`)."""
    if p.peek().text == "(":
        return p.parse_generic_body(name)
    attrs = p.parse_optional_attr_dict()
    tok = p.peek()
    value = p.parse_attribute()
    ty = getattr(value, "type", None)
    if ty is None:
        raise p.error("constant value needs a type ('dense<...> : tensor<...>')", tok)
    return make_op(name, [], [Value(ty)], {"value": value}, attrs)


def p_return(p: Parser, name: str) -> Operation:
    """`return %a, %b : T1, T2`."""
    values, toks = operands(p)
    attrs = p.parse_optional_attr_dict()
    if values:
        ty_tok = p.parse_punct(":", "before the returned types")
        types = p.parse_comma_list(p.parse_type)
        p.check_operand_types(values, types, toks, ty_tok)
    return make_op(_RETURN_NAMES.get(name, name), values, [], {}, attrs)


_RETURN_NAMES = {"return": "func.return"}


def p_generic_only(p: Parser, name: str) -> Operation:
    """Ops StableHLO prints only in generic form: the generic body after the bare name
    (`stablehlo.sort(%x) <{dimension = 0 : i64}> ({...}) : (T) -> T`)."""
    if p.peek().text != "(":
        raise p.error(f"'{name}' has no pretty form: write its generic body "
                      f"'(operands) <{{properties}}> (regions) : type' or the quoted name")
    return p.parse_generic_body(name)


# ------------------------------------------------------------------------ dims and windows


def _dims_op(prop: str, keyword: str) -> OpParser:
    return _keyword_op(keyword, prop, _int_list)


def _precision_list(p: Parser) -> ArrayAttr:
    p.parse_punct("[", "before precision list")
    names = p.parse_comma_list(lambda: p.parse_bare("precision").text, "]")
    return ArrayAttr(tuple(enum_attr("stablehlo", "precision", n) for n in names))


def _dims_pair(p: Parser) -> tuple[tuple[int, ...], tuple[int, ...]]:
    lhs = p.parse_int_list()
    p.parse_keyword("x")
    return tuple(lhs), tuple(p.parse_int_list())


def _algorithm(p: Parser) -> StructAttr:
    """`algorithm = <lhs_precision_type = tf32, ...>`: a `#stablehlo.dot_algorithm`."""
    open_tok = p.parse_punct("<", "to open the dot algorithm")
    return parse_struct_body(p, "stablehlo.dot_algorithm", open_tok.start)


def p_dot_general(p: Parser, name: str) -> Operation:
    """`dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1],
    precision = [DEFAULT, DEFAULT], algorithm = <...> : (T, T) -> R`."""
    values, toks = operands(p)
    params: dict[str, tuple] = {}
    props: dict = {}
    while p.parse_optional_punct(","):
        key_tok = p.peek()
        key = p.parse_bare("dot_general option").text
        p.parse_punct("=", f"after '{key}'")
        if key in ("batching_dims", "contracting_dims"):
            lhs, rhs = _dims_pair(p)
            stem = key.removesuffix("_dims")
            params[f"lhs_{stem}_dimensions"] = lhs
            params[f"rhs_{stem}_dimensions"] = rhs
        elif key == "precision":
            props["precision_config"] = _precision_list(p)
        elif key == "algorithm":
            props["algorithm"] = _algorithm(p)
        else:
            raise p.error(f"unknown dot_general option '{key}'", key_tok)
    order = ("lhs_batching_dimensions", "rhs_batching_dimensions",
             "lhs_contracting_dimensions", "rhs_contracting_dimensions")
    props["dot_dimension_numbers"] = StructAttr(
        "stablehlo.dot", tuple((k, params[k]) for k in order if params.get(k)))
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


def p_dot(p: Parser, name: str) -> Operation:
    """`dot %a, %b, precision = [..] : (T, T) -> R`."""
    values, toks = operands(p)
    props = {}
    if p.parse_optional_punct(","):
        keyword_eq(p, "precision", comma=False)
        props["precision_config"] = _precision_list(p)
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


_CONV_FIELDS = ("input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
                "kernel_input_feature_dimension", "kernel_output_feature_dimension",
                "kernel_spatial_dimensions", "output_batch_dimension",
                "output_feature_dimension", "output_spatial_dimensions")
_X_RE = re.compile(r"x")


def parse_conv_dims(p: Parser) -> StructAttr:
    """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` (`#stablehlo.conv<raw ...>` is a struct
    attribute: toolchain/mlir/struct_attrs.py)."""

    def layout(roles: str) -> tuple[int, int, list[int]]:
        open_tok = p.parse_punct("[", "in convolution dimension numbers")
        entries = p.parse_comma_list(lambda: p.lex.next(), "]")
        found = {r: -1 for r in roles}
        spatial: dict[int, int] = {}
        for pos, tok in enumerate(entries):
            if tok.kind == "bare" and tok.text in found and found[tok.text] < 0:
                found[tok.text] = pos
            elif (tok.kind == "number" and tok.text.isdigit() and len(tok.text) < 10
                  and int(tok.text) not in spatial):
                spatial[int(tok.text)] = pos
            else:
                raise p.error(f"bad entry '{tok.text[:40]}' in convolution layout", tok)
        if min(found.values()) < 0 or sorted(spatial) != list(range(len(spatial))):
            raise p.error(f"convolution layout must name {', '.join(roles)} and spatial "
                          f"dims 0..n-1 once each", open_tok)
        return found[roles[0]], found[roles[1]], [spatial[i] for i in sorted(spatial)]

    ib, if_, isp = layout("bf")
    if not p.lex.match_raw(_X_RE):
        raise p.error("expected 'x' between convolution layouts")
    ki, ko, ksp = layout("io")
    p.parse_punct("->", "in convolution dimension numbers")
    ob, of, osp = layout("bf")
    values = (ib, if_, tuple(isp), ki, ko, tuple(ksp), ob, of, tuple(osp))
    return StructAttr("stablehlo.conv", tuple(zip(_CONV_FIELDS, values)))


_WINDOW_KEYS = {"stride": "window_strides", "lhs_dilate": "lhs_dilation",
                "rhs_dilate": "rhs_dilation"}


def p_convolution(p: Parser, name: str) -> Operation:
    """`convolution(%a, %b) dim_numbers = ..., window = {...} {attrs} : (T, T) -> R`."""
    p.parse_punct("(", "after 'convolution'")
    values, toks = p.parse_operands_until(")")
    keyword_eq(p, "dim_numbers", comma=False)
    props: dict = {"dimension_numbers": parse_conv_dims(p)}
    if p.parse_optional_punct(","):
        keyword_eq(p, "window", comma=False)
        p.parse_punct("{", "to open the window")

        def entry() -> None:
            key_tok = p.parse_bare("window field")
            p.parse_punct("=", f"after '{key_tok.text}'")
            key = key_tok.text
            if key == "pad":
                p.parse_punct("[")
                rows = p.parse_comma_list(p.parse_int_list, "]")
                if any(len(r) != 2 for r in rows):
                    raise p.error("each 'pad' entry must be [low, high]", key_tok)
                arr = np.array(rows, dtype=np.int64).reshape(len(rows), 2)
                props["padding"] = DenseAttr(TensorType((len(rows), 2), I64), arr)
            elif key == "reverse":
                p.parse_punct("[")
                flags = p.parse_comma_list(lambda: p._parse_scalar(I1), "]")
                props["window_reversal"] = DenseArrayAttr(I1, tuple(bool(f) for f in flags))
            elif key in _WINDOW_KEYS:
                props[_WINDOW_KEYS[key]] = i64_array(p.parse_int_list())
            else:
                raise p.error(f"unknown convolution window field '{key}'", key_tok)

        p.parse_comma_list(entry, "}")
    attrs = p.parse_optional_attr_dict()
    return make_op(name, values, signature(p, values, toks), props, attrs)


# ------------------------------------------------------------------------ regions


def p_reduce(p: Parser, name: str) -> Operation:
    """`reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : ...`, or the
    region form ending in `reducer(%a: T, %b: T) (%c: U, %d: U) { ... }`."""
    inputs: list[Value] = []
    inits: list[Value] = []
    toks: list[Token] = []
    init_toks: list[Token] = []

    def pair() -> None:
        p.parse_punct("(", "before reduce operand")
        toks.append(p.peek())
        inputs.append(p.parse_operand())
        p.parse_keyword("init")
        p.parse_punct(":", "after 'init'")
        init_toks.append(p.peek())
        inits.append(p.parse_operand())
        p.parse_punct(")", "after reduce init value")

    p.parse_comma_list(pair)
    body_op = None
    if p.parse_optional_keyword("applies"):
        body_tok = p.peek()
        body_op = p.parse_bare("reduction op name").text
        if body_op not in SYNTAX:
            raise p.error(f"unknown reduction op '{body_op}'", body_tok)
        if body_op not in REDUCE_APPLIES:
            raise p.error(f"'{body_op}' cannot be a reduction body (expected a commutative "
                          "binary StableHLO op: add, multiply, maximum, minimum, and, or, "
                          "xor)", body_tok)
        if len(inputs) != 1:
            raise p.error("'applies' takes one operand and init value; several need a "
                          "'reducer' region", body_tok)
    p.parse_keyword("across")
    keyword_eq(p, "dimensions", comma=False)
    props = {"dimensions": i64_array(p.parse_int_list())}
    attrs = p.parse_optional_attr_dict()
    values = inputs + inits
    results = functional(p, values, toks + init_toks)
    if body_op is not None:
        region = _applies_region(body_op, inputs[0].type)
    else:
        region = _reducer_region(p, len(inputs))
    return make_op(name, values, results, props, attrs, [region])


# Commutative binary StableHLO ops, the only ones the `applies` short form may name.
REDUCE_APPLIES = {f"stablehlo.{n}" for n in ("add", "multiply", "maximum", "minimum", "and",
                                            "or", "xor")}


def _applies_region(body_op: str, input_type: object) -> Region:
    """The region `applies OP` stands for: OP on two rank-0 tensors of the first
    input's element type, returned."""
    t = input_type
    scalar = TensorType((), t.dtype, t.quant) if isinstance(t, TensorType) else t
    acc, val = Value(scalar, "lhs"), Value(scalar, "rhs")
    out = Value(scalar)
    ops = [Operation(body_op, [acc, val], [out]), Operation("stablehlo.return", [out], [])]
    return Region([Block([acc, val], ops)])


def _reducer_region(p: Parser, n: int) -> Region:
    p.parse_keyword("reducer")
    p.scopes.append({})
    firsts: list[Value] = []
    seconds: list[Value] = []
    for _ in range(n):
        p.parse_punct("(", "before reducer arguments")
        firsts.append(p.parse_block_arg())
        p.parse_punct(",")
        seconds.append(p.parse_block_arg())
        p.parse_punct(")")
    region = p.parse_region()
    p.scopes.pop()
    region.blocks[0].args = firsts + seconds
    return region


def p_while(p: Parser, name: str) -> Operation:
    """`while(%iterArg = %init, ...) : T, ... attributes {..} cond {...} do {...}`: both
    regions get the iteration arguments as their block arguments."""
    p.parse_punct("(", "after 'while'")
    names: list[Token] = []
    values: list[Value] = []
    toks: list[Token] = []

    def binding() -> None:
        tok = p.peek()
        if tok.kind != "value":
            raise p.error(f"expected an iteration argument '%name', found {p._describe(tok)}",
                          tok)
        p.lex.next()
        names.append(tok)
        p.parse_punct("=", "after the iteration argument")
        toks.append(p.peek())
        values.append(p.parse_operand())

    p.parse_comma_list(binding, ")")
    types: list = []
    if values:
        ty_tok = p.parse_punct(":", "before the iteration types")
        types = p.parse_comma_list(p.parse_type)
        p.check_operand_types(values, types, toks, ty_tok)
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    regions = []
    for word in ("cond", "do"):
        p.parse_keyword(word)
        p.scopes.append({})
        args = [p.define(tok.text[1:], [Value(t, tok.text[1:])], tok.start)[0]
                for tok, t in zip(names, types)]
        region = p.parse_region()
        p.scopes.pop()
        region.blocks[0].args = args
        regions.append(region)
    return make_op(name, values, [Value(t) for t in types], {}, attrs, regions)


# ------------------------------------------------------------------------ the table


# Ops printed as `operands attr-dict : T` or `: functional-type`.
_PLAIN = """abs add after_all and atan2 bitcast_convert cbrt ceil clamp convert cosine
count_leading_zeros create_token divide dynamic_pad dynamic_reshape dynamic_update_slice
exponential exponential_minus_one floor imag is_finite log log_plus_one logistic maximum
minimum multiply negate not or partition_id popcnt power real real_dynamic_slice remainder
replica_id reshape round_nearest_afz round_nearest_even rsqrt shift_left
shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan tanh
uniform_dequantize uniform_quantize xor""".split()  # noqa: SIM905

# Ops with no pretty form in StableHLO: generic only.
_GENERIC_ONLY = """all_gather all_reduce all_to_all async_done async_start batch_norm_grad
batch_norm_inference batch_norm_training case collective_broadcast collective_permute
collective_reduce dynamic_conv dynamic_gather gather if infeed map outfeed recv
reduce_scatter reduce_window scatter select_and_scatter send sort torch_index_select
triangular_solve""".split()  # noqa: SIM905

SYNTAX: dict[str, OpParser] = {
    **{f"stablehlo.{n}": p_elementwise for n in _PLAIN},
    **{f"stablehlo.{n}": p_generic_only for n in _GENERIC_ONLY},
    "stablehlo.select": p_select,
    "stablehlo.complex": p_complex,
    "stablehlo.compare": p_compare,
    "stablehlo.broadcast_in_dim": _dims_op("broadcast_dimensions", "dims"),
    "stablehlo.dynamic_broadcast_in_dim": _dims_op("broadcast_dimensions", "dims"),
    "stablehlo.broadcast": _dims_op("broadcast_sizes", "sizes"),
    "stablehlo.transpose": _dims_op("permutation", "dims"),
    "stablehlo.reverse": _dims_op("dimensions", "dims"),
    "stablehlo.concatenate": p_concatenate,
    "stablehlo.slice": p_slice,
    "stablehlo.dynamic_slice": p_dynamic_slice,
    "stablehlo.pad": p_pad,
    "stablehlo.iota": p_iota,
    "stablehlo.dynamic_iota": _keyword_op("dim", "iota_dimension", _i64),
    "stablehlo.get_dimension_size": _keyword_op("dim", "dimension", _i64),
    "stablehlo.set_dimension_size": _keyword_op("dim", "dimension", _i64),
    "stablehlo.einsum": _keyword_op("config", "einsum_config", _string),
    "stablehlo.unary_einsum": _keyword_op("config", "einsum_config", _string),
    "stablehlo.reduce_precision": p_reduce_precision,
    "stablehlo.fft": p_fft,
    "stablehlo.cholesky": p_cholesky,
    "stablehlo.get_tuple_element": p_get_tuple_element,
    "stablehlo.tuple": p_tuple,
    "stablehlo.optimization_barrier": p_pairwise,
    "stablehlo.rng": p_rng,
    "stablehlo.rng_bit_generator": p_rng_bit_generator,
    "stablehlo.custom_call": p_custom_call,
    "stablehlo.composite": p_composite,
    "stablehlo.dot_general": p_dot_general,
    "stablehlo.dot": p_dot,
    "stablehlo.convolution": p_convolution,
    "stablehlo.reduce": p_reduce,
    "stablehlo.while": p_while,
    "stablehlo.constant": p_constant,
    "stablehlo.return": p_return,
}


__all__ = ["SYNTAX", "REDUCE_APPLIES", "p_constant", "p_elementwise", "p_generic_only",
           "p_return", "parse_conv_dims"]
