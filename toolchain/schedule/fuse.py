"""Producer-into-consumer fusion of kernels.

A producer kernel is inlined into a consumer's body (its Index(d) replaced by the
consumer's load indices) when that costs no recomputation:
- pure index remaps (broadcast, reshape, transpose, slice, pad: a body that is one
  Load, padded or not) are always inlined, into any unpadded load;
- widening conversions of one load (an i8 input read as i32 by a convolution, a
  reduce_window or a dot) are inlined into any unpadded load: one load and one extend
  per read, instead of a wide copy in RAM;
- producers that read only constants (weight dequantization: a convert, a multiply
  by a scale) are inlined everywhere, so widened weights never occupy RAM;
- other non-reduction producers only when they have a single consumer that reads
  each of their elements once: an elementwise kernel loading them at its own
  iteration index, or a reduction whose load visits every loop dimension once.
Reductions are never inlined (their result is reused by construction). Instead, an
elementwise consumer that is a reduction's only reader, over the reduction's parallel
domain, becomes the reduction's epilogue (kernel/form.py): a convolution's bias add and
requantization run on its accumulator, which never reaches RAM.
Nothing is fused when the fused kernel would be deeper than MAX_DEPTH or read more than
MAX_OPERANDS tensors (see kernel/form.py): a chain of a thousand elementwise ops becomes
a few dispatches of bounded depth, a sum of twenty inputs two dispatches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from toolchain.graph.ir import Tensor
from toolchain.kernel.form import (
    MAX_DEPTH,
    MAX_OPERANDS,
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    depth,
    postorder,
    rewrite,
    rewrite_kernel,
    with_children,
)
from toolchain.loops.affine import affine_of


@dataclass
class Dispatch:
    """A kernel with the tensors bound to its operands and the tensor it writes."""

    kernel: Kernel
    operands: list[Tensor]
    output: Tensor


def _substitute(e: Expr, index: tuple[Expr, ...], remap: list[int]) -> Expr:
    """The producer's expression `e` evaluated at `index`, operands renumbered."""
    def at(x: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(x, Index):
            return index[x.dim]
        if isinstance(x, Load):
            return with_children(x, kids, remap[x.operand])
        return with_children(x, kids)

    return rewrite(e, at)


def _is_remap(k: Kernel) -> bool:
    return k.combine is None and isinstance(k.body, Load)


def _is_widening(k: Kernel) -> bool:
    """A body that converts one load to a type holding every value of its own: integers
    to wider integers, floats to wider floats."""
    if k.combine is not None or not isinstance(k.body, Apply) or k.body.op != "convert":
        return False
    (arg,) = k.body.args
    if not isinstance(arg, Load):
        return False
    src, dst = k.operands[arg.operand].dtype, k.body.dtype
    same_kind = (src.kind == dst.kind and src.kind in "iuf") or (src.kind == "u"
                                                                  and dst.kind == "i")
    return same_kind and dst.bits > src.bits


def _loads_of(k: Kernel, operand: int) -> list[Load]:
    """The distinct loads of `operand` in the kernel's body and init."""
    return [ld for ld in _all_loads(k) if ld.operand == operand]


# Producers that read only constants are inlined into every reader while their body
# is this small (a weight's dequantization is 2 to 6 nodes): a chain of them, such as
# an rng op's Threefry rounds on a constant key, would otherwise be copied into each
# reader and re-walked at every fusion step (a 3-rng graph compiled in 33 s instead
# of 3 s on x86-64); past it, the producer is stored once and read.
MAX_CONSTANT_INLINE = 32


def _unit_dims_remap(k: Kernel) -> bool:
    """Whether `k` only adds or drops unit dims (kernel/lower.py's form of such a
    reshape): each index of its load is Index(d) of a dim as long as the source's, in
    order, or 0 on a unit dim of the source; every dim it does not read is a unit dim."""
    if not _is_remap(k) or k.body.pad is not None or k.body.valid is not None:
        return False
    src = k.operands[k.body.operand].shape
    read = []
    for i, n in zip(k.body.index, src, strict=True):
        if isinstance(i, Index) and k.domain[i.dim] == n:
            read.append(i.dim)
        elif not (n == 1 and isinstance(i, Const) and i.value == 0):
            return False
    return read == sorted(set(read)) and \
        all(k.domain[d] == 1 for d in range(len(k.domain)) if d not in read)


def _zero_over(e: Expr, domain: tuple[int, ...]) -> bool:
    """Whether index expression `e` is 0 at every point of `domain`."""
    form = affine_of(e)
    return form is not None and form.const == 0 and \
        all(domain[d] == 1 for d, _ in form.terms)


def _padded_inline(consumer: Kernel, loads: list[Load], producer: Kernel) -> bool:
    """Whether the padded `loads` of `consumer` can read through `producer` instead:
    a unit-dims reshape whose dropped dims `loads` index at 0 wherever they run, so that
    the bounds the load checks are the source's own (the pad of a Conv1D's SAME window
    over its input reshaped to [1, 1, w, c])."""
    if not _unit_dims_remap(producer):
        return False
    read = {i.dim for i in producer.body.index if isinstance(i, Index)}
    return all(_zero_over(ld.index[d], consumer.domain)
               for ld in loads if ld.pad is not None
               for d in range(len(ld.index)) if d not in read)


def _can_inline(consumer: Dispatch, pos: int, producer: Dispatch, uses: int,
                constants: set[int]) -> bool:
    loads = _loads_of(consumer.kernel, pos)
    if not loads:
        return False
    if any(ld.pad is not None for ld in loads):
        return _padded_inline(consumer.kernel, loads, producer.kernel)
    if producer.kernel.combine is not None:
        return False
    if _is_remap(producer.kernel) or _is_widening(producer.kernel):
        return True
    if all(id(t) in constants for t in producer.operands) and \
            len(postorder(producer.kernel.body)) <= MAX_CONSTANT_INLINE:
        return True
    if uses != 1 or len(loads) != 1:
        return False
    k = consumer.kernel
    if k.combine is None:
        return loads[0].index == tuple(Index(d) for d in range(k.n_parallel))
    # A reduction reads each element once when its load visits every loop dimension
    # once: reduce's index is a permutation of its domain (reduce_window's is not).
    index = loads[0].index
    return (len(index) == len(k.domain) and all(isinstance(i, Index) for i in index)
            and sorted(i.dim for i in index) == list(range(len(k.domain))))


def _merged(base: list[Tensor], extra: list[Tensor]) -> tuple[list[Tensor], list[int]]:
    """`base` then each tensor of `extra` it lacks; and where each of `extra` now is."""
    operands = list(base)
    remap = []
    for t in extra:
        for j, have in enumerate(operands):
            if have is t:
                remap.append(j)
                break
        else:
            operands.append(t)
            remap.append(len(operands) - 1)
    return operands, remap


def _inline(consumer: Dispatch, pos: int, producer: Dispatch) -> Dispatch:
    operands, remap = _merged(consumer.operands, producer.operands)

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Load) and e.operand == pos:
            read = _substitute(producer.kernel.body, kids[:len(e.index)], remap)
            if e.pad is None:
                return read
            # A unit-dims reshape only (_padded_inline): the same bounds, the same pad.
            rest = iter(kids[len(e.index):])
            return replace(read, pad=next(rest),
                           valid=None if e.valid is None else next(rest))
        return with_children(e, kids)

    k = consumer.kernel
    kernel = replace(rewrite_kernel(k, fn), operands=tuple(t.type for t in operands),
                     name=f"{producer.kernel.name}_{k.name}")
    return Dispatch(kernel, operands, consumer.output)


