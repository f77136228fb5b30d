"""A stride-2 depthwise 3x3 layer's calls as its own assembly (a per-layer assembly
kernel, codegen/asm_kernels.py), where its records are doubled and every shift is an
SSAT immediate (loops/depthwise.py asm_s2_tiles, schedule/row_pair_records.py).

runtime_c's mrt_dw3_s2_s8 serves every layer: its entry loads the call's fields from a
struct the dispatch stores (the output, the flags) and jumps by a TBH on the flags to
the loop of the call's kind; its requantization takes the shift from the record (ASR by
a register, then SSAT: 4 instructions an output); its channel loop tests the last
channel's bit (a TST and BEQ for 4 channels); and each column's end moves the three
window columns' pointers one staged column on (3 ADDs), reloads the records and the
row's end from the stack and compares (6 instructions a column). Here each call kind
(the slots' order, or row y alone) and band width of the layer is a function of its
own, the arguments in registers (the staged words, the records, the output):

- every channel's tile written out, its shift as SSAT's immediate (3 instructions of
  requantization an output), the row distance as the second store's offset, so no
  channel loop;
- a channel's record (9 words: no s) in two LDMs, into the registers the shared kernel
  keeps the call's constants in (r4 the row distance, lr the staged column's bytes):
  window column 1's (w0, w1), column 0's two words, the bias and column 1's (w1, w2),
  then M, column 2's words and K_hi (schedule/row_pair_records.py _S2_ORDER), where
  the shared kernel takes 4 loads (25 instructions for two outputs against 29, the
  channel loop's 0.5 an output more);
- the window columns' pointers rotate: after a column's channels the pointers of window
  columns 1 and 2 are where the next column's 0 and 1 start (a stride of 2 staged
  columns), so only the first moves, by 3 staged columns (one ADD a column, not 3);
  the records restart by one SUB;
- the columns written out up to loops/depthwise.py's ASM_UNROLL_TILES tiles a call, past
  it a loop (asm_s2_period) of 3 columns (the rotation's period) for few channels, else
  of one column (3 ADDs, a third of the code), comparing the output with the loops' end
  (on the stack), the 0-2 columns left after it written out.

The staged 3-slot layout and the arithmetic are mrt_dw3_s2_s8's, and so are the
records' words (doubled) but for their order: the same exact SMLAD sums and SMMLAR +
SSAT requantization, bit for bit the reference's (tests/codegen/test_depthwise_s2.py).
Registers: r0, r1, r12 the window columns' staged words (rotating), r2 the records, r3
the output, r5-r7 the staged slots then a temporary, r4, lr, r8, r9 weight words then M
and K_hi, r10, r11 the sums of rows y, y+1.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolchain.loops.depthwise import ASM_S2_ROW_LIMIT, asm_s2_period

__all__ = ["EDGE_RECORD_WORDS", "KINDS", "RECORD_WORDS", "STEM", "call_body"]

STEM = "mrt_dw3_s2_layer"
RECORD_WORDS = 9  # a channel's record (schedule/row_pair_records.py _S2_ORDER)
EDGE_RECORD_WORDS = 7  # a channel's record in an edge column (no pad column's weights)
# The call kinds: the staged slots holding pairs y, y+1, y+2 (two rows: codegen/
# depthwise_s2.py's flags bit 0), or y, y+1 (row y alone).
KINDS = {"order0": ("r5", "r6", "r7"), "order1": ("r7", "r6", "r5"), "one": ("r5", "r6")}


def _tile(pairs: Sequence[str], shift: int, out_row: int, cols: Sequence[str],
          edge: str = "") -> list[str]:
    """One channel's outputs of one column: rows y and y+1 (`pairs` of 3), or y alone
    (of 2), window columns' pointers `cols`; its record consumed by two loads (module
    docstring). `edge` "left" / "right": window column 0 / 2 reads a pad column, its
    products a constant in the record's bias, not read."""
    two = len(pairs) == 3
    p0, p1 = pairs[0], pairs[1]

    def macs(w01: str, w12: str, first: bool = False) -> list[str]:
        """A window column's multiplies; `first`: both sums from the bias (r10), the
        second row's first as it reads r10 before the first row's overwrite it."""
        out = []
        if two:
            out += [f"smlad r11, {p1}, {w01}, {'r10' if first else 'r11'}",
                    f"smlabt r11, {pairs[2]}, {w12}, r11"]
        return out + [f"smlad r10, {p0}, {w01}, r10", f"smlabt r10, {p1}, {w12}, r10"]

    if edge == "left":  # column 1's weights and the bias, then M, column 2's, K_hi
        out = ["ldm r2!, {r8, r9, r10}", f"ldm {cols[1]}!, {{r5, r6, r7}}",
               *macs("r8", "r9", True), "ldm r2!, {r4, r8, r9, lr}",
               f"ldm {cols[2]}!, {{r5, r6, r7}}", *macs("r8", "r9")]
    else:
        # window column 1's (w0, w1), column 0's weights, the bias, column 1's (w1, w2)
        out = ["ldm r2!, {r4, r8, r9, r10, lr}", f"ldm {cols[0]}!, {{r5, r6, r7}}",
               *macs("r8", "r9", True), f"ldm {cols[1]}!, {{r5, r6, r7}}",
               *macs("r4", "lr")]
        if edge == "right":  # M, K_hi
            out.append("ldrd r4, lr, [r2], #8")
        else:  # M, window column 2's weights, K_hi
            out += ["ldm r2!, {r4, r8, r9, lr}", f"ldm {cols[2]}!, {{r5, r6, r7}}",
                    *macs("r8", "r9")]
    for s, store in ((("r11", f"strb r11, [r3, #{out_row}]"),) if two else ()) + \
            (("r10", "strb r10, [r3], #1"),):
        out += [f"add r7, lr, {s}, asr #31", f"smmlar {s}, {s}, r4, r7",
                f"ssat {s}, #8, {s}, asr #{shift}", store]
    return out


