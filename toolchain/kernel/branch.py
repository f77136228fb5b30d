"""The branch command: how control flow runs in the module's command list.

A `while`, `if` or `case` (toolchain/schedule/control.py) becomes straight runs of
ordinary dispatches joined by branches. A branch is a dispatch of its own kind: its
generated function reads its selector (an i1 or integer scalar in a buffer, or nothing
for an unconditional jump) and returns the byte offset, in the module's command
section, of the command to run next; the executor continues there
(runtime_c/core/executor.c). The offsets are constants in the generated code, computed
from the command layout the image pins (every command's binding count), so a module
cannot redirect execution: the loader has already checked that the module's commands
have exactly that layout.

Selector semantics, as StableHLO's: an i1 picks `targets[1]` when true, `targets[0]`
when false; an integer i picks `targets[i]`, and any i outside [0, n) the last target
(`case`); no selector: `targets[0]`.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolchain.types import TensorType


@dataclass(frozen=True)
class Branch:
    """A branch command. `targets` are labels while the schedule is built, the indices
    of the steps to continue at in a Program, and command byte offsets in the image's
    code (module/from_program.py, image_kernels)."""

    name: str
    operands: tuple[TensorType, ...]  # () or (selector,)
    targets: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.operands) > 1 or (not self.operands and len(self.targets) != 1):
            raise ValueError("a branch takes one selector, or none and one target")
        if not self.targets:
            raise ValueError("a branch needs a target")
        if self.operands:
            sel = self.operands[0]
            if sel.shape != () or not (sel.dtype.is_integer or sel.dtype.kind == "b"):
                raise ValueError(f"a branch selector must be an integer scalar, not {sel}")

    @property
    def results(self) -> tuple[TensorType, ...]:
        """A branch writes no buffer."""
        return ()

    @property
    def binding_types(self) -> tuple[TensorType, ...]:
        """The types of the buffers a command binds to it, in order."""
        return self.operands
