"""Transposed convolutions by output phase, and the kernel each loop nest computes.

A convolution with lhs_dilation m reads its input through a load guarded by
`(c_o*o + c_k*k + c) % m == 0` (kernel/lower.py): the input with m-1 zeros inserted
between elements, where o is an output position and k a kernel tap. Only one tap in
every m/gcd(c_k, m) meets a real element, and which one depends on o modulo
m/gcd(c_o, m) only. So each output residue r (a *phase*) is an ordinary convolution
over the taps first + step*t: `phases_of` finds the phases, `nest_kernel` writes the
kernel of one (the guard folds away, the division by m becomes exact), and the zeros
are never multiplied.

Skipping a tap is exact when the guarded load's pad makes the body the combine's
identity: `x * w` summed with a pad of 0. For floats that needs finite weights (the
spec's 0 * inf is NaN, a skipped tap adds nothing): kernel/lower.py writes the guarded
load only when the kernel is a constant with finite values, and otherwise reads the
holes as zeros through a select, which is not split into phases.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from math import gcd

from toolchain.kernel.form import (
    INDEX,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.loops.affine import affine_of, simplify
from toolchain.loops.schedule import Phase

__all__ = ["MAX_PHASES", "nest_kernel", "phases_of"]

# Every phase is a loop nest of its own in the dispatch: past this many (a 2-D
# transposed convolution of stride 4 has 16), the guarded loop is kept instead.
MAX_PHASES = 16


def _conjuncts(e: Expr) -> list[Expr]:
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Apply) and x.op == "and":
            stack.extend(x.args)
        else:
            out.append(x)
    return out


def _residue_test(e: Expr, n_parallel: int) -> tuple[int, int, int, int, int, int] | None:
    """(o, c_o, k, c_k, c, m) when `e` is `(c_o*Index(o) + c_k*Index(k) + c) % m == 0`
    with o a parallel and k a reduced dim."""
    if not (isinstance(e, Apply) and e.op == "compare.EQ"):
        return None
    rem, zero = e.args
    if not (isinstance(zero, Const) and zero.value == 0 and isinstance(rem, Apply)
            and rem.op == "remainder" and rem.dtype == INDEX):
        return None
    x, m = rem.args
    a = affine_of(x)
    if a is None or not isinstance(m, Const) or int(m.value) <= 1 or len(a.terms) != 2:
        return None
    (o, c_o), (k, c_k) = a.terms
    if not (o < n_parallel <= k):
        return None
    return o, c_o, k, c_k, a.const, int(m.value)


def _folds_to_zero(e: Expr, gone: Load) -> bool:
    """Whether `e` is 0 when the load `gone` reads its pad: the pad itself, a product
    with it, or conversions of those."""
    if e is gone:
        return isinstance(gone.pad, Const) and gone.pad.value == 0
    if isinstance(e, Apply) and e.op == "convert":
        return _folds_to_zero(e.args[0], gone)
    if isinstance(e, Apply) and e.op == "multiply":
        return any(_folds_to_zero(a, gone) for a in e.args)
    return False


def phases_of(k: Kernel) -> list[tuple[Phase, ...]]:
    """The phases of a transposed convolution, one tuple (a Phase per dilated spatial
    dim) per loop nest; [] when the kernel is none or its phases cannot be split."""
    if k.combine != "add":
        return []
    guarded = [e for e in postorder(k.body) if isinstance(e, Load) and e.valid is not None]
    if len(guarded) != 1 or not _folds_to_zero(k.body, guarded[0]):
        return []
    tests = [_residue_test(c, k.n_parallel) for c in _conjuncts(guarded[0].valid)]
    if not tests or any(t is None for t in tests):
        return []
    dims = [t[0] for t in tests] + [t[2] for t in tests]
    if len(set(dims)) != len(dims):
        return []
    per_dim: list[list[Phase]] = []
    for o, c_o, kd, c_k, c, m in tests:
        factor, step = m // gcd(c_o, m), m // gcd(c_k, m)
        options = []
        for r in range(min(factor, k.domain[o])):
            first = next((t for t in range(step) if (c_k * t + c_o * r + c) % m == 0), None)
            # No tap meets a real element: an empty reduction (first past the taps).
            options.append(Phase(o, factor, r, kd, k.domain[kd] if first is None else first,
                                 step))
        per_dim.append(options)
    combos = list(itertools.product(*per_dim))
    if len(combos) > MAX_PHASES:
        return []
    return combos


def phase_domain(k: Kernel, phases: tuple[Phase, ...]) -> tuple[int, ...]:
    """The nest's extents: ceil((n - residue) / factor) outputs, and the taps from
    `first` in steps of `step`."""
    dom = list(k.domain)
    for p in phases:
        dom[p.dim] = -(-(k.domain[p.dim] - p.residue) // p.factor)
        dom[p.tap] = max(0, -(-(k.domain[p.tap] - p.first) // p.step))
    return tuple(dom)


def nest_kernel(k: Kernel, phases: tuple[Phase, ...] = ()) -> Kernel:
    """The kernel one nest computes: with phases, Index(dim) becomes
    factor*Index(dim) + residue and Index(tap) first + step*Index(tap) over the phase's
    domain (its results still land at the original output positions: the emitter maps
    them); then index arithmetic is simplified over the nest's full ranges."""
    subst: dict[int, Expr] = {}
    for p in phases:
        subst[p.dim] = _affine_index(p.dim, p.factor, p.residue)
        subst[p.tap] = _affine_index(p.tap, p.step, p.first)
    domain = phase_domain(k, phases) if phases else k.domain

    def at(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Index) and e.dim in subst:
            return subst[e.dim]
        return with_children(e, kids)

    ranges = {d: (0, n - 1) for d, n in enumerate(domain) if n > 0}

    def fix(root: Expr | None) -> Expr | None:
        if root is None:
            return None
        return simplify(rewrite(root, at) if subst else root, ranges, k.operands)

    return replace(k, domain=domain, body=fix(k.body), init=fix(k.init),
                   epilogue=fix(k.epilogue))


def _affine_index(dim: int, scale: int, offset: int) -> Expr:
    e: Expr = Index(dim)
    if scale != 1:
        e = Apply("multiply", (e, Const(scale, INDEX)), INDEX)
    return e if offset == 0 else Apply("add", (e, Const(offset, INDEX)), INDEX)
