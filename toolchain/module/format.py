"""Constants of the packed module format (.mrt); docs/module-format.md is the spec.

Every number here has a twin in runtime_c/include/minirt.h (MRT_*); tests/module checks
that the two agree, so change both together and bump VERSION when the layout changes.
"""

from __future__ import annotations

import enum
import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass

MAGIC = b"MiRT"
VERSION = 2

# Header: magic, u16 version, u16 target id, CRC, total size, arena size, then the u16
# input, output, command and constant counts. See the spec's table.
HEADER = struct.Struct("<4sHHIIIHHHH")
HEADER_SIZE = HEADER.size  # 28
# The CRC covers every byte after its own field, header included, so that no header
# field except magic/version/target (each checked for an exact value) escapes it.
CRC_FIELD_OFFSET = 8
CRC_START = 12

# What the runtime checks at boot (docs/module-format.md, "The boot check"). Every
# variant checks the structure against the image and the CRC of the layout (header,
# signature, commands, constant table: 1.5 KB for kws_ref_model); the full variants add
# the whole module's CRC, weights included. Bit by bit that costs ~44 instructions per
# byte (2.5 M for kws_ref_model's 57 KB module on cortex-m4, 75 % of an inference) in
# 40 B of code; slicing-by-4 ~3.2 (190 K, 5.7 %) with 4 KB of tables. A firmware image's
# module is flashed with its code, which nothing checks at boot either, so the default
# checks the layout only; the whole CRC is the user's choice (--boot-check small|fast).
CRC_SLICE4_TABLE_BYTES = 4096


@dataclass(frozen=True)
class BootCheck:
    """One --boot-check variant: the runtime's C flags, and whether the loader checks
    the whole module's CRC (else the header's CRC field is never read)."""

    cflags: tuple[str, ...]
    full_crc: bool


BOOT_CHECKS: dict[str, BootCheck] = {
    "layout": BootCheck(("-DMRT_BOOT_CHECK_LAYOUT",), full_crc=False),
    "small": BootCheck((), full_crc=True),  # the table-less bit-wise loop
    "fast": BootCheck(("-DMRT_CRC32_SLICE4",), full_crc=True),  # slicing-by-4, 4 KB of tables
}
DEFAULT_BOOT_CHECK = "layout"


def crc_cflags(boot_check: str = DEFAULT_BOOT_CHECK) -> tuple[str, ...]:
    """The runtime C flags of the boot check `boot_check` (a key of BOOT_CHECKS). Every
    variant computes zlib.crc32 where it computes one, so the module is the same."""
    return BOOT_CHECKS[boot_check].cflags


SIG_RECORD_HEAD = struct.Struct("<BBBB")  # dtype, rank, name_len, reserved
COMMAND_HEAD = struct.Struct("<HH")  # dispatch ordinal, binding count
BINDING_REF = struct.Struct("<I")  # kind << 30 | value
BINDING_SIZE = struct.Struct("<I")  # arena and constant bindings only: the byte size
CONSTANT_ENTRY = struct.Struct("<IIBBHII")  # offset, size, dtype, storage, flags, params off/len
QUANT_HEAD = struct.Struct("<iI")  # axis (-1 = per tensor), channel count

MAX_BINDINGS = 16  # per command; the runtime resolves bindings into a stack array this big
BINDING_ALIGN = 8  # arena and constant bindings start at multiples of this
MAX_RANK = 255
MAX_NAME_LEN = 255
POOL_ALIGN = 16
BINDING_VALUE_BITS = 30
BINDING_VALUE_MASK = (1 << BINDING_VALUE_BITS) - 1
MAX_COUNT16 = 0xFFFF
# A command whose ordinal has this bit set runs a branch dispatch: its function returns
# the command byte offset to continue at (toolchain/kernel/branch.py); the dispatch
# table index is the ordinal without it (twin: MRT_COMMAND_BRANCH in executor.c). No
# version change: a module without control flow never sets it, and one with branches
# loads only into the image built with it (the image contract pins every head).
BRANCH_FLAG = 0x8000


