"""What an image's compiled code needs from a module: `mrt_image_t` in minirt.h.

The dispatch code is compiled for fixed shapes, so it accesses exactly so many bytes
through each binding, and the image's I/O buffers have fixed sizes. The module only
*claims* sizes. So the compiler writes what the code needs into the image, outside the
module, and the loader rejects any module that disagrees with it (`Status.IMAGE`):

- the command list's shape: per command, its dispatch ordinal and binding count, and
  per binding its kind (arena, constant, input, output) and the exact byte size the
  dispatch accesses through it. The compiler binds a dispatch's result only to the arena
  or an output, so matching kinds keeps stores out of constants and inputs;
- per input / output: the byte size of the buffer the code reads or writes;
- the CRC-32 of the module's bytes before the constant pool (header after the CRC field,
  signature, commands, constant table): a module that passes every check but differs
  there (an arena offset moved inside the arena, say) would run safely but compute
  something else. The pool (weights and their scales) is left out, so a weights update
  with the same structure still loads.

The first two make memory safety independent of the module's word; the third makes a
module that loads compute what the image was built to compute. A CRC is not a
cryptographic hash: a crafted module can match it, and then the first two still hold.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from toolchain.module import format as fmt
from toolchain.module.format import BindingKind
from toolchain.schedule.program import Program, nbytes


@dataclass(frozen=True)
class BindingNeed:
    """What a dispatch accesses through one binding: where, and how many bytes."""

    kind: BindingKind
    size: int

    @property
    def word(self) -> int:
        """The binding's word in mrt_image_t.commands: kind << 30 | size."""
        return self.kind << fmt.BINDING_VALUE_BITS | self.size


@dataclass(frozen=True)
class CommandNeed:
    """One command as the image's code runs it."""

    ordinal: int
    bindings: tuple[BindingNeed, ...]

    @property
    def head(self) -> int:
        """The command's head word, as the module stores it: ordinal | count << 16
        (the ordinal carries fmt.BRANCH_FLAG for a branch)."""
        return self.ordinal | len(self.bindings) << 16


@dataclass(frozen=True)
class ImageContract:
    """The Python twin of `mrt_image_t` (everything but the dispatch function pointers)."""

    target_id: int
    layout_crc: int
    commands: tuple[CommandNeed, ...]
    input_sizes: tuple[int, ...]
    output_sizes: tuple[int, ...]

    @property
    def io_sizes(self) -> tuple[int, ...]:
        """Inputs then outputs, as mrt_image_t.io_sizes lists them."""
        return self.input_sizes + self.output_sizes

    @property
    def command_words(self) -> list[int]:
        """mrt_image_t.commands: per command its head, then one word per binding."""
        words: list[int] = []
        for c in self.commands:
            words.append(c.head)
            words.extend(b.word for b in c.bindings)
        return words

    @property
    def dispatch_count(self) -> int:
        """Highest ordinal + 1 (without the branch flag): the image's dispatch table must
        hold at least this many."""
        return max((c.ordinal & ~fmt.BRANCH_FLAG for c in self.commands), default=-1) + 1


def layout_crc(module: bytes) -> int:
    """CRC-32 of module bytes [CRC_START, pool_offset): everything but the pool."""
    if len(module) < fmt.HEADER_SIZE:
        raise ValueError(f"a module of {len(module)} bytes has no header")
    pool_offset = fmt.HEADER.unpack_from(module)[-1]
    return zlib.crc32(module[fmt.CRC_START:pool_offset])


_KINDS = {"arena": BindingKind.ARENA, "constant": BindingKind.CONSTANT,
          "input": BindingKind.INPUT, "output": BindingKind.OUTPUT}


def image_contract(program: Program, module: bytes, target_id: int) -> ImageContract:
    """The contract of the image that runs `program` (dispatch ordinal = step number)
    around `module`. Sizes are what each kernel's code accesses (its operand and result
    types), kinds where the schedule placed each buffer."""
    commands = []
    for ordinal, step in enumerate(program.steps):
        types = step.types
        ordinal |= fmt.BRANCH_FLAG if step.is_branch else 0
        if len(types) != len(step.buffers):
            raise ValueError(f"{step.kernel.name}: {len(types)} operands and result, "
                             f"{len(step.buffers)} buffers")
        commands.append(CommandNeed(ordinal, tuple(
            BindingNeed(_KINDS[b.kind], nbytes(t)) for b, t in zip(step.buffers, types))))
    return ImageContract(target_id, layout_crc(module), tuple(commands),
                         tuple(nbytes(t) for t in program.inputs),
                         tuple(nbytes(t) for t in program.outputs))
