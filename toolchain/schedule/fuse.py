"""Producer-into-consumer fusion of kernels.

A producer kernel is inlined into a consumer's body (its Index(d) replaced by the
consumer's load indices) when that costs no recomputation:
- pure index remaps (broadcast, reshape, transpose, slice: a body that is one Load)
  are always inlined, into any unpadded load;
- producers that read only constants (weight dequantization: a convert, a multiply
  by a scale) are inlined everywhere, so widened weights never occupy RAM;
- other non-reduction producers only when they have a single consumer that reads
  each of their elements once: a non-reduction kernel loading them at its own
  iteration index.
Reductions are never inlined (their result is reused by construction).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from toolchain.graph.ir import Tensor
from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load


@dataclass
class Dispatch:
    """A kernel with the tensors bound to its operands and the tensor it writes."""

    kernel: Kernel
    operands: list[Tensor]
    output: Tensor


def _substitute(e: Expr, index: tuple[Expr, ...], remap: list[int]) -> Expr:
    """The producer's expression `e` evaluated at `index`, operands renumbered."""
    if isinstance(e, Index):
        return index[e.dim]
    if isinstance(e, Const):
        return e
    if isinstance(e, Load):
        return Load(remap[e.operand], tuple(_substitute(i, index, remap) for i in e.index),
                    None if e.pad is None else _substitute(e.pad, index, remap),
                    None if e.valid is None else _substitute(e.valid, index, remap))
    return Apply(e.op, tuple(_substitute(a, index, remap) for a in e.args), e.dtype)


def _is_remap(k: Kernel) -> bool:
    return k.combine is None and isinstance(k.body, Load) and k.body.pad is None


def _loads_of(e: Expr, operand: int) -> list[Load]:
    out: list[Load] = []
    if isinstance(e, Load):
        if e.operand == operand:
            out.append(e)
        for i in e.index:
            out += _loads_of(i, operand)
        for x in (e.pad, e.valid):
            if x is not None:
                out += _loads_of(x, operand)
    elif isinstance(e, Apply):
        for a in e.args:
            out += _loads_of(a, operand)
    return out


def _can_inline(consumer: Dispatch, pos: int, producer: Dispatch, uses: int,
                constants: set[int]) -> bool:
    loads = _loads_of(consumer.kernel.body, pos)
    if consumer.kernel.init is not None:
        loads += _loads_of(consumer.kernel.init, pos)
    if not loads or any(ld.pad is not None for ld in loads):
        return False
    if producer.kernel.combine is not None:
        return False
    if _is_remap(producer.kernel) or all(id(t) in constants for t in producer.operands):
        return True
    own_index = tuple(Index(d) for d in range(consumer.kernel.n_parallel))
    return (uses == 1 and consumer.kernel.combine is None and len(loads) == 1
            and loads[0].index == own_index)


def _inline(consumer: Dispatch, pos: int, producer: Dispatch) -> Dispatch:
    operands = list(consumer.operands)
    remap = []
    for t in producer.operands:
        for j, have in enumerate(operands):
            if have is t:
                remap.append(j)
                break
        else:
            operands.append(t)
            remap.append(len(operands) - 1)

    def rewrite(e: Expr) -> Expr:
        if isinstance(e, Load):
            index = tuple(rewrite(i) for i in e.index)
            if e.operand == pos:
                return _substitute(producer.kernel.body, index, remap)
            return Load(e.operand, index, None if e.pad is None else rewrite(e.pad),
                        None if e.valid is None else rewrite(e.valid))
        if isinstance(e, Apply):
            return Apply(e.op, tuple(rewrite(a) for a in e.args), e.dtype)
        return e

    k = consumer.kernel
    kernel = replace(k, body=rewrite(k.body),
                     init=None if k.init is None else rewrite(k.init),
                     operands=tuple(t.type for t in operands),
                     name=f"{producer.kernel.name}_{k.name}")
    return Dispatch(kernel, operands, consumer.output)


def _drop_unused_operands(d: Dispatch) -> Dispatch:
    used = sorted({ld.operand for ld in _all_loads(d.kernel)})
    if used == list(range(len(d.operands))):
        return d
    remap = {old: new for new, old in enumerate(used)}

    def rewrite(e: Expr) -> Expr:
        if isinstance(e, Load):
            return Load(remap[e.operand], tuple(rewrite(i) for i in e.index),
                        None if e.pad is None else rewrite(e.pad),
                        None if e.valid is None else rewrite(e.valid))
        if isinstance(e, Apply):
            return Apply(e.op, tuple(rewrite(a) for a in e.args), e.dtype)
        return e

    k = d.kernel
    kernel = replace(k, body=rewrite(k.body), init=None if k.init is None else rewrite(k.init),
                     operands=tuple(d.operands[i].type for i in used))
    return Dispatch(kernel, [d.operands[i] for i in used], d.output)


def _all_loads(k: Kernel) -> list[Load]:
    loads: list[Load] = []
    for root in (k.body, k.init):
        stack = [root] if root is not None else []
        while stack:
            e = stack.pop()
            if isinstance(e, Load):
                loads.append(e)
                stack += list(e.index) + [x for x in (e.pad, e.valid) if x is not None]
            elif isinstance(e, Apply):
                stack += list(e.args)
    return loads


def fuse(dispatches: list[Dispatch], keep: set[int],
         constants: frozenset[int] | set[int] = frozenset()) -> list[Dispatch]:
    """Fuses in program order; `keep` holds ids of tensors that must stay materialized,
    `constants` the ids of constant tensors (they live in flash, not in RAM)."""
    producer_of = {id(d.output): d for d in dispatches}
    uses: dict[int, int] = {}
    for d in dispatches:
        for t in d.operands:
            uses[id(t)] = uses.get(id(t), 0) + 1
    result: list[Dispatch] = []
    for d in dispatches:
        changed = True
        while changed:
            changed = False
            for pos, t in enumerate(d.operands):
                p = producer_of.get(id(t))
                if p is None or id(t) in keep:
                    continue
                if not _can_inline(d, pos, p, uses[id(t)], constants):
                    continue
                d = _inline(d, pos, p)
                uses[id(t)] -= 1
                for u in p.operands:
                    uses[id(u)] = uses.get(id(u), 0) + 1
                d = _drop_unused_operands(d)
                changed = True
                break
        producer_of[id(d.output)] = d
        result.append(d)
    # Producers fully inlined everywhere are no longer needed.
    live = set(keep)
    kept: list[Dispatch] = []
    for d in reversed(result):
        if id(d.output) in live:
            kept.append(d)
            live.update(id(t) for t in d.operands)
    return kept[::-1]
