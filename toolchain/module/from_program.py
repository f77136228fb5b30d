"""Program -> .mrt bytes: the schedule decided at build time, written down for the runtime."""

from __future__ import annotations

from toolchain.module.pack import (
    Binding,
    Command,
    ConstantEntry,
    TensorSig,
    constant_binding,
    pack_module,
)
from toolchain.schedule.program import Program
from toolchain.types import TensorType

# Our element type names where the module format spells them differently.
_MODULE_DTYPE = {"ui8": "u8", "index": "i64"}


def _sig(name: str, t: TensorType) -> TensorSig:
    return TensorSig(name, _MODULE_DTYPE.get(t.dtype.name, t.dtype.name), tuple(t.shape))


def module_from_program(program: Program, target: str) -> bytes:
    """Packs signature, commands (dispatch ordinal = step number) and constants."""
    constants = [ConstantEntry.from_array(c) for c in program.constants]
    commands = []
    for ordinal, step in enumerate(program.steps):
        bindings = []
        for b in step.buffers:
            if b.kind == "arena":
                bindings.append(Binding.arena(b.index, b.size))
            elif b.kind == "constant":
                bindings.append(constant_binding(constants, b.index))
            elif b.kind == "input":
                bindings.append(Binding.input(b.index, b.size))
            else:
                bindings.append(Binding.output(b.index, b.size))
        commands.append(Command(ordinal, tuple(bindings)))
    return pack_module(
        target,
        [_sig(f"input_{i}", t) for i, t in enumerate(program.inputs)],
        [_sig(f"output_{i}", t) for i, t in enumerate(program.outputs)],
        constants,
        commands,
        program.arena_size,
    )
