"""Parses MLIR text into the generic operation tree of `toolchain.mlir.ir`.

Follows xDSL's convention: `parse_x` raises a located CompileError, `parse_optional_x`
returns None when the construct is absent. Custom (pretty) op syntax lives in
`custom_syntax.py`; it builds exactly what the generic form of the same op would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.diagnostics import CompileError, Location, SourceFile
from toolchain.mlir.ir import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseArrayAttr,
    DenseAttr,
    DictAttr,
    FloatAttr,
    IntAttr,
    OpaqueAttr,
    Operation,
    Region,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
    Value,
)
from toolchain.mlir.lexer import Lexer, Token
from toolchain.mlir.struct_attrs import STRUCTS, parse_struct_body
from toolchain.types import (
    ALIASES,
    DTYPES,
    DType,
    FunctionType,
    OpaqueType,
    QuantParams,
    TensorType,
    dtype,
    to_bf16,
)

_DIMS = re.compile(r"(?:(?:[0-9]+|\?)x)*")
_UNRANKED = re.compile(r"\*x")
_RESULT_GROUP = re.compile(r":([0-9]+)")
_USE_INDEX = re.compile(r"#([0-9]+)")
_ENUM_BODY = re.compile(r"\s*([\w.]+)\s+([\w.]+)\s*")

# Regions, attribute lists, nested dense literals and function types nest by recursion:
# deeper than this is an error at the construct, not a Python RecursionError. Real
# models nest a handful of levels; each level costs a few Python frames, and the
# importer recurses once more per level, all well inside Python's default limit.
MAX_NESTING = 64

# Decimal literals longer than this are refused before Python's int() sees them (it
# refuses 4300 digits and more with a ValueError; no MLIR type holds a tenth of that).
MAX_INT_DIGITS = 512

# Element types of `complex<...>`: numpy holds complex<f32> as complex64 and
# complex<f64> as complex128 (real and imaginary parts interleaved, as MLIR stores them).
_COMPLEX = {"f32": np.dtype("complex64"), "f64": np.dtype("complex128")}


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


class Parser:
    """Recursive-descent parser over one MLIR source file."""

    def __init__(self, source: SourceFile):
        self.lex = Lexer(source)
        self.source = source
        self.attr_aliases: dict[str, Any] = {}
        self.type_aliases: dict[str, Any] = {}
        self.scopes: list[dict[str, list[Value]]] = [{}]
        self.pending_resources: list[tuple[DenseAttr, int]] = []
        self.resources: dict[str, bytes] = {}
        self.depth = 0
        # Block labels of each open region: label -> (block, token of its first use,
        # whether its header was seen). Successors may name blocks defined further down.
        self.labels: list[dict[str, list[Any]]] = []
        # Values used before their definition (MLIR allows it: a block may use what a
        # dominating block printed further down defines), by name.
        self.forward: dict[str, list[_ForwardRef]] = {}

    @contextmanager
    def nested(self, tok: Token) -> Iterator[None]:
        """One level of recursive structure, opened at `tok`; refuses too many."""
        if self.depth >= MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels", tok)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ token helpers

    def peek(self) -> Token:
        return self.lex.peek()

    def error(self, message: str, tok: Token | None = None) -> CompileError:
        tok = tok or self.peek()
        return self.lex.error(message, tok.start)

    def _describe(self, tok: Token) -> str:
        return "end of file" if tok.kind == "eof" else f"'{tok.text[:40]}'"

    def parse_optional_punct(self, p: str) -> bool:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == p:
            self.lex.next()
            return True
        return False

    def parse_punct(self, p: str, context: str = "") -> Token:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == p:
            return self.lex.next()
        where = f" {context}" if context else ""
        raise self.error(f"expected '{p}'{where}, found {self._describe(tok)}", tok)

    def parse_optional_keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "bare" and tok.text == word:
            self.lex.next()
            return True
        return False

    def parse_keyword(self, word: str) -> Token:
        tok = self.peek()
        if tok.kind == "bare" and tok.text == word:
            return self.lex.next()
        raise self.error(f"expected '{word}', found {self._describe(tok)}", tok)

    def parse_bare(self, what: str = "identifier") -> Token:
        tok = self.peek()
        if tok.kind != "bare":
            raise self.error(f"expected {what}, found {self._describe(tok)}", tok)
        return self.lex.next()

    def parse_comma_list(self, parse_item: Callable[[], Any], close: str | None = None) -> list:
        """Items separated by commas; with `close`, stops (consuming it) at that punct."""
        items: list = []
        if close is not None and self.parse_optional_punct(close):
            return items
        items.append(parse_item())
        while self.parse_optional_punct(","):
            items.append(parse_item())
        if close is not None:
            self.parse_punct(close, "to close the list")
        return items

    def parse_integer(self, what: str = "integer") -> int:
        tok = self.peek()
        if tok.kind != "number" or not _is_int(tok.text):
            raise self.error(f"expected {what}, found {self._describe(tok)}", tok)
        self.lex.next()
        return self.int_value(tok)

    def int_value(self, tok: Token, ty: DType | None = None) -> int:
        """The value of integer token `tok` (see `_int_value`), which must fit in `ty`
        (default i64, what MLIR reads dimensions, indices and untyped integers as);
        located on failure."""
        value = _int_value(tok.text, lambda m: self.error(m, tok))
        if ty is None:
            lo, hi = -(1 << 63), (1 << 63) - 1
        elif ty.kind == "u":
            lo, hi = 0, (1 << ty.bits) - 1
        else:  # signless: the signed range, or the bit pattern as unsigned
            lo, hi = -(1 << (ty.bits - 1)), (1 << ty.bits) - 1
        if not lo <= value <= hi:
            raise self.error(f"integer {tok.text[:30]} does not fit in "
                             f"{ty.name if ty is not None else 'i64'}", tok)
        return value

    def parse_int_list(self) -> list[int]:
        """`[1, 2, 3]`."""
        self.parse_punct("[")
        return self.parse_comma_list(self.parse_integer, "]")

    def skip_balanced(self, open_: str) -> str:
        """Consumes text up to the bracket matching `open_` (just consumed); returns it."""
        close = {"<": ">", "(": ")", "[": "]", "{": "}"}[open_]
        text = self.lex.text
        start = pos = self.lex.pos
        depth = 1
        while pos < len(text):
            c = text[pos]
            if c == '"':
                m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(text, pos)
                if not m:
                    raise self.lex.error("unterminated string literal", pos)
                pos = m.end()
                continue
            if c == "-" and text.startswith("->", pos):
                pos += 2
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.lex.pos = pos + 1
                    self.lex._peeked = None
                    return text[start:pos]
            pos += 1
        raise self.lex.error(f"unbalanced '{open_}': no matching '{close}'", start - 1)

    def skip_optional_loc(self) -> None:
        tok = self.peek()
        if tok.kind == "bare" and tok.text == "loc":
            self.lex.next()
            self.parse_punct("(", "after 'loc'")
            self.skip_balanced("(")

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
            if _is_int(text) and not (isinstance(ty, DType) and ty.is_float):
                int_ty = ty if isinstance(ty, DType) and ty.kind in "iub" else None
                return IntAttr(self.int_value(tok, int_ty), ty)
            fty = ty if isinstance(ty, DType) and ty.is_float else DTYPES["f64"]
            return FloatAttr(_parse_float(text, fty, lambda m: self.error(m, tok)), ty)
        if kind == "string":
            self.lex.next()
            return StringAttr(_unescape(text))
        if kind == "symbol":
            self.lex.next()
            return SymbolRefAttr(_symbol_name(text))
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
        if name == "stablehlo.conv":
            from toolchain.mlir.stablehlo_syntax import parse_conv_dims

            if self.parse_optional_keyword("raw"):
                return parse_struct_body(self, name, tok.start)
            attr = parse_conv_dims(self)
            self.parse_punct(">", "to close '#stablehlo.conv'")
            return attr
        if name in STRUCTS:
            return parse_struct_body(self, name, tok.start)
        return OpaqueAttr(name, _enum_body(self.skip_balanced("<")))

    def parse_attr_dict(self) -> DictAttr:
        self.parse_punct("{")

        def entry() -> tuple[str, Any]:
            tok = self.peek()
            if tok.kind not in ("bare", "string"):
                raise self.error(f"expected attribute name, found {self._describe(tok)}", tok)
            self.lex.next()
            key = _unescape(tok.text) if tok.kind == "string" else tok.text
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
        return _convert_literal(tok.text, ty, lambda m: self.error(m, tok))

    def parse_dense(self) -> DenseAttr:
        """`dense<...> : tensor<...>` in every spelling: splat, nested lists, hex blob."""
        self.parse_keyword("dense")
        open_tok = self.parse_punct("<", "after 'dense'")
        body_tok = self.peek()
        if body_tok.kind == "string":
            self.lex.next()
            body: Any = ("hex", _unescape(body_tok.text))
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
            return _array_from_bytes(raw, ty, lambda m: self.error(m, tok))
        if kind == "splat":
            value = _convert_literal(data, ty.dtype, lambda m: self.error(m, tok))
            return np.full(shape, _to_host(ty.dtype, [value])[0], dtype=np_dt)  # bounded
        if not data:
            if ty.num_elements != 0:
                raise self.error(f"empty dense literal for non-empty type '{ty}'", tok)
            return np.zeros(shape, dtype=np_dt)
        flat: list = []
        _check_nested(data, shape, flat, lambda m, off: self.lex.error(m, off))
        values = [_convert_literal(v, ty.dtype, lambda m: self.error(m, tok)) for v in flat]
        return _to_host(ty.dtype, values).reshape(shape)

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

    # ------------------------------------------------------------------ values and ops

    def define(self, name: str, values: list[Value], offset: int) -> list[Value]:
        """Binds `%name` to `values` in the innermost scope and returns them. Earlier
        uses of the name (forward references) are pointed at them when the file has
        been read (`_replace_forward_refs`)."""
        scope = self.scopes[-1]
        if name in scope:
            raise self.lex.error(f"redefinition of SSA value '%{name}'", offset)
        if name in self.forward:
            self._resolve_forward(name, values)
        scope[name] = values
        return values

    def _resolve_forward(self, name: str, values: list[Value]) -> None:
        depth = len(self.scopes)
        scope = self.scopes[-1]
        for ref in self.forward[name]:
            # Only a use inside the scope being defined in (or inside regions nested
            # there) sees this definition; a use in a closed sibling region does not.
            if ref.target is not None or len(ref.scopes) < depth or \
                    ref.scopes[depth - 1] is not scope:
                continue
            if ref.index >= len(values):
                raise self.error(f"'%{name}' has only {len(values)} results", ref.tok)
            value = values[ref.index]
            if ref.value.type is not None and ref.value.type != value.type:
                raise self.error(f"'%{name}' is used as '{ref.value.type}' here but defined "
                                 f"as '{value.type}'", ref.tok)
            ref.target = value

    def parse_operand(self) -> Value:
        """`%name` or `%name#k`, resolved against the enclosing scopes; a name not
        defined yet is a forward reference, resolved when its definition is parsed."""
        tok = self.peek()
        if tok.kind != "value":
            raise self.error(f"expected SSA value, found {self._describe(tok)}", tok)
        self.lex.next()
        name = tok.text[1:]
        index = 0
        m = self.lex.match_raw(_USE_INDEX, skip_ws=False)
        if m:
            if len(m.group(1)) > MAX_INT_DIGITS:
                raise self.error("result number is too large", tok)
            index = int(m.group(1))
        for scope in reversed(self.scopes):
            if name in scope:
                values = scope[name]
                if index >= len(values):
                    raise self.error(f"'%{name}' has only {len(values)} results", tok)
                return values[index]
        refs = self.forward.setdefault(name, [])
        for ref in refs:  # a later use inside the first use's scope shares its placeholder
            if (ref.index == index and ref.target is None and len(ref.scopes) <= len(self.scopes)
                    and all(a is b for a, b in zip(ref.scopes, self.scopes))):
                return ref.value
        placeholder = Value(None, name)  # type: ignore[arg-type]  (typed by its first use)
        refs.append(_ForwardRef(placeholder, name, index, list(self.scopes), tok))
        return placeholder

    def parse_operands_until(self, close: str) -> tuple[list[Value], list[Token]]:
        """`%a, %b` up to (and consuming) `close`; also each operand's token, so a type
        mismatch can point at the operand that has the wrong type."""
        toks: list[Token] = []

        def operand() -> Value:
            toks.append(self.peek())
            return self.parse_operand()

        return self.parse_comma_list(operand, close), toks

    def parse_operand_list(self) -> list[Value]:
        if self.peek().kind != "value":
            return []
        return self.parse_comma_list(self.parse_operand)

    def parse_module_text(self) -> Operation:
        """A whole file: alias definitions, ops, and an optional resource section."""
        top: list[Operation] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                break
            if tok.kind in ("hash", "bang") and self._is_alias_def():
                self._parse_alias_def()
                continue
            if tok.kind == "punct" and tok.text == "{-#":
                self.parse_resource_section()
                continue
            top.append(self.parse_operation())
        self._resolve_resources()
        if len(top) == 1 and top[0].name == "builtin.module":
            module = top[0]
        else:
            module = Operation("builtin.module", [], [], regions=[Region([Block(ops=top)])])
            # An empty file still gets a location, so errors about it name the file.
            module.loc = top[0].loc if top else self.lex.loc(0)
        self._replace_forward_refs(module)
        return module

    def earliest(self, error: CompileError) -> CompileError:
        """`error`, or the use of an undefined value before it when the error is at
        the end of the file: nothing further can define that value, and errors are
        reported in source order (a truncated file names the undefined value first)."""
        at_end = error.loc is not None and not self.lex.text[error.loc.offset:].strip()
        if not at_end:
            return error
        for ref in sorted((r for rs in self.forward.values() for r in rs),
                          key=lambda r: r.tok.start):
            if ref.target is None and ref.tok.start < error.loc.offset:
                return self.error(f"use of undefined value '%{ref.name}'", ref.tok)
        return error

    def _replace_forward_refs(self, module: Operation) -> None:
        """Points every use of a forward reference at the value it names."""
        if not self.forward:
            return
        refs = sorted((r for rs in self.forward.values() for r in rs), key=lambda r: r.tok.start)
        for ref in refs:
            if ref.target is None:
                raise self.error(f"use of undefined value '%{ref.name}'", ref.tok)
        targets = {id(ref.value): ref.target for ref in refs}
        for op in module.walk():
            if any(id(v) in targets for v in op.operands):
                op.operands = [targets.get(id(v), v) for v in op.operands]

    def _is_alias_def(self) -> bool:
        save = self.lex.pos
        self.lex.next()
        is_def = self.peek().text == "="
        self.lex.pos = save
        self.lex._peeked = None
        return is_def

    def _parse_alias_def(self) -> None:
        tok = self.lex.next()
        self.parse_punct("=")
        if tok.kind == "hash":
            self.attr_aliases[tok.text[1:]] = self.parse_attribute()
        else:
            self.type_aliases[tok.text[1:]] = self.parse_type()

    def parse_resource_section(self) -> None:
        """`{-# dialect_resources: { builtin: { name: "0x..." } } #-}`."""
        self.parse_punct("{-#")

        def group() -> None:
            key = self.parse_bare("resource group").text
            self.parse_punct(":")
            self.parse_punct("{")

            def dialect() -> None:
                self.parse_bare("dialect name")
                self.parse_punct(":")
                self.parse_punct("{")

                def blob() -> None:
                    name_tok = self.peek()
                    if name_tok.kind not in ("bare", "string"):
                        raise self.error("expected resource name", name_tok)
                    self.lex.next()
                    self.parse_punct(":")
                    data_tok = self.peek()
                    if data_tok.kind != "string":
                        raise self.error("expected hex string for resource blob", data_tok)
                    self.lex.next()
                    hex_text = _unescape(data_tok.text)
                    if not re.fullmatch(r"0x(?:[0-9a-fA-F]{2})*", hex_text):
                        raise self.error("malformed hex in resource blob", data_tok)
                    if key == "dialect_resources":
                        self.resources[name_tok.text.strip('"')] = bytes.fromhex(hex_text[2:])

                self.parse_comma_list(blob, "}")

            self.parse_comma_list(dialect, "}")

        self.parse_comma_list(group, "#-}")

    def _resolve_resources(self) -> None:
        for attr, offset in self.pending_resources:
            blob = self.resources.get(attr.resource or "")
            if blob is None:
                raise self.lex.error(f"unknown dense_resource '{attr.resource}'", offset)
            # The first 4 bytes of a blob are its alignment, not data.
            attr.array = _array_from_bytes(blob[4:], attr.type,
                                           lambda m, o=offset: self.lex.error(m, o))

    def parse_operation(self) -> Operation:
        start = self.peek()
        results: list[tuple[str, int, int]] = []
        if start.kind == "value":
            def result() -> tuple[str, int, int]:
                tok = self.lex.next()
                if tok.kind != "value":
                    raise self.error("expected result name", tok)
                m = self.lex.match_raw(_RESULT_GROUP, skip_ws=False)
                if m and len(m.group(1)) > MAX_INT_DIGITS:
                    raise self.error("result count is too large", tok)
                return tok.text[1:], int(m.group(1)) if m else 1, tok.start

            results = self.parse_comma_list(result)
            self.parse_punct("=", "after result names")
        name_tok = self.peek()
        with self.nested(name_tok):
            if name_tok.kind == "string":
                op = self.parse_generic_operation()
            elif name_tok.kind == "bare":
                from toolchain.mlir.custom_syntax import parse_custom_operation

                op = parse_custom_operation(self)
            else:
                raise self.error(f"expected operation, found {self._describe(name_tok)}",
                                 name_tok)
        op.loc = self.lex.loc(name_tok.start)
        self.skip_optional_loc()
        _normalize_inherent(op)
        want = sum(n for _, n, _ in results)
        if results and want != len(op.results):
            raise self.lex.error(
                f"operation '{op.name}' defines {len(op.results)} results "
                f"but {want} names were given", start.start)
        i = 0
        for rname, n, off in results:
            vals = self.define(rname, op.results[i : i + n], off)
            for k, v in enumerate(vals):
                v.name = rname if n == 1 else f"{rname}#{k}"
            i += n
        return op

    def parse_generic_operation(self) -> Operation:
        """`"d.op"(%a)[^bb1] <{props}> ({regions}) {attrs} : (T) -> T`."""
        name_tok = self.lex.next()
        name = _unescape(name_tok.text)
        return self.parse_generic_body(name)

    def parse_generic_body(self, name: str) -> Operation:
        """Everything of a generic op after its name; also what some ops print after
        their bare name (`stablehlo.constant() <{value = ...}> : () -> T`)."""
        self.parse_punct("(", "to open the operand list")
        operands, operand_toks = self.parse_operands_until(")")
        successors: list[Block] = []
        successor_args: list[Value] = []  # the older `[^bb1(%a : T)]`: typed right there
        if self.parse_optional_punct("["):
            successors = self.parse_comma_list(
                lambda: self.parse_successor(successor_args), "]")
        props: dict = {}
        if self.parse_optional_punct("<"):
            props = dict(self.parse_attr_dict().items)
            self.parse_punct(">", "to close the properties")
        regions: list[Region] = []
        if self.peek().kind == "punct" and self.peek().text == "(":
            self.lex.next()
            regions = self.parse_comma_list(self.parse_region, ")")
        attrs = self.parse_optional_attr_dict()
        self.parse_punct(":", "before the operation's type")
        ty_tok = self.peek()
        fty = self.parse_type("function type")
        if not isinstance(fty, FunctionType):
            raise self.error("expected function type '(...) -> ...'", ty_tok)
        self.check_operand_types(operands, list(fty.inputs), operand_toks, ty_tok)
        results = [Value(t) for t in fty.results]
        op = Operation(name, operands + successor_args, results, attrs, props, regions)
        op.successors = successors
        return op

    def parse_successor(self, operands: list[Value] | None = None,
                        toks: list[Token] | None = None) -> Block:
        """`^bb1`, or `^bb1(%a, %b : T1, T2)` whose arguments are appended to
        `operands` (MLIR keeps a successor's arguments among the op's operands)."""
        tok = self.peek()
        if tok.kind != "block":
            raise self.error(f"expected block name, found {self._describe(tok)}", tok)
        if not self.labels:
            raise self.error("a branch must be inside a region", tok)
        self.lex.next()
        entry = self.labels[-1].get(tok.text)
        if entry is None:
            entry = self.labels[-1][tok.text] = [Block(label=tok.text), tok, False]
        if self.peek().text == "(" and operands is not None:
            self.lex.next()
            args, arg_toks = [], []
            if not self.parse_optional_punct(")"):
                args, arg_toks = self.parse_operands_until(":")
                ty_tok = self.peek()
                types = self.parse_comma_list(self.parse_type, ")")
                self.check_operand_types(args, types, arg_toks, ty_tok)
            operands.extend(args)
            if toks is not None:
                toks.extend(arg_toks)
        return entry[0]

    def check_operand_types(self, operands: list[Value], types: list, toks: list[Token],
                            ty_tok: Token) -> None:
        if len(operands) != len(types):
            raise self.error(f"operation has {len(operands)} operands but its type lists "
                             f"{len(types)}", ty_tok)
        for i, (v, t) in enumerate(zip(operands, types)):
            if v.type is None:  # a forward reference: its use gives its type
                v.type = t
            elif v.type != t:
                raise self.error(f"operand {i} ('%{v.name}') has type '{v.type}' but the "
                                 f"operation's type says '{t}'", toks[i] if toks else ty_tok)

    def parse_region(self) -> Region:
        open_tok = self.parse_punct("{", "to open a region")
        with self.nested(open_tok):
            self.scopes.append({})
            self.labels.append({})
            blocks: list[Block] = []
            block = Block()
            while True:
                tok = self.peek()
                if tok.kind == "punct" and tok.text == "}":
                    self.lex.next()
                    break
                if tok.kind == "eof":
                    raise self.error("unexpected end of file: region is not closed", tok)
                if tok.kind == "block":
                    if block.ops or blocks or block.label:
                        blocks.append(block)
                    block = self.parse_block_header()
                    continue
                block.ops.append(self.parse_operation())
            if block.ops or block.label or not blocks:
                blocks.append(block)
            for _, use, defined in self.labels.pop().values():
                if not defined:
                    raise self.error(f"reference to an undefined block '{use.text}'", use)
            self.scopes.pop()
        return Region(blocks)

    def parse_block_header(self) -> Block:
        tok = self.lex.next()
        entry = self.labels[-1].get(tok.text) if self.labels else None
        if entry is not None and entry[2]:
            raise self.error(f"redefinition of block '{tok.text}'", tok)
        if entry is None:
            entry = [Block(label=tok.text), tok, False]
            if self.labels:
                self.labels[-1][tok.text] = entry
        entry[2] = True
        args: list[Value] = []
        if self.parse_optional_punct("("):
            args = self.parse_comma_list(self.parse_block_arg, ")")
        self.parse_punct(":", "after block label")
        block = entry[0]
        block.args = args
        return block

    def parse_block_arg(self) -> Value:
        tok = self.peek()
        if tok.kind != "value":
            raise self.error(f"expected block argument, found {self._describe(tok)}", tok)
        self.lex.next()
        self.parse_punct(":", "after block argument name")
        v = Value(self.parse_type(), tok.text[1:])
        self.skip_optional_loc()
        return self.define(v.name, [v], tok.start)[0]


class _ForwardRef:
    """A use of `%name#index` before its definition (see Parser.parse_operand)."""

    def __init__(self, value: Value, name: str, index: int, scopes: list, tok: Token):
        self.value = value
        self.name = name
        self.index = index
        self.scopes = scopes
        self.tok = tok
        self.target: Value | None = None


def _normalize_inherent(op: Operation) -> None:
    """Moves the op's inherent attributes from the attribute dictionary to its
    properties, as MLIR does when it reads a registered op: `{comparison_direction =
    ...}` and `<{comparison_direction = ...}>` are one op."""
    if not op.attributes:
        return
    from toolchain.mlir.inherent import inherent_attributes

    names = inherent_attributes(op.name)
    if names and any(k in names for k in op.attributes):
        for key in [k for k in op.attributes if k in names]:
            op.properties.setdefault(key, op.attributes.pop(key))


# ---------------------------------------------------------------------- literal helpers


# Splats and resources are materialized, so their size is bounded like every tensor's
# (a module addresses buffers with 30 bits: toolchain/graph/verify.py's limit).
MAX_DENSE_BYTES = 1 << 30


def _is_int(text: str) -> bool:
    t = text.lstrip("+-")
    return t.startswith(("0x", "0X")) or ("." not in t and "e" not in t and "E" not in t)


def _int_value(text: str, err: Callable[[str], CompileError]) -> int:
    """An MLIR integer literal: decimal, where leading zeros are allowed (`01` is 1, as
    in MLIR; Python's int(x, 0) refuses it), or hexadecimal `0x...`; with a sign."""
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body[:2] in ("0x", "0X"):
        return sign * int(body[2:], 16)
    if len(body) > MAX_INT_DIGITS:
        raise err(f"integer literal of {len(body)} digits is too large")
    return sign * int(body, 10)


def _parse_float(text: str, ty: DType, err: Callable[[str], CompileError]) -> float:
    """A float attribute's value. As in MLIR, a hexadecimal literal is the bit pattern of
    its type (`0x7FC00000 : f32` is a NaN), not a number to convert."""
    if _is_int(text) and text.lstrip("+-").lower().startswith("0x"):
        if text.startswith("-"):
            raise err("hexadecimal float literal cannot have a sign")
        return _float_from_bits(_int_value(text, err), ty, err)
    return float(text)


def _enum_body(body: str) -> str:
    """`comparison_direction  GT` as `comparison_direction GT`: an enum attribute's
    text does not depend on its spacing. Other bodies are kept as written."""
    m = _ENUM_BODY.fullmatch(body)
    return f"{m.group(1)} {m.group(2)}" if m else body


def _to_host(dt: DType, values: list) -> np.ndarray:
    """Literal values as the host array of `dt`. Decimal literals are rounded once to
    the element type, bf16 included (held in float32, already rounded: a bf16 literal
    `3.14063` is 3.140625); a float too large for the type becomes infinite."""
    with np.errstate(over="ignore"):
        if dt.name == "bf16":
            return to_bf16(np.array(values, dtype=np.float64))
        return np.array(values, dtype=dt.np_dtype)


def _float_from_bits(bits: int, ty: DType, err: Callable[[str], CompileError]) -> float:
    if not 0 <= bits < 1 << ty.bits:
        # A mutated or hostile literal may run to any length: name its width instead.
        shown = hex(bits) if 0 <= bits < 1 << 64 else f"of {abs(bits).bit_length()} bits"
        raise err(f"hexadecimal float literal {shown} does not fit in {ty.name}")
    np_bits = {16: np.uint16, 32: np.uint32, 64: np.uint64}[ty.bits]
    if ty.name == "bf16":
        return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])
    return float(np.array([bits], dtype=np_bits).view(ty.np_dtype)[0])


