"""Packs a program's signature, command list and constants into .mrt bytes.

The packer checks everything the C loader (runtime_c/core/module.c) checks, so a module
it returns always loads; it raises PackError instead of writing one that would not.
Layout and field meanings: docs/module-format.md.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from toolchain.module import format as fmt
from toolchain.module.format import BindingKind, DType

CONST_FLAG_QUANT = 1  # the constant's params blob is a QuantParams record
CONST_FLAG_SYMMETRIC = 2  # ...whose zero points are all 0 and left out of the blob


class PackError(ValueError):
    """The program cannot be represented as a valid module."""


@dataclass(frozen=True)
class TensorSig:
    """One input or output of the module: name, element type and static shape."""

    name: str
    dtype: DType
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", DType.parse(self.dtype))
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dtype > fmt.SIGNATURE_DTYPE_MAX:
            raise PackError(f"{self.name}: {self.dtype.name} is a constant-pool storage "
                            "type; inputs and outputs hold a byte an element")

    @property
    def byte_size(self) -> int:
        """Bytes of the dense buffer the caller provides for this tensor."""
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization: real = scale * (stored - zero_point).

    axis == -1 means per-tensor (one scale); otherwise one scale and zero point per
    channel along `axis` of the constant.
    """

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int = -1

    def __post_init__(self) -> None:
        # Rounded to f32 now, as stored, so a parsed blob compares equal to its source.
        object.__setattr__(self, "scales", tuple(float(np.float32(s)) for s in self.scales))
        object.__setattr__(self, "zero_points", tuple(int(z) for z in self.zero_points))
        if len(self.scales) != len(self.zero_points) or not self.scales:
            raise PackError("quantization needs as many zero points as scales, at least one")
        if self.axis == -1 and len(self.scales) != 1:
            raise PackError("per-tensor quantization (axis -1) takes exactly one scale")

    @property
    def symmetric(self) -> bool:
        """All zero points are 0: the blob omits them (CONST_FLAG_SYMMETRIC)."""
        return not any(self.zero_points)

    def to_bytes(self) -> bytes:
        """The params blob: axis i32, count u32, f32 scales[count], then i32
        zero_points[count] unless they are all 0 (symmetric)."""
        n = len(self.scales)
        zps = b"" if self.symmetric else struct.pack(f"<{n}i", *self.zero_points)
        return fmt.QUANT_HEAD.pack(self.axis, n) + struct.pack(f"<{n}f", *self.scales) + zps

    @classmethod
    def from_bytes(cls, blob: bytes, symmetric: bool = False) -> QuantParams:
        """Parses a params blob; raises ValueError if its length does not match its count."""
        if len(blob) < fmt.QUANT_HEAD.size:
            raise ValueError("quantization params shorter than their header")
        axis, n = fmt.QUANT_HEAD.unpack_from(blob)
        per_channel = 4 if symmetric else 8
        if len(blob) != fmt.QUANT_HEAD.size + per_channel * n:
            raise ValueError(f"quantization params of {len(blob)} bytes do not hold {n} channels")
        scales = struct.unpack_from(f"<{n}f", blob, fmt.QUANT_HEAD.size)
        zps = (0,) * n if symmetric else struct.unpack_from(f"<{n}i", blob,
                                                            fmt.QUANT_HEAD.size + 4 * n)
        return cls(scales, zps, axis)


@dataclass(frozen=True)
class ConstantEntry:
    """One constant of the pool.

    `dtype` is the logical element type the model computes in; `storage_dtype` is how
    the bytes are stored (None = same as dtype; e.g. f32 weights stored as i8 with
    QuantParams). `params` is a QuantParams or an opaque blob for future schemes.
    """

    data: bytes
    dtype: DType
    storage_dtype: DType | None = None
    params: QuantParams | bytes = b""

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", bytes(self.data))
        object.__setattr__(self, "dtype", DType.parse(self.dtype))
        storage = self.dtype if self.storage_dtype is None else DType.parse(self.storage_dtype)
        object.__setattr__(self, "storage_dtype", storage)
        if not isinstance(self.params, QuantParams):
            object.__setattr__(self, "params", bytes(self.params))

    @classmethod
    def from_array(
        cls,
        array: np.ndarray,
        dtype: DType | str | None = None,
        params: QuantParams | bytes = b"",
    ) -> ConstantEntry:
        """Stores `array` little-endian, C order; dtype defaults to the array's own type."""
        storage = DType.parse(_NP_TO_DTYPE[np.dtype(array.dtype).name])
        arr = np.ascontiguousarray(array, dtype=np.dtype(array.dtype).newbyteorder("<"))
        logical = storage if dtype is None else DType.parse(dtype)
        return cls(arr.tobytes(), logical, storage, params)

    @property
    def params_bytes(self) -> bytes:
        """The params blob as stored in the pool."""
        if isinstance(self.params, QuantParams):
            return self.params.to_bytes()
        return self.params

    @property
    def flags(self) -> int:
        """The constant table's flags field."""
        if not isinstance(self.params, QuantParams):
            return 0
        return CONST_FLAG_QUANT | (CONST_FLAG_SYMMETRIC if self.params.symmetric else 0)


