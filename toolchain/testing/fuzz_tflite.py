"""Structured edits of .tflite flatbuffers, for the parse fuzzer (bench/fuzz_parse.py).

Byte flips mostly break a flatbuffer's offsets, which the reader refuses early; these
edits instead change one field of a well-formed model to a hostile value (a scale of
NaN, a zero point of 300, a stride of 0, an input index past the tensors, ...), so the
importer and the int8 kernels see numbers no converter would write.

A flatbuffer cannot grow in place, so an edited object (a tensor, an operator, an
operator code, a buffer) is rebuilt whole, with the `tflite` package's generated builder
functions, in a small flatbuffer of its own that is appended to the file; the slot that
pointed at the old object (an element of the subgraph's tensor vector, ...) is pointed
at the copy. Offsets only point forward, and the end of the file is after every slot.
What fields a table has, and of what kind, is learnt from the generated accessors by
calling them on a probe that records what they read (`_schema`).

`EDITS` maps each edit's name to `edit(data, rng) -> (edited bytes, description)`; an
edit that finds nothing to change in a model returns it unchanged and says so.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np
import tflite
from flatbuffers import number_types as N
from flatbuffers.table import Table

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.reader import option_fields

Edit = Callable[[bytes, random.Random], tuple[bytes, str]]

# ---------------------------------------------------------------- table schemas


class _Probe(Table):
    """A table every field of which is present: records what an accessor reads."""

    def __init__(self) -> None:
        super().__init__(bytearray(64), 0)
        self.calls: list[tuple[str, Any]] = []

    def Offset(self, vtableOffset: int) -> int:  # noqa: N802 (flatbuffers' API)
        self.calls.append(("offset", vtableOffset))
        return 4

    def Get(self, flags: Any, off: int) -> Any:  # noqa: N802
        self.calls.append(("get", flags))
        return flags.py_type(0)

    def String(self, off: int) -> bytes:  # noqa: N802
        self.calls.append(("string", None))
        return b""

    def Indirect(self, off: int) -> int:  # noqa: N802
        self.calls.append(("indirect", None))
        return 0

    def Vector(self, off: int) -> int:  # noqa: N802
        self.calls.append(("vector", None))
        return 0

    def VectorLen(self, off: int) -> int:  # noqa: N802
        return 1

    def Union(self, t2: Table, off: int) -> None:  # noqa: N802
        self.calls.append(("union", None))
        t2.Bytes, t2.Pos = self.Bytes, 0


@dataclass(frozen=True)
class _Field:
    name: str  # the accessor's (and builder's) CamelCase name
    slot: int  # the field's vtable offset
    kind: str  # scalar, string, table, union, vector, string_vector, table_vector
    flags: Any = None  # element flags of a scalar or a scalar vector
    table: str = ""  # class name of a table field or table vector's elements


_SCHEMAS: dict[str, dict[str, _Field]] = {}

# A table field's class is not in the accessor's reads; these are the tables edited.
_SUBTABLES = {("Tensor", "Quantization"): "QuantizationParameters",
              ("Tensor", "Sparsity"): "SparsityParameters",
              ("SparsityParameters", "DimMetadata"): "DimensionMetadata",
              ("Tensor", "VariantTensors"): "VariantSubType"}
# Union fields: the enum naming the member's class.
_UNIONS = {"BuiltinOptions": schema.OPTIONS, "BuiltinOptions2": schema.OPTIONS2,
           "Details": schema.QUANTIZATION_DETAILS,
           "ArraySegments": schema._names(tflite.SparseIndexVector),
           "ArrayIndices": schema._names(tflite.SparseIndexVector)}


def _schema(cls_name: str) -> dict[str, _Field]:
    """The fields of generated table class `cls_name`, by name."""
    if cls_name not in _SCHEMAS:
        cls = getattr(tflite, cls_name)
        fields = {}
        for _key, fn, is_vector in option_fields(cls):
            obj = cls()
            probe = _Probe()
            obj._tab = probe
            try:
                fn(obj, 0) if is_vector else fn(obj)
            except Exception:  # noqa: BLE001 - an accessor the probe cannot satisfy
                continue
            kinds = [k for k, _ in probe.calls]
            slot = probe.calls[0][1]
            flags = next((v for k, v in probe.calls if k == "get"), None)
            if is_vector:
                kind = ("table_vector" if "indirect" in kinds else
                        "string_vector" if "string" in kinds else "vector")
            else:
                kind = ("union" if "union" in kinds else "table" if "indirect" in kinds
                        else "string" if "string" in kinds else "scalar")
            table = _SUBTABLES.get((cls_name, fn.__name__), "")
            if kind in ("table", "table_vector") and not table:
                continue  # a table this module never copies (StableHLO options)
            fields[fn.__name__] = _Field(fn.__name__, slot, kind, flags, table)
        _SCHEMAS[cls_name] = fields
    return _SCHEMAS[cls_name]


# ---------------------------------------------------------------- copying tables


def _present(obj: Any, f: _Field) -> bool:
    return obj is not None and obj._tab.Offset(f.slot) != 0


def _read(obj: Any, f: _Field) -> Any:
    """The value of field `f` of `obj`, in the form `_copy` takes as an override."""
    fn = getattr(obj, f.name)
    if f.kind == "scalar":
        return fn()
    if f.kind == "string":
        return fn() or b""
    if f.kind == "vector":
        return getattr(obj, f.name + "AsNumpy")()
    if f.kind in ("table", "union"):
        return fn()  # an object, or the union member's Table
    n = getattr(obj, f.name + "Length")()
    return [fn(j) for j in range(n)]  # strings, or table objects


def _copy(b: flatbuffers.Builder, cls_name: str, obj: Any, overrides: dict[str, Any]) -> int:
    """Writes table `obj` (of generated class `cls_name`; None: a new one) into `b`
    with the fields in `overrides` replaced, and returns its offset. An override of a
    table or union field is itself a dict of overrides for the sub-table."""
    fields = _schema(cls_name)
    made: dict[str, Any] = {}
    for f in fields.values():
        if f.kind == "scalar":
            if f.name in overrides:
                made[f.name] = overrides[f.name]
            elif _present(obj, f):
                made[f.name] = _read(obj, f)
            continue
        given = f.name in overrides
        if not given and not _present(obj, f):
            continue
        value = overrides[f.name] if given and f.kind not in ("table", "union") else (
            _read(obj, f) if _present(obj, f) else None)
        if f.kind == "string":
            made[f.name] = b.CreateString(bytes(value))
        elif f.kind == "vector":
            array = np.asarray(value, dtype=N.to_numpy_type(f.flags))
            made[f.name] = b.CreateNumpyVector(array)
        elif f.kind == "string_vector":
            made[f.name] = _offset_vector(b, [b.CreateString(s) for s in value])
        elif f.kind == "table_vector":
            made[f.name] = _offset_vector(b, [_copy(b, f.table, o, {}) for o in value])
        elif f.kind == "table":
            made[f.name] = _copy(b, f.table, value, overrides.get(f.name, {}))
        elif f.kind == "union":
            kind = overrides.get(f.name + "Type", obj and getattr(obj, f.name + "Type")())
            member = _UNIONS.get(f.name, {}).get(kind)
            if member is None or not hasattr(tflite, member + "Start"):
                continue
            sub = None
            if value is not None:
                sub = getattr(tflite, member)()
                sub.Init(value.Bytes, value.Pos)
            made[f.name] = _copy(b, member, sub, overrides.get(f.name, {}))
    getattr(tflite, cls_name + "Start")(b)
    for name, value in made.items():
        getattr(tflite, f"{cls_name}Add{name}")(b, value)
    return getattr(tflite, cls_name + "End")(b)


def _offset_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _replace(data: bytes, slot_pos: int, cls_name: str, obj: Any,
             overrides: dict[str, Any]) -> bytes:
    """`data` with the object whose offset is stored at `slot_pos` replaced by a copy of
    `obj` with `overrides`, appended at the end."""
    b = flatbuffers.Builder(256)
    b.Finish(_copy(b, cls_name, obj, overrides))
    chunk = bytes(b.Output())
    out = bytearray(data)
    out += bytes(-len(out) % 16)  # the chunk is aligned relative to its own start
    base = len(out)
    out += chunk
    target = base + struct.unpack_from("<I", chunk, 0)[0]
    struct.pack_into("<I", out, slot_pos, target - slot_pos)
    return bytes(out)


# ---------------------------------------------------------------- finding targets


class _Model:
    """Subgraph 0 of a (well-formed) model, with the byte positions of its slots."""

    def __init__(self, data: bytes):
        self.data = data
        self.model = tflite.Model.GetRootAs(data, 0)
        self.sg = self.model.Subgraphs(0)

    @staticmethod
    def _slot(parent: Any, vector_slot: int, j: int) -> int:
        tab = parent._tab
        return tab.Vector(tab.Offset(vector_slot)) + 4 * j

    def tensors(self) -> list[tuple[int, Any]]:
        return [(i, self.sg.Tensors(i)) for i in range(self.sg.TensorsLength())]

    def operators(self) -> list[tuple[int, Any]]:
        return [(i, self.sg.Operators(i)) for i in range(self.sg.OperatorsLength())]

    def replace_tensor(self, i: int, overrides: dict[str, Any]) -> bytes:
        return _replace(self.data, self._slot(self.sg, 4, i), "Tensor", self.sg.Tensors(i),
                        overrides)

    def replace_operator(self, i: int, overrides: dict[str, Any]) -> bytes:
        return _replace(self.data, self._slot(self.sg, 10, i), "Operator",
                        self.sg.Operators(i), overrides)

    def replace_opcode(self, i: int, overrides: dict[str, Any]) -> bytes:
        return _replace(self.data, self._slot(self.model, 6, i), "OperatorCode",
                        self.model.OperatorCodes(i), overrides)

    def replace_buffer(self, i: int, overrides: dict[str, Any]) -> bytes:
        return _replace(self.data, self._slot(self.model, 12, i), "Buffer",
                        self.model.Buffers(i), overrides)

    def describe_tensor(self, i: int) -> str:
        name = (self.sg.Tensors(i).Name() or b"").decode("utf-8", errors="replace")
        return f"tensor {i} ('{name}')" if name else f"tensor {i}"

    def describe_operator(self, i: int) -> str:
        k = self.sg.Operators(i).OpcodeIndex()
        code = self.model.OperatorCodes(k) if k < self.model.OperatorCodesLength() else None
        name = "?" if code is None else schema.OPERATORS.get(
            max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
        return f"operator {i} ({name})"


def _quantized(m: _Model) -> list[tuple[int, Any, Any]]:
    """(index, tensor, quantization) of the tensors with quantization scales."""
    out = []
    for i, t in m.tensors():
        q = t.Quantization()
        if q is not None and q.ScaleLength() > 0:
            out.append((i, t, q))
    return out


def _unchanged(data: bytes, why: str) -> tuple[bytes, str]:
    return data, f"nothing to edit: {why}"


# ---------------------------------------------------------------- the edits

_BAD_SCALES = [0.0, -0.0, math.inf, -math.inf, math.nan, -0.25, 3.0e38, 1.0e-45, 1.0e-30,
               1.0e30]


def bad_scale(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A quantization scale of 0, +-inf, NaN, negative, huge or tiny."""
    m = _Model(data)
    if not _quantized(m):
        return _unchanged(data, "no quantized tensor")
    i, _, q = rng.choice(_quantized(m))
    scales = q.ScaleAsNumpy().astype(np.float32)
    j = rng.randrange(len(scales))
    value = rng.choice(_BAD_SCALES)
    scales[j] = value
    return (m.replace_tensor(i, {"Quantization": {"Scale": scales}}),
            f"{m.describe_tensor(i)}: scale[{j}] = {value}")


