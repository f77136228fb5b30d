"""What an image's compiled code needs from a module: `mrt_image_t` in minirt.h.

The dispatch code is compiled for fixed shapes, so it accesses exactly so many bytes
through each binding, and the image's I/O buffers have fixed sizes. The module only
*claims* sizes. So the compiler writes into the image, outside the module, what the
module must be, and the loader rejects any module that differs (`Status.IMAGE`):

- the module's bytes from the header's `total_size` to the end of the command list
  (header after the CRC, signature, commands), exactly. These are checked here, at
  build time, for everything the C loader used to check at run time: every record and
  binding inside its space, the dims of each tensor making its byte size, and every
  command running the dispatch the image compiled for its position with the kinds and
  byte sizes that dispatch accesses (its operands and result). A module that carries
  these very bytes can then make no dispatch read or write outside its buffers, and
  the C loader needs only compare words;
- the CRC-32 of the module's bytes before the constant pool (header after the CRC
  field, signature, commands, constant table): the constant table is metadata for
  tools, which the runtime never reads, and the CRC keeps it what the compiler wrote.

The pool (weights and their scales) is left out, so a weights update with the same
structure still loads; any other module does not.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, replace

from toolchain.kernel.sub_byte import packed_size
from toolchain.module import format as fmt
from toolchain.module.format import BindingKind
from toolchain.module.pack import Command
from toolchain.module.structure import (
    ModuleFormatError,
    ModuleHeader,
    read_header,
    read_structure,
)
from toolchain.schedule.program import Program, nbytes

# The pinned bytes start at the header's total_size field, right after the CRC.
PINNED_START = fmt.CRC_START


@dataclass(frozen=True)
class BindingNeed:
    """What a dispatch accesses through one binding: where, and how many bytes."""

    kind: BindingKind
    size: int


@dataclass(frozen=True)
class CommandNeed:
    """One command as the image's code runs it: its dispatch and what each binding of
    it must be."""

    ordinal: int
    bindings: tuple[BindingNeed, ...]


@dataclass(frozen=True)
class ImageContract:
    """The Python twin of `mrt_image_t` (everything but the dispatch function pointers).

    `pinned` is the module's bytes [12, end of the command list): the header after the
    CRC, the signature and the commands. Building an ImageContract checks them
    (ValueError otherwise) as the reader checks a module: the C loader trusts the image.
    """

    target_id: int
    layout_crc: int
    pinned: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "pinned", bytes(self.pinned))
        head = fmt.HEADER_SIZE - PINNED_START
        if len(self.pinned) < head or len(self.pinned) % 4:
            raise ValueError(f"an image contract pins whole words of a header and more, "
                             f"not {len(self.pinned)} bytes")
        data = bytes(PINNED_START) + self.pinned
        h = ModuleHeader(fmt.MAGIC, fmt.VERSION, self.target_id, 0,
                         *struct.unpack_from("<IIHHHH", self.pinned))
        try:
            structure = read_structure(data, h, limit=len(data))
        except ModuleFormatError as e:
            raise ValueError(f"the image contract pins an invalid module: {e}") from None
        if structure.table_offset != len(data):
            raise ValueError(f"the pinned bytes end at {len(data)}, the command list at "
                             f"{structure.table_offset}")
        object.__setattr__(self, "_structure", structure)
        object.__setattr__(self, "_header", h)

    @classmethod
    def of_module(cls, module: bytes, target_id: int) -> ImageContract:
        """The contract that pins `module` as it is (its structure must be valid)."""
        h = read_header(module)
        try:
            structure = read_structure(module, h)
        except ModuleFormatError as e:
            raise ValueError(f"cannot pin an invalid module: {e}") from None
        return cls(target_id, layout_crc(module), module[PINNED_START:structure.table_offset])

    @property
    def header(self) -> ModuleHeader:
        """The module header the image pins (magic and version the format's, CRC blank,
        the target the image's), with the section sizes and pool offset filled in."""
        st = self._structure  # type: ignore[attr-defined]
        return replace(self._header,  # type: ignore[attr-defined]
                       signature_size=st.commands_offset - fmt.HEADER_SIZE,
                       commands_size=st.table_offset - st.commands_offset,
                       pool_offset=st.pool_offset)

    @property
    def pool_offset(self) -> int:
        """Where the pool of a module with this structure starts."""
        return self._structure.pool_offset  # type: ignore[attr-defined]

    @property
    def words(self) -> list[int]:
        """The pinned bytes as little-endian u32s, as mrt_image_t holds them."""
        return list(struct.unpack(f"<{len(self.pinned) // 4}I", self.pinned))

    @property
    def io_sizes(self) -> tuple[int, ...]:
        """Inputs then outputs, as mrt_image_t.io_sizes lists them."""
        return self._structure.io_sizes  # type: ignore[attr-defined]

    @property
    def input_sizes(self) -> tuple[int, ...]:
        return self.io_sizes[: self._header.input_count]  # type: ignore[attr-defined]

    @property
    def output_sizes(self) -> tuple[int, ...]:
        return self.io_sizes[self._header.input_count :]  # type: ignore[attr-defined]

    @property
    def commands(self) -> tuple[Command, ...]:
        """The command list the image runs, bindings with their offsets and sizes."""
        return self._structure.commands  # type: ignore[attr-defined]

    @property
    def dispatch_count(self) -> int:
        """Highest ordinal + 1 (without the branch flag): the image's dispatch table must
        hold at least this many."""
        return max((c.ordinal & ~fmt.BRANCH_FLAG for c in self.commands), default=-1) + 1


def layout_crc(module: bytes) -> int:
    """CRC-32 of module bytes [CRC_START, pool_offset): everything but the pool."""
    h = read_header(module)
    try:
        pool_offset = read_structure(module, h, strict=False).pool_offset
    except ModuleFormatError as e:
        raise ValueError(f"no layout CRC for an invalid module: {e}") from None
    return zlib.crc32(module[fmt.CRC_START:pool_offset])


_KINDS = {"arena": BindingKind.ARENA, "constant": BindingKind.CONSTANT,
          "input": BindingKind.INPUT, "output": BindingKind.OUTPUT}


def program_needs(program: Program) -> tuple[CommandNeed, ...]:
    """What each command of `program`'s image accesses (dispatch ordinal = step
    number): kinds where the schedule placed each buffer, sizes what each kernel's code
    accesses (its operand and result types)."""
    commands = []
    for ordinal, step in enumerate(program.steps):
        types = step.types
        ordinal |= fmt.BRANCH_FLAG if step.is_branch else 0
        if len(types) != len(step.buffers):
            raise ValueError(f"{step.kernel.name}: {len(types)} operands and result, "
                             f"{len(step.buffers)} buffers")
        # A bit-packed operand's code reads its packed bytes (kernel/sub_byte.py).
        packed = set(getattr(step.kernel, "bit_packed", ()))
        commands.append(CommandNeed(ordinal, tuple(
            BindingNeed(_KINDS[b.kind], packed_size(t.num_elements, t.dtype)
                        if j in packed else nbytes(t))
            for j, (b, t) in enumerate(zip(step.buffers, types, strict=True)))))
    return tuple(commands)


def image_contract(program: Program, module: bytes, target_id: int) -> ImageContract:
    """The contract of the image that runs `program` around `module`. Raises ValueError
    when the module's command list or I/O sizes are not what the program's code accesses
    (the compiler would then have packed something other than what it compiled)."""
    contract = ImageContract.of_module(module, target_id)
    needs = program_needs(program)
    got = tuple(CommandNeed(c.ordinal, tuple(BindingNeed(b.kind, b.size) for b in c.bindings))
                for c in contract.commands)
    if got != needs:
        raise ValueError("the module's commands are not the ones the image's code runs")
    io = (tuple(nbytes(t) for t in program.inputs), tuple(nbytes(t) for t in program.outputs))
    if (contract.input_sizes, contract.output_sizes) != io:
        raise ValueError(f"the module's I/O sizes {contract.io_sizes} are not the image's "
                         f"{io[0] + io[1]}")
    return contract
