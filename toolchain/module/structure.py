"""The structure of a module: its header, signature and command list, checked.

`read_header` decodes the header; `read_structure` walks the signature and the commands
and checks that every record and every binding lies inside its space: records and
commands before the constant table, each name NUL-terminated, each tensor's dims making
a byte size that fits 32 bits, each command at most MRT_MAX_BINDINGS bindings, each
binding inside the arena, the constant pool or (an input or output) naming an existing
tensor, arena and constant offsets aligned. It fails with Status.MALFORMED and says what
is wrong.

The reader (reader.py) runs it on every module; the image contract (contract.py) runs it
on the bytes it pins, at build time: the C loader compares a module's structure with
those bytes and so needs none of these checks at run time (docs/module-format.md).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from toolchain.module import format as fmt
from toolchain.module.format import BindingKind, DType, Status
from toolchain.module.pack import Binding, Command, TensorSig

__all__ = ["ModuleFormatError", "ModuleHeader", "Structure", "bad", "read_header",
           "read_structure"]


class ModuleFormatError(ValueError):
    """The bytes are not a valid module; `status` is the code the C loader returns."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(f"{status.name}: {message}")
        self.status = status


@dataclass(frozen=True)
class ModuleHeader:
    """The 28-byte header, field by field, and the section sizes the walk derives (0
    until read_module has walked the module)."""

    magic: bytes
    version: int
    target_id: int
    crc32: int
    total_size: int
    arena_size: int
    input_count: int
    output_count: int
    command_count: int
    constant_count: int
    signature_size: int = 0  # derived: bytes of the signature records
    commands_size: int = 0  # derived: bytes of the command list
    pool_offset: int = 0  # derived: the table's end rounded up to 16


@dataclass(frozen=True)
class Structure:
    """What read_structure found: the tensors and commands, and where each section ends."""

    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    commands: tuple[Command, ...]
    commands_offset: int  # where the command list starts (the signature ends)
    table_offset: int  # where the constant table starts (the command list ends)
    pool_offset: int  # where the constant pool starts: the table's end rounded up to 16

    @property
    def io_sizes(self) -> tuple[int, ...]:
        """The byte size of each input, then each output."""
        return tuple(t.byte_size for t in self.inputs + self.outputs)


def bad(message: str) -> ModuleFormatError:
    """A MALFORMED error."""
    return ModuleFormatError(Status.MALFORMED, message)


def read_header(data: bytes) -> ModuleHeader:
    """Decodes the header without validating it (raises only if data is too short)."""
    if len(data) < fmt.HEADER_SIZE:
        raise ModuleFormatError(Status.TRUNCATED,
                                f"{len(data)} bytes, header needs {fmt.HEADER_SIZE}")
    return ModuleHeader(*fmt.HEADER.unpack_from(data))


def _in_range(offset: int, size: int, limit: int) -> bool:
    return offset <= limit and size <= limit - offset


def read_structure(data: bytes, h: ModuleHeader, *, strict: bool = True,
                   limit: int | None = None) -> Structure:
    """Checks and parses the signature and commands of a module with header `h`.

    The module is h.total_size bytes; `data` holds at least its first `limit` bytes
    (default: all of them), and the signature and commands must end by then. The
    constant table must fit before the end of the module, and the pool is what follows
    it from the next 16-byte boundary. strict=True also rejects what cannot matter to
    memory safety (reserved and padding bytes, names that are not UTF-8).
    """
    size = h.total_size
    limit = size if limit is None else min(limit, size)
    n_in = h.input_count
    tensors, cmd_start = _read_signature(data, fmt.HEADER_SIZE, limit, n_in,
                                         n_in + h.output_count, strict)
    io = [t.byte_size for t in tensors]
    # The pool's size is only known once the commands end: bind constants afterwards.
    commands, table_at = _read_commands(data, cmd_start, limit, h, io[:n_in], io[n_in:])
    table_end = table_at + h.constant_count * fmt.CONSTANT_ENTRY.size
    if table_end > size:
        raise bad(f"the constant table ({h.constant_count} entries) runs past the module's "
                  f"{size} bytes")
    pool_offset = fmt.pool_offset(table_end, h.constant_count)
    if pool_offset > size:
        raise bad(f"the module's {size} bytes end before its constant pool starts at "
                  f"{pool_offset}")
    pool_size = size - pool_offset
    for ci, cmd in enumerate(commands):
        for bi, b in enumerate(cmd.bindings):
            if b.kind == BindingKind.CONSTANT and not _in_range(b.value, b.size, pool_size):
                raise bad(f"command {ci} binding {bi} ({b}) runs past the {pool_size}-byte "
                          f"constant pool")
    return Structure(tensors[:n_in], tensors[n_in:], commands, cmd_start, table_at,
                     pool_offset)


