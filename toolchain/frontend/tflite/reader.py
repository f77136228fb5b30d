""".tflite flatbuffer -> plain, validated dataclasses (subgraph 0 only).

Everything the importer needs is read eagerly, once, through bounds-checked tables
(flatbuf.py), and checked for structural consistency: indices in range, constant data
exactly as long as its shape and type say, quantization parameters of matching
lengths. Afterwards nothing refers back to the flatbuffer. Any problem raises
FormatError naming what is wrong; the caller adds the file name.

What the reader does not judge is whether minirt can compile the model (unknown element
types, unsupported ops, ...): those are the importer's errors, reported per operator.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from toolchain.frontend.tflite import schema
from toolchain.frontend.tflite.flatbuf import FormatError, checked, checked_as, defaults_of

# flatbuffers addresses at most 2 GiB (signed 32-bit offsets).
MAX_FILE_BYTES = (1 << 31) - 1

# Host dtypes of the TFLite element types that hold plain numbers (little-endian in
# the file). Others (STRING, COMPLEX64, INT4, RESOURCE, ...) are kept as raw bytes.
NUMPY_TYPES = {
    "FLOAT32": "<f4", "FLOAT16": "<f2", "FLOAT64": "<f8", "INT8": "i1", "UINT8": "u1",
    "INT16": "<i2", "UINT16": "<u2", "INT32": "<i4", "UINT32": "<u4", "INT64": "<i8",
    "UINT64": "<u8", "BOOL": "u1",
}


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (stored - zero_point), one pair per tensor
    or one per index along `axis` (the schema's quantized_dimension)."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int

    @property
    def per_channel(self) -> bool:
        return len(self.scales) > 1


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of subgraph 0. `data` holds a constant's values, shaped (raw uint8
    bytes for element types without a numpy equivalent), or None."""

    index: int
    name: str
    shape: tuple[int, ...]
    type: str  # the schema's TensorType name: FLOAT32, INT8, ...
    data: np.ndarray | None = field(default=None, compare=False, repr=False)
    quant: Quantization | None = None
    is_variable: bool = False
    sparse: bool = False

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    def describe(self) -> str:
        """`tensor 3 ('conv/weights')`, for messages."""
        return f"tensor {self.index} ('{self.name}')" if self.name else f"tensor {self.index}"


@dataclass(frozen=True)
class OperatorInfo:
    """One operator: its opcode name (`CONV_2D`; `CUSTOM:<code>` for custom ops), the
    tensor indices it reads (-1: an optional input left out) and writes, and its builtin
    options as a dict of the schema's field names in snake case (enums as integers;
    schema defaults filled in when the writer left the table out). A custom operator's
    options are the raw `custom_options` bytes (a flexbuffer for TFLite Micro's Signal
    ops), decoded by its converter."""

    index: int
    opcode: str
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_type: str
    options: dict[str, Any] = field(compare=False)
    custom_options: bytes = field(default=b"", compare=False, repr=False)

    def describe(self) -> str:
        """`operator 7 (CONV_2D)`, for messages."""
        return f"operator {self.index} ({self.opcode})"


