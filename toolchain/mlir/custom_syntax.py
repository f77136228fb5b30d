"""Pretty (custom) syntax of builtin, func, arith and StableHLO ops.

Each parser builds the Operation the generic form would give for the same op, with
the attribute names and kinds StableHLO's generic form uses (`broadcast_dimensions =
array<i64: ...>`, `dot_dimension_numbers = #stablehlo.dot<...>`, ...), so the
generic printer's output parses back to an identical tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from toolchain.mlir.ir import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    DictAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    Region,
    StringAttr,
    StructAttr,
    SymbolRefAttr,
    TypeAttr,
    Value,
)
from toolchain.mlir.lexer import Token
from toolchain.mlir.tosa_syntax import SYNTAX as TOSA_SYNTAX
from toolchain.types import I64, FunctionType, TensorType, dtype

if TYPE_CHECKING:
    from toolchain.mlir.parser import Parser

I1 = dtype("i1")


def i64_array(values: list[int]) -> DenseArrayAttr:
    return DenseArrayAttr(I64, tuple(values))


def i64_attr(value: int) -> IntAttr:
    return IntAttr(value, I64)


# --------------------------------------------------------------------------- shared parts


def _operands(p: Parser) -> tuple[list[Value], list[Token]]:
    toks: list[Token] = []

    def one() -> Value:
        toks.append(p.peek())
        return p.parse_operand()

    values: list[Value] = []
    if p.peek().kind != "value":
        return values, toks
    values.append(one())
    # A comma may also introduce a keyword (`, dims = ...`): look past it before taking it.
    while p.peek().text == ",":
        save = p.lex.pos
        p.lex.next()
        if p.peek().kind != "value":
            p.lex.pos = save
            p.lex._peeked = None
            break
        values.append(one())
    return values, toks


def _signature(p: Parser, operands: list[Value], toks: list[Token],
               same_type_results: int = 1) -> list[Value]:
    """`: T` (every operand and the result), `: T1, T2` or `: (T, T) -> R`; returns results."""
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.kind == "punct" and ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(operands, list(fty.inputs), toks, ty_tok)
        return [Value(t) for t in fty.results]
    types = p.parse_comma_list(p.parse_type)
    if len(types) == 1:
        p.check_operand_types(operands, types * len(operands), toks, ty_tok)
        return [Value(types[0]) for _ in range(same_type_results)]
    p.check_operand_types(operands, types, toks, ty_tok)
    return [Value(types[-1])]


def _keyword_eq(p: Parser, word: str) -> None:
    p.parse_punct(",", f"before '{word}'")
    p.parse_keyword(word)
    p.parse_punct("=", f"after '{word}'")


def _op(name: str, operands: list[Value], results: list[Value], props: dict,
        attrs: dict, regions: list[Region] | None = None) -> Operation:
    return Operation(name, operands, results, attrs, props, regions or [])


# --------------------------------------------------------------------------- op parsers


def p_elementwise(p: Parser, name: str) -> Operation:
    """`op %a, %b {attrs} : type-signature` (also the fallback for unknown ops)."""
    operands, toks = _operands(p)
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), {}, attrs)


def p_select(p: Parser, name: str) -> Operation:
    """`select %pred, %t, %f : (T1, T2, T3) -> R` or `: pred_type, result_type`."""
    operands, toks = _operands(p)
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the operation's type")
    ty_tok = p.peek()
    if ty_tok.text == "(":
        fty = p.parse_function_type()
        p.check_operand_types(operands, list(fty.inputs), toks, ty_tok)
        return _op(name, operands, [Value(t) for t in fty.results], {}, attrs)
    types = p.parse_comma_list(p.parse_type)
    if len(types) != 2:
        raise p.error("select's short type form is 'pred_type, result_type'", ty_tok)
    p.check_operand_types(operands, [types[0], types[1], types[1]], toks, ty_tok)
    return _op(name, operands, [Value(types[1])], {}, attrs)


def p_compare(p: Parser, name: str) -> Operation:
    """`compare GT, %a, %b, FLOAT : (T, T) -> R`."""
    direction = p.parse_bare("comparison direction").text
    p.parse_punct(",", "after comparison direction")
    operands, toks = _operands(p)
    props = {"comparison_direction": OpaqueAttr("stablehlo", f"comparison_direction {direction}")}
    if p.parse_optional_punct(","):
        ctype = p.parse_bare("comparison type").text
        props["compare_type"] = OpaqueAttr("stablehlo", f"comparison_type {ctype}")
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


def _dims_op(prop: str, keyword: str) -> Callable[[Parser, str], Operation]:
    def parse(p: Parser, name: str) -> Operation:
        operands, toks = _operands(p)
        _keyword_eq(p, keyword)
        props = {prop: i64_array(p.parse_int_list())}
        attrs = p.parse_optional_attr_dict()
        return _op(name, operands, _signature(p, operands, toks), props, attrs)

    return parse


def p_concatenate(p: Parser, name: str) -> Operation:
    """`concatenate %a, %b, dim = 0 : (T, T) -> R`."""
    operands, toks = _operands(p)
    _keyword_eq(p, "dim")
    props = {"dimension": i64_attr(p.parse_integer("dimension"))}
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


def p_slice(p: Parser, name: str) -> Operation:
    """`slice %x [0:2, 1:4:2] : (T) -> R`."""
    operands, toks = _operands(p)
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
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


def p_pad(p: Parser, name: str) -> Operation:
    """`pad %x, %v, low = [..], high = [..], interior = [..] : (T, T) -> R`."""
    operands, toks = _operands(p)
    props = {}
    for word, prop in (("low", "edge_padding_low"), ("high", "edge_padding_high"),
                       ("interior", "interior_padding")):
        _keyword_eq(p, word)
        props[prop] = i64_array(p.parse_int_list())
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


def p_iota(p: Parser, name: str) -> Operation:
    """`iota dim = 0 : T`."""
    p.parse_keyword("dim")
    p.parse_punct("=", "after 'dim'")
    props = {"iota_dimension": i64_attr(p.parse_integer("dimension"))}
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the result type")
    return _op(name, [], [Value(p.parse_type())], props, attrs)


def _precision_list(p: Parser) -> ArrayAttr:
    p.parse_punct("[", "before precision list")
    names = p.parse_comma_list(lambda: p.parse_bare("precision").text, "]")
    return ArrayAttr(tuple(OpaqueAttr("stablehlo", f"precision {n}") for n in names))


def _dims_pair(p: Parser) -> tuple[tuple[int, ...], tuple[int, ...]]:
    lhs = p.parse_int_list()
    p.parse_keyword("x")
    return tuple(lhs), tuple(p.parse_int_list())


def p_dot_general(p: Parser, name: str) -> Operation:
    """`dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], ...`."""
    operands, toks = _operands(p)
    params: dict[str, tuple] = {}
    props: dict = {}
    while p.parse_optional_punct(","):
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
            p.parse_punct("<")
            props["algorithm"] = OpaqueAttr("stablehlo.dot_algorithm", p.skip_balanced("<"))
        else:
            raise p.error(f"unknown dot_general option '{key}'")
    order = ("lhs_batching_dimensions", "rhs_batching_dimensions",
             "lhs_contracting_dimensions", "rhs_contracting_dimensions")
    props["dot_dimension_numbers"] = StructAttr(
        "stablehlo.dot", tuple((k, params[k]) for k in order if params.get(k)))
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


def p_dot(p: Parser, name: str) -> Operation:
    """`dot %a, %b, precision = [..] : (T, T) -> R`."""
    operands, toks = _operands(p)
    props = {}
    if p.parse_optional_punct(","):
        p.parse_keyword("precision")
        p.parse_punct("=")
        props["precision_config"] = _precision_list(p)
    attrs = p.parse_optional_attr_dict()
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


_CONV_FIELDS = ("input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
                "kernel_input_feature_dimension", "kernel_output_feature_dimension",
                "kernel_spatial_dimensions", "output_batch_dimension",
                "output_feature_dimension", "output_spatial_dimensions")


def parse_conv_dims(p: Parser) -> StructAttr:
    """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` or `raw key = value, ...`."""
    if p.parse_optional_keyword("raw"):
        params = dict(p.parse_comma_list(p._parse_struct_param))
        missing = [f for f in _CONV_FIELDS if f not in params]
        if missing:
            raise p.error(f"convolution dimension numbers lack '{missing[0]}'")
        return StructAttr("stablehlo.conv", tuple((f, params[f]) for f in _CONV_FIELDS))

    def layout(roles: str) -> tuple[int, int, list[int]]:
        open_tok = p.parse_punct("[", "in convolution dimension numbers")
        entries = p.parse_comma_list(lambda: p.lex.next(), "]")
        found = {r: -1 for r in roles}
        spatial: dict[int, int] = {}
        for pos, tok in enumerate(entries):
            if tok.kind == "bare" and tok.text in found and found[tok.text] < 0:
                found[tok.text] = pos
            elif tok.kind == "number" and tok.text.isdigit() and int(tok.text) not in spatial:
                spatial[int(tok.text)] = pos
            else:
                raise p.error(f"bad entry '{tok.text}' in convolution layout", tok)
        if min(found.values()) < 0 or sorted(spatial) != list(range(len(spatial))):
            raise p.error(f"convolution layout must name {', '.join(roles)} and spatial "
                          f"dims 0..n-1 once each", open_tok)
        return found[roles[0]], found[roles[1]], [spatial[i] for i in sorted(spatial)]

    ib, if_, isp = layout("bf")
    p.lex.match_raw(_X_RE) or _fail(p, "expected 'x' between convolution layouts")
    ki, ko, ksp = layout("io")
    p.parse_punct("->", "in convolution dimension numbers")
    ob, of, osp = layout("bf")
    values = (ib, if_, tuple(isp), ki, ko, tuple(ksp), ob, of, tuple(osp))
    return StructAttr("stablehlo.conv", tuple(zip(_CONV_FIELDS, values)))


def _fail(p: Parser, message: str):
    raise p.error(message)


import re  # noqa: E402  (kept next to its only use)

_X_RE = re.compile(r"x")


def p_convolution(p: Parser, name: str) -> Operation:
    """`convolution(%a, %b) dim_numbers = ..., window = {...} {attrs} : (T, T) -> R`."""
    p.parse_punct("(", "after 'convolution'")
    operands, toks = p.parse_operands_until(")")
    p.parse_keyword("dim_numbers")
    p.parse_punct("=")
    props: dict = {"dimension_numbers": parse_conv_dims(p)}
    if p.parse_optional_punct(","):
        p.parse_keyword("window")
        p.parse_punct("=")
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
    for key in ("feature_group_count", "batch_group_count", "precision_config"):
        if key in attrs:
            props[key] = attrs.pop(key)
    return _op(name, operands, _signature(p, operands, toks), props, attrs)


_WINDOW_KEYS = {"stride": "window_strides", "lhs_dilate": "lhs_dilation",
                "rhs_dilate": "rhs_dilation"}


def p_reduce(p: Parser, name: str) -> Operation:
    """`reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : ...`, or the
    region form ending in `reducer(%a: T, %b: T) { ... }`."""
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
    p.parse_keyword("across")
    p.parse_keyword("dimensions")
    p.parse_punct("=", "after 'dimensions'")
    props = {"dimensions": i64_array(p.parse_int_list())}
    attrs = p.parse_optional_attr_dict()
    operands = inputs + inits
    results = _signature(p, operands, toks + init_toks)
    if body_op is not None:
        region = _applies_region(body_op, [v.type for v in inits])
    else:
        region = _reducer_region(p, len(inputs))
    return _op(name, operands, results, props, attrs, [region])


def _scalar_type(t: TensorType) -> TensorType:
    return TensorType((), t.dtype, t.quant) if isinstance(t, TensorType) else t


def _applies_region(body_op: str, init_types: list) -> Region:
    """The region the short `applies OP` form stands for."""
    types = [_scalar_type(t) for t in init_types]
    accs = [Value(t, f"acc{i}") for i, t in enumerate(types)]
    vals = [Value(t, f"val{i}") for i, t in enumerate(types)]
    ops = []
    outs = []
    for a, v in zip(accs, vals):
        r = Value(a.type)
        ops.append(Operation(body_op, [a, v], [r]))
        outs.append(r)
    ops.append(Operation("stablehlo.return", outs, []))
    return Region([Block(accs + vals, ops)])


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


def p_constant(p: Parser, name: str) -> Operation:
    """`stablehlo.constant dense<...> : T` / `arith.constant 1.0 : f32`."""
    attrs = p.parse_optional_attr_dict()
    tok = p.peek()
    value = p.parse_attribute()
    ty = getattr(value, "type", None)
    if ty is None:
        raise p.error("constant value needs a type ('dense<...> : tensor<...>')", tok)
    return _op(name, [], [Value(ty)], {"value": value}, attrs)


def p_return(p: Parser, name: str) -> Operation:
    """`return %a, %b : T1, T2`."""
    operands, toks = _operands(p)
    attrs = p.parse_optional_attr_dict()
    if operands:
        ty_tok = p.parse_punct(":", "before the returned types")
        types = p.parse_comma_list(p.parse_type)
        p.check_operand_types(operands, types, toks, ty_tok)
    return _op(_RETURN_NAMES.get(name, name), operands, [], {}, attrs)


_RETURN_NAMES = {"return": "func.return"}


def p_call(p: Parser, name: str) -> Operation:
    """`call @f(%a) : (T) -> R`."""
    tok = p.peek()
    if tok.kind != "symbol":
        raise p.error("expected callee symbol '@name'", tok)
    p.lex.next()
    p.parse_punct("(", "to open call arguments")
    operands, toks = p.parse_operands_until(")")
    attrs = p.parse_optional_attr_dict()
    p.parse_punct(":", "before the call's type")
    ty_tok = p.peek()
    fty = p.parse_type("function type")
    if not isinstance(fty, FunctionType):
        raise p.error("expected function type '(...) -> ...'", ty_tok)
    p.check_operand_types(operands, list(fty.inputs), toks, ty_tok)
    return _op("func.call", operands, [Value(t) for t in fty.results],
               {"callee": SymbolRefAttr(_symbol_name(tok.text))}, attrs)


def _symbol_name(text: str) -> str:
    """`@name` or `@"quoted name"` -> the name."""
    from toolchain.mlir.parser import _symbol_name as unquote

    return unquote(text)


def p_func(p: Parser, name: str) -> Operation:
    """`func.func public @main(%arg0: T {attrs}) -> (R {attrs}) attributes {..} { body }`."""
    props: dict = {}
    vis = p.peek()
    if vis.kind == "bare" and vis.text in ("public", "private", "nested"):
        p.lex.next()
        if vis.text != "public":
            props["sym_visibility"] = StringAttr(vis.text)
    sym = p.peek()
    if sym.kind != "symbol":
        raise p.error("expected function name '@name'", sym)
    p.lex.next()
    props["sym_name"] = StringAttr(_symbol_name(sym.text))
    p.parse_punct("(", "to open the argument list")
    p.scopes.append({})
    args: list[Value] = []
    arg_attrs: list[DictAttr] = []

    def arg() -> None:
        v = p.parse_block_arg()
        args.append(v)
        arg_attrs.append(DictAttr(tuple(p.parse_optional_attr_dict().items())))
        p.skip_optional_loc()

    p.parse_comma_list(arg, ")")
    results: list = []
    res_attrs: list[DictAttr] = []
    if p.parse_optional_punct("->"):
        def res() -> None:
            results.append(p.parse_type())
            res_attrs.append(DictAttr(tuple(p.parse_optional_attr_dict().items())))
            p.skip_optional_loc()

        # Result attributes exist only in the parenthesized form; a bare `{` is the body.
        if p.parse_optional_punct("("):
            p.parse_comma_list(res, ")")
        else:
            results.append(p.parse_type())
    props["function_type"] = TypeAttr(FunctionType(tuple(a.type for a in args), tuple(results)))
    if any(d.items for d in arg_attrs):
        props["arg_attrs"] = ArrayAttr(tuple(arg_attrs))
    if any(d.items for d in res_attrs):
        props["res_attrs"] = ArrayAttr(tuple(res_attrs))
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    regions = []
    if p.peek().text == "{":
        region = p.parse_region()
        if region.blocks and not region.blocks[0].label:
            region.blocks[0].args = args
        regions = [region]
    p.scopes.pop()
    return _op("func.func", [], [], props, attrs, regions)


def p_module(p: Parser, name: str) -> Operation:
    """`module @name attributes {..} { ops }`."""
    props: dict = {}
    if p.peek().kind == "symbol":
        props["sym_name"] = StringAttr(_symbol_name(p.lex.next().text))
    attrs = {}
    if p.parse_optional_keyword("attributes"):
        attrs = dict(p.parse_attr_dict().items)
    return _op("builtin.module", [], [], props, attrs, [p.parse_region()])


# StableHLO ops whose pretty form is `op operands {attrs} : types`.
_ELEMENTWISE = """abs add and atan2 cbrt ceil clamp convert cosine count_leading_zeros
divide exponential
exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum
multiply negate not or popcnt power real reduce_precision remainder reshape
round_nearest_afz round_nearest_even rsqrt shift_left shift_right_arithmetic
shift_right_logical sign sine sqrt subtract tan tanh xor bitcast_convert""".split()  # noqa: SIM905

SYNTAX: dict[str, Callable[[Parser, str], Operation]] = {
    **{f"stablehlo.{n}": p_elementwise for n in _ELEMENTWISE},
    "stablehlo.select": p_select,
    "stablehlo.compare": p_compare,
    "stablehlo.broadcast_in_dim": _dims_op("broadcast_dimensions", "dims"),
    "stablehlo.transpose": _dims_op("permutation", "dims"),
    "stablehlo.reverse": _dims_op("dimensions", "dims"),
    "stablehlo.concatenate": p_concatenate,
    "stablehlo.slice": p_slice,
    "stablehlo.pad": p_pad,
    "stablehlo.iota": p_iota,
    "stablehlo.dot_general": p_dot_general,
    "stablehlo.dot": p_dot,
    "stablehlo.convolution": p_convolution,
    "stablehlo.reduce": p_reduce,
    "stablehlo.constant": p_constant,
    "stablehlo.return": p_return,
    "arith.constant": p_constant,
    "func.return": p_return,
    "return": p_return,
    "func.call": p_call,
    "call": p_call,
    "func.func": p_func,
    "module": p_module,
    "builtin.module": p_module,
}
SYNTAX.update(TOSA_SYNTAX)  # the TOSA dialect's pretty forms live in their own file


def parse_custom_operation(p: Parser) -> Operation:
    """Dispatches on the op name; ops we do not know try the plain operand/type form."""
    tok = p.lex.next()
    parse = SYNTAX.get(tok.text)
    if parse is not None:
        return parse(p, "builtin.module" if tok.text == "module" else tok.text)
    if "." not in tok.text:
        raise p.error(f"unknown operation '{tok.text}'", tok)
    try:
        return p_elementwise(p, tok.text)
    except Exception as e:  # noqa: BLE001 - re-raised with a better message
        from toolchain.diagnostics import CompileError

        if isinstance(e, CompileError):
            raise CompileError(f"cannot parse unknown operation '{tok.text}' in pretty form "
                               "(write it in generic form)", p.lex.loc(tok.start)) from None
        raise


__all__ = ["SYNTAX", "parse_custom_operation", "parse_conv_dims", "BoolAttr"]
