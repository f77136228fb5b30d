"""Parses .mrt bytes back into Python objects, validating them the way the C loader does.

Checks run in the same order as mrt_module_load and fail with the same status code, so
a test can compare the two on any byte string. After the loader's checks the reader
also checks the constant table, which the runtime never reads; strict=True adds checks
that cannot affect memory safety (zero padding, reserved fields, byte sizes that match
shapes, well-formed quantization blobs). All of those fail as MALFORMED, where the C
loader would accept.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass

from toolchain.module import format as fmt
from toolchain.module.format import BindingKind, DType, Status
from toolchain.module.pack import (
    CONST_FLAG_QUANT,
    CONST_FLAG_SYMMETRIC,
    Binding,
    Command,
    ConstantEntry,
    QuantParams,
    TensorSig,
)


class ModuleFormatError(ValueError):
    """The bytes are not a valid module; `status` is the code the C loader returns."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(f"{status.name}: {message}")
        self.status = status


@dataclass(frozen=True)
class ModuleHeader:
    """The 48-byte header, field by field."""

    magic: bytes
    version: int
    target_id: int
    crc32: int
    total_size: int
    arena_size: int
    input_count: int
    output_count: int
    command_count: int
    signature_size: int
    commands_size: int
    constant_count: int
    pool_offset: int


@dataclass(frozen=True)
class PlacedConstant:
    """A constant table entry with its resolved bytes."""

    offset: int  # in the pool
    size: int
    dtype: DType
    storage_dtype: DType
    flags: int
    params_offset: int
    params_size: int
    data: bytes
    params: QuantParams | bytes

    def to_entry(self) -> ConstantEntry:
        """The ConstantEntry that packs back to this table entry."""
        return ConstantEntry(self.data, self.dtype, self.storage_dtype, self.params)


@dataclass(frozen=True)
class Module:
    """A parsed module. Offsets of sections are relative to the module start."""

    header: ModuleHeader
    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    commands: tuple[Command, ...]
    constants: tuple[PlacedConstant, ...]
    pool: bytes
    crc_ok: bool

    @property
    def target(self) -> str:
        return fmt.target_name(self.header.target_id)

    @property
    def dispatch_count(self) -> int:
        """Highest dispatch ordinal used + 1: the dispatch table must be at least this long."""
        return max((c.ordinal for c in self.commands), default=-1) + 1

    @property
    def signature_offset(self) -> int:
        return fmt.HEADER_SIZE

    @property
    def commands_offset(self) -> int:
        return self.signature_offset + self.header.signature_size

    @property
    def constant_table_offset(self) -> int:
        return self.commands_offset + self.header.commands_size

    @property
    def constant_table_size(self) -> int:
        return self.header.constant_count * fmt.CONSTANT_ENTRY.size


def _bad(message: str) -> ModuleFormatError:
    return ModuleFormatError(Status.MALFORMED, message)


def _in_range(offset: int, size: int, limit: int) -> bool:
    return offset <= limit and size <= limit - offset


def read_header(data: bytes) -> ModuleHeader:
    """Decodes the header without validating it (raises only if data is too short)."""
    if len(data) < fmt.HEADER_SIZE:
        raise ModuleFormatError(Status.TRUNCATED, f"{len(data)} bytes, header needs 48")
    return ModuleHeader(*fmt.HEADER.unpack_from(data))