def _convert_literal(text: Any, ty: DType, err: Callable[[str], CompileError]) -> Any:
    if ty.kind == "c":
        if not isinstance(text, tuple):
            raise err(f"expected a complex literal '(real, imaginary)' for {ty.name}")
        part = dtype(ty.name[len("complex<"):-1])
        return complex(_convert_literal(text[0], part, err), _convert_literal(text[1], part, err))
    if isinstance(text, tuple):
        raise err(f"complex literal in a dense literal of type {ty.name}")
    if isinstance(text, bool):
        if ty.kind != "b":
            raise err(f"boolean literal in a dense literal of type {ty.name}")
        return text
    if ty.is_float:
        if text.lstrip("+-").lower().startswith("0x"):
            return _float_from_bits(_int_value(text, err), ty, err)
        return float(text)
    if not _is_int(text):
        raise err(f"expected integer literal for {ty.name}, found '{text}'")
    value = _int_value(text, err)
    if ty.kind == "b":
        if value not in (0, 1):
            raise err(f"i1 literal must be 0 or 1, found {value}")
        return bool(value)
    if ty.kind == "u":
        lo, hi = 0, (1 << ty.bits) - 1
    else:
        # Signless integers take the signed and the unsigned range, as in MLIR: 255 is
        # the i8 whose bits are 0xFF, i.e. -1.
        lo, hi = -(1 << (ty.bits - 1)), (1 << ty.bits) - 1
    if not lo <= value <= hi:
        raise err(f"integer literal {value} does not fit in {ty.name}")
    if ty.kind == "i" and value >= 1 << (ty.bits - 1):
        value -= 1 << ty.bits
    return value


