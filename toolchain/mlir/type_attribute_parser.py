"""Types and attributes of MLIR text: `tensor<2x?xf32>`, `!quant.uniform<...>`,
function types, `dense<...>` and `dense_resource<...>` literals, `array<i64: ...>`,
dictionaries, aliases (`#a`, `!t`) and dialect attributes (`#stablehlo.dot<...>`).

One grammar, because the two nest in each other: an attribute may be a type, a tensor
type may carry an attribute as its encoding. Dialect attributes with a syntax of their
own are read through `attribute_syntax`, a table from the attribute's name to its parser
that the entry point passes in (`parser.py`: the dialect files sit above this grammar,
which never imports them); any other `#dialect<...>` is kept as opaque text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from toolchain.diagnostics import SourceFile
from toolchain.mlir.cursor import Cursor
from toolchain.mlir.ir import (
    ArrayAttr,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    DictAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
)
from toolchain.mlir.lexer import Token
from toolchain.mlir.literals import (
    MAX_DENSE_BYTES,
    MAX_INT_DIGITS,
    array_from_bytes,
    check_nested,
    convert_literal,
    enum_body,
    float_literal_value,
    is_int_literal,
    symbol_name,
    to_host,
    unescape,
)
from toolchain.types import (
    ALIASES,
    DTYPES,
    DType,
    FunctionType,
    OpaqueType,
    QuantParams,
    TensorType,
    dtype,
)

_DIMS = re.compile(r"(?:(?:[0-9]+|\?)x)*")
_UNRANKED = re.compile(r"\*x")

# Element types of `complex<...>`: numpy holds complex<f32> as complex64 and
# complex<f64> as complex128 (real and imaginary parts interleaved, as MLIR stores them).
_COMPLEX = {"f32": np.dtype("complex64"), "f64": np.dtype("complex128")}

# The parser of a dialect attribute `#name<...>`: called with the parser (the `<` just
# consumed), the name and the offset of the `#name` token; reads up to the closing `>`.
AttributeSyntax = Callable[[Any, str, int], Any]


def complex_dtype(part: DType) -> DType | None:
    """The element type `complex<part>`, or None when numpy has no such complex type.
    A row of toolchain.types.DTYPES of that name wins, so the frontends and the
    parser agree once the backends take complex tensors."""
    name = f"complex<{part.name}>"
    if name in DTYPES:
        return DTYPES[name]
    if part.name not in _COMPLEX:
        return None
    return DType(name, _COMPLEX[part.name], 2 * part.bits, "c")


class TypeAttributeParser(Cursor):
    """The type and attribute grammar over a `Cursor`."""

    def __init__(self, source: SourceFile,
                 attribute_syntax: Mapping[str, AttributeSyntax] | None = None):
        super().__init__(source)
        self.attribute_syntax: Mapping[str, AttributeSyntax] = attribute_syntax or {}
        self.attr_aliases: dict[str, Any] = {}
        self.type_aliases: dict[str, Any] = {}
        self.pending_resources: list[tuple[DenseAttr, int]] = []

    # ------------------------------------------------------------------ types

    def parse_optional_type(self) -> Any | None:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            return self.parse_function_type()
        if tok.kind == "bang":
            return self.parse_bang_type()
        if tok.kind != "bare":
            return None
        word = tok.text
        if word == "tensor":
            return self.parse_tensor_type()
        if word in DTYPES or word in ALIASES:
            self.lex.next()
            return dtype(word)
        if word == "complex":
            return self.parse_complex_type()
        if word == "tuple":
            # Parsed, not kept as text, so `tuple<a,b>` and `tuple<a, b>` are one type.
            self.lex.next()
            self.parse_punct("<", "after 'tuple'")
            with self.nested(tok):
                items = self.parse_comma_list(self.parse_type, ">")
            return OpaqueType(f"tuple<{', '.join(str(t) for t in items)}>")
        if word in ("vector", "memref") or word == "none":
            self.lex.next()
            if word == "none":
                return OpaqueType("none")
            self.parse_punct("<")
            return OpaqueType(f"{word}<{self.skip_balanced('<')}>")
        if re.fullmatch(r"[fiu]i?[0-9]+|bf16|tf32|f[0-9]+E\w+", word):
            raise self.error(f"unsupported element type '{word}'", tok)
        return None

    def parse_type(self, what: str = "type") -> Any:
        start = self.peek()
        ty = self.parse_optional_type()
        if ty is None:
            raise self.error(f"expected {what}, found {self._describe(start)}", start)
        return ty

    def parse_complex_type(self) -> DType:
        """`complex<f32>`."""
        self.parse_keyword("complex")
        self.parse_punct("<", "after 'complex'")
        part_tok = self.peek()
        with self.nested(part_tok):
            part = self.parse_type("element type")
        self.parse_punct(">", "to close 'complex'")
        ty = complex_dtype(part) if isinstance(part, DType) and part.is_float else None
        if ty is None:
            raise self.error(f"unsupported element type 'complex<{part}>'", part_tok)
        return ty

    def parse_function_type(self) -> FunctionType:
        open_tok = self.parse_punct("(")
        with self.nested(open_tok):
            inputs = self.parse_comma_list(self.parse_type, ")")
            self.parse_punct("->", "in function type")
            if self.peek().text == "(":
                self.lex.next()
                results = self.parse_comma_list(self.parse_type, ")")
            else:
                results = [self.parse_type()]
        return FunctionType(tuple(inputs), tuple(results))

    def parse_tensor_type(self) -> TensorType:
        self.parse_keyword("tensor")
        self.parse_punct("<", "after 'tensor'")
        shape: tuple | None
        if self.lex.match_raw(_UNRANKED):
            shape = None
        else:
            dims_at = self.lex.skip_ws()
            dims = self.lex.match_raw(_DIMS).group()
            if any(len(d) > MAX_INT_DIGITS for d in dims.split("x")):
                raise self.lex.error("tensor dimension is too large", dims_at)
            shape = tuple(None if d == "?" else int(d) for d in dims.split("x")[:-1])
        elem_tok = self.peek()
        with self.nested(elem_tok):  # `tensor<tensor<...` is refused below, not recursed
            elem = self.parse_type("element type")
        quant = None
        if isinstance(elem, QuantParams):
            quant, elem = elem, elem.storage
        if not isinstance(elem, DType):
            raise self.error(f"unsupported tensor element type '{elem}'", elem_tok)
        if self.parse_optional_punct(","):
            self.parse_attribute()  # encoding: irrelevant for dense static tensors
        self.parse_punct(">", "to close tensor type")
        return TensorType(shape, elem, quant)

    def parse_bang_type(self) -> Any:
        tok = self.lex.next()
        name = tok.text[1:]
        if name == "quant.uniform":
            return self.parse_quant_uniform()
        if name in self.type_aliases:
            return self.type_aliases[name]
        if "." not in name:
            raise self.error(f"undefined type alias '!{name}'", tok)
        if self.parse_optional_punct("<"):
            return OpaqueType(f"!{name}<{self.skip_balanced('<')}>")
        return OpaqueType(f"!{name}")

    def parse_quant_uniform(self) -> QuantParams:
        """`!quant.uniform<i8<-127:127>:f32:1, {0.1:0, 0.2:0}>` and per-tensor forms."""
        self.parse_punct("<", "after '!quant.uniform'")
        storage_tok = self.peek()
        unsigned = re.fullmatch(r"u(8|16|32)", storage_tok.text)
        if unsigned:  # the quant dialect's own spelling of unsigned storage: u8 is ui8
            self.lex.next()
            storage = dtype(f"ui{unsigned.group(1)}")
        else:
            with self.nested(storage_tok):
                storage = self.parse_type("storage type")
        if not isinstance(storage, DType) or not storage.is_integer:
            raise self.error("quantized storage type must be an integer type", storage_tok)
        qmin = qmax = None
        if self.parse_optional_punct("<"):
            qmin = self.parse_integer("storage minimum")
            self.parse_punct(":")
            qmax = self.parse_integer("storage maximum")
            self.parse_punct(">")
        self.parse_punct(":", "after quantized storage type")
        with self.nested(storage_tok):
            expressed = self.parse_type("expressed type")
        axis = None
        if self.parse_optional_punct(":"):
            axis = self.parse_integer("quantized dimension")
        self.parse_punct(",", "before quantization scale")

        def scale_zp() -> tuple[float, int]:
            tok = self.peek()
            if tok.kind != "number":
                raise self.error(f"expected scale, found {self._describe(tok)}", tok)
            self.lex.next()
            zp = self.parse_integer("zero point") if self.parse_optional_punct(":") else 0
            return float(tok.text), zp

        if axis is None:
            pairs = [scale_zp()]
        else:
            self.parse_punct("{", "before per-channel scales")
            pairs = self.parse_comma_list(scale_zp, "}")
        self.parse_punct(">", "to close '!quant.uniform'")
        return QuantParams(storage, expressed, tuple(s for s, _ in pairs),
                           tuple(z for _, z in pairs), axis, qmin, qmax)

    # ------------------------------------------------------------------ attributes

    def parse_attribute(self) -> Any:
        tok = self.peek()
        attr = self.parse_optional_attribute()
        if attr is None:
            raise self.error(f"expected attribute value, found {self._describe(tok)}", tok)
        return attr

    def parse_optional_attribute(self) -> Any | None:
        tok = self.peek()
        kind, text = tok.kind, tok.text
        if kind == "number":
            self.lex.next()
            ty = self.parse_type() if self.parse_optional_punct(":") else None
            if is_int_literal(text) and not (isinstance(ty, DType) and ty.is_float):
                int_ty = ty if isinstance(ty, DType) and ty.kind in "iub" else None
                return IntAttr(self.int_value(tok, int_ty), ty)
            fty = ty if isinstance(ty, DType) and ty.is_float else DTYPES["f64"]
            return FloatAttr(float_literal_value(text, fty, lambda m: self.error(m, tok)), ty)
        if kind == "string":
            self.lex.next()
            return StringAttr(unescape(text))
        if kind == "symbol":
            self.lex.next()
            return SymbolRefAttr(symbol_name(text))
        if kind == "punct":
            if text == "[":
                self.lex.next()
                with self.nested(tok):
                    return ArrayAttr(tuple(self.parse_comma_list(self.parse_attribute, "]")))
            if text == "{":
                with self.nested(tok):
                    return self.parse_attr_dict()
            if text == "(":
                return TypeAttr(self.parse_function_type())
            return None
        if kind == "hash":
            return self.parse_hash_attribute()
        if kind == "bare":
            if text in ("true", "false"):
                self.lex.next()
                return BoolAttr(text == "true")
            if text == "unit":
                self.lex.next()
                return UnitAttr()
            if text == "dense":
                return self.parse_dense()
            if text == "dense_resource":
                return self.parse_dense_resource()
            if text == "array":
                return self.parse_dense_array()
            if text in ("affine_map", "affine_set", "sparse", "strided", "opaque", "loc",
                        "distinct"):
                self.lex.next()
                open_ = self.lex.next()
                if open_.text not in ("<", "(", "["):
                    raise self.error(f"expected '<' after '{text}'", open_)
                body = self.skip_balanced(open_.text)
                return OpaqueAttr(text, body)
        ty = self.parse_optional_type()
        return TypeAttr(ty) if ty is not None else None

    def parse_hash_attribute(self) -> Any:
        tok = self.lex.next()
        name = tok.text[1:]
        if not self.parse_optional_punct("<"):
            if name in self.attr_aliases:
                return self.attr_aliases[name]
            raise self.error(f"undefined attribute alias '#{name}'", tok)
        parse = self.attribute_syntax.get(name)
        if parse is not None:
            return parse(self, name, tok.start)
        return OpaqueAttr(name, enum_body(self.skip_balanced("<")))

    def parse_attr_dict(self) -> DictAttr:
        self.parse_punct("{")

        def entry() -> tuple[str, Any]:
            tok = self.peek()
            if tok.kind not in ("bare", "string"):
                raise self.error(f"expected attribute name, found {self._describe(tok)}", tok)
            self.lex.next()
            key = unescape(tok.text) if tok.kind == "string" else tok.text
            if self.parse_optional_punct("="):
                return key, self.parse_attribute()
            return key, UnitAttr()

        # A comma may end the list too, as in the spec's examples (`api_version = 4 : i32,
        # }`) and StableHLO's struct attributes; a dictionary has no other use for it.
        items: list[tuple[str, Any]] = []
        while not self.parse_optional_punct("}"):
            items.append(entry())
            if not self.parse_optional_punct(","):
                self.parse_punct("}", "to close the attribute dictionary")
                break
        return DictAttr(tuple(items))

    def parse_optional_attr_dict(self) -> dict[str, Any]:
        if self.peek().text == "{" and self.peek().kind == "punct":
            return dict(self.parse_attr_dict().items)
        return {}

    def parse_dense_array(self) -> DenseArrayAttr:
        self.parse_keyword("array")
        self.parse_punct("<", "after 'array'")
        ty_tok = self.peek()
        ty = self.parse_type("element type")
        if not isinstance(ty, DType):
            raise self.error("array<...> needs a scalar element type", ty_tok)
        values: list = []
        if self.parse_optional_punct(":"):
            values = self.parse_comma_list(lambda: self._parse_scalar(ty))
        self.parse_punct(">", "to close 'array'")
        return DenseArrayAttr(ty, tuple(values))

    def _parse_scalar(self, ty: DType) -> Any:
        tok = self.peek()
        if tok.kind == "bare" and tok.text in ("true", "false"):
            self.lex.next()
            return tok.text == "true"
        if tok.kind != "number":
            raise self.error(f"expected {ty.name} literal, found {self._describe(tok)}", tok)
        self.lex.next()
        # Same rules as a dense literal element: hex float bits, integer ranges, i1 0/1.
        return convert_literal(tok.text, ty, lambda m: self.error(m, tok))

    def parse_dense(self) -> DenseAttr:
        """`dense<...> : tensor<...>` in every spelling: splat, nested lists, hex blob."""
        self.parse_keyword("dense")
        open_tok = self.parse_punct("<", "after 'dense'")
        body_tok = self.peek()
        if body_tok.kind == "string":
            self.lex.next()
            body: Any = ("hex", unescape(body_tok.text))
        elif body_tok.kind == "punct" and body_tok.text == ">":
            body = ("list", [])
        elif body_tok.kind == "punct" and body_tok.text == "[":
            body = ("list", self._parse_nested())
        else:
            body = ("splat", None)
            self._splat_tok = body_tok
            body = ("splat", self._parse_literal())
        self.parse_punct(">", "to close 'dense'")
        self.parse_punct(":", "before the type of a dense literal")
        ty_tok = self.peek()
        ty = self.parse_type()
        if not isinstance(ty, TensorType):
            raise self.error(f"dense literal needs a tensor type, found '{ty}'", ty_tok)
        if not ty.is_static:
            raise self.error(f"dense literal needs a static shape, found '{ty}'", ty_tok)
        self._check_size(ty, ty_tok)
        return DenseAttr(ty, self._dense_array(body, ty, body_tok, open_tok))

    def _check_size(self, ty: TensorType, tok: Token) -> None:
        size = ty.num_elements * ty.dtype.itemsize
        if size > MAX_DENSE_BYTES:
            raise self.error(f"'{ty}' takes {size} bytes; constants are limited to "
                             f"{MAX_DENSE_BYTES} bytes (1 GiB)", tok)

    def _parse_literal(self) -> Any:
        tok = self.peek()
        if tok.kind == "bare" and tok.text in ("true", "false"):
            self.lex.next()
            return tok.text == "true"
        if tok.kind == "number":
            self.lex.next()
            return tok.text
        if tok.kind == "punct" and tok.text == "(":
            # A complex element: `(real, imaginary)`, two numbers (no recursion here).
            self.lex.next()
            real = self._parse_number("the real part of a complex literal")
            self.parse_punct(",", "between the parts of a complex literal")
            imag = self._parse_number("the imaginary part of a complex literal")
            self.parse_punct(")", "to close a complex literal")
            return (real, imag)
        raise self.error(f"expected a number in dense literal, found {self._describe(tok)}", tok)

    def _parse_number(self, what: str) -> str:
        tok = self.peek()
        if tok.kind != "number":
            raise self.error(f"expected {what}, found {self._describe(tok)}", tok)
        return self.lex.next().text

    def _parse_nested(self) -> Any:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "[":
            self.lex.next()
            with self.nested(tok):
                return [tok.start] + self.parse_comma_list(self._parse_nested, "]")
        return self._parse_literal()

    def _dense_array(self, body: tuple, ty: TensorType, tok: Token, open_tok: Token) -> np.ndarray:
        shape = ty.shape
        np_dt = ty.dtype.np_dtype
        kind, data = body
        if kind == "hex":
            if not re.fullmatch(r"0x(?:[0-9a-fA-F]{2})*", data):
                raise self.error("malformed hex in dense literal", tok)
            raw = bytes.fromhex(data[2:])
            return array_from_bytes(raw, ty, lambda m: self.error(m, tok))
        if kind == "splat":
            value = convert_literal(data, ty.dtype, lambda m: self.error(m, tok))
            return np.full(shape, to_host(ty.dtype, [value])[0], dtype=np_dt)  # bounded
        if not data:
            if ty.num_elements != 0:
                raise self.error(f"empty dense literal for non-empty type '{ty}'", tok)
            return np.zeros(shape, dtype=np_dt)
        flat: list = []
        check_nested(data, shape, flat, lambda m, off: self.lex.error(m, off))
        values = [convert_literal(v, ty.dtype, lambda m: self.error(m, tok)) for v in flat]
        return to_host(ty.dtype, values).reshape(shape)

    def parse_dense_resource(self) -> DenseAttr:
        self.parse_keyword("dense_resource")
        self.parse_punct("<", "after 'dense_resource'")
        name_tok = self.peek()
        if name_tok.kind not in ("bare", "string"):
            raise self.error("expected resource name", name_tok)
        self.lex.next()
        self.parse_punct(">", "to close 'dense_resource'")
        self.parse_punct(":", "before the type of a dense_resource")
        ty_tok = self.peek()
        ty = self.parse_type()
        if not isinstance(ty, TensorType) or not ty.is_static:
            raise self.error(f"dense_resource needs a static tensor type, found '{ty}'", ty_tok)
        self._check_size(ty, ty_tok)
        attr = DenseAttr(ty, np.zeros(0), resource=name_tok.text.strip('"'))
        self.pending_resources.append((attr, name_tok.start))
        return attr