def call_body(kind: str, shifts: Sequence[int], out_row: int, width: int,
              left: bool = False, right: bool = False) -> str:
    """The assembly of a call of kind `kind` (KINDS) over `width` output columns of
    `len(shifts)` channels (shifts: each channel's SSAT shift, 1-31), the output rows
    `out_row` bytes apart; `left` / `right`: the first / last column's window column 0 /
    2 reads a pad column (its records the edge's, module docstring). Arguments: r0 slot 0
    of the first window column's staged words, r1 unused, r2 the records (the left
    edge's, else the inner columns'), r3 the output (row y, the band's first column)."""
    channels = len(shifts)
    stride = 12 * channels  # a staged column: 3 slots a channel
    if not all(1 <= s <= 31 for s in shifts) or out_row > ASM_S2_ROW_LIMIT or \
            4 * stride > ASM_S2_ROW_LIMIT or width < max(1, left + right):
        raise ValueError("a per-layer stride-2 call needs shifts of 1-31 and its offsets "
                         "within their immediates")
    pairs = KINDS[kind]
    rotation = ("r0", "r1", "r12")
    inner = width - left - right
    period = asm_s2_period(inner, channels)
    rotate = period != 1
    edges = ["left"] * left + [""] * inner + ["right"] * right
    at = 0  # the rotation's offset

    def column(x: int) -> list[str]:
        nonlocal at
        cols = rotation[at:] + rotation[:at] if rotate else rotation
        code = []
        if edges[x] == "right" and (x == 0 or edges[x - 1] == "left"):
            code.append(f"add r2, r2, #{4 * RECORD_WORDS * channels}")  # past the inner's
        code += [line for s in shifts for line in _tile(pairs, s, out_row, cols, edges[x])]
        if x == width - 1:
            return code
        dead = 1 if edges[x] == "left" else 0  # window column 0's pointer did not move
        if rotate:  # window column 0's pointer to the next column's window column 2
            code.append(f"add {cols[0]}, {cols[0]}, #{(3 + dead) * stride}")
            at = (at + 1) % 3
        else:  # each pointer one staged column more (a stride of 2)
            code += [f"add {p}, {p}, #{(1 + dead * (p == cols[0])) * stride}"
                     for p in rotation]
        if not edges[x] and edges[x + 1] != "right":  # else on to the next table
            code.append(f"sub r2, r2, #{4 * RECORD_WORDS * channels}")
        return code

    code = [f"add r1, r0, #{stride}", f"add r12, r1, #{stride}"]
    if left:
        code += column(0)
    if period:
        # `period` inner columns a pass to the output after the passes (on the stack),
        # then the rest
        passes = inner // period
        code += [f"add r5, r3, #{period * passes * channels}", "str r5, [sp, #-8]!", "1:"]
        for x in range(left, left + period):
            code += column(x)
        code += ["ldr r7, [sp]", "cmp r3, r7", "bne 1b", "add sp, sp, #8"]
        rest = range(left + period * passes, width)
        if rest == range(width - 1, width) and right:  # past the inner table
            code.append(f"add r2, r2, #{4 * RECORD_WORDS * channels}")
    else:
        rest = range(left, width)
    for x in rest:
        code += column(x)
    return "\n".join(["\tpush {r4-r11, lr}", *(f"\t{c}" if c != "1:" else c for c in code),
                      "\tpop {r4-r11, pc}"])