def _check_nested(data: list, shape: tuple, flat: list,
                  err: Callable[[str, int], CompileError]) -> bool:
    """Flattens nested literal lists into `flat`, checking them against `shape`."""
    offset, items = data[0], data[1:]
    if not shape:
        raise err("nested list in a dense literal of rank 0", offset)
    if len(items) != shape[0]:
        raise err(f"dense literal has {len(items)} elements in a dimension of size "
                  f"{shape[0]}", offset)
    for item in items:
        if isinstance(item, list):
            _check_nested(item, shape[1:], flat, err)
        elif len(shape) != 1:
            raise err(f"dense literal is nested too shallowly for rank {len(shape)}", offset)
        else:
            flat.append(item)
    return True


def _array_from_bytes(raw: bytes, ty: TensorType,
                      err: Callable[[str], CompileError]) -> np.ndarray:
    dt = ty.dtype
    storage = {"bf16": np.dtype("<u2"), "i1": np.dtype("u1")}.get(dt.name,
                                                                   dt.np_dtype.newbyteorder("<"))
    count = ty.num_elements
    if len(raw) == storage.itemsize and count != 1:
        arr = np.frombuffer(raw, dtype=storage)
        arr = np.broadcast_to(arr, (count,)).copy()
    elif len(raw) == storage.itemsize * count:
        arr = np.frombuffer(raw, dtype=storage).copy()
    else:
        raise err(f"hex literal has {len(raw)} bytes but '{ty}' needs "
                  f"{storage.itemsize * count}")
    if dt.name == "bf16":
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    elif dt.name == "i1":
        arr = arr != 0
    return arr.astype(dt.np_dtype).reshape(ty.shape)


