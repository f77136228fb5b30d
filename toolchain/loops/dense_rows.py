"""Dense layers' output rows in one microkernel call (runtime_c's mrt_dense_dsp.c).

A dense layer on a DSP target (one pixel: every output row reads the same input) can
take a tile of any number of output rows to one call of mrt_dense_s8_paired_rows, which
pairs the input once and runs the rows two at a time over two packed steps: per 16 MACs
an LDM of the paired input, an LDM of each row's 4 words, 8 SMLAD (codegen/
dense_rows.py). The 1x4 microkernel reads a step of 4 rows with an LDRD a row, and a
tile's rows past the last multiple of 4 (10 outputs: 2) were generated code, at 12
instructions per 8 MACs: on cortex-m4 a 64 -> 10 layer took 980 instructions, 0.65 MAC
per instruction, where issue 21 asks for 0.8.

This file says which kernels the call takes (`dense_rows_dim`) and what its tiles cost
(`dense_rows_candidates`, rules' candidate tuples beside the register tiles: the cost
model picks between them, so a layer where the call does not pay keeps its tile).
"""

from __future__ import annotations

from toolchain.kernel.form import Const, Kernel, Load
from toolchain.loops.access import _deps, _flat_index, _never_padded, _packing
from toolchain.loops.affine import affine_of
from toolchain.loops.patterns import dot_operands, int16_dot
from toolchain.loops.tables import (
    DOT_WIDTH,
    GATHERED_LOAD,
    UNPACKED_LOAD,
)

__all__ = ["DENSE_ROWS_KIND", "DENSE_ROWS_S8_SYMBOL", "DENSE_ROWS_SYMBOL", "COPY_WORDS_SYMBOL",
           "dense_rows_candidates", "dense_rows_dim", "dense_rows_only", "dense_rows_operands",
           "padded_tail", "weights_paired", "window_rows_candidates", "window_rows_stage"]

DENSE_ROWS_KIND = "dsp_rows"  # a nest's `dot` when its tiles call the dense-rows kernel
DENSE_ROWS_SYMBOL = "mrt_dense_s8_paired_rows"
DENSE_ROWS_S8_SYMBOL = "mrt_dense_s8_rows"  # its weights int8 as stored
COPY_WORDS_SYMBOL = "mrt_copy_words"  # a tile's sums' start copied from its table
# The SIMD rows (their int8_dot kind) whose runtime_c has the kernel.
DENSE_ROWS_DOTS = frozenset({"dsp"})
# Instructions of the kernel (runtime_c/ukernel/dsp/mrt_dense_dsp.c), counted from its
# code: per packed step, a pair of rows (11 per two steps, the loop's 2 per four) and a
# lone row (6 per two steps and 2 for the loop); per pair and per lone row, their setup
# and the sums' store; per call its frame and arguments (the generated side's too, and
# per output the accumulator's trip through the stack, 2 instructions); per
# step the input's pairing, once a pixel (12 per four steps).
PAIR_STEP = 6.0
LONE_STEP = 4.0
# With the weights int8 as stored, 2 SXTB16 more a word: a pair 4 a step more, a lone
# row 2 (mrt_dense_s8_rows).
UNPAIRED_PAIR_STEP = 4.0
UNPAIRED_LONE_STEP = 2.0
# A pair's setup and end now take 9 (mrt_dense_dsp.c: one LDM from the frame that
# jumps to the pair's entry), 16 when these were counted; PER_PAIR and PER_CALL keep the
# counts the rules were tuned with (bench/shapes.py, every layer's choice measured), so
# the faster kernel changes no layer's tiles: re-costing them moves choices the whole
# sweep has to confirm.
PER_PAIR = 16
PER_LONE = 12
PER_CALL = 34
STAGE_STEP = 3.0
# A call of the pairing (mrt_pair4_s8) besides its words: the call, its frame, the tests.
PAIR_CALL = 12
# Tiles tried: every factor up to the largest, and the whole dim where it is at most it.
# A tile's epilogues are written out, one per output (the code grows with it).
TILE_ROWS = (2, 4, 6, 8, 12, 16)
# Rows past one tile (more outputs than the budget's max_tile) take the call from this
# many steps on: below, the 1x4 kernel's staged tiles were faster (cortex-m4, 32 -> 32:
# 1,633 instructions against 1,719 in two calls of 16 rows; 48 -> 32: 2,077 against
# 2,117; 64 -> 32 2,521 against 2,511; ad01_int8's 128- and 640-input layers gain).
MIN_STEPS_SEVERAL_TILES = 16


