"""Einsum: an equation of subscripts lowered to the graph's dot_general, reduce,
transpose and broadcast (the way einsum is defined: multiply, then sum the letters
the output omits).

Steps: `...` becomes letters of its own (right-aligned, size-1 dimensions broadcast);
a letter repeated within one operand takes that operand's diagonal; a letter only one
operand has and the output omits is summed away at once; operands are then contracted
pairwise, left to right, by one dot_general each (letters both share and something
later needs are batch dimensions, the others are contracted); the last result is
transposed into the output's order. Without `->` the output is the ellipsis and the
letters used once, alphabetically.
"""

from __future__ import annotations

import string
from collections import Counter

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

Operand = tuple[Tensor, str]  # a tensor and one letter per dimension


def _parse(ctx: OpContext, xs: list[Tensor]) -> tuple[list[str], str]:
    """Each operand's letters and the output's, the ellipsis spelled out."""
    eq = ctx.attr("equation", "")
    eq = eq.decode() if isinstance(eq, bytes) else str(eq)
    eq = eq.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(xs):
        raise Unsupported(f"equation {eq!r} has {len(terms)} operands; the node has {len(xs)}")
    spare = [c for c in string.ascii_letters if c not in eq]
    widths = [x.type.rank - (len(t) - 3) for t, x in zip(terms, xs) if "..." in t]
    ell = "".join(spare[:max(widths, default=0)])
    full = []
    for t, x in zip(terms, xs):
        if "..." in t:
            k = x.type.rank - (len(t) - 3)
            t = t.replace("...", ell[len(ell) - k:] if k else "")
        if len(t) != x.type.rank or not all(c in string.ascii_letters for c in t):
            raise Unsupported(f"subscripts {t!r} do not fit an operand of rank {x.type.rank}")
        full.append(t)
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = Counter("".join(full))
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    if len(set(out)) != len(out) or any(c not in "".join(full) for c in out):
        raise Unsupported(f"output subscripts {out!r} repeat a letter or name an unknown one")
    return full, out


def _diagonal(ctx: OpContext, x: Tensor, letters: str) -> Operand:
    """Repeated letters of one operand reduced to one: x where the two indices are
    equal, 0 elsewhere, summed over the second."""
    while True:
        repeated = next((c for c, n in Counter(letters).items() if n > 1), None)
        if repeated is None:
            return x, letters
        i = letters.index(repeated)
        j = letters.index(repeated, i + 1)
        shape = tuple(x.type.shape)
        same = ctx.node("compare", [
            ctx.node("iota", [], dimension=i, shape=shape, dtype="i32"),
            ctx.node("iota", [], dimension=j, shape=shape, dtype="i32")], direction="EQ")
        x = ctx.node("select", [same, x, ctx.filled(0, x)])
        x = _sum(ctx, x, (j,))
        letters = letters[:j] + letters[j + 1:]


def _sum(ctx: OpContext, x: Tensor, dims: tuple[int, ...]) -> Tensor:
    return ctx.node("reduce", [x, ctx.scalar(0, x)], kind="add", dims=dims)


def _drop(ctx: OpContext, op: Operand, keep: set[str]) -> Operand:
    """Letters outside `keep` summed away."""
    x, letters = op
    dims = tuple(i for i, c in enumerate(letters) if c not in keep)
    if not dims:
        return op
    return _sum(ctx, x, dims), "".join(c for c in letters if c in keep)


def _contract(ctx: OpContext, a: Operand, b: Operand, needed: set[str]) -> Operand:
    """One dot_general: shared letters still needed are batch dimensions, the other
    shared ones are contracted."""
    (xa, la), (xb, lb) = a, b
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in needed]
    contract = [c for c in shared if c not in needed]
    y = ctx.node("dot_general", [xa, xb],
                 lhs_batch=tuple(la.index(c) for c in batch),
                 rhs_batch=tuple(lb.index(c) for c in batch),
                 lhs_contract=tuple(la.index(c) for c in contract),
                 rhs_contract=tuple(lb.index(c) for c in contract),
                 dtype=xa.type.dtype.name)
    letters = "".join(batch) + "".join(c for c in la if c not in shared) + "".join(
        c for c in lb if c not in shared)
    return y, letters


def einsum(ctx: OpContext) -> Tensor:
    """Einsum of any number of operands (see the module's docstring)."""
    xs = [ctx.input(i) for i in range(len(ctx.info.inputs)) if ctx.has_input(i)]
    if any(x.type.dtype != xs[0].type.dtype for x in xs):
        raise Unsupported("operands of different element types")
    terms, out = _parse(ctx, xs)
    sizes: dict[str, int] = {}
    for x, t in zip(xs, terms):
        for c, s in zip(t, x.type.shape):
            if sizes.get(c, 1) not in (1, s) and s != 1:
                raise Unsupported(f"letter {c!r} has sizes {sizes[c]} and {s}")
            sizes[c] = max(sizes.get(c, 1), s)
    ops = []
    for x, t in zip(xs, terms):
        x, t = _diagonal(ctx, x, t)
        # size-1 dimensions of the ellipsis (or any letter) broadcast to the letter's size
        x = ctx.broadcast(x, tuple(sizes[c] for c in t), tuple(range(len(t))))
        ops.append((x, t))
    for i, (x, t) in enumerate(ops):
        elsewhere = set(out).union(*(set(u) for j, (_, u) in enumerate(ops) if j != i))
        ops[i] = _drop(ctx, (x, t), elsewhere)
    acc = ops[0]
    for i in range(1, len(ops)):
        later = set(out).union(*(set(u) for _, u in ops[i + 1:]))
        acc = _contract(ctx, acc, ops[i], later)
    x, letters = _drop(ctx, acc, set(out))
    if letters != out:
        x = ctx.node("transpose", [x], permutation=tuple(letters.index(c) for c in out))
    return x


__all__ = ["einsum"]