def _dims_bytes(dims: tuple[int, ...], dtype: DType) -> int | None:
    """Bytes of a dense tensor: the element size times each dim in order; None if a
    partial product leaves 32 bits (even if a later 0 would bring it back)."""
    n = dtype.itemsize
    for d in dims:
        n *= d
        if n > 0xFFFFFFFF:
            return None
    return n


def _read_signature(data: bytes, pos: int, limit: int, n_in: int, n_io: int,
                    strict: bool) -> tuple[tuple[TensorSig, ...], int]:
    """Walks one record per tensor below `limit`; returns the tensors and the end offset."""
    tensors = []
    for i in range(n_io):
        if limit - pos < fmt.SIG_RECORD_HEAD.size:
            raise bad(f"signature record {i} is truncated")
        dtype, rank, name_len, reserved = fmt.SIG_RECORD_HEAD.unpack_from(data, pos)
        rec = fmt.sig_record_size(rank, name_len)
        if rec > limit - pos:
            raise bad(f"signature record {i} runs past the signature")
        if dtype > fmt.SIGNATURE_DTYPE_MAX:
            raise bad(f"signature record {i}: unknown dtype {dtype}")
        dims = struct.unpack_from(f"<{rank}I", data, pos + fmt.SIG_RECORD_HEAD.size)
        if _dims_bytes(dims, DType(dtype)) is None:
            raise bad(f"signature record {i}: its byte size does not fit 32 bits")
        name_at = pos + fmt.SIG_RECORD_HEAD.size + 4 * rank
        is_output = i >= n_in
        name = fmt.default_name(is_output, i - n_in if is_output else i)
        if name_len:
            if data[name_at + name_len] != 0:
                raise bad(f"signature record {i}: name is not NUL-terminated")
            name_bytes = data[name_at : name_at + name_len]
            if strict and (any(data[name_at + name_len : pos + rec]) or b"\0" in name_bytes):
                raise bad(f"signature record {i}: nonzero padding bytes")
            try:
                name = name_bytes.decode("utf-8")
            except UnicodeDecodeError:
                if strict:  # the C loader hands names out as bytes
                    raise bad(f"signature record {i}: name is not UTF-8") from None
                name = name_bytes.decode("utf-8", errors="replace")
        if strict and reserved:
            raise bad(f"signature record {i}: nonzero reserved byte")
        tensors.append(TensorSig(name, DType(dtype), dims))
        pos += rec
    return tuple(tensors), pos


def _read_commands(
    data: bytes,
    pos: int,
    limit: int,
    h: ModuleHeader,
    input_sizes: list[int],
    output_sizes: list[int],
) -> tuple[tuple[Command, ...], int]:
    """Walks command_count commands below `limit`; returns them and the end offset.
    Constant bindings are checked against the pool once its start is known."""
    commands = []
    for ci in range(h.command_count):
        if limit - pos < fmt.COMMAND_HEAD.size:
            raise bad(f"command {ci} runs past the command list")
        ordinal, nb = fmt.COMMAND_HEAD.unpack_from(data, pos)
        pos += fmt.COMMAND_HEAD.size
        if nb > fmt.MAX_BINDINGS:
            raise bad(f"command {ci}: {nb} bindings, at most {fmt.MAX_BINDINGS}")
        bindings = []
        for bi in range(nb):
            if limit - pos < fmt.BINDING_REF.size:
                raise bad(f"command {ci} binding {bi} runs past the command list")
            (ref,) = fmt.BINDING_REF.unpack_from(data, pos)
            kind = BindingKind(ref >> fmt.BINDING_VALUE_BITS)
            value = ref & fmt.BINDING_VALUE_MASK
            words = fmt.binding_words(kind)
            if limit - pos < 4 * words:
                raise bad(f"command {ci} binding {bi} runs past the command list")
            where = f"command {ci} binding {bi} ({kind.name} {value})"
            if kind in (BindingKind.INPUT, BindingKind.OUTPUT):
                io = input_sizes if kind == BindingKind.INPUT else output_sizes
                if value >= len(io):
                    raise bad(f"{where} names a missing {kind.name.lower()}")
                size = io[value]
            else:
                (size,) = fmt.BINDING_SIZE.unpack_from(data, pos + 4)
                if value % fmt.BINDING_ALIGN:
                    raise bad(f"{where} is not {fmt.BINDING_ALIGN}-byte aligned")
                if kind == BindingKind.ARENA and not _in_range(value, size, h.arena_size):
                    raise bad(f"{where}, {size} B runs past the {h.arena_size}-byte arena")
            pos += 4 * words
            bindings.append(Binding(kind, value, size))
        commands.append(Command(ordinal, tuple(bindings)))
    return tuple(commands), pos
