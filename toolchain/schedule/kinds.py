"""Graph ops that are not one generic Kernel (several results, in-place updates) as
dispatches of their own kernel kinds (toolchain/kernel: Reduction, Sort, Scatter,
SelectAndScatter), and the clean-ups those dispatches get: cheap producers read inside
them, scalar constants as immediates."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.graph.ir import Node
from toolchain.kernel.custom_call import lower_custom_call
from toolchain.kernel.form import Expr, Index, Kernel, Load, rewrite, with_children
from toolchain.kernel.lower import LoweringError
from toolchain.kernel.reduction import lower_reduce_region, lower_reduce_window_region
from toolchain.kernel.regions import region_expr, substitute
from toolchain.kernel.scatter import lower_scatter
from toolchain.kernel.select_and_scatter import lower_select_and_scatter
from toolchain.kernel.sort import lower_sort
from toolchain.schedule.fuse import Dispatch
from toolchain.schedule.items import Item, MultiDispatch, copy_dispatch, loads, writes


def _reduction(lower: Callable[[Node], Any]) -> Callable[[Node], list[Item]]:
    return lambda node: [MultiDispatch(lower(node), list(node.inputs), list(node.outputs))]


def _in_place(lower: Callable[[Node], Any]) -> Callable[[Node], list[Item]]:
    """sort / scatter: copies of the N operands into the results, then the kernel that
    updates them in place, reading the node's other operands."""

    def items(node: Node) -> list[Item]:
        kernel = lower(node)
        n = len(node.outputs)
        copies: list[Item] = [copy_dispatch(x, y)
                              for x, y in zip(node.inputs[:n], node.outputs)]
        return copies + [MultiDispatch(kernel, list(node.inputs[n:]), list(node.outputs),
                                       True)]

    return items


def _select_and_scatter(node: Node) -> list[Item]:
    """The result filled with the init value, then the in-place kernel."""
    kernel = lower_select_and_scatter(node)
    out = node.output
    rank = out.type.rank
    fill = Kernel("fill", tuple(out.type.shape), rank, (node.inputs[2].type,), out.type,
                  Load(0, ()))
    return [Dispatch(fill, [node.inputs[2]], out),
            MultiDispatch(kernel, [node.inputs[0], node.inputs[1], *node.inputs[3:]], [out],
                          True)]


def _map(node: Node) -> list[Item]:
    """map is elementwise: one generic Kernel whose body is the region."""
    n = node.attrs["operands"]
    out = node.output.type
    captures: list[Expr] = []
    for j, t in enumerate(node.inputs[n:]):
        if t.type.shape != ():
            raise LoweringError(f"map's computation reads a {t.type} from outside; only "
                                "scalars can be captured")
        captures.append(Load(n + j, ()))
    (body,) = region_expr(node.regions[0], captures, "map's computation")
    own = tuple(Index(d) for d in range(out.rank))
    body = substitute(body, arg=lambda a: Load(a.index, own))
    kernel = Kernel("map", tuple(out.shape), out.rank, tuple(t.type for t in node.inputs),
                    out, body)
    return [Dispatch(kernel, list(node.inputs), node.output)]


# Ops lowered to other kernel kinds than Kernel: node (operands resolved) -> items.
SPECIAL: dict[str, Callable[[Node], list[Item]]] = {
    "reduce_region": _reduction(lower_reduce_region),
    "reduce_window_region": _reduction(lower_reduce_window_region),
    "sort": _in_place(lower_sort),
    "scatter": _in_place(lower_scatter),
    "select_and_scatter": _select_and_scatter,
    "map": _map,
    # the user's C kernel: reads its operands, writes its results (kernel/custom_call.py)
    "custom_call": _reduction(lower_custom_call),
}


def _cheap(d: Dispatch, constants: set[int]) -> bool:
    """A producer worth recomputing inside the kernel that reads it: an index map (one
    load, or none: an iota), or anything computed from constants only."""
    k = d.kernel
    if not isinstance(k, Kernel) or k.combine is not None:
        return False
    found = loads(k)
    if isinstance(k.body, Load) and k.body.pad is None:
        return True
    return not found or all(id(d.operands[ld.operand]) in constants for ld in found)


