"""Parses .mrt bytes back into Python objects, validating them the way the C loader does.

The first checks (size, magic, version, target, total size, CRC, then the image's pinned
bytes and layout CRC) run in the same order as mrt_module_validate and fail with the same
status code, so a test can compare the two on any byte string (`loader_only=True` stops
there). The C loader checks nothing else: the structure (signature records, commands,
bindings) is what the image contract pins byte for byte, and toolchain/module/structure.py
checked it when the image was built. The reader checks that structure again here (so a
module read without an image is still validated), then the constant table, which the
runtime never reads; strict=True adds checks that cannot affect memory safety (zero
padding, reserved fields, well-formed quantization blobs). All of those fail as
MALFORMED.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

from toolchain.module import format as fmt
from toolchain.module.contract import PINNED_START, ImageContract
from toolchain.module.format import DType, Status
from toolchain.module.pack import (
    CONST_FLAG_QUANT,
    CONST_FLAG_SYMMETRIC,
    Command,
    ConstantEntry,
    QuantParams,
    TensorSig,
)
from toolchain.module.structure import (
    ModuleFormatError,
    ModuleHeader,
    bad,
    read_header,
    read_structure,
)

__all__ = ["Module", "ModuleFormatError", "ModuleHeader", "PlacedConstant", "read_header",
           "read_module"]


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

    header: ModuleHeader  # with the derived section sizes and pool offset filled in
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


def _mismatch(message: str) -> ModuleFormatError:
    return ModuleFormatError(Status.IMAGE, f"the module does not fit the image: {message}")


def _in_range(offset: int, size: int, limit: int) -> bool:
    return offset <= limit and size <= limit - offset


def _check_image(data: bytes, image: ImageContract) -> None:
    """What mrt_module_validate checks against mrt_image_t after the CRC: the pinned bytes,
    then the layout CRC."""
    pinned = image.pinned
    got = data[PINNED_START:PINNED_START + len(pinned)]
    if got != pinned:
        at = next((i for i, (a, b) in enumerate(zip(got, pinned)) if a != b), len(got))
        raise _mismatch(f"byte {PINNED_START + at} differs from the structure the image was "
                        f"built for (header, signature and commands are fixed)")
    # Over the image's idea of where the pool starts, as the C loader takes it.
    crc = zlib.crc32(data[fmt.CRC_START:image.pool_offset])
    if crc != image.layout_crc:
        raise _mismatch(f"layout CRC {crc:#010x}, the image was built for "
                        f"{image.layout_crc:#010x}")


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
    loader_only=True stops after what mrt_module_validate checks (no constant table, no
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
        raise bad(f"header says {h.total_size} bytes, got {len(data)}")
    crc_ok = zlib.crc32(data[fmt.CRC_START :]) == h.crc32
    if check_crc and not crc_ok:
        raise ModuleFormatError(Status.CRC, "CRC32 mismatch")

    if image is not None:
        _check_image(data, image)
    # The structure: what the compiler checks before it pins it into an image, so a
    # module that matched an image passes here.
    st = read_structure(data, h, strict=strict and not loader_only)
    h = replace(h, signature_size=st.commands_offset - fmt.HEADER_SIZE,
                commands_size=st.table_offset - st.commands_offset,
                pool_offset=st.pool_offset)
    tensors = st.inputs + st.outputs
    n_in = h.input_count
    commands, cmd_end = st.commands, st.table_offset
    pool = data[h.pool_offset :]

    if loader_only:
        return Module(h, tensors[:n_in], tensors[n_in:], commands, (), pool, crc_ok)
    # Tool metadata the runtime never reads: the constant table and the padding.
    constants, table_end = _read_constants(data, cmd_end, h, pool, strict)
    if strict:
        if fmt.pool_offset(table_end, h.constant_count) != h.pool_offset:
            raise bad("the pool does not start at the first 16-byte boundary after the table")
        if any(data[table_end : h.pool_offset]):
            raise bad("nonzero padding before the constant pool")
    return Module(h, tensors[:n_in], tensors[n_in:], commands, constants, pool, crc_ok)


def _read_constants(
    data: bytes, pos: int, h: ModuleHeader, pool: bytes, strict: bool
) -> tuple[tuple[PlacedConstant, ...], int]:
    constants = []
    for i in range(h.constant_count):
        if h.pool_offset - pos < fmt.CONSTANT_ENTRY.size:
            raise bad(f"constant table entry {i} runs into the pool")
        off, size, dtype, storage, flags, poff, psize = fmt.CONSTANT_ENTRY.unpack_from(data, pos)
        pos += fmt.CONSTANT_ENTRY.size
        if not (_in_range(off, size, len(pool)) and _in_range(poff, psize, len(pool))):
            raise bad(f"constant {i} lies outside the pool")
        if dtype > fmt.DTYPE_MAX or storage > fmt.DTYPE_MAX:
            raise bad(f"constant {i}: unknown dtype")
        blob = pool[poff : poff + psize]
        params: QuantParams | bytes = blob
        if strict:
            if off % fmt.POOL_ALIGN or (psize and poff % fmt.POOL_ALIGN):
                raise bad(f"constant {i} is not 16-byte aligned in the pool")
            if flags & ~(CONST_FLAG_QUANT | CONST_FLAG_SYMMETRIC) or (
                    flags & CONST_FLAG_SYMMETRIC and not flags & CONST_FLAG_QUANT):
                raise bad(f"constant {i}: unknown flags {flags:#x}")
            if size % DType(storage).itemsize:
                raise bad(f"constant {i}: {size} bytes is not a whole number of elements")
            if (flags & CONST_FLAG_QUANT) and not psize:
                raise bad(f"constant {i}: quantized without params")
        if flags & CONST_FLAG_QUANT:
            try:
                params = QuantParams.from_bytes(blob, bool(flags & CONST_FLAG_SYMMETRIC))
            except ValueError as e:
                if strict:
                    raise bad(f"constant {i}: {e}") from None
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