def dense_rows_operands(k: Kernel) -> tuple[Load, Load] | None:
    """(input, weights) of an int8 dot product the dense-rows kernel may take: the
    weights the paired operand, or where none is paired (weights the flash budget left
    int8) the one that depends on the output channels (the innermost parallel dim, or a
    dense layer's one parallel dim > 1); None for an int16 one or two paired operands."""
    ops = dot_operands(k)
    if ops is None or int16_dot(k):
        return None
    paired = [ld for ld in ops if ld.operand in k.paired]
    if len(paired) == 2:
        return None
    if paired:
        w = paired[0]
    else:
        rows = [d for d in range(k.n_parallel) if k.domain[d] > 1]
        if not rows:
            return None
        w = next((ld for ld in ops if rows[-1] in _deps(ld)), None)
        if w is None:
            return None
    x = ops[1] if w is ops[0] else ops[0]
    return x, w


def dense_rows_dim(k: Kernel, int8_dot: str) -> int | None:
    """The parallel dim of `k`'s output rows when the dense-rows kernel can take its
    packed reduction, else None: an int8 dot product on a SIMD row that has the kernel,
    its weights in the paired layout (the constant operand) and its input as stored,
    one reduced dim > 1 of whole packed steps, one pixel (every other parallel dim of
    extent 1), the input contiguous along the reduced dim and independent of the rows,
    and the weights' rows one after another (row r at r * length)."""
    if int8_dot not in DENSE_ROWS_DOTS:
        return None
    ops = dense_rows_operands(k)
    if ops is None:
        return None
    x, w = ops
    if w.pad is not None or x.valid is not None or w.valid is not None:
        return None
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    rows = [d for d in range(k.n_parallel) if k.domain[d] > 1]
    if len(reduced) != 1 or len(rows) != 1:
        return None
    (r,), (c,) = reduced, rows
    n = k.domain[r]
    if n % DOT_WIDTH or n < 2 * DOT_WIDTH:
        return None
    fx, fw = _flat_index(k, x), _flat_index(k, w)
    if fx is None or fw is None or c in _deps(x) or fx.coeff(r) != 1 or fx.const % DOT_WIDTH:
        return None
    if fw.coeff(r) != 1 or fw.coeff(c) != n or fw.const % n:
        return None
    if x.pad is not None and padded_tail(k, x, r) is None:
        return None
    return c


def padded_tail(k: Kernel, x: Load, r: int) -> int | None:
    """The input's real elements along reduced dim r where its load `x` is padded past
    them (a dense layer's input channels padded to whole words with 0, schedule/
    pad_channels.py, with the pad fused): the kernel reads the last word whole and
    clears its bytes past them. The dim's extent when x is not padded; None for any
    other padding (an index that may leave the operand otherwise, a pad other than an
    integer 0, more than the last word padded)."""
    if x.pad is None:
        return k.domain[r]
    if not (isinstance(x.pad, Const) and x.pad.dtype.is_integer and x.pad.value == 0):
        return None  # the kernel clears the padded bytes (schedule/pad_channels.py pads 0)
    shape = k.operands[x.operand].shape
    real = None
    for idx, size in zip(x.index, shape, strict=True):
        f = affine_of(idx)
        if f is None:
            return None
        terms = [(d, c) for d, c in f.terms if k.domain[d] > 1]
        if terms == [(r, 1)] and f.const == 0:
            real = size
        elif terms or not 0 <= f.const < size:
            return None
    n = k.domain[r]
    if real is None or not n - DOT_WIDTH < real <= n:
        return None
    return real


