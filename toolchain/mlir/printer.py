"""Prints an operation tree in MLIR's generic form.

The output is valid input for our parser (and for `mlir-opt`-style tools): every op as
`"dialect.op"(operands) <{properties}> ({regions}) {attributes} : (types) -> types`,
dense values as exact hex so a round trip loses no bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

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
    StringAttr,
    StructAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
    Value,
)
from toolchain.types import DType, FunctionType, held_in_f32, storage_bits

_BUILTIN_OPAQUE = {"affine_map", "affine_set", "sparse", "strided", "opaque", "distinct"}


def format_float(x: float, ty: DType | None = None) -> str:
    """A float literal MLIR accepts: always with a '.', non-finite values as hex bits."""
    if not math.isfinite(x):
        bits = np.array([x], dtype=np.float32 if ty is None or ty.bits <= 32 else np.float64)
        return hex(int(bits.view(np.uint32 if bits.itemsize == 4 else np.uint64)[0]))
    text = repr(float(x))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exp = text.split("e")
        text = f"{mantissa}.0e{exp}"
    return text


def format_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


def format_attr(a: Any) -> str:
    """One attribute value in MLIR syntax."""
    match a:
        case BoolAttr(value=v):
            return "true" if v else "false"
        case IntAttr(value=v, type=t):
            return f"{v} : {t}" if t is not None else str(v)
        case FloatAttr(value=v, type=t):
            return f"{format_float(v, t)} : {t}" if t is not None else format_float(v)
        case StringAttr(value=v):
            return format_string(v)
        case UnitAttr():
            return "unit"
        case SymbolRefAttr(name=n):
            return "@" + (n if _is_bare(n) else format_string(n))
        case TypeAttr(type=t):
            return str(t)
        case ArrayAttr(items=items):
            return "[" + ", ".join(format_attr(i) for i in items) + "]"
        case DictAttr():
            return format_dict(dict(a.items))
        case DenseArrayAttr(type=t, values=vals):
            if not vals:
                return f"array<{t}>"
            if t.kind == "b":
                body = ", ".join("true" if v else "false" for v in vals)
            elif t.is_float:
                body = ", ".join(format_float(v, t) for v in vals)
            else:
                body = ", ".join(str(v) for v in vals)
            return f"array<{t}: {body}>"
        case DenseAttr():
            return format_dense(a)
        case StructAttr(name=name, params=params):
            raw = "raw " if name == "stablehlo.conv" else ""
            body = ", ".join(f"{k} = {_param(v)}" for k, v in params)
            return f"#{name}<{raw}{body}>"
        case OpaqueAttr(dialect=d, body=b):
            return f"{d}<{b}>" if d in _BUILTIN_OPAQUE else f"#{d}<{b}>"
    raise TypeError(f"cannot print attribute {a!r}")


def _param(v: Any) -> str:
    if isinstance(v, tuple):  # dimension numbers; None is a dynamic bound
        return "[" + ", ".join("?" if i is None else str(i) for i in v) + "]"
    if isinstance(v, int):
        return str(v)
    return format_attr(v)


def format_dense(a: DenseAttr) -> str:
    arr = a.array
    dt = a.type.dtype
    if dt.kind == "b":
        return f"dense<{_nested_bools(arr)}> : {a.type}"
    if held_in_f32(dt):  # bf16 and the small floats: their bit patterns
        raw = storage_bits(arr, dt).astype(np.dtype("<u2") if dt.bits > 8 else "u1").tobytes()
    else:
        raw = arr.astype(dt.np_dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{raw.hex().upper()}"> : {a.type}'


def _nested_bools(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return "true" if arr else "false"
    return "[" + ", ".join(_nested_bools(x) for x in arr) + "]"


def format_dict(d: dict) -> str:
    parts = []
    for k, v in d.items():
        key = k if _is_bare(k) else format_string(k)
        parts.append(key if isinstance(v, UnitAttr) else f"{key} = {format_attr(v)}")
    return "{" + ", ".join(parts) + "}"


def _is_bare(k: str) -> bool:
    return bool(k) and (k[0].isalpha() or k[0] == "_") and all(
        c.isalnum() or c in "_$." for c in k)


class GenericPrinter:
    """Prints ops with fresh value names (`%0`, `%arg0`) in definition order."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.counter = 0
        self.args = 0
        self.blocks: dict[int, str] = {}  # block labels, numbered over the whole file
        self.lines: list[str] = []

    def use(self, v: Value) -> str:
        return self.names[id(v)]

    def print_op(self, op: Operation, indent: int) -> None:
        pad = "  " * indent
        head = ""
        if op.results:
            if id(op.results[0]) not in self.names:
                self.name_results(op)
            base = self.names[id(op.results[0])].split("#")[0]
            head = f"{base} = " if len(op.results) == 1 else f"{base}:{len(op.results)} = "
        text = f"{pad}{head}{format_string(op.name)}({', '.join(self.use(v) for v in op.operands)})"
        if op.successors:
            text += "[" + ", ".join(self.blocks[id(b)] for b in op.successors) + "]"
        if op.properties:
            text += f" <{format_dict(op.properties)}>"
        if not op.regions:
            self.lines.append(text + self._tail(op))
            return
        self.lines.append(text + " (")
        for i, region in enumerate(op.regions):
            self.lines.append(pad + "{")
            self.name_region(region)
            for k, block in enumerate(region.blocks):
                self.print_block(block, indent + 1, labelled=k > 0)
            self.lines.append(pad + "}" + ("," if i + 1 < len(op.regions) else ""))
        self.lines.append(pad + ")" + self._tail(op))

    def name_results(self, op: Operation) -> None:
        base = f"%{self.counter}"
        self.counter += 1
        if len(op.results) == 1:
            self.names[id(op.results[0])] = base
        else:
            for i, r in enumerate(op.results):
                self.names[id(r)] = f"{base}#{i}"

    def name_region(self, region) -> None:
        """Names every block, block argument and result of `region` (not of regions
        nested in it) before any of its ops is printed: a block may use a value a
        block printed further down defines, and branch to it."""
        for block in region.blocks:
            self.blocks[id(block)] = f"^bb{len(self.blocks)}"
            for a in block.args:
                self.names[id(a)] = f"%arg{self.args}"
                self.args += 1
            for o in block.ops:
                if o.results:
                    self.name_results(o)

    def _tail(self, op: Operation) -> str:
        attrs = f" {format_dict(op.attributes)}" if op.attributes else ""
        fty = FunctionType(tuple(v.type for v in op.operands), tuple(r.type for r in op.results))
        return f"{attrs} : {fty}"

    def print_block(self, block: Block, indent: int, labelled: bool = False) -> None:
        """The block's ops, after its label when it has arguments or is not the first."""
        if block.args or labelled:
            args = [f"{self.names[id(a)]}: {a.type}" for a in block.args]
            label = self.blocks[id(block)]
            self.lines.append("  " * (indent - 1) + label
                              + (f"({', '.join(args)})" if args else "") + ":")
        for op in block.ops:
            self.print_op(op, indent)


def print_generic(op: Operation) -> str:
    """The op (usually a module) in generic form, ending with a newline."""
    printer = GenericPrinter()
    printer.print_op(op, 0)
    return "\n".join(printer.lines) + "\n"