def inline_into_kinds(items: list[Item], constants: set[int]) -> list[Item]:
    """Other kernel kinds (a Reduction: argmax's iota, a transposed or widened operand)
    read cheap producers of the same straight run directly, by substituting their
    bodies into their loads, so the producer's tensor need not be in memory."""
    items = list(items)
    for k, item in enumerate(items):
        if not isinstance(item, MultiDispatch) or not hasattr(item.kernel, "with_exprs"):
            continue
        for pos in range(len(item.operands)):
            t = item.operands[pos]
            j = k - 1
            while j >= 0 and isinstance(items[j], Dispatch | MultiDispatch) and \
                    not any(w is t for w in writes(items[j])):
                j -= 1
            if j < 0 or not isinstance(items[j], Dispatch) or not _cheap(items[j], constants):
                continue
            producer = items[j]
            written = {id(w) for i in items[j + 1:k] for w in writes(i)}
            if any(id(o) in written for o in producer.operands):
                continue
            ops = list(item.operands)
            remap = []
            for o in producer.operands:
                if not any(o is have for have in ops):
                    ops.append(o)
                remap.append(next(i for i, have in enumerate(ops) if have is o))
            swap = functools.partial(_inline_load, pos=pos, body=producer.kernel.body,
                                     remap=remap)
            kernel = item.kernel.with_exprs(swap, tuple(o.type for o in ops))
            item = MultiDispatch(kernel, ops, item.outputs, item.in_place)
        items[k] = _without_unused(item)
    return items


def _inline_load(e: Expr, pos: int, body: Expr, remap: list[int]) -> Expr:
    """`e` with every unpadded load of operand `pos` replaced by `body` (a producer's,
    its operands renumbered by `remap`) evaluated at that load's index."""

    def at(index: tuple[Expr, ...]) -> Expr:
        def fn(x: Expr, kids: tuple[Expr, ...]) -> Expr:
            if isinstance(x, Index):
                return index[x.dim]
            if isinstance(x, Load):
                return with_children(x, kids, remap[x.operand])
            return with_children(x, kids)

        return rewrite(body, fn)

    def swap(x: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(x, Load) and x.operand == pos and x.pad is None:
            return at(kids[:len(x.index)])
        return with_children(x, kids)

    return rewrite(e, swap)


def _without_unused(item: MultiDispatch) -> MultiDispatch:
    """`item` without the operands none of its expressions reads any more."""
    if not hasattr(item.kernel, "used_operands"):
        return item
    used = item.kernel.used_operands()
    if used == list(range(len(item.operands))):
        return item
    kernel = item.kernel.renumbered(used)
    return MultiDispatch(kernel, [item.operands[i] for i in used], item.outputs, item.in_place)


def immediates_in_kinds(items: list[Item], constants: dict[int, np.ndarray]) -> list[Item]:
    """Loads of scalar constants in other kernel kinds (a Reduction's init values)
    become constants in the code, as schedule does for Kernels."""
    from toolchain.kernel.form import Const

    out: list[Item] = []
    for item in items:
        if isinstance(item, MultiDispatch) and hasattr(item.kernel, "with_exprs"):
            scalar = {i: constants[id(t)] for i, t in enumerate(item.operands)
                      if id(t) in constants and t.type.num_elements == 1}
            if scalar:
                def fn(x: Expr, kids: tuple[Expr, ...], scalar=scalar, ops=item.operands
                       ) -> Expr:
                    if isinstance(x, Load) and x.operand in scalar:
                        return Const(scalar[x.operand].item(), ops[x.operand].type.dtype)
                    return with_children(x, kids)

                kernel = item.kernel.with_exprs(lambda e, fn=fn: rewrite(e, fn),
                                                item.kernel.operands)
                item = _without_unused(MultiDispatch(kernel, item.operands, item.outputs,
                                                     item.in_place))
        out.append(item)
    return out