_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{2})|(.))")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t"}


def _unescape(text: str) -> str:
    r"""The value of a quoted MLIR string: escapes are \\, \", \n, \t and hex \XX."""
    body = text[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else
        _SIMPLE_ESCAPES.get(m.group(2), m.group(2)), body)


def _symbol_name(text: str) -> str:
    name = text[1:]
    return _unescape(name) if name.startswith('"') else name


# ---------------------------------------------------------------------- entry points


def parse_text(text: str, filename: str = "<input>") -> Operation:
    """Parses MLIR text; returns the `builtin.module` op. Raises CompileError."""
    parser = Parser(SourceFile(filename, text))
    try:
        return parser.parse_module_text()
    except CompileError as e:
        raise parser.earliest(e) from None


def parse_file(path: str | Path) -> Operation:
    """Parses an MLIR file. Raises CompileError (also for unreadable / non-UTF-8 files)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CompileError(f"{path}: {e.strerror}") from None
    return parse_bytes(raw, str(path))


def parse_bytes(raw: bytes, filename: str = "<input>") -> Operation:
    """Parses the bytes of an MLIR file, which must be UTF-8. Raises CompileError."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # Point at the bad byte: the text before it decodes, so its length is the column.
        source = SourceFile(filename, raw.decode("utf-8", errors="replace"))
        offset = len(raw[: e.start].decode("utf-8"))
        raise CompileError(f"not a UTF-8 text file (invalid byte 0x{raw[e.start]:02X})",
                           Location(source, offset)) from None
    return parse_text(text, filename)


# Re-exported for the custom syntax module.
__all__ = ["Parser", "parse_bytes", "parse_text", "parse_file", "Value", "Operation",
           "TensorType"]
