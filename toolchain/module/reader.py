"""Parses .mrt bytes back into Python objects, validating them the way the C loader does.

Checks run in the same order as mrt_module_load and fail with the same status code, so
a test can compare the two on any byte string. Given the image's contract
(toolchain/module/contract.py), the reader also checks what the C loader checks against
`mrt_image_t`. After the loader's checks the reader also checks the constant table,
which the runtime never reads; strict=True adds checks that cannot affect memory safety
(zero padding, reserved fields, well-formed quantization blobs). All of those fail as
MALFORMED, where the C loader would accept.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from toolchain.module import format as fmt
from toolchain.module.contract import ImageContract, layout_crc
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
        return max((c.ordinal & ~fmt.BRANCH_FLAG for c in self.commands), default=-1) + 1

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


def _mismatch(message: str) -> ModuleFormatError:
    return ModuleFormatError(Status.IMAGE, f"the module does not fit the image: {message}")


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
    image: ImageContract | None = None,
    check_crc: bool = True,
    strict: bool = True,
    loader_only: bool = False,
) -> Module:
    """Validates and parses `data`; raises ModuleFormatError with the C loader's status.

    target: if given, the module must be packed for it (MRT_ERR_TARGET otherwise).
    image: the contract of the image that is to run it; checked as mrt_module_load
    checks its mrt_image_t (the target is then the image's).
    check_crc=False still reports the outcome in Module.crc_ok (dump uses it).
    loader_only=True stops after what mrt_module_load checks (no constant table, no
    strict fields), to predict the C loader's status exactly.
    """
    data = bytes(data)
    h = read_header(data)
    if h.magic != fmt.MAGIC:
        raise ModuleFormatError(Status.MAGIC, f"magic {h.magic!r}, expected {fmt.MAGIC!r}")
    if h.version != fmt.VERSION:
        raise ModuleFormatError(Status.VERSION, f"version {h.version}, expected {fmt.VERSION}")
    if image is not None:
        target = image.target_id
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
    if image is not None and ((n_in, h.output_count, h.command_count) != (
            len(image.input_sizes), len(image.output_sizes), len(image.commands))):
        raise _mismatch(f"{n_in} inputs, {h.output_count} outputs and {h.command_count} "
                        f"commands; the image has {len(image.input_sizes)}, "
                        f"{len(image.output_sizes)} and {len(image.commands)}")
    sig_start = fmt.HEADER_SIZE
    records_start = sig_start + 4 * n_io
    if records_start > h.pool_offset:
        raise _bad("signature byte sizes run into the constant pool")
    io_sizes = list(struct.unpack_from(f"<{n_io}I", data, sig_start))
    tensors, cmd_start = _read_signature(data, records_start, h.pool_offset, io_sizes,
                                         strict and not loader_only, image)
    if h.signature_size != cmd_start - sig_start:
        raise _bad(f"signature_size {h.signature_size} != {cmd_start - sig_start} walked")
    commands, cmd_end = _read_commands(
        data, cmd_start, h, len(pool), io_sizes[:n_in], io_sizes[n_in:], image
    )
    if h.commands_size != cmd_end - cmd_start:
        raise _bad(f"commands_size {h.commands_size} != {cmd_end - cmd_start} walked")
    if image is not None and layout_crc(data) != image.layout_crc:
        raise _mismatch(f"layout CRC {layout_crc(data):#010x}, the image was built for "
                        f"{image.layout_crc:#010x}")

    if loader_only:
        return Module(h, tensors[:n_in], tensors[n_in:], commands, (), pool, crc_ok)
    # Tool metadata the runtime never reads: the constant table and the padding.
    constants, table_end = _read_constants(data, cmd_end, h, pool, strict)
    if strict:
        if fmt.align_up(table_end, fmt.POOL_ALIGN) != h.pool_offset:
            raise _bad("the pool does not start at the first 16-byte boundary after the table")
        if any(data[table_end : h.pool_offset]):
            raise _bad("nonzero padding before the constant pool")
    return Module(h, tensors[:n_in], tensors[n_in:], commands, constants, pool, crc_ok)


def _dims_bytes(dims: tuple[int, ...], dtype: DType) -> int | None:
    """Bytes of a dense tensor, multiplied as the C loader does: the element size, then
    each dim in order; None if a partial product leaves 32 bits (even if a later 0
    would bring it back)."""
    n = dtype.itemsize
    for d in dims:
        n *= d
        if n > 0xFFFFFFFF:
            return None
    return n


def _read_signature(
    data: bytes, pos: int, limit: int, io_sizes: list[int], strict: bool,
    image: ImageContract | None,
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
        if _dims_bytes(dims, DType(dtype)) != byte_size:
            raise _bad(f"signature record {i}: byte size {byte_size} does not match shape")
        if image is not None and byte_size != image.io_sizes[i]:
            raise _mismatch(f"I/O tensor {i} has {byte_size} bytes, the image's buffer "
                            f"{image.io_sizes[i]}")
        name_bytes = data[name_at : name_at + name_len]
        if strict and (reserved or any(data[name_at + name_len : pos + rec])
                       or b"\0" in name_bytes):
            raise _bad(f"signature record {i}: nonzero reserved or padding bytes")
        try:
            name = name_bytes.decode("utf-8")
        except UnicodeDecodeError:
            if strict:  # the C loader hands names out as bytes
                raise _bad(f"signature record {i}: name is not UTF-8") from None
            name = name_bytes.decode("utf-8", errors="replace")
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
    image: ImageContract | None,
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
        need = None
        if image is not None:
            need = image.commands[ci]
            if (ordinal, nb) != (need.ordinal, len(need.bindings)):
                raise _mismatch(f"command {ci} runs dispatch {ordinal} with {nb} bindings, "
                                f"the image dispatch {need.ordinal} with "
                                f"{len(need.bindings)}")
        bindings = []
        for bi in range(nb):
            ref, bsize = fmt.BINDING.unpack_from(data, pos)
            pos += fmt.BINDING.size
            kind = BindingKind(ref >> fmt.BINDING_VALUE_BITS)
            value = ref & fmt.BINDING_VALUE_MASK
            where = f"command {ci} binding {bi} ({kind.name} {value}, {bsize} B)"
            if kind in (BindingKind.ARENA, BindingKind.CONSTANT):
                if value % fmt.BINDING_ALIGN:
                    raise _bad(f"{where} is not {fmt.BINDING_ALIGN}-byte aligned")
                ok = _in_range(value, bsize, h.arena_size if kind == BindingKind.ARENA
                               else pool_size)
            else:
                io = input_sizes if kind == BindingKind.INPUT else output_sizes
                ok = value < len(io) and bsize <= io[value]
            if not ok:
                raise _bad(f"{where} is out of range")
            if need is not None and (kind, bsize) != (need.bindings[bi].kind,
                                                       need.bindings[bi].size):
                expect = need.bindings[bi]
                raise _mismatch(f"{where}: the image's dispatch accesses {expect.kind.name} "
                                f"{expect.size} B")
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
