"""An int8 layer's fused activation table split off where it hides a fast kernel.

TFLite's converter writes an activation it cannot fuse into the layer (HARD_SWISH after
a depthwise convolution, a LOGISTIC or TANH after a convolution) as an operator of its
own, which the importer makes a lookup in a 256-entry table (frontend/tflite/int8.py).
Fusion (schedule/fuse.py) then puts the lookup in the layer's epilogue: the stored
value is `table[requantized + 128]`, not the requantized value. That is one load more
per output for a generic nest, but the depthwise 3x3 row-pair and 4-row microkernels
(loops/depthwise.py) requantize and store inside runtime_c's assembly, and recognise an
epilogue that ends with the requantization only: mobilenet_block_int8's depthwise layer
fell back to scalar code, 373,090 instructions on cortex-m4 where the same layer
without its HARD_SWISH takes 150,019.

`split_lookup_tails` gives such a layer back its plain epilogue and runs the rest of
the old epilogue (the tail, which reads the layer's result only through the i8
requantized value) as an elementwise dispatch after it. It does so only where that
recovers a microkernel the fused form misses, on the target at hand: a generic nest
keeps the fused lookup, which costs less than a second pass over the result.
"""

from __future__ import annotations

from dataclasses import replace

from toolchain.graph.ir import Tensor
from toolchain.kernel.form import (
    Acc,
    Apply,
    Expr,
    Index,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.loops.depthwise import has_row_pairs, row_pair_plan
from toolchain.loops.depthwise5 import depthwise5_plan
from toolchain.schedule.fuse import Dispatch, _fits, _inline, _loads_of, drop_unused_operands
from toolchain.target.descriptors import Target
from toolchain.types import TensorType

__all__ = ["inline_tails", "split_lookup_tails"]


def _microkernel_takes(k: Kernel, target: Target) -> bool:
    """Whether a microkernel with a fixed epilogue computes `k` on `target` (the 3x3 row
    pairs, or the 5x5 kernel of loops/depthwise5.py: MobileNetV3's 5x5 layers end in
    HARD_SWISH)."""
    return has_row_pairs(target) and (row_pair_plan(k) is not None
                                      or depthwise5_plan(k) is not None)


def _heads(epilogue: Expr) -> list[Expr]:
    """The i8 nodes of `epilogue` through which every path to the folded value (Acc)
    goes, nearest the root first: where the epilogue can be cut in two."""
    found = []
    nodes = postorder(epilogue)
    for head in reversed(nodes):
        if not (isinstance(head, Apply) and head.dtype.name == "i8") or head is epilogue:
            continue
        # Acc reached without passing through `head`: walk from the root, not into it.
        seen, stack, through = {id(head)}, [epilogue], True
        while stack and through:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, Acc):
                through = False
            stack.extend(getattr(e, "args", ()))
            if isinstance(e, Load):
                stack.extend(e.index)
                stack.extend(x for x in (e.pad, e.valid) if x is not None)
        if through:
            found.append(head)
    return found


def _stored_as(d: Dispatch, head: Expr) -> Tensor:
    """The graph's own tensor for the value `head` computes, when the walk back from the
    dispatch's result finds it (an i8 tensor of the result's shape, the layer's output
    before its activation), so reports name both dispatches after their operators; else
    a new tensor."""
    shape = d.output.type.shape
    bound = {id(t) for t in d.operands}
    frontier, seen = [d.output], set()
    while frontier:
        t = frontier.pop(0)
        node = t.producer
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for u in node.inputs:
            if id(u) in bound:
                continue
            if u.type.dtype.name == "i8" and u.type.shape == shape and u is not d.output:
                return u
            frontier.append(u)
    return Tensor(TensorType(shape, head.dtype), "requantized")


def split_lookup_tails(d: Dispatch, target: Target | None) -> list[Dispatch]:
    """`d`, or the layer without its epilogue's tail then the tail as an elementwise
    dispatch (module docstring), when only the split form takes a microkernel."""
    k = d.kernel
    if target is None or k.combine is None or k.epilogue is None or \
            k.result.dtype.name != "i8" or _microkernel_takes(k, target):
        return [d]
    for head in _heads(k.epilogue):
        stored = _stored_as(d, head)
        layer = replace(k, epilogue=head, result=stored.type)
        if not _microkernel_takes(layer, target):
            continue
        rank = k.n_parallel
        own = tuple(Index(i) for i in range(rank))
        read = Load(len(d.operands), own)
        body = _cut(k.epilogue, head, read)
        tail = Kernel(f"{k.name}_tail", k.domain[:rank], rank,
                      (*k.operands, stored.type), k.result, body)
        first = drop_unused_operands(Dispatch(layer, list(d.operands), stored))
        second = drop_unused_operands(Dispatch(tail, [*d.operands, stored], d.output))
        return [first, second]
    return [d]


def _cut(epilogue: Expr, head: Expr, read: Load) -> Expr:
    """`epilogue` reading `read` where it computed `head`."""
    return rewrite(epilogue, lambda e, kids: read if e is head else with_children(e, kids))


def _takes_lookup(reader: Dispatch, pos: int) -> bool:
    """Whether `reader` can read operand `pos` through a table lookup at no loss: every
    load of it unpadded, in a kernel that multiplies nothing (an elementwise kernel, a
    pooling sum), so no contraction microkernel is kept from its operand."""
    k = reader.kernel
    loads = _loads_of(k, pos)
    return bool(loads) and all(ld.pad is None and ld.valid is None for ld in loads) and \
        not any(isinstance(e, Apply) and e.op == "multiply" and
                any(isinstance(a, Load) and a.operand == pos for a in e.args)
                for root in k.roots for e in postorder(root)) and \
        (k.combine is None or k.combine == "add")


def inline_tails(run: list[Dispatch], tails: set[int], keep: set[int]) -> list[Dispatch]:
    """`run` with each split tail (ids in `tails`) read through by every reader instead
    of stored, where all of its readers are in the run and can (_takes_lookup): a table
    lookup costs a load where its pass over the result costs ~7 instructions an element
    (mobilenet_block_int8's HARD_SWISH, read by the SE block's MEAN and MUL)."""
    out = list(run)
    for tail in [d for d in run if id(d) in tails]:
        if id(tail.output) in keep:
            continue
        readers = [(j, d, [i for i, u in enumerate(d.operands) if u is tail.output])
                   for j, d in enumerate(out) if any(u is tail.output for u in d.operands)]
        if not readers or any(len(pos) != 1 or not _takes_lookup(d, pos[0])
                              for _, d, pos in readers):
            continue
        fused = {j: drop_unused_operands(_inline(d, pos[0], tail)) for j, d, pos in readers}
        if not all(_fits(f.kernel) for f in fused.values()):
            continue
        out = [fused.get(j, d) for j, d in enumerate(out) if d is not tail]
    return out