_NP_TO_DTYPE = {
    "float32": "f32",
    "float16": "f16",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "bool": "i1",
}


@dataclass(frozen=True)
class Binding:
    """One buffer a command passes to its dispatch: where it is and how many bytes.

    `value` is a byte offset for ARENA and CONSTANT bindings and an index for INPUT and
    OUTPUT bindings. `size` lets the loader range-check the binding.
    """

    kind: BindingKind
    value: int
    size: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", BindingKind(self.kind))

    @classmethod
    def arena(cls, offset: int, size: int) -> Binding:
        return cls(BindingKind.ARENA, offset, size)

    @classmethod
    def constant(cls, offset: int, size: int) -> Binding:
        return cls(BindingKind.CONSTANT, offset, size)

    @classmethod
    def input(cls, index: int, size: int) -> Binding:
        return cls(BindingKind.INPUT, index, size)

    @classmethod
    def output(cls, index: int, size: int) -> Binding:
        return cls(BindingKind.OUTPUT, index, size)

    def __str__(self) -> str:
        where = {
            BindingKind.ARENA: f"arena[+{self.value}]",
            BindingKind.CONSTANT: f"const[+{self.value}]",
            BindingKind.INPUT: f"input[{self.value}]",
            BindingKind.OUTPUT: f"output[{self.value}]",
        }[self.kind]
        return f"{where}:{self.size}B"