def read_module(
    data: bytes,
    target: str | int | None = None,
    *,
    check_crc: bool = True,
    strict: bool = True,
) -> Module:
    """Validates and parses `data`; raises ModuleFormatError with the C loader's status.

    target: if given, the module must be packed for it (MRT_ERR_TARGET otherwise).
    check_crc=False still reports the outcome in Module.crc_ok (dump uses it).
    """
    data = bytes(data)
    h = read_header(data)
    if h.magic != fmt.MAGIC:
        raise ModuleFormatError(Status.MAGIC, f"magic {h.magic!r}, expected {fmt.MAGIC!r}")
    if h.version != fmt.VERSION:
        raise ModuleFormatError(Status.VERSION, f"version {h.version}, expected {fmt.VERSION}")
    if target is not None and h.target_id != fmt.target_id(target):
        raise ModuleFormatError(
            Status.TARGET, f"module is for {fmt.target_name(h.target_id)}, not {target}"
        )
    if h.total_size > len(data):
        raise ModuleFormatError(
            Status.TRUNCATED, f"header says {h.total_size} bytes, got {len(data)}"
        )
    if h.total_size != len(data):
        raise _bad(f"header says {h.total_size} bytes, got {len(data)}")
    crc_ok = zlib.crc32(data[fmt.CRC_START :]) == h.crc32
    if check_crc and not crc_ok:
        raise ModuleFormatError(Status.CRC, "CRC32 mismatch")

    size = len(data)
    # What the C loader checks, in its order: the pool bounds, then a walk of the
    # signature and the command list that every read stays below the pool.
    if h.pool_offset % fmt.POOL_ALIGN or not fmt.HEADER_SIZE <= h.pool_offset <= size:
        raise _bad(f"pool offset {h.pool_offset} is not 16-aligned inside the module")
    pool = data[h.pool_offset :]
    n_in, n_io = h.input_count, h.input_count + h.output_count
    sig_start = fmt.HEADER_SIZE
    records_start = sig_start + 4 * n_io
    if records_start > h.pool_offset:
        raise _bad("signature byte sizes run into the constant pool")
    io_sizes = list(struct.unpack_from(f"<{n_io}I", data, sig_start))
    tensors, cmd_start = _read_signature(data, records_start, h.pool_offset, io_sizes, strict)
    if h.signature_size != cmd_start - sig_start:
        raise _bad(f"signature_size {h.signature_size} != {cmd_start - sig_start} walked")
    commands, cmd_end = _read_commands(
        data, cmd_start, h, len(pool), io_sizes[:n_in], io_sizes[n_in:]
    )
    if h.commands_size != cmd_end - cmd_start:
        raise _bad(f"commands_size {h.commands_size} != {cmd_end - cmd_start} walked")

    # Tool metadata the runtime never reads: the constant table and the padding.
    constants, table_end = _read_constants(data, cmd_end, h, pool, strict)
    if strict:
        if fmt.align_up(table_end, fmt.POOL_ALIGN) != h.pool_offset:
            raise _bad("the pool does not start at the first 16-byte boundary after the table")
        if any(data[table_end : h.pool_offset]):
            raise _bad("nonzero padding before the constant pool")
    return Module(h, tensors[:n_in], tensors[n_in:], commands, constants, pool, crc_ok)


def _read_signature(
    data: bytes, pos: int, limit: int, io_sizes: list[int], strict: bool
) -> tuple[tuple[TensorSig, ...], int]:
    """Walks one record per tensor below `limit`; returns the tensors and the end offset."""
    tensors = []
    for i, byte_size in enumerate(io_sizes):
        if limit - pos < fmt.SIG_RECORD_HEAD.size:
            raise _bad(f"signature record {i} is truncated")
        dtype, rank, name_len, reserved = fmt.SIG_RECORD_HEAD.unpack_from(data, pos)
        rec = fmt.sig_record_size(rank, name_len)
        if rec > limit - pos:
            raise _bad(f"signature record {i} runs into the constant pool")
        if dtype > fmt.DTYPE_MAX:
            raise _bad(f"signature record {i}: unknown dtype {dtype}")
        name_at = pos + fmt.SIG_RECORD_HEAD.size + 4 * rank
        if data[name_at + name_len] != 0:
            raise _bad(f"signature record {i}: name is not NUL-terminated")
        dims = struct.unpack_from(f"<{rank}I", data, pos + fmt.SIG_RECORD_HEAD.size)
        name_bytes = data[name_at : name_at + name_len]
        if strict:
            if reserved or any(data[name_at + name_len : pos + rec]) or b"\0" in name_bytes:
                raise _bad(f"signature record {i}: nonzero reserved or padding bytes")
            if math.prod(dims) * DType(dtype).itemsize != byte_size:
                raise _bad(f"signature record {i}: byte size {byte_size} does not match shape")
        try:
            name = name_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"signature record {i}: name is not UTF-8") from None
        tensors.append(TensorSig(name, DType(dtype), dims))
        pos += rec
    return tuple(tensors), pos


