"""The linear program the schedule builds before it becomes commands: dispatches,
labels and jumps (control flow, schedule/control.py), and dispatches of other kernel
kinds (schedule/kinds.py), with what each reads and writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolchain.diagnostics import Location
from toolchain.graph.ir import Tensor
from toolchain.kernel.form import Index, Kernel, Load, postorder
from toolchain.schedule.fuse import Dispatch


@dataclass
class Label:
    """A place in the command list a jump can target."""

    id: int


@dataclass
class Jump:
    """A branch command: `targets` are label ids (see kernel/branch.py for how the
    selector picks one)."""

    selector: Tensor | None
    targets: tuple[int, ...]
    loc: Location | None = None


@dataclass
class MultiDispatch:
    """A dispatch of another kernel kind than Kernel, with several results; `in_place`:
    it also reads its results (a sort or scatter updating them after copies)."""

    kernel: Any
    operands: list[Tensor]
    outputs: list[Tensor]
    in_place: bool = False


Item = Dispatch | MultiDispatch | Label | Jump


def copy_dispatch(src: Tensor, dst: Tensor) -> Dispatch:
    """dst = src, element by element."""
    rank = len(src.type.shape)
    k = Kernel("copy", tuple(src.type.shape), rank, (src.type,), dst.type,
               Load(0, tuple(Index(d) for d in range(rank))))
    return Dispatch(k, [src], dst)


def reads(item: Item) -> list[Tensor]:
    """The tensors an item reads."""
    if isinstance(item, Dispatch):
        return list(item.operands)
    if isinstance(item, MultiDispatch):
        return list(item.operands) + (list(item.outputs) if item.in_place else [])
    if isinstance(item, Jump):
        return [] if item.selector is None else [item.selector]
    return []


def writes(item: Item) -> list[Tensor]:
    """The tensors an item writes."""
    if isinstance(item, Dispatch):
        return [item.output]
    if isinstance(item, MultiDispatch):
        return list(item.outputs)
    return []


def loads(k: Kernel) -> list[Load]:
    """Every load in a kernel's expressions."""
    return [e for root in k.roots for e in postorder(root) if isinstance(e, Load)]
