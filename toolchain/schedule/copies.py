"""Dropping the copies of loop-state and branch-result assignments
(schedule/control.py) whose source's producer can write the destination itself."""

from __future__ import annotations

from toolchain.graph.ir import Tensor
from toolchain.kernel.form import Index, Kernel
from toolchain.schedule.fuse import Dispatch
from toolchain.schedule.items import Item, MultiDispatch, loads, reads, writes


def _in_place_safe(d: Dispatch, dst: Tensor) -> bool:
    """Whether `d` may write `dst` while reading it: an elementwise kernel that reads
    `dst` only at the element it writes (each element is read, then overwritten)."""
    k = d.kernel
    if not isinstance(k, Kernel) or k.combine is not None or k.n_parallel != len(k.domain):
        return False
    own = tuple(Index(i) for i in range(k.n_parallel))
    return all(ld.index == own and ld.pad is None for ld in loads(k)
               if d.operands[ld.operand] is dst)


def elide_copies(items: list[Item], assignments: list[tuple[Tensor, Tensor, Dispatch]],
                 outputs: set[int]) -> list[Item]:
    """Removes the copies of `assignments` whose source's producer can write the
    destination itself: it sits in the same straight run before the copy, nothing else
    writes the source or reads it outside that run, and nothing from the producer to
    the copy reads the destination's old value (but the producer itself, elementwise at
    the element it writes). Readers of the source in between read the destination."""
    items = list(items)
    for dst, src, copy in assignments:
        k = next((i for i, item in enumerate(items) if item is copy), None)
        if k is None or id(src) in outputs:
            continue
        j = k - 1
        while j >= 0 and isinstance(items[j], Dispatch | MultiDispatch) and \
                not any(t is src for t in writes(items[j])):
            j -= 1
        if j < 0 or not isinstance(items[j], Dispatch) or items[j].output is not src:
            continue
        producer = items[j]
        elsewhere = [i for i, item in enumerate(items) if not j <= i <= k and (
            any(t is src for t in reads(item) + writes(item)))]
        between = [items[i] for i in range(j + 1, k)]
        if elsewhere or any(t is dst for item in between for t in reads(item) + writes(item)):
            continue
        if any(t is dst for t in producer.operands) and not _in_place_safe(producer, dst):
            continue
        items[j] = Dispatch(producer.kernel, producer.operands, dst)
        for i in range(j + 1, k):
            items[i] = _reading(items[i], src, dst)
        del items[k]
    return items


def _reading(item: Item, old: Tensor, new: Tensor) -> Item:
    """`item` reading `new` where it read `old`."""
    if isinstance(item, Dispatch):
        return Dispatch(item.kernel, [new if t is old else t for t in item.operands],
                        item.output)
    if isinstance(item, MultiDispatch):
        return MultiDispatch(item.kernel, [new if t is old else t for t in item.operands],
                             item.outputs, item.in_place)
    return item