def dense_rows_only(k: Kernel, int8_dot: str) -> bool:
    """Whether the dense-rows tiles are the only candidates for `k`: its input is
    padded (the pad fused, schedule/pad_channels.py), which the kernel pads itself but
    another packed tile gathers value by value with a bounds test each, tile by tile
    (cortex-m4, 13 -> 10 padded to 16: 748 instructions in 4-row tiles)."""
    c = dense_rows_dim(k, int8_dot)
    if c is None:
        return False
    return x_load(k).pad is not None


def dense_rows_cost(rows: int, steps: int, paired: bool = True) -> float:
    """Instructions of one call over `rows` rows of `steps` packed steps (the input's
    pairing aside), its weights `paired` or int8 as stored."""
    pairs, lone = divmod(rows, 2)
    pair_step = PAIR_STEP + (0 if paired else UNPAIRED_PAIR_STEP)
    lone_step = LONE_STEP + (0 if paired else UNPAIRED_LONE_STEP)
    return PER_CALL + pairs * (PER_PAIR + steps * pair_step) + \
        lone * (PER_LONE + steps * lone_step)


def weights_paired(k: Kernel) -> bool:
    """Whether the dense-rows call's weights are in the paired layout."""
    ops = dense_rows_operands(k)
    return ops is not None and ops[1].operand in k.paired


def dense_rows_candidates(k: Kernel, int8_dot: str, epilogue: int,
                          max_tile: int) -> list[tuple]:
    """Candidate tuples (loops/rules.py _reduction_nest's form) of the dense-rows tiles
    of `k`, costed: per tile its call, per output the epilogue and the sum's load, once
    the input's pairing. [] where the kernel does not take `k` (dense_rows_dim)."""
    c = dense_rows_dim(k, int8_dot)
    if c is None:
        return []
    (r,) = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    n, steps = k.domain[c], k.domain[r] // DOT_WIDTH
    if n > max_tile and steps < MIN_STEPS_SEVERAL_TILES and x_load(k).pad is None:
        return []
    sizes = {t for t in TILE_ROWS if t <= min(n, max_tile)}
    if n <= max_tile:
        sizes.add(n)
    out = []
    for t in sorted(sizes):
        full, rest = divmod(n, t)
        p = weights_paired(k)
        calls = full * dense_rows_cost(t, steps, p) + \
            (dense_rows_cost(rest, steps, p) if rest else 0)
        cost = calls + steps * STAGE_STEP + n * (epilogue + 2)
        code = (t + rest) * epilogue + PER_CALL * (1 + bool(rest))
        out.append(((False, cost, t, 1), code, {c: t}, (), (r,), 1, DENSE_ROWS_KIND, 1))
    return out


# A window's tile of output channels takes the call (its window staged once per pixel,
# the call reading every tap) up to this many channels: a 5x5 window over 32 channels to
# 4 outputs ran at 0.49 MAC per instruction on cortex-m4 in the 1x4 kernel's calls, to
# 1 to 3 outputs (generated code, no tile of 4) at 0.36-0.42; to 8, 0.92 in its staged
# tiles (0.99 in one call). Not with the weights' rows interleaved for the 2x4 kernel
# (schedule/paired.py tries that first: two pixels at a time; 3x3 dilated by 2 over
# 13 channels to 16: 267,828 instructions that way, 295,850 as one dense-rows call).
WINDOW_MAX_ROWS = 16