class Status(enum.IntEnum):
    """mrt_status_t values (MRT_OK / MRT_ERR_*), shared by the C loader and reader.py."""

    OK = 0
    ARGUMENT = 1
    TRUNCATED = 2
    MAGIC = 3
    VERSION = 4
    TARGET = 5
    CRC = 6
    MALFORMED = 7
    IMAGE = 8  # the module does not fit the image's code (toolchain/module/contract.py)


class DType(enum.IntEnum):
    """Element type codes (MRT_DTYPE_*). Member names are the MLIR-style spellings."""

    f32 = 0
    f16 = 1
    bf16 = 2
    f64 = 3
    i8 = 4
    i16 = 5
    i32 = 6
    i64 = 7
    u8 = 8
    i1 = 9  # stored one byte per element
    u16 = 10
    u32 = 11
    u64 = 12
    # The small floats (toolchain/small_floats.py), one code a byte: what the I/O
    # buffers' bytes mean, so a caller can encode and decode them.
    f8E4M3FN = 13
    f8E5M2 = 14
    f8E4M3FNUZ = 15
    f8E5M2FNUZ = 16
    f8E4M3 = 17
    f8E3M4 = 18
    f8E4M3B11FNUZ = 19
    f8E8M0FNU = 20
    f6E2M3FN = 21
    f6E3M2FN = 22
    f4E2M1FN = 23
    # Constant-pool storage only (never in the signature): sub-byte integers bit-packed,
    # 8 // bits elements a byte, row-major, the first in the low bits (kernel/sub_byte.py).
    i4 = 24
    u4 = 25
    i2 = 26
    u2 = 27

    @property
    def itemsize(self) -> int:
        """Bytes per stored element (1 for the bit-packed types: a byte holds whole
        elements, per_byte of them)."""
        return _ITEMSIZE.get(self, 1)

    @property
    def per_byte(self) -> int:
        """Elements stored in one byte: 8 // bits for the bit-packed types, else 1."""
        return PACKED_PER_BYTE.get(self, 1)

    @classmethod
    def parse(cls, value: DType | str | int) -> DType:
        """Accepts a DType, its name ('f32', 'i8', ...) or its code; raises ValueError."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            try:
                return cls[value]
            except KeyError:
                names = ", ".join(m.name for m in cls)
                raise ValueError(f"unknown dtype {value!r}; known: {names}") from None
        return cls(value)


_ITEMSIZE = {
    DType.f32: 4,
    DType.f16: 2,
    DType.bf16: 2,
    DType.f64: 8,
    DType.i8: 1,
    DType.i16: 2,
    DType.i32: 4,
    DType.i64: 8,
    DType.u8: 1,
    DType.i1: 1,
    DType.u16: 2,
    DType.u32: 4,
    DType.u64: 8,
    **{d: 1 for d in DType if d >= 13},
}

DTYPE_MAX = max(DType)
PACKED_PER_BYTE = {DType.i4: 2, DType.u4: 2, DType.i2: 4, DType.u2: 4}
# The largest code a signature record may hold: the bit-packed types above it are
# constant-pool storage only, as I/O buffers hold a byte an element.
SIGNATURE_DTYPE_MAX = DType.f4E2M1FN


class BindingKind(enum.IntEnum):
    """Where a binding points (MRT_BINDING_*); stored in the top 2 bits of its first word."""

    ARENA = 0  # value = byte offset into the arena
    CONSTANT = 1  # value = byte offset into the constant pool
    INPUT = 2  # value = input index
    OUTPUT = 3  # value = output index


# Target ids (MRT_TARGET_*). A module only loads on the target it was packed for, because
# its dispatch ordinals index that target's compiled dispatch table. The ids are data:
# each targets/*.yaml carries its `target_id`, so adding a target touches no code here.
@functools.cache
def target_ids() -> dict[str, int]:
    """Target name -> id, from the target descriptors; raises if two share an id.
    Reading and validating the 13 descriptors took 6 ms of every build, so the ids are
    remembered in the user cache under the digest of the targets directory and of the
    code that validates it (each file's digest kept by its identity: tree_digest.py); a
    changed descriptor or validator is read again."""
    import hashlib
    import json
    from pathlib import Path

    import toolchain.target
    from toolchain.disk_cache import EntryStore, cache_root
    from toolchain.target import targets_dir
    from toolchain.tree_digest import tree_sha256

    root = cache_root()
    store = None if root is None else EntryStore(root / "stamps", ".json")
    validator = Path(toolchain.target.__file__).parent
    key = "target-ids-" + hashlib.sha256(
        (tree_sha256(targets_dir(), (".yaml",)) + tree_sha256(validator, (".py",))).encode()
    ).hexdigest()
    kept = store.get(key) if store is not None else None
    if kept is not None:
        try:
            ids = json.loads(kept)
        except ValueError:
            ids = None
        if isinstance(ids, dict) and all(isinstance(k, str) and type(v) is int
                                         for k, v in ids.items()):
            return ids
    ids = _read_target_ids()
    if store is not None:
        store.put(key, json.dumps(ids).encode())
    return ids


def _read_target_ids() -> dict[str, int]:
    """target_ids from every descriptor, each read and validated."""
    from toolchain.target import DescriptorError, list_targets, load_target

    ids: dict[str, int] = {}
    for name in list_targets():
        tid = load_target(name).target_id
        clash = [n for n, i in ids.items() if i == tid]
        if clash:
            raise DescriptorError(f"targets/{name}.yaml: field 'target_id': {tid} is already "
                                  f"used by targets/{clash[0]}.yaml")
        ids[name] = tid
    return ids


def target_id(target: str | int) -> int:
    """Maps a target name (or an already numeric id) to its id; raises ValueError."""
    ids = target_ids()
    if isinstance(target, int):
        if target not in ids.values():
            raise ValueError(f"unknown target id {target}")
        return target
    try:
        return ids[target]
    except KeyError:
        known = ", ".join(ids)
        raise ValueError(f"unknown target {target!r}; known: {known}") from None


def target_name(tid: int) -> str:
    """The name of a target id, or 'unknown(N)'."""
    return {i: n for n, i in target_ids().items()}.get(tid, f"unknown({tid})")


def align_up(value: int, alignment: int) -> int:
    """Rounds value up to a multiple of alignment (a power of two)."""
    return (value + alignment - 1) & ~(alignment - 1)


def sig_record_size(rank: int, name_len: int) -> int:
    """Bytes of one signature record: head, dims, and a name + NUL padded to 4 unless
    the tensor has its default name (name_len 0)."""
    return SIG_RECORD_HEAD.size + 4 * rank + (align_up(name_len + 1, 4) if name_len else 0)


def pool_offset(table_end: int, constant_count: int) -> int:
    """Where the pool starts: the first 16-byte boundary at or after the constant table,
    which its entries are aligned to; a module without constants has no pool, and no
    padding (it ends with its command list)."""
    return align_up(table_end, POOL_ALIGN) if constant_count else table_end


def default_name(is_output: bool, index: int) -> str:
    """The name a tensor has when its record stores none: input_<i> / output_<j>, the
    keys of the npz files minirt-run reads and writes."""
    return f"{'output' if is_output else 'input'}_{index}"


_KIND_NAMES = {"arena": 0, "constant": 1, "input": 2, "output": 3}


def binding_words(kind: int | str) -> int:
    """u32 words of a binding of `kind` (a BindingKind or its lower-case name): arena and
    constant bindings carry their byte size, input and output bindings cover their whole
    tensor."""
    k = _KIND_NAMES[kind] if isinstance(kind, str) else kind
    return 1 if k >= BindingKind.INPUT else 2


def command_size(kinds: Iterable[int | str]) -> int:
    """Bytes of a command whose bindings have these kinds: its head, then the bindings.
    Branch targets are byte offsets of commands (module/from_program.py, command_offsets)."""
    return COMMAND_HEAD.size + sum(4 * binding_words(k) for k in kinds)
