"""Literal values of MLIR text: integer and float tokens checked against their element
type, dense-element lists and hex blobs converted to host arrays, quoted strings and
symbol names unescaped.

Kept apart from the parser's grammar so the rules for what a literal means (hex floats
are bit patterns, signless integers take both ranges, bf16 is rounded once) live in one
place, shared by dense literals, `array<...>`, scalar attributes and resource blobs.
Each function that can fail takes `err`, which builds the located CompileError.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.types import (
    DType,
    TensorType,
    dtype,
    from_storage_bits,
    held_in_f32,
    to_bf16,
    to_dtype,
)

# Decimal literals longer than this are refused before Python's int() sees them (it
# refuses 4300 digits and more with a ValueError; no MLIR type holds a tenth of that).
MAX_INT_DIGITS = 512

_ENUM_BODY = re.compile(r"\s*([\w.]+)\s+([\w.]+)\s*")

# Splats and resources are materialized, so their size is bounded like every tensor's
# (a module addresses buffers with 30 bits: toolchain/graph/verify.py's limit).
MAX_DENSE_BYTES = 1 << 30


def is_int_literal(text: str) -> bool:
    """Whether number token `text` is an integer (decimal or hex), not a float."""
    t = text.lstrip("+-")
    return t.startswith(("0x", "0X")) or ("." not in t and "e" not in t and "E" not in t)


def int_literal_value(text: str, err: Callable[[str], CompileError]) -> int:
    """An MLIR integer literal: decimal, where leading zeros are allowed (`01` is 1, as
    in MLIR; Python's int(x, 0) refuses it), or hexadecimal `0x...`; with a sign."""
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body[:2] in ("0x", "0X"):
        return sign * int(body[2:], 16)
    if len(body) > MAX_INT_DIGITS:
        raise err(f"integer literal of {len(body)} digits is too large")
    return sign * int(body, 10)


def float_literal_value(text: str, ty: DType, err: Callable[[str], CompileError]) -> float:
    """A float attribute's value. As in MLIR, a hexadecimal literal is the bit pattern of
    its type (`0x7FC00000 : f32` is a NaN), not a number to convert."""
    if is_int_literal(text) and text.lstrip("+-").lower().startswith("0x"):
        if text.startswith("-"):
            raise err("hexadecimal float literal cannot have a sign")
        return float_from_bits(int_literal_value(text, err), ty, err)
    return float(text)


def enum_body(body: str) -> str:
    """`comparison_direction  GT` as `comparison_direction GT`: an enum attribute's
    text does not depend on its spacing. Other bodies are kept as written."""
    m = _ENUM_BODY.fullmatch(body)
    return f"{m.group(1)} {m.group(2)}" if m else body


def to_host(dt: DType, values: list) -> np.ndarray:
    """Literal values as the host array of `dt`. Decimal literals are rounded once to
    the element type, bf16 included (held in float32, already rounded: a bf16 literal
    `3.14063` is 3.140625); a float too large for the type becomes infinite."""
    with np.errstate(over="ignore"):
        if dt.name == "bf16":
            return to_bf16(np.array(values, dtype=np.float64))
        if held_in_f32(dt):  # a small float
            return to_dtype(np.array(values, dtype=np.float64), dt)
        return np.array(values, dtype=dt.np_dtype)


def float_from_bits(bits: int, ty: DType, err: Callable[[str], CompileError]) -> float:
    """The float of type `ty` whose bit pattern is `bits` (a hex float literal)."""
    if not 0 <= bits < 1 << ty.bits:
        # A mutated or hostile literal may run to any length: name its width instead.
        shown = hex(bits) if 0 <= bits < 1 << 64 else f"of {abs(bits).bit_length()} bits"
        raise err(f"hexadecimal float literal {shown} does not fit in {ty.name}")
    if held_in_f32(ty):  # bf16 and the small floats: float32 on the host
        return float(from_storage_bits(np.array([bits]), ty)[0])
    np_bits = {16: np.uint16, 32: np.uint32, 64: np.uint64}[ty.bits]
    return float(np.array([bits], dtype=np_bits).view(ty.np_dtype)[0])


def convert_literal(text: Any, ty: DType, err: Callable[[str], CompileError]) -> Any:
    """The value of one literal element (token text, a bool, or a complex pair) as an
    element of `ty`, checked against its range."""
    if ty.kind == "c":
        if not isinstance(text, tuple):
            raise err(f"expected a complex literal '(real, imaginary)' for {ty.name}")
        part = dtype(ty.name[len("complex<"):-1])
        return complex(convert_literal(text[0], part, err), convert_literal(text[1], part, err))
    if isinstance(text, tuple):
        raise err(f"complex literal in a dense literal of type {ty.name}")
    if isinstance(text, bool):
        if ty.kind != "b":
            raise err(f"boolean literal in a dense literal of type {ty.name}")
        return text
    if ty.is_float:
        if text.lstrip("+-").lower().startswith("0x"):
            return float_from_bits(int_literal_value(text, err), ty, err)
        return float(text)
    if not is_int_literal(text):
        raise err(f"expected integer literal for {ty.name}, found '{text}'")
    value = int_literal_value(text, err)
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


def check_nested(data: list, shape: tuple, flat: list,
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
            check_nested(item, shape[1:], flat, err)
        elif len(shape) != 1:
            raise err(f"dense literal is nested too shallowly for rank {len(shape)}", offset)
        else:
            flat.append(item)
    return True


def array_from_bytes(raw: bytes, ty: TensorType,
                      err: Callable[[str], CompileError]) -> np.ndarray:
    """The array of static tensor type `ty` stored little-endian in `raw` (a hex
    literal or a resource blob); one element's bytes are a splat."""
    dt = ty.dtype
    storage = np.dtype("<u2") if dt.name == "bf16" else np.dtype("u1") if (
        dt.name == "i1" or held_in_f32(dt)) else dt.np_dtype.newbyteorder("<")
    count = ty.num_elements
    if len(raw) == storage.itemsize and count != 1:
        arr = np.frombuffer(raw, dtype=storage)
        arr = np.broadcast_to(arr, (count,)).copy()
    elif len(raw) == storage.itemsize * count:
        arr = np.frombuffer(raw, dtype=storage).copy()
    else:
        raise err(f"hex literal has {len(raw)} bytes but '{ty}' needs "
                  f"{storage.itemsize * count}")
    if held_in_f32(dt):
        arr = from_storage_bits(arr, dt)
    elif dt.name == "i1":
        arr = arr != 0
    return arr.astype(dt.np_dtype).reshape(ty.shape)


_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{2})|(.))")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t"}


def unescape(text: str) -> str:
    r"""The value of a quoted MLIR string: escapes are \\, \", \n, \t and hex \XX."""
    body = text[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else
        _SIMPLE_ESCAPES.get(m.group(2), m.group(2)), body)


def symbol_name(text: str) -> str:
    """`@name` or `@"quoted name"` -> the name."""
    name = text[1:]
    return unescape(name) if name.startswith('"') else name