def window_rows_dim(k: Kernel, int8_dot: str) -> int | None:
    """The output-channel dim of a convolution window whose tile of all its channels
    takes one call per pixel over its staged window (Nest.stage: the input of every tap
    paired once, codegen/dot_ukernel.py stage_input), else None: an int8 dot product on a
    SIMD row with the kernel, paired weights, its taps and a packed dim of whole words
    (the packed dim the innermost reduced one, the input read in words or gathered),
    the output channels the innermost parallel dim, at most WINDOW_MAX_ROWS of them, that
    the input does not depend on, and each channel's weights one row of the taps in the
    staged order (the first tap dim slowest, then the packed dim), rows one after
    another; the input unchecked but for a constant pad."""
    if int8_dot not in DENSE_ROWS_DOTS:
        return None
    ops = dense_rows_operands(k)
    if ops is None:
        return None
    x, w = ops
    if w.pad is not None or \
            w.valid is not None or x.valid is not None:
        return None
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    if len(reduced) < 2:
        return None
    *taps, packed = reduced
    c = k.n_parallel - 1
    rows = k.domain[c]
    if k.domain[packed] % DOT_WIDTH or _packing(k, packed, int8_dot) is None or \
            not 1 < rows <= WINDOW_MAX_ROWS or c in _deps(x):
        return None
    if k.interleaved:
        return None  # weights for the 2x4 kernel: two pixels at a time, 1x4 staged tiles
    if not (x.pad is None or isinstance(x.pad, Const) or _never_padded(k, x)):
        return None
    fw = _flat_index(k, w)
    length = 1
    for d in reduced:
        length *= k.domain[d]
    if fw is None or fw.const % length or fw.coeff(c) != length:
        return None
    stride = 1
    expected = {c: length}
    for d in reversed(reduced):
        expected[d] = stride
        stride *= k.domain[d]
    if any(expected.get(d) != co for d, co in fw.terms if k.domain[d] > 1):
        return None
    return c


def window_rows_candidates(k: Kernel, int8_dot: str, epilogue: int) -> list[tuple]:
    """The candidate tuple of a window's staged tile of all its output channels in one
    call per pixel (window_rows_dim), costed as loops/rules.py costs the 1x4 kernel's
    staged windows: per pixel the staging (a gathered or unpacked load a step), the
    call, per output the epilogue and the sum's load. [] where it does not apply."""
    c = window_rows_dim(k, int8_dot)
    if c is None:
        return []
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    *taps, packed = reduced
    steps = k.domain[packed] // DOT_WIDTH
    for t in taps:
        steps *= k.domain[t]
    rows = k.domain[c]
    gathered = bool(_packing(k, packed, int8_dot))
    if gathered:
        stage = steps * GATHERED_LOAD
    else:
        # A call of mrt_pair4_s8 per run of taps whose inputs follow one another (a
        # window row's columns over the channels, undilated); a dilated window's taps
        # are a call each.
        fx = _flat_index(k, x_load(k))
        runs = 1
        for t in taps:
            runs *= k.domain[t]
        if fx is not None and fx.coeff(taps[-1]) == k.domain[packed]:
            runs //= k.domain[taps[-1]]
        stage = steps * UNPACKED_LOAD + runs * PAIR_CALL
    pixels = 1
    for d in range(k.n_parallel - 1):
        pixels *= k.domain[d]
    cost = pixels * (dense_rows_cost(rows, steps, weights_paired(k)) + stage
                     + rows * (epilogue + 2))
    code = rows * epilogue + PER_CALL + stage
    return [((False, cost, rows, 1), code, {c: rows}, tuple(taps), (packed,), 1,
             DENSE_ROWS_KIND, 1)]


def x_load(k: Kernel) -> Load:
    """The input load of a kernel the dense-rows call takes (dense_rows_operands)."""
    ops = dense_rows_operands(k)
    assert ops is not None
    return ops[0]


def window_rows_stage(kind: str, unroll: tuple[int, ...]) -> int:
    """Nest.stage of a tile of `kind` with taps `unroll`: 1 (the window staged once per
    pixel) for a window's dense-rows tile, else 0."""
    return 1 if kind == DENSE_ROWS_KIND and unroll else 0
