"""1x1 int8 convolutions over 2 or 3 input channels as a per-layer assembly kernel
(codegen/pointwise_asm.py): which layers, their records and the code's flash.

The im2col kernel (runtime_c/ukernel/dsp/mrt_im2col_dsp.c, mrt_i2c_only1/2_s8) runs such
a layer pixel by pixel: per output an LDM of the channel's bias, weights, M, 2 K_hi and
s, one or two multiplies and a requantization by a shift read from a register (ASR by
a register, then SSAT), 7-8 instructions an output of 2-3 MACs (0.25 and 0.33 MAC per
instruction on 19x6 to 32 outputs). Its loop cannot hold the channel's constants in
registers: they change every output. Turned around, the channel outer and the pixels
inner, the constants stay in registers over a block of staged pixels, and a layer's own
code takes each channel's shift as SSAT's immediate (the channels sorted by shift, a
loop over each shift's channels): per output SMLAD (the bias its accumulator) [+ SMLABB
for a third channel], SMMLAR (2 K_hi its addend), SUB of the sum's sign, SSAT with the
shift and STRB, plus a share of an LDM of the staged pixels and of the loop's test.

The arithmetic is the im2col kernel's doubled form (schedule/first_layer_records.py
`requantized`): with s the record's shift (1-31) and a the doubled sum,
out = SSAT8((SMMLAR(a, M, 2 K_hi) - [a < 0]) >> s), where the im2col kernel adds the sign
to 2 K_hi before the SMMLAR: the same integer, bit for bit.

The records (`asm_records`): the pad word, then per channel in the order of their shifts
the im2col kernel's bias and weight words, M and 2 K_hi, and the channel's index (its
output byte's offset in the pixel) where the im2col records hold s; the shifts go to the
kernel (`Kernel.record_shifts`, in the records' order). Taken where the im2col kernel
takes the layer, its output channels fit STRB's post-increment (at most 255), every
shift is 1-31, the window never reads a pad, no activation table follows (its LDRB
would need a register the loops do not have) and the code (`code_bytes`) fits the flash
room the records leave (none under --optimize size, where no records are bound).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.kernel.form import Kernel
from toolchain.schedule.first_layer_plan import C, FirstLayerPlan, X, Y

__all__ = ["CHANNELS", "LOOP_PIXELS", "PIXELS_PER_LDM", "STAGED_BYTES", "UNIT_PIXELS",
           "UNIT_WORDS", "asm_records", "blocks", "code_bytes", "dense", "entry", "groups",
           "staged_words", "takes", "upgrade", "words"]

CHANNELS = (2, 3)  # input channels: a staged pair (and a single)
# Pixels a LDM of staged words loads (6 registers: 6 pixels of 2 channels, 2 pairs of
# pixels of 3, (x0, x1) of each and (x2, x2') of both) and the loop's body takes (its
# test, CMP and BNE, shared by them): 5.28 and 6.42 instructions an output (12 and 8
# pixels a loop: 5.33 and 6.5, 19x6 2 -> 32 20,639 and 3 -> 32 25,147 instructions
# against 20,440 and 24,827, for about 120 bytes more code a shift).
PIXELS_PER_LDM = {2: 6, 3: 4}
LOOP_PIXELS = {2: 18, 3: 12}
# The staged pixels of a unit (1, or a pair for 3 channels) and its words.
UNIT_PIXELS = {2: 1, 3: 2}
UNIT_WORDS = {2: 1, 3: 3}
# The staged pixels of a call (on the dispatch's stack), at most: 19x6 over 3 channels
# takes 912 B in one call; a call costs about 12 instructions a channel.
STAGED_BYTES = 2048
MAX_OUTPUTS = 255  # STRB's post-increment immediate steps over a pixel's outputs
MAX_GROUPS = 8  # distinct shifts: each is a loop of its own (about 350 bytes)
_SHIFT_FIELD = -1  # the im2col records' last word of a channel: s


def words(cin: int) -> int:
    """A channel's weight words in the records: (w0, w1) and, for 3 channels, (w2, 0)."""
    return -(-cin // 2)


def entry(cin: int, pixels: int) -> int:
    """The pixel of the loop's body at which a block of `pixels` enters it, so that
    whole loops follow (codegen/pointwise_asm.py)."""
    return -pixels % LOOP_PIXELS[cin]


def staged_words(cin: int, pixels: int) -> int:
    """The staged words of a block of `pixels`: whole units, one more for a block
    entered at the second pixel of a pair (codegen/pointwise_asm.py)."""
    return UNIT_WORDS[cin] * -(-(pixels + UNIT_PIXELS[cin] - 1) // UNIT_PIXELS[cin])


def takes(k: Kernel, plan: FirstLayerPlan) -> bool:
    """Whether the layer's shape and epilogue suit the kernel (module docstring), its
    records not yet read."""
    if not (plan.kh == plan.kw == 1 and plan.cin in CHANNELS and plan.table is None and
            k.domain[C] <= MAX_OUTPUTS):
        return False
    _, h_in, w_in, _ = k.operands[plan.x.operand].shape
    (sy, sx), (oy, ox) = plan.stride, plan.origin
    return oy >= 0 and ox >= 0 and (k.domain[Y] - 1) * sy + oy < h_in and \
        (k.domain[X] - 1) * sx + ox < w_in


def blocks(k: Kernel, cin: int) -> list[int]:
    """The pixels of each call: as even as they go within STAGED_BYTES (a longer
    first ones, so at most two sizes and so two kernels)."""
    total = k.domain[Y] * k.domain[X]
    most = STAGED_BYTES * UNIT_PIXELS[cin] // (4 * UNIT_WORDS[cin]) - 1
    n = -(-total // most)
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def groups(shifts: tuple[int, ...]) -> list[tuple[int, int]]:
    """(shift, channels) of each run of equal shifts in the records' order."""
    out: list[tuple[int, int]] = []
    for s in shifts:
        if out and out[-1][0] == s:
            out[-1] = (s, out[-1][1] + 1)
        else:
            out.append((s, 1))
    return out


# The kernel's own staging of a dense block (`dense`), at most: its loop of 4 pixels,
# the odd pixels' and a 3-channel block's first pair (codegen/pointwise_asm.py stage).
STAGE_INSTRUCTIONS = 50


def dense(k: Kernel, plan: FirstLayerPlan) -> bool:
    """Whether output pixel p reads input pixel p (stride 1, no offset, as wide), so
    that the kernel stages a block from the input's bytes itself."""
    w_in = k.operands[plan.x.operand].shape[2]
    return plan.stride == (1, 1) and plan.origin == (0, 0) and w_in == k.domain[X]


def code_bytes(cin: int, shifts: tuple[int, ...], pixel_counts: list[int],
               stages: bool = False) -> int:
    """An upper estimate of the kernels' code (codegen/pointwise_asm.py kernel_body: 4
    bytes an instruction, most being 32-bit): per kernel an entry and exit (and its
    staging where it `stages`), per group of equal shifts its channel's set-up and loop
    test, the loop's body and its entry."""
    n_groups = len(groups(shifts))
    per_output = 6 if cin == 3 else 5
    body = LOOP_PIXELS[cin] * per_output + LOOP_PIXELS[cin] // PIXELS_PER_LDM[cin] + 2
    group = 3 + 7 + 5 + body + 4
    entry_exit = 6 + (STAGE_INSTRUCTIONS if stages else 0)
    return 4 * len(set(pixel_counts)) * (entry_exit + n_groups * group)


def asm_records(records: np.ndarray, cin: int, cout: int
                ) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The kernel's records from the im2col kernel's (`records`: the pad word, then per
    channel the doubled bias, the weight words, M, 2 K_hi and s) and the shifts in
    their order; None where a shift is outside SSAT's 1-31 or too many differ."""
    fields = words(cin) + 4
    rows = np.asarray(records[1:1 + fields * cout], dtype=np.int64).reshape(cout, fields)
    shifts = rows[:, _SHIFT_FIELD]
    if not np.all((shifts >= 1) & (shifts <= 31)) or len(set(shifts.tolist())) > MAX_GROUPS:
        return None
    order = np.argsort(shifts, kind="stable")
    rows = rows.copy()
    rows[:, _SHIFT_FIELD] = np.arange(cout)
    out = np.concatenate([np.asarray(records[:1], dtype=np.int64), rows[order].reshape(-1)])
    kept = tuple(int(s) for s in shifts[order])
    return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32), kept


def upgrade(hit: tuple[Kernel, np.ndarray], plan: FirstLayerPlan | None, room: int
            ) -> tuple[tuple[Kernel, np.ndarray], int]:
    """`hit` (an im2col kernel and its records) as this kernel's, with the bytes of its
    code, where it takes the layer (module docstring) and records and code fit `room`
    bytes of flash; else `hit` itself and 0."""
    k, records = hit
    if plan is None or not takes(k, plan) or records.size != 1 + k.domain[C] * (
            words(plan.cin) + 4):
        return hit, 0
    found = asm_records(records, plan.cin, k.domain[C])
    if found is None:
        return hit, 0
    table, shifts = found
    code = code_bytes(plan.cin, shifts, blocks(k, plan.cin), dense(k, plan))
    if table.nbytes + code > room:
        return hit, 0
    return (replace(k, record_shifts=shifts), table), code