@dataclass(frozen=True)
class Command:
    """Calls dispatch `ordinal` with `bindings`, in the order the dispatch expects them."""

    ordinal: int
    bindings: tuple[Binding, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bindings", tuple(self.bindings))

    @property
    def head(self) -> int:
        """The command's head word, as the module stores it: ordinal | count << 16 (the
        ordinal carries fmt.BRANCH_FLAG for a branch)."""
        return self.ordinal | len(self.bindings) << 16


@dataclass(frozen=True)
class PoolLayout:
    """Where each constant's data and params blob sit inside the pool (byte offsets)."""

    data_offsets: tuple[int, ...]
    params_offsets: tuple[int, ...]  # 0 with a 0-byte blob when a constant has none
    size: int


def layout_constant_pool(constants: Sequence[ConstantEntry]) -> PoolLayout:
    """Places each constant (then its params blob, if any) at the next 16-byte boundary.

    The scheduler calls this (or constant_binding) to know the offsets commands bind,
    before pack_module lays the pool out the same way.
    """
    pos = 0
    data_offsets: list[int] = []
    params_offsets: list[int] = []
    for c in constants:
        pos = fmt.align_up(pos, fmt.POOL_ALIGN)
        data_offsets.append(pos)
        pos += len(c.data)
        blob = c.params_bytes
        if blob:
            pos = fmt.align_up(pos, fmt.POOL_ALIGN)
            params_offsets.append(pos)
            pos += len(blob)
        else:
            params_offsets.append(0)
    return PoolLayout(tuple(data_offsets), tuple(params_offsets), pos)


def constant_binding(constants: Sequence[ConstantEntry], index: int) -> Binding:
    """A binding to the whole of constant `index` as pack_module will place it."""
    layout = layout_constant_pool(constants)
    return Binding.constant(layout.data_offsets[index], len(constants[index].data))


def _u32(value: int, what: str) -> int:
    if not 0 <= value <= 0xFFFFFFFF:
        raise PackError(f"{what} = {value} does not fit in 32 bits")
    return value


def _encode_signature(tensors: Sequence[TensorSig], n_inputs: int) -> bytes:
    """One record per tensor, inputs first (see the spec). A tensor named by its default
    name (input_<i> / output_<j>) is stored without it."""
    records = bytearray()
    for i, t in enumerate(tensors):
        name = t.name.encode("utf-8")
        if not name or b"\0" in name or len(name) > fmt.MAX_NAME_LEN:
            raise PackError(f"tensor name {t.name!r} must be 1 to 255 UTF-8 bytes without NUL")
        if len(t.shape) > fmt.MAX_RANK or any(d < 0 for d in t.shape):
            raise PackError(f"tensor {t.name!r}: bad shape {t.shape}")
        _u32(t.byte_size, f"byte size of {t.name!r}")
        is_output = i >= n_inputs
        if t.name == fmt.default_name(is_output, i - n_inputs if is_output else i):
            name = b""
        records += fmt.SIG_RECORD_HEAD.pack(t.dtype, len(t.shape), len(name), 0)
        records += struct.pack(f"<{len(t.shape)}I", *(_u32(d, "dim") for d in t.shape))
        if name:
            records += name + bytes(fmt.align_up(len(name) + 1, 4) - len(name))
    return bytes(records)


def _check_binding(
    b: Binding,
    arena_size: int,
    pool_size: int,
    inputs: Sequence[TensorSig],
    outputs: Sequence[TensorSig],
    where: str,
) -> None:
    if not 0 <= b.value <= fmt.BINDING_VALUE_MASK:
        raise PackError(f"{where}: value {b.value} does not fit in 30 bits")
    _u32(b.size, f"{where} size")
    if b.kind in (BindingKind.ARENA, BindingKind.CONSTANT) and b.value % fmt.BINDING_ALIGN:
        raise PackError(f"{where}: {b} does not start at a multiple of {fmt.BINDING_ALIGN}")
    if b.kind == BindingKind.ARENA and b.value + b.size > arena_size:
        raise PackError(f"{where}: {b} overruns the {arena_size}-byte arena")
    if b.kind == BindingKind.CONSTANT and b.value + b.size > pool_size:
        raise PackError(f"{where}: {b} overruns the {pool_size}-byte constant pool")
    if b.kind in (BindingKind.INPUT, BindingKind.OUTPUT):
        io = inputs if b.kind == BindingKind.INPUT else outputs
        if b.value >= len(io):
            raise PackError(f"{where}: {b} names a missing {b.kind.name.lower()}")
        if b.size != io[b.value].byte_size:
            raise PackError(f"{where}: {b} is not the whole of {io[b.value].name!r} "
                            f"({io[b.value].byte_size} B): an input or output binding covers "
                            f"its whole tensor")


def pack_module(
    target: str | int,
    inputs: Sequence[TensorSig],
    outputs: Sequence[TensorSig],
    constants: Sequence[ConstantEntry],
    commands: Sequence[Command],
    arena_size: int,
) -> bytes:
    """Returns the .mrt bytes; raises PackError for anything the loader would reject.

    target: a target name from targets/*.yaml (e.g. 'cortex-m4') or its id.
    """
    tid = fmt.target_id(target)
    if tid > fmt.MAX_COUNT16:
        raise PackError(f"target id {tid} does not fit the header's 16 bits")
    _u32(arena_size, "arena size")
    for what, n in (("inputs", len(inputs)), ("outputs", len(outputs)),
                    ("commands", len(commands)), ("constants", len(constants))):
        if n > fmt.MAX_COUNT16:
            raise PackError(f"at most {fmt.MAX_COUNT16} {what}, got {n}")
    signature = _encode_signature([*inputs, *outputs], len(inputs))

    layout = layout_constant_pool(constants)
    cmd_bytes = bytearray()
    for ci, cmd in enumerate(commands):
        if not 0 <= cmd.ordinal <= 0xFFFF:
            raise PackError(f"command {ci}: dispatch ordinal {cmd.ordinal} out of 0..65535")
        if len(cmd.bindings) > fmt.MAX_BINDINGS:
            raise PackError(f"command {ci}: {len(cmd.bindings)} bindings > {fmt.MAX_BINDINGS}")
        cmd_bytes += fmt.COMMAND_HEAD.pack(cmd.ordinal, len(cmd.bindings))
        for bi, b in enumerate(cmd.bindings):
            _check_binding(
                b, arena_size, layout.size, inputs, outputs, f"command {ci} binding {bi}"
            )
            cmd_bytes += fmt.BINDING_REF.pack(b.kind << fmt.BINDING_VALUE_BITS | b.value)
            if fmt.binding_words(b.kind) == 2:
                cmd_bytes += fmt.BINDING_SIZE.pack(b.size)

    table = bytearray()
    pool = bytearray(layout.size)
    for c, doff, poff in zip(constants, layout.data_offsets, layout.params_offsets, strict=True):
        blob = c.params_bytes
        pool[doff : doff + len(c.data)] = c.data
        pool[poff : poff + len(blob)] = blob
        table += fmt.CONSTANT_ENTRY.pack(
            doff, len(c.data), c.dtype, c.storage_dtype, c.flags, poff, len(blob)
        )

    sections_end = fmt.HEADER_SIZE + len(signature) + len(cmd_bytes) + len(table)
    pool_offset = fmt.pool_offset(sections_end, len(constants))
    total = _u32(pool_offset + len(pool), "module size")
    body = signature + bytes(cmd_bytes) + bytes(table) + bytes(pool_offset - sections_end) + pool
    header = fmt.HEADER.pack(fmt.MAGIC, fmt.VERSION, tid, 0, total, arena_size, len(inputs),
                             len(outputs), len(commands), len(constants))
    data = bytearray(header + body)
    crc = zlib.crc32(data[fmt.CRC_START :])
    struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, crc)
    return bytes(data)