def _read_commands(
    data: bytes,
    pos: int,
    h: ModuleHeader,
    pool_size: int,
    input_sizes: list[int],
    output_sizes: list[int],
) -> tuple[tuple[Command, ...], int]:
    """Walks command_count commands below the pool; returns them and the end offset."""
    limit = h.pool_offset
    commands = []
    for ci in range(h.command_count):
        if limit - pos < fmt.COMMAND_HEAD.size:
            raise _bad(f"command {ci} runs into the constant pool")
        ordinal, nb = fmt.COMMAND_HEAD.unpack_from(data, pos)
        pos += fmt.COMMAND_HEAD.size
        if nb > fmt.MAX_BINDINGS or nb * fmt.BINDING.size > limit - pos:
            raise _bad(f"command {ci}: {nb} bindings do not fit")
        bindings = []
        for bi in range(nb):
            ref, bsize = fmt.BINDING.unpack_from(data, pos)
            pos += fmt.BINDING.size
            kind = BindingKind(ref >> fmt.BINDING_VALUE_BITS)
            value = ref & fmt.BINDING_VALUE_MASK
            if kind == BindingKind.ARENA:
                ok = _in_range(value, bsize, h.arena_size)
            elif kind == BindingKind.CONSTANT:
                ok = _in_range(value, bsize, pool_size)
            else:
                io = input_sizes if kind == BindingKind.INPUT else output_sizes
                ok = value < len(io) and bsize <= io[value]
            if not ok:
                raise _bad(
                    f"command {ci} binding {bi} ({kind.name} {value}, {bsize} B) is out of range"
                )
            bindings.append(Binding(kind, value, bsize))
        commands.append(Command(ordinal, tuple(bindings)))
    return tuple(commands), pos


def _read_constants(
    data: bytes, pos: int, h: ModuleHeader, pool: bytes, strict: bool
) -> tuple[tuple[PlacedConstant, ...], int]:
    constants = []
    for i in range(h.constant_count):
        if h.pool_offset - pos < fmt.CONSTANT_ENTRY.size:
            raise _bad(f"constant table entry {i} runs into the pool")
        off, size, dtype, storage, flags, poff, psize = fmt.CONSTANT_ENTRY.unpack_from(data, pos)
        pos += fmt.CONSTANT_ENTRY.size
        if not (_in_range(off, size, len(pool)) and _in_range(poff, psize, len(pool))):
            raise _bad(f"constant {i} lies outside the pool")
        if dtype > fmt.DTYPE_MAX or storage > fmt.DTYPE_MAX:
            raise _bad(f"constant {i}: unknown dtype")
        blob = pool[poff : poff + psize]
        params: QuantParams | bytes = blob
        if strict:
            if off % fmt.POOL_ALIGN or (psize and poff % fmt.POOL_ALIGN):
                raise _bad(f"constant {i} is not 16-byte aligned in the pool")
            if flags & ~(CONST_FLAG_QUANT | CONST_FLAG_SYMMETRIC) or (
                    flags & CONST_FLAG_SYMMETRIC and not flags & CONST_FLAG_QUANT):
                raise _bad(f"constant {i}: unknown flags {flags:#x}")
            if size % DType(storage).itemsize:
                raise _bad(f"constant {i}: {size} bytes is not a whole number of elements")
            if (flags & CONST_FLAG_QUANT) and not psize:
                raise _bad(f"constant {i}: quantized without params")
        if flags & CONST_FLAG_QUANT:
            try:
                params = QuantParams.from_bytes(blob, bool(flags & CONST_FLAG_SYMMETRIC))
            except ValueError as e:
                if strict:
                    raise _bad(f"constant {i}: {e}") from None
        constants.append(
            PlacedConstant(
                off,
                size,
                DType(dtype),
                DType(storage),
                flags,
                poff,
                psize,
                pool[off : off + size],
                params,
            )
        )
    return tuple(constants), pos