def _can_be_epilogue(consumer: Dispatch, pos: int, producer: Dispatch, uses: int) -> bool:
    """Whether `consumer` can run as the epilogue of reduction `producer`: its only
    reader, elementwise over exactly the reduction's parallel domain, reading each
    result once at its own index."""
    p, k = producer.kernel, consumer.kernel
    if p.combine is None or k.combine is not None or uses != 1:
        return False
    # A consumer that widens the result (an i8 output read as i32 by an average pool)
    # would store more bytes; it fuses into its own readers instead.
    if k.result.dtype.itemsize > p.result.dtype.itemsize:
        return False
    if k.domain != p.domain[:p.n_parallel] or k.n_parallel != len(k.domain):
        return False
    loads = _loads_of(k, pos)
    own = tuple(Index(d) for d in range(k.n_parallel))
    return bool(loads) and all(ld.pad is None and ld.index == own for ld in loads)


def _as_epilogue(consumer: Dispatch, pos: int, producer: Dispatch) -> Dispatch:
    """The reduction `producer` storing `consumer`'s body, which reads the folded value
    (or the producer's own epilogue of it) where it loaded the producer's result."""
    p = producer.kernel
    operands, remap = _merged(producer.operands, consumer.operands)
    # What the consumer loaded: the folded value as the producer stored it (rounded to
    # f16 / bf16 when it folded in f32), or the producer's own epilogue of it.
    folded: Expr = Acc(p.acc_dtype)
    if p.epilogue is not None:
        folded = p.epilogue
    elif p.acc_dtype != p.result.dtype:
        folded = Apply("convert", (folded,), p.result.dtype)

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Load):
            return folded if e.operand == pos else with_children(e, kids, remap[e.operand])
        return with_children(e, kids)

    kernel = replace(p, epilogue=rewrite(consumer.kernel.body, fn),
                     result=consumer.kernel.result, accumulator=p.acc_dtype,
                     operands=tuple(t.type for t in operands),
                     name=f"{p.name}_{consumer.kernel.name}")
    return Dispatch(kernel, operands, consumer.output)


