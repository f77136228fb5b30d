"""A depthwise 3x3 layer's 4-row tiles as its own assembly (a per-layer assembly
kernel, codegen/asm_kernels.py), where the records run over the row (few channels).

runtime_c's mrt_dw3_quad_tails_s8 serves every layer: after a tile's multiplies it
takes the channel's shift from its record by a TBH into one of 31 requantization tails
and the next tile's code by an LDR PC, reads window column 2 at 2 r1 - r0 (an RSB: r4
holds the row distance) and computes a row address for the stores; its entry loads the
call's fields and the call kind's 4 code addresses (11 instructions, 2 to return). Here
each call kind of the layer is a function of its own, every column's channels written
out with their shifts as SSAT's immediate, the row distance as the stores' offsets and
the column's stride in the pointers' set-up, so r4 walks window column 2: 47
instructions for 4 outputs where the tails kernel takes 51, the remainder's 2 and 3 rows
27 and 37 (29 and 39), and an entry of 3 instructions. A SAME map's first and last
output columns read a pad column in window column 0 or 2: its products are the pad
value times that column's weights, a constant in those columns' records' bias, so
their tiles skip its LDM and 8 multiplies (40 and 37 instructions for 4 outputs, an ADD
a column for the pointer that did not move). The columns are written out up to
UNROLL_TILES tiles a call (about 150 bytes a tile); past it the inner columns (no pad
column) loop, comparing the output with their end (3 instructions a column).

The records (schedule/row_pair_records.py `_asm_rows`, 12 words a channel and column:
the live window columns' (w0, w1) and (w1, w2), the doubled bias (plus the pad
columns' constant) after the first's, M and 2 K_hi, zeros) and the staged 3-slot
layout are the tails kernel's but for the pad columns, and so is the arithmetic: the
same exact SMLAD sums and SMMLAR + SSAT requantization, bit for bit the reference's
(tests/codegen/test_depthwise_asm.py).
Registers: r0, r1, r4 window columns 0-2's staged words, r2 the records, r3 the output,
r5-r7 the staged slots then M, K_hi and a temporary, r8-r9 weight pairs, r10-r12 and lr
the sums of rows y .. y+3.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolchain.loops.depthwise import ASM_UNROLL_TILES as UNROLL_TILES
from toolchain.loops.depthwise import QUAD_RECORD_WORDS as RECORD_WORDS

__all__ = ["STEM", "UNROLL_TILES", "tile_body", "tiles_fit"]

STEM = "mrt_dw3_layer"
_SUMS = ("r10", "r11", "r12", "lr")
_MAX_OFFSET = 4095  # STRB's immediate offset


def tiles_fit(out_row: int, rows: int = 4) -> bool:
    """Whether a tile's stores reach its last row by STRB's immediate offset."""
    return (rows - 1) * out_row <= _MAX_OFFSET


def _first_column(rows: int, pairs: Sequence[str]) -> list[str]:
    """Window column 0's multiplies, every sum from the bias (r10): the other rows'
    first products read r10 before row y's overwrite it."""
    out = []
    for j in range(1, rows):
        p = pairs[j // 2]
        out.append(f"smlatb {_SUMS[j]}, {p}, r8, r10" if j % 2 else
                   f"smlad {_SUMS[j]}, {p}, r8, r10")
    out += [f"smlad r10, {pairs[0]}, r8, r10", f"smlabt r10, {pairs[1]}, r9, r10"]
    for j in range(1, rows):
        if j % 2:
            out.append(f"smlad {_SUMS[j]}, {pairs[(j + 1) // 2]}, r9, {_SUMS[j]}")
        else:
            out.append(f"smlabt {_SUMS[j]}, {pairs[j // 2 + 1]}, r9, {_SUMS[j]}")
    return out


def _column(rows: int, pairs: Sequence[str]) -> list[str]:
    """Another window column's multiplies: row 2i + 0 takes SMLAD of pair i with
    (w0, w1) and SMLABT of pair i + 1 with (w1, w2), row 2i + 1 SMLATB and SMLAD."""
    out = []
    for j in range(rows):
        s = _SUMS[j]
        if j % 2:
            out += [f"smlatb {s}, {pairs[j // 2]}, r8, {s}",
                    f"smlad {s}, {pairs[(j + 1) // 2]}, r9, {s}"]
        else:
            out += [f"smlad {s}, {pairs[j // 2]}, r8, {s}",
                    f"smlabt {s}, {pairs[j // 2 + 1]}, r9, {s}"]
    return out


_POINTERS = ("r0", "r1", "r4")  # window columns 0-2's staged words


def _tile(rows: int, pairs: Sequence[str], shift: int, out_row: int,
          live: Sequence[int], move: bool = True) -> list[str]:
    """One channel's tile of `rows` output rows over window columns `live` (the others
    read pad columns, their products in the bias), its records' 12 words consumed; the
    staged words' pointers move on where `move` (not the first output channel of an
    input channel of a depth multiplier of 2, which the second reads again)."""
    on = "!" if move else ""
    out = ["ldm r2!, {r8, r9, r10}", f"ldm {_POINTERS[live[0]]}{on}, {{r5, r6, r7}}",
           *_first_column(rows, pairs)]
    for kx in live[1:]:
        out += [f"ldm {_POINTERS[kx]}{on}, {{r5, r6, r7}}", "ldrd r8, r9, [r2], #8",
                *_column(rows, pairs)]
    # M and 2 K_hi, then past the record's other words (the tails kernel's s and code)
    out.append(f"ldrd r5, r6, [r2], #{4 * (RECORD_WORDS - 1 - 2 * len(live))}")
    # The last row first: a 2-row tile's row y lands last.
    for j in reversed(range(rows)):
        s = _SUMS[j]
        out += [f"add r7, r6, {s}, asr #31", f"smmlar {s}, {s}, r5, r7",
                f"ssat {s}, #8, {s}, asr #{shift}",
                f"strb {s}, [r3, #{j * out_row}]" if j else f"strb {s}, [r3], #1"]
    return out


def tile_body(rows: int, pairs: Sequence[str], shifts: Sequence[int], out_row: int,
              live: Sequence[Sequence[int]], multiplier: int = 1) -> str:
    """The assembly of a call of `rows` output rows (1-4) over output columns whose
    window columns reading the input are `live[x]` (loops/depthwise.py live_columns),
    of `len(shifts)` output channels (shifts: each channel's s, 1-31), `multiplier` (1
    or 2) of each input channel, its pairs in the slots named by `pairs` (the registers
    r5-r7 holding slots 0-2), the output rows `out_row` bytes apart. Arguments: r0
    window column 0's staged words of output column 0, r1 unused, r2 the records, r3
    the output."""
    if not all(1 <= s <= 31 for s in shifts) or not tiles_fit(out_row, rows) or \
            len(shifts) % multiplier:
        raise ValueError("a per-layer tile needs shifts of 1-31, rows within STRB's "
                         "offset and whole input channels")
    stride = 12 * len(shifts) // multiplier  # a staged column: 3 slots an input channel
    columns = len(live)

    def column(x: int) -> list[str]:
        code = [line for c, s in enumerate(shifts) for line in
                _tile(rows, pairs, s, out_row, live[x], c % multiplier == multiplier - 1)]
        if x < columns - 1:  # the pointers that did not move over pad columns
            code += [f"add {p}, {p}, #{stride}" for kx, p in enumerate(_POINTERS)
                     if kx not in live[x]]
        return code

    code = [f"add r1, r0, #{stride}", f"add r4, r1, #{stride}"]
    inner = [x for x in range(columns) if tuple(live[x]) == (0, 1, 2)]
    if len(inner) > 1 and columns * len(shifts) > UNROLL_TILES:
        # the whole columns in a loop, to the output of the first column after them
        a, b = inner[0], inner[-1] + 1
        for x in range(a):
            code += column(x)
        code += [f"add r5, r3, #{(b - a) * len(shifts)}", "str r5, [sp, #-8]!", "1:",
                 *column(a), "ldr r7, [sp]", "cmp r3, r7", "bne 1b", "add sp, sp, #8"]
        for x in range(b, columns):
            code += column(x)
    else:
        for x in range(columns):
            code += column(x)
    return "\n".join(["\tpush {r4-r11, lr}", *(f"\t{c}" if c != "1:" else c for c in code),
                      "\tpop {r4-r11, pc}"])