def bad_zero_point(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A zero point outside the element type's range (or non-zero for a weight)."""
    m = _Model(data)
    if not _quantized(m):
        return _unchanged(data, "no quantized tensor")
    i, _, q = rng.choice(_quantized(m))
    zps = q.ZeroPointAsNumpy()
    zps = np.zeros(q.ScaleLength(), np.int64) if isinstance(zps, int) else zps.astype(np.int64)
    j = rng.randrange(len(zps)) if len(zps) else 0
    value = rng.choice([-129, 128, 255, 256, 32768, -32769, 1, -1, 1 << 40, -(1 << 63)])
    if len(zps):
        zps[j] = value
    return (m.replace_tensor(i, {"Quantization": {"ZeroPoint": zps}}),
            f"{m.describe_tensor(i)}: zero_point[{j}] = {value}")


def channel_count(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Per-channel scale or zero point arrays of a length that disagrees with the
    quantized dimension (or with each other)."""
    m = _Model(data)
    if not _quantized(m):
        return _unchanged(data, "no quantized tensor")
    i, _, q = rng.choice(_quantized(m))
    which = rng.choice(["Scale", "ZeroPoint"])
    values = getattr(q, which + "AsNumpy")()
    values = np.zeros(0) if isinstance(values, int) else values
    n = rng.choice([0, max(0, len(values) - 1), len(values) + 1, 2 * len(values) + 3])
    new = np.resize(values if len(values) else np.ones(1), n)
    return (m.replace_tensor(i, {"Quantization": {which: new}}),
            f"{m.describe_tensor(i)}: {len(values)} -> {n} {which} values")


def quantized_dimension(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """quantized_dimension past the tensor's rank (or negative)."""
    m = _Model(data)
    if not _quantized(m):
        return _unchanged(data, "no quantized tensor")
    i, t, _ = rng.choice(_quantized(m))
    rank = t.ShapeLength()
    value = rng.choice([rank, rank + 1, 7, -1, (1 << 31) - 1, -(1 << 31)])
    return (m.replace_tensor(i, {"Quantization": {"QuantizedDimension": value}}),
            f"{m.describe_tensor(i)}: quantized_dimension = {value} (rank {rank})")


def shape_dim(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A dimension of a tensor's shape set to -1, 0, 1, 2 or a huge value, or the shape
    given one dimension more or less."""
    m = _Model(data)
    tensors = m.tensors()
    if not tensors:
        return _unchanged(data, "no tensor")
    i, t = rng.choice(tensors)
    shape = [int(d) for d in (t.ShapeAsNumpy() if t.ShapeLength() else [])]
    what = rng.random()
    if what < 0.7 and shape:
        j = rng.randrange(len(shape))
        shape[j] = rng.choice([-1, 0, 1, 2, 3, 65536, (1 << 31) - 1, -(1 << 31)])
        desc = f"shape[{j}] = {shape[j]}"
    elif what < 0.85 and shape:
        del shape[rng.randrange(len(shape))]
        desc = f"shape -> {shape}"
    else:
        shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2, 7]))
        desc = f"shape -> {shape}"
    return (m.replace_tensor(i, {"Shape": np.asarray(shape, np.int32)}),
            f"{m.describe_tensor(i)}: {desc}")


def tensor_type(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A tensor's element type set to another enum value (or one past the schema)."""
    m = _Model(data)
    tensors = m.tensors()
    if not tensors:
        return _unchanged(data, "no tensor")
    i, t = rng.choice(tensors)
    value = rng.choice([*schema.TENSOR_TYPES, 100, -1])
    return (m.replace_tensor(i, {"Type": value}),
            f"{m.describe_tensor(i)}: type {schema.TENSOR_TYPES.get(t.Type())} -> "
            f"{schema.TENSOR_TYPES.get(value, value)}")


def opcode_index(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An operator's opcode index past the model's operator codes, or another one."""
    m = _Model(data)
    ops = m.operators()
    if not ops:
        return _unchanged(data, "no operator")
    i, _ = rng.choice(ops)
    n = m.model.OperatorCodesLength()
    value = rng.choice([n, n + 1, (1 << 32) - 1, rng.randrange(max(n, 1))])
    return (m.replace_operator(i, {"OpcodeIndex": value}),
            f"{m.describe_operator(i)}: opcode index = {value} ({n} codes)")


def tensor_index(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An operator's input or output index past the tensors, negative, or another
    tensor's (of the wrong type or shape, or not yet computed)."""
    m = _Model(data)
    ops = m.operators()
    if not ops:
        return _unchanged(data, "no operator")
    i, op = rng.choice(ops)
    which = rng.choice(["Inputs", "Inputs", "Outputs"])
    values = getattr(op, which + "AsNumpy")()
    values = np.zeros(0, np.int32) if isinstance(values, int) else values.astype(np.int32)
    n = m.sg.TensorsLength()
    value = rng.choice([n, n + 5, -1, -2, (1 << 31) - 1, rng.randrange(max(n, 1))])
    if len(values) and rng.random() < 0.85:
        j = rng.randrange(len(values))
        values[j] = value
        desc = f"{which.lower()}[{j}] = {value}"
    else:
        values = np.append(values, np.int32(value))
        desc = f"{which.lower()} += [{value}]"
    return m.replace_operator(i, {which: values}), f"{m.describe_operator(i)}: {desc}"


# Bad values per option field, by the field's meaning; any other int field gets _ANY.
_ANY = [-1, 0, 2, 7, 127, -128]
_OPTION_VALUES = {"Stride": [0, -1, -2, 1 << 20, (1 << 31) - 1],
                  "Dilation": [0, -1, 1 << 20, (1 << 31) - 1],
                  "Padding": [2, 3, 127, -1, -128],
                  "FusedActivationFunction": [6, 7, 127, -1, -128],
                  "Axis": [-9, -5, 4, 5, 8, (1 << 31) - 1, -(1 << 31)],
                  "DepthMultiplier": [0, -1, 2, 3, 1 << 20],
                  "Filter": [0, -1, 1 << 20, (1 << 31) - 1],
                  "Beta": [0.0, -1.0, math.inf, math.nan, 1e30],
                  "Alpha": [math.inf, math.nan, -1e30]}


def _bad_option(name: str, flags: Any, rng: random.Random) -> Any:
    values = next((v for key, v in _OPTION_VALUES.items() if key in name),
                  [math.nan, math.inf, -1.0, 0.0] if flags.py_type is float else _ANY)
    if flags.py_type is float:
        return float(rng.choice([v for v in values if isinstance(v, float)] or [math.nan]))
    if flags.py_type is bool:
        return rng.random() < 0.5
    info = np.iinfo(N.to_numpy_type(flags))
    return min(max(int(rng.choice([v for v in values if isinstance(v, int)])), int(info.min)),
               int(info.max))


def option_value(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A builtin option (stride, dilation, padding, fused activation, axis, ...) set to
    a value out of its range; sometimes the options table's union type changed."""
    m = _Model(data)
    ops = [(i, op) for i, op in m.operators() if op.BuiltinOptionsType() != 0]
    if not ops:
        return _unchanged(data, "no operator with options")
    i, op = rng.choice(ops)
    kind = schema.OPTIONS.get(op.BuiltinOptionsType(), "")
    if rng.random() < 0.1 or kind not in vars(tflite) or not hasattr(tflite, kind + "Start"):
        value = rng.choice([*schema.OPTIONS, 255])
        return (m.replace_operator(i, {"BuiltinOptionsType": value}),
                f"{m.describe_operator(i)}: options type {kind} -> "
                f"{schema.OPTIONS.get(value, value)}")
    scalars = [f for f in _schema(kind).values() if f.kind == "scalar"]
    if not scalars:
        return _unchanged(data, f"{kind} has no scalar field")
    f = rng.choice(scalars)
    value = _bad_option(f.name, f.flags, rng)
    return (m.replace_operator(i, {"BuiltinOptions": {f.name: value}}),
            f"{m.describe_operator(i)}: {f.name} = {value}")


def buffer_length(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A constant's buffer cut short, lengthened by a few bytes, or emptied."""
    m = _Model(data)
    used = sorted({t.Buffer() for _, t in m.tensors()
                   if 0 < t.Buffer() < m.model.BuffersLength()
                   and m.model.Buffers(t.Buffer()).DataLength() > 0})
    if not used:
        return _unchanged(data, "no constant")
    k = rng.choice(used)
    old = m.model.Buffers(k).DataAsNumpy()
    n = rng.choice([0, len(old) - 1, len(old) // 2, len(old) + 1, len(old) + 4])
    new = np.resize(old, n).astype(np.uint8)
    return m.replace_buffer(k, {"Data": new}), f"buffer {k}: {len(old)} -> {n} bytes"


def builtin_code(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """An operator code's builtin code changed to another operator (or past the
    schema); the deprecated int8 field follows, as a writer would fill it."""
    m = _Model(data)
    n = m.model.OperatorCodesLength()
    if not n:
        return _unchanged(data, "no operator code")
    k = rng.randrange(n)
    value = rng.choice([*schema.OPERATORS, 1000, -5])
    return (m.replace_opcode(k, {"BuiltinCode": value,
                                 "DeprecatedBuiltinCode": max(-128, min(value, 127))}),
            f"operator code {k}: builtin code -> {schema.OPERATORS.get(value, value)}")


EDITS: dict[str, Edit] = {
    "bad_scale": bad_scale, "bad_zero_point": bad_zero_point,
    "channel_count": channel_count, "quantized_dimension": quantized_dimension,
    "shape_dim": shape_dim, "tensor_type": tensor_type, "opcode_index": opcode_index,
    "tensor_index": tensor_index, "option_value": option_value,
    "buffer_length": buffer_length, "builtin_code": builtin_code,
}

__all__ = ["EDITS"]