def drop_unused_operands(d: Dispatch) -> Dispatch:
    used = sorted({ld.operand for ld in _all_loads(d.kernel)})
    if used == list(range(len(d.operands))):
        return d
    remap = {old: new for new, old in enumerate(used)}

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Load):
            return with_children(e, kids, remap[e.operand])
        return with_children(e, kids)

    kernel = replace(rewrite_kernel(d.kernel, fn), operands=tuple(d.operands[i].type for i in used))
    return Dispatch(kernel, [d.operands[i] for i in used], d.output)


def _all_loads(k: Kernel) -> list[Load]:
    """Every distinct load in the kernel's body, init and epilogue."""
    seen: set[int] = set()
    loads: list[Load] = []
    for root in k.roots:
        for e in postorder(root):
            if isinstance(e, Load) and id(e) not in seen:
                seen.add(id(e))
                loads.append(e)
    return loads


def _fits(k: Kernel) -> bool:
    """Whether a fused kernel is still one the backend takes: shallow enough for the
    recursive walks of codegen, and few enough operands to bind in one command."""
    return len(k.operands) <= MAX_OPERANDS and depth(*k.roots) <= MAX_DEPTH


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

    def release(t: Tensor) -> None:
        """One reader of `t` fewer; a producer nobody reads any more is dead, and its
        operands lose that reader in turn (so `uses` counts live readers only)."""
        stack = [t]
        while stack:
            u = stack.pop()
            uses[id(u)] -= 1
            p = producer_of.get(id(u))
            if uses[id(u)] == 0 and id(u) not in keep and p is not None:
                stack.extend(p.operands)

    for d in dispatches:
        changed = True
        while changed:
            changed = False
            for pos, t in enumerate(d.operands):
                p = producer_of.get(id(t))
                if p is None or id(t) in keep:
                    continue
                if _can_inline(d, pos, p, uses[id(t)], constants):
                    fused = drop_unused_operands(_inline(d, pos, p))
                elif _can_be_epilogue(d, pos, p, uses[id(t)]):
                    fused = drop_unused_operands(_as_epilogue(d, pos, p))
                else:
                    continue
                if not _fits(fused.kernel):
                    continue  # the producer stays a dispatch of its own
                # Count the fused kernel's reads: what it reads that d did not (p's
                # operands) gains a reader, what d read that it does not (t) loses one.
                before = {id(u) for u in d.operands}
                after = {id(u) for u in fused.operands}
                for u in fused.operands:
                    if id(u) not in before:
                        uses[id(u)] = uses.get(id(u), 0) + 1
                for u in d.operands:
                    if id(u) not in after:
                        release(u)
                d = fused
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