@dataclass(frozen=True)
class ModelInfo:
    version: int
    description: str
    subgraph_count: int
    tensors: tuple[TensorInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[OperatorInfo, ...]


# ---------------------------------------------------------------- options


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_SKIP = re.compile(r"^(Init|GetRootAs.*|.*BufferHasIdentifier)$|(AsNumpy|Length|IsNone)$")
_FIELDS: dict[type, list[tuple[str, Callable, bool]]] = {}


def option_fields(cls: type) -> list[tuple[str, Callable, bool]]:
    """(key, accessor, is_vector) for every field accessor a generated options class
    has: `StrideW()` -> ("stride_w", ..., False), `Squeeze Dims(j)` -> vector."""
    if cls not in _FIELDS:
        rows = []
        for name, fn in vars(cls).items():
            if not inspect.isfunction(fn) or _SKIP.search(name) or name.startswith("_"):
                continue
            params = list(inspect.signature(fn).parameters)
            if params == ["self"]:
                rows.append((_snake(name), fn, False))
            elif params == ["self", "j"] and hasattr(cls, name + "Length"):
                rows.append((_snake(name), fn, True))
        _FIELDS[cls] = rows
    return _FIELDS[cls]


def _decode_options(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, fn, is_vector in option_fields(type(obj)):
        if is_vector:
            n = getattr(obj, fn.__name__ + "Length")()
            out[key] = tuple(fn(obj, j) for j in range(n))
            continue
        value = fn(obj)
        if isinstance(value, bool | int | float):
            out[key] = value
        elif isinstance(value, bytes):
            out[key] = value.decode("utf-8", errors="replace")
        # Nested tables (a few StableHLO options) are not needed by any op we import.
    return out


def _options(op: Any, where: str) -> tuple[str, dict[str, Any]]:
    """The name of an operator's builtin options table and its decoded fields."""
    for type_fn, table_fn, names in ((op.BuiltinOptionsType, op.BuiltinOptions, schema.OPTIONS),
                                     (op.BuiltinOptions2Type, op.BuiltinOptions2,
                                      schema.OPTIONS2)):
        kind = type_fn()
        if kind == 0:
            continue
        name = names.get(kind)
        cls = getattr(tflite, name, None) if name else None
        if cls is None:
            raise FormatError(f"{where} has an unknown builtin options type {kind}")
        obj = checked_as(cls, table_fn())
        return name, _decode_options(obj if obj is not None else defaults_of(cls))
    return "NONE", {}


# ---------------------------------------------------------------- tensors


def _ints(values: Any) -> tuple[int, ...]:
    """An `...AsNumpy()` result as ints (the generated code returns 0 for an absent
    vector)."""
    return () if isinstance(values, int) else tuple(int(v) for v in values)


def _floats(values: Any) -> tuple[float, ...]:
    return () if isinstance(values, int) else tuple(float(v) for v in values)


def _buffer_bytes(data: bytes, buffers: Any, index: int, n_buffers: int,
                  where: str) -> bytes | None:
    """The bytes of buffer `index`, or None when it is empty (not a constant)."""
    if not 0 <= index < n_buffers:
        raise FormatError(f"{where} refers to buffer {index}, but the model has {n_buffers}")
    buf = checked(buffers(index))
    offset, size = buf.Offset(), buf.Size()
    if offset > 1:  # models over 2 GiB keep buffers after the flatbuffer, by file offset
        if offset + size > len(data):
            raise FormatError(f"{where}: buffer {index} at file offset {offset} ({size} "
                              f"bytes) lies outside the {len(data)}-byte file")
        return bytes(data[offset:offset + size]) if size else None
    raw = buf.DataAsNumpy()
    return None if isinstance(raw, int) or raw.size == 0 else raw.tobytes()


def _quantization(t: Any, where: str) -> Quantization | None:
    q = checked(t.Quantization())
    if q is None:
        return None
    if q.DetailsType() != 0:
        kind = schema.QUANTIZATION_DETAILS.get(q.DetailsType(), str(q.DetailsType()))
        raise FormatError(f"{where} uses custom quantization ({kind}), which TFLite models "
                          "for microcontrollers do not")
    scales = _floats(q.ScaleAsNumpy())
    zero_points = _ints(q.ZeroPointAsNumpy())
    if not scales:
        return None  # min/max only, or an empty table: not quantized
    if len(zero_points) != len(scales):
        raise FormatError(f"{where} has {len(scales)} quantization scales but "
                          f"{len(zero_points)} zero points")
    return Quantization(scales, zero_points, q.QuantizedDimension())


def _tensor(data: bytes, sg: Any, model: Any, i: int, n_buffers: int) -> TensorInfo:
    t = checked(sg.Tensors(i))
    name = (t.Name() or b"").decode("utf-8", errors="replace")
    where = f"tensor {i}" + (f" ('{name}')" if name else "")
    shape = _ints(t.ShapeAsNumpy())
    if any(d < 0 for d in shape):
        raise FormatError(f"{where} has a negative dimension in its shape {list(shape)}")
    type_name = schema.TENSOR_TYPES.get(t.Type())
    if type_name is None:
        raise FormatError(f"{where} has an unknown element type {t.Type()}")
    raw = _buffer_bytes(data, model.Buffers, t.Buffer(), n_buffers, where)
    array = None
    if raw is not None:
        np_type = NUMPY_TYPES.get(type_name)
        if np_type is None or t.Sparsity() is not None:
            # A sparse tensor's buffer holds only its non-zero blocks: its size says
            # nothing against the shape. The importer refuses sparse tensors by name.
            array = np.frombuffer(raw, dtype=np.uint8).copy()
        else:
            dt = np.dtype(np_type)
            count = math.prod(shape)  # Python ints: exact, however large the claim
            if count * dt.itemsize != len(raw):
                raise FormatError(f"{where} holds {len(raw)} bytes of data, but its shape "
                                  f"{list(shape)} of {type_name} needs {count * dt.itemsize}")
            array = np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="))
            array = (array != 0) if type_name == "BOOL" else array
            array = array.reshape(shape)
    return TensorInfo(i, name, shape, type_name, array, _quantization(t, where),
                      bool(t.IsVariable()), t.Sparsity() is not None)


# ---------------------------------------------------------------- the model


def _ints_bytes(values: Any) -> bytes:
    """A ubyte vector's `...AsNumpy()` as bytes (0 when the vector is absent)."""
    return b"" if isinstance(values, int) else bytes(values.tobytes())


def _indices(values: tuple[int, ...], n_tensors: int, where: str,
             optional: bool = False) -> tuple[int, ...]:
    for v in values:
        if not (0 <= v < n_tensors or (optional and v == -1)):
            raise FormatError(f"{where} refers to tensor {v}, but subgraph 0 has "
                              f"{n_tensors} tensors")
    return values


def _opcode(code: Any) -> str:
    # Builtin codes over 127 live only in the newer int32 field; older writers fill only
    # the deprecated int8 one. TFLite takes the larger of the two.
    value = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    name = schema.OPERATORS.get(value)
    if name is None:
        return f"BUILTIN_{value}"  # newer than our schema: reported as unsupported
    if name == "CUSTOM":
        custom = (code.CustomCode() or b"").decode("utf-8", errors="replace")
        return f"CUSTOM:{custom}"
    return name


def read_model(data: bytes) -> ModelInfo:
    """Reads subgraph 0 of a .tflite flatbuffer. Raises FormatError on anything that is
    not a well-formed TFLite model."""
    if len(data) < 8:
        raise FormatError(f"the file has {len(data)} bytes, too few for a flatbuffer")
    if len(data) > MAX_FILE_BYTES:
        raise FormatError("the file is larger than the 2 GiB a flatbuffer can address")
    if bytes(data[4:8]) != schema.FILE_IDENTIFIER:
        raise FormatError(f"bytes 4..8 are {bytes(data[4:8])!r}, not the TFLite file "
                          f"identifier {schema.FILE_IDENTIFIER!r}")
    model = checked(tflite.Model.GetRootAs(data, 0))
    version = model.Version()
    if version != schema.SCHEMA_VERSION:
        raise FormatError(f"schema version {version} is not TFLite's "
                          f"{schema.SCHEMA_VERSION}")
    n_subgraphs = model.SubgraphsLength()
    if n_subgraphs == 0:
        raise FormatError("the model has no subgraph")
    sg = checked(model.Subgraphs(0))
    codes = [checked(model.OperatorCodes(i)) for i in range(model.OperatorCodesLength())]
    opcodes = [(_opcode(c), c.Version()) for c in codes]
    n_buffers = model.BuffersLength()
    n_tensors = sg.TensorsLength()
    tensors = tuple(_tensor(data, sg, model, i, n_buffers) for i in range(n_tensors))
    operators = []
    for i in range(sg.OperatorsLength()):
        op = checked(sg.Operators(i))
        where = f"operator {i}"
        k = op.OpcodeIndex()
        if not 0 <= k < len(opcodes):
            raise FormatError(f"{where} has opcode index {k}, but the model lists "
                              f"{len(opcodes)} operator codes")
        opts_type, opts = _options(op, where)
        operators.append(OperatorInfo(
            i, opcodes[k][0], opcodes[k][1],
            _indices(_ints(op.InputsAsNumpy()), n_tensors, where, optional=True),
            _indices(_ints(op.OutputsAsNumpy()), n_tensors, where),
            opts_type, opts, _ints_bytes(op.CustomOptionsAsNumpy())))
    description = (model.Description() or b"").decode("utf-8", errors="replace")
    return ModelInfo(version, description, n_subgraphs, tensors,
                     _indices(_ints(sg.InputsAsNumpy()), n_tensors, "subgraph 0's inputs"),
                     _indices(_ints(sg.OutputsAsNumpy()), n_tensors, "subgraph 0's outputs"),
                     tuple(operators))


__all__ = ["FormatError", "ModelInfo", "OperatorInfo", "Quantization", "TensorInfo",
           "option_fields",
           "read_model"]
