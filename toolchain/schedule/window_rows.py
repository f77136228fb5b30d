"""A convolution over few input channels, its window rows read as one reduced dim.

The packed DSP steps (codegen/dot.py) read 4 int8 elements of both operands along one
reduced dim. A convolution whose input has 3 channels (an RGB image: the first layer of
vww_96 and pretrainedResnet) has no such dim: its reduced dims are the window's rows,
columns and channels, 3 each, so it ran one LDRSB, LDRSB and SMLABB per MAC (2.9
instructions per MAC on cortex-m4). But with channels innermost (NHWC input, OHWI
weights) a window row's columns and channels are contiguous in both operands, KW x C
elements, and so are the rows of the reshaped views x: (N, H, W*C) and w: (O, KH, KW*C).
This pass rewrites such a kernel over those views, the two dims merged into one of
KW*C elements:

    x[n, oy*sy + ky - py, ox*sx + kx - px, c] -> x'[n, oy*sy + ky - py, (ox*sx - px)*C + j]
    w[o, ky, kx, c]                           -> w'[o, ky, j]           j = kx*C + c

The padding test on the merged index is the old one on the column: j < KW*C, so the
index leaves [0, W*C) exactly where ox*sx + kx - px leaves [0, W). The weights become a
constant of their own whose rows are padded with zeros to a multiple of 4 elements, so
each row starts on a word and the packed steps read them whole; the input, at any byte,
is gathered 4 elements at a time (loops/rules.py `_packing`). Where the window has more
than one row and its input reads are bounds-tested (SAME), the merged dim runs over the
padded row (its extra lanes meet zero weights), so the window is staged whole; so it
does from 5 channels where the reads are VALID (a SAME border kept in RAM by
schedule/pad_channels.py), through an (N, H*W*C) view whose rows run on into the next
image row, and a window of one row (1x7) from 5 channels is split into sub-rows
(`one_row_parts`) to be staged as a window of taps; otherwise the last KW*C mod 4 are
read one at a time. The sums are the same integers in another order: exact.

Only for targets whose int8 dot steps are the DSP ones (the vector kinds read any
address 16 at a time), for a step with no schedule fixed by the arena plan. A 16x8
layer (int16 input, int8 weights, whose weights schedule/widen16.py then widens) is
merged too where the target has int16 dot steps: its input rows start at multiples of
C elements, words wherever C is even (the seanet conv0: 7 taps x 2 channels, 14
elements a row); at the border, where the merged index is tested, its steps are scalar
(the int16 steps gather nothing).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load, postorder, rewrite
from toolchain.loops.affine import Affine, affine_of, as_expr
from toolchain.loops.patterns import dot_operands, int16_by_int8
from toolchain.loops.rules import DOT_WIDTH, SIMD
from toolchain.schedule.program import Buffer, Program
from toolchain.target.descriptors import Target
from toolchain.types import TensorType

__all__ = ["merge_window_rows"]

# The fewest channels whose VALID window is read through the (N, H*W*C) view
# (_rewritten): those schedule/pad_channels.py leaves unpadded for their merged rows.
FLAT_MIN_CHANNELS = 5


def merge_window_rows(program: Program, target: Target) -> int:
    """Rewrites, in place, every int8 convolution over few input channels whose window
    rows can be read as one dim (module docstring); returns how many."""
    if SIMD[target.capabilities.simd].int8_dot != "dsp":
        return 0
    users: dict[int, int] = {}
    for step in program.steps:
        for b in step.buffers:
            if b.kind == "constant":
                users[b.index] = users.get(b.index, 0) + 1
    scales = set(program.constant_scales_of) | set(program.constant_scales_of.values())
    merged = 0
    for step in program.steps:
        k = step.kernel
        if not isinstance(k, Kernel) or step.schedule is not None:
            continue
        found = _window_row(k, step.buffers, bool(SIMD[target.capabilities.simd].int16_dot))
        if found is None:
            continue
        x, w, kx = found
        index = step.buffers[w.operand].index
        if users[index] != 1 or index in scales:  # the constant is rewritten in place
            continue
        weights = np.asarray(program.constants[index])
        kw, c = weights.shape[-2:]
        row = kw * c
        one_row = kx > k.n_parallel and k.domain[kx - 1] == 1
        if one_row and kw == 1:  # a 1x1 window has no rows to merge (an unpadded
            continue             # pointwise layer is the im2col kernel's, or is padded)
        parts = one_row_parts(kw, c) if one_row else 1
        padded = merged_row_extent(1 if one_row else 2, kw, c)
        flat = weights.reshape(*weights.shape[:-2], row)
        new_w = np.zeros((*flat.shape[:-1], padded), dtype=weights.dtype)
        new_w[..., :row] = flat
        w_type = k.operands[w.operand]
        program.constants[index] = new_w
        program.constant_types[index] = TensorType(new_w.shape, w_type.dtype, w_type.quant)
        step.buffers[w.operand] = Buffer("constant", index, new_w.nbytes)
        step.kernel = _rewritten(k, x, w, kx, row, padded, parts)
        merged += 1
    return merged


def one_row_parts(kw: int, c: int) -> int:
    """The sub-rows a window of one row (1x7) over `c` channels is split into (1: not
    split): from FLAT_MIN_CHANNELS, its merged row of kw*c values as A sub-rows of B (a
    multiple of 4), A >= 2 and A*B the least (then A the least), so that the rules
    stage it as a window of A taps (loops/rules.py `_staged_window_candidates` wants a
    tap dim beside the packed one). 1x7 over 13 channels: 91 values as 2 x 48, not 7
    taps of 16."""
    row = kw * c
    if c < FLAT_MIN_CHANNELS:
        return 1
    return min(range(2, kw + 1), key=lambda a: (a * _words(-(-row // a)), a))


def merged_row_extent(kh: int, kw: int, c: int) -> int:
    """The values a merged window row of kw taps over c channels runs over: kw*c padded
    to whole words, or for one row split into sub-rows (one_row_parts) A*B."""
    parts = one_row_parts(kw, c) if kh == 1 else 1
    return parts * _words(-(-kw * c // parts))


def _words(n: int) -> int:
    """n values rounded up to whole packed words."""
    return -(-n // DOT_WIDTH) * DOT_WIDTH


def _window_row(k: Kernel, buffers: list[Buffer], int16: bool = False
                ) -> tuple[Load, Load, int] | None:
    """(input load, weight load, the window-column dim) of a kernel the pass rewrites,
    else None: an int8 sum of products of a tensor and a constant whose last two
    reduced dims kx and c index both as their last two components, c alone and with
    stride 1, kx with coefficient 1 (the input's with one output dim beside it), and
    whose c is more than one channel and no multiple of the packed width."""
    ops = dot_operands(k)
    if ops is None and int16:
        ops = int16_by_int8(k)
        # Its rows must start on words: the int16 steps gather nothing.
        if ops is not None and k.domain[-1] % 2:
            return None
    n = len(k.domain)
    if ops is None or n - k.n_parallel < 2 or ops[0].operand == ops[1].operand:
        return None
    kx, c = n - 2, n - 1
    kinds = [buffers[ld.operand].kind for ld in ops]
    if kinds.count("constant") != 1:
        return None
    x, w = ops if kinds[1] == "constant" else ops[::-1]
    # One channel: the columns alone are the row (kws's 10x4 window packs them as is).
    # One channel: a row of 4k taps packs as is (kws's 10x4 window); 5 or 7 taps are
    # merged, padded to 8. Rows of under 4 elements (3x3 over 1 channel, 1x1) are not:
    # a padded 3-tap row was slower on cortex-m4 (bench/results/shapes.md).
    if k.domain[c] % DOT_WIDTH == 0 \
            or (k.domain[c] == 1 and k.domain[kx] % DOT_WIDTH == 0) \
            or k.domain[kx] * k.domain[c] < DOT_WIDTH \
            or x.valid is not None or w.pad is not None or w.valid is not None \
            or k.paired:
        return None
    for ld in (x, w):
        shape = k.operands[ld.operand].shape
        forms = [affine_of(i) for i in ld.index]
        if len(forms) < 2 or any(f is None for f in forms) or shape[-1] != k.domain[c]:
            return None
        if forms[-1] != Affine(((c, 1),), 0):
            return None
        col = forms[-2]
        if col.coeff(kx) != 1 or any(d >= k.n_parallel and d != kx for d in col.dims):
            return None
        if ld is w and (col != Affine(((kx, 1),), 0) or shape[-2] != k.domain[kx]):
            return None
        if any(f.coeff(kx) or f.coeff(c) for f in forms[:-2]):
            return None
    return x, w, kx


def _rewritten(k: Kernel, x: Load, w: Load, kx: int, row: int, padded: int,
               parts: int = 1) -> Kernel:
    """`k` over the merged dim j (kx's place; c's is gone), x and w as their views; or,
    `parts` > 1, over j = B*a + b, a < parts in kx's place and b < B in c's."""
    c_extent = k.domain[kx + 1]
    ops = list(k.operands)
    xt = ops[x.operand]
    ops[x.operand] = replace(xt, shape=(*xt.shape[:-2], xt.shape[-2] * c_extent))
    rows = kx > k.n_parallel and (k.domain[kx - 1] > 1 or parts > 1)
    sub = padded // parts
    j = Affine(((kx, sub), (kx + 1, 1)), 0) if parts > 1 else Affine(((kx, 1),), 0)
    row_form = affine_of(x.index[-3]) if len(x.index) >= 3 else None
    # A VALID window of several rows over channels that are no multiple of 4 (its SAME
    # border written out as a pad of its own: schedule/pad_channels.py): its input is
    # read through a view (N, H*W*C) where the window's rows run on into the next image
    # row, so the merged dim runs over the padded row too and the window is staged.
    # Only the last pixel's last row reads past the map: those lanes are tested (the
    # pad value 0 there, against zero weights). Only from FLAT_MIN_CHANNELS: VALID
    # first layers of 1-3 channels keep their measured form.
    flat = x.pad is None and rows and row_form is not None and padded != row \
        and c_extent >= FLAT_MIN_CHANNELS
    wt = ops[w.operand]
    ops[w.operand] = replace(wt, shape=(*wt.shape[:-2], padded))
    col = affine_of(x.index[-2])
    # (ox*sx - px)*C + j: the column's output terms and constant scaled by C.
    merged = Affine(tuple((d, v * c_extent) for d, v in col.terms if d != kx),
                    col.const * c_extent).plus(j)
    new_x = replace(x, index=(*x.index[:-2], as_expr(merged)))
    if flat:
        width = xt.shape[-2] * c_extent
        ops[x.operand] = replace(xt, shape=(*xt.shape[:-3], xt.shape[-3] * width))
        new_x = replace(x, index=(*x.index[:-3], as_expr(row_form.times(width).plus(merged))),
                        pad=Const(0, xt.dtype))
    new_w = replace(w, index=(*w.index[:-2], as_expr(j)))

    def swap(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if e is x:
            return new_x
        if e is w:
            return new_w
        if isinstance(e, Apply):
            return Apply(e.op, kids, e.dtype)
        return e

    body = rewrite(k.body, swap)
    assert not any(isinstance(e, Index) and e.dim > kx + (parts > 1)
                   for e in postorder(body))
    # With more than one window row the merged dim runs over the padded row: the
    # padding lanes read the next columns' inputs (or the pad value past the border)
    # against zero weights, so every row is whole packed steps and the window can be
    # staged (loops/rules.py _stages; on cortex-m4 3x3 over 3 channels 0.37 -> 0.52
    # MAC per instruction). Only where the input's reads are tested against its bounds
    # (a SAME window's pad): unpadded (VALID), the last row's lanes would read past the
    # input's end (but see `flat`). One row (1x7) of 2-3 channels keeps its exact
    # extent: it is not staged, and its padded lanes would be paid per tile; from 5
    # channels it is split into sub-rows (one_row_parts), which are staged.
    whole = (x.pad is not None or flat) and rows
    if parts > 1:
        # One row split into sub-rows (one_row_parts): they run over the padded row, its
        # lanes past kw*c read as above (tested: the pad value past the map).
        if not whole and padded != row:
            raise ValueError(f"kernel {k.name!r}: a split row needs its reads tested")
        domain: tuple[int, ...] = (*k.domain[:kx], parts, sub)
    else:
        domain = (*k.domain[:kx], padded if whole else row)
    return replace(k, domain=domain, operands=tuple(ops), body=body)
