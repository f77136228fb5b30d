"""What the loop-schedule rules read off a kernel's loads: the dims each depends on,
the element offset it reads, whether packed int8 steps can read it by whole words, and
the interior of each parallel dim where no bounds check can fail.

Both the cost model (loops/cost.py) and the choice of a nest (loops/rules.py) ask
these questions of the same loads; the answers depend only on the kernel.
"""

from __future__ import annotations

from toolchain.kernel.form import Expr, Index, Kernel, Load, postorder
from toolchain.loops.affine import Affine, affine_of
from toolchain.loops.patterns import dot_operands, int16_dot
from toolchain.loops.tables import (
    DOT_WIDTH,
    INT16_DOT_KINDS,
    VECTOR_DOT_KINDS,
    dot_align,
    dot_width,
)

__all__ = ["interior_ranges", "lane_dim"]


def _deps(e: Expr) -> frozenset[int]:
    """The loop dims expression `e` depends on."""
    return frozenset(x.dim for x in postorder(e) if isinstance(x, Index))


def _flat_index(k: Kernel, ld: Load) -> Affine | None:
    """The element offset `ld` reads in its operand, as an affine form of the loop dims
    (None when an index is not affine)."""
    flat = Affine((), 0)
    for comp, size in zip(ld.index, k.operands[ld.operand].shape, strict=True):
        a = affine_of(comp)
        if a is None:
            return None
        flat = flat.times(size).plus(a)
    return flat


def _word_packable(k: Kernel, ld: Load, d: int, align: int = DOT_WIDTH) -> bool:
    """Whether int8 load `ld` is contiguous along reduced dim d (stride 1) with every
    other stride a multiple of `align` bytes: the packed DSP steps' word loads stay
    aligned (vector loads need no alignment: align 1)."""
    flat = _flat_index(k, ld)
    if flat is None:
        return False
    # A dim of extent 1 (the one input channel of a 10x4 window) is always 0.
    return flat.coeff(d) == 1 and not flat.const % align and \
        not any(c % align for x, c in flat.terms if x != d and k.domain[x] > 1)


def _packing(k: Kernel, d: int, kind: str) -> tuple[int, ...] | None:
    """How the packed int8 steps of dot kind `kind` can read reduced dim d: None when
    they cannot, else the operands (kernel operand numbers) gathered element by element.
    () when both read whole words (vectors, for a vector kind: at least one step long,
    from any address); for the DSP steps, one operand when only the other does, for an
    extent that is a multiple of the packed width (a 10x4 window over one input
    channel: the weights' 4 taps of a row are one word, the input's start at odd
    bytes)."""
    operands = dot_operands(k)
    if operands is None or k.domain[d] < dot_width(kind):
        return None
    if kind in VECTOR_DOT_KINDS:
        return () if all(_word_packable(k, ld, d, 1) for ld in operands) else None
    words = [_word_packable(k, ld, d, dot_align(kind)) for ld in operands]
    if all(words):
        return ()
    # An int16 step pairs elements as stored (codegen/dot.py): none is gathered.
    if any(words) and kind not in INT16_DOT_KINDS:
        gathered = next(ld for ld, w in zip(operands, words, strict=True) if not w)
        if gathered.operand not in k.paired and \
                all(affine_of(i) is not None for i in gathered.index):
            return (gathered.operand,)
    return None


def _never_padded(k: Kernel, ld: Load) -> bool:
    """Whether every index of `ld` stays inside its operand over the whole domain (a
    padding of zero widths: a 1x1 convolution behind a `pad` op of nothing)."""
    ranges = {d: (0, n - 1) for d, n in enumerate(k.domain)}
    forms = [affine_of(i) for i in ld.index]
    return all(f is not None and f.interval(ranges)[0] >= 0 and f.interval(ranges)[1] < n
               for f, n in zip(forms, k.operands[ld.operand].shape, strict=True))


def lane_dim(k: Kernel) -> int | None:
    """The parallel dim of an int8 sum of products along which both operands are
    contiguous (stride 1: a depthwise convolution's channels), else None."""
    operands = dot_operands(k)
    if operands is None or int16_dot(k):  # the vector lanes are int8's
        return None
    flats = [_flat_index(k, ld) for ld in operands]
    if any(f is None for f in flats):
        return None
    found = None
    for d in range(k.n_parallel):
        if all(f.coeff(d) == 1 for f in flats):
            found = d
    return found


# --------------------------------------------------------------------------- interior


def _floor_div(a: int, b: int) -> int:
    return a // b


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def interior_ranges(k: Kernel) -> dict[int, tuple[int, int]]:
    """Per parallel dim, the range [lo, hi) of its values where every bounds-checked
    load of the kernel is inside its operand in each index that depends on that dim
    alone (plus reduced dims), whatever the reduced dims are. Dims where that holds
    everywhere, or nowhere, are left out: they need no split."""
    bounds: dict[int, list[int]] = {}
    full = {d: (0, n - 1) for d, n in enumerate(k.domain) if n > 0}
    for root in k.roots:
        for e in postorder(root):
            if not isinstance(e, Load) or e.pad is None:
                continue
            shape = k.operands[e.operand].shape
            for comp, size in zip(e.index, shape, strict=True):
                a = affine_of(comp)
                if a is None:
                    continue
                par = [(d, c) for d, c in a.terms if d < k.n_parallel]
                if len(par) != 1:
                    continue
                (d, c), = par
                rest = [(x, y) for x, y in a.terms if x >= k.n_parallel]
                if any(x not in full for x, _ in rest):
                    continue
                r_lo = r_hi = a.const
                for x, y in rest:
                    lo, hi = full[x]
                    r_lo += min(y * lo, y * hi)
                    r_hi += max(y * lo, y * hi)
                # 0 <= c*i + r_lo and c*i + r_hi <= size - 1
                if c > 0:
                    lo_i, hi_i = _ceil_div(-r_lo, c), _floor_div(size - 1 - r_hi, c)
                else:
                    lo_i, hi_i = _ceil_div(size - 1 - r_hi, c), _floor_div(-r_lo, c)
                cur = bounds.setdefault(d, [0, k.domain[d]])
                cur[0] = max(cur[0], lo_i)
                cur[1] = min(cur[1], hi_i + 1)
    out = {}
    for d, (lo, hi) in bounds.items():
        n = k.domain[d]
        lo, hi = max(lo, 0), min(hi, n)
        if lo < hi and (lo, hi) != (0, n):
            out[d] = (lo, hi)
    return out
