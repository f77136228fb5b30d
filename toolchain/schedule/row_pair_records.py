"""The depthwise row-pair microkernel's per-channel records, made at build time.

runtime_c's mrt_dw3_rowpair_s8 (codegen/depthwise_pairs.py, loops/depthwise.py) reads
per channel the bias, the weight words (w0, w1) and (w1, w2) of each window column
as 16-bit halves, and the folded requantization's M, K_hi and s - 1 (kernel/requant.py).
All of them are constants of the module, so they are computed here, after the weights
are stored (schedule/optimize.py), and bound to the dispatch as one more constant
operand (`Kernel.records`): 40 bytes a channel of flash where the dispatch builds them on
its stack at every inference (kws_ref_model's layers: 2.8 KB of stack each, and about
0.5 instructions an output). Flash pays the sum over the layers and the stack only the
largest (kws_ref_model: 11.3 KB of flash against 2.8 KB of stack; vww_96_int8: 32.7 KB
against 5.6 KB), so they are taken as the --optimize mode's room for pre-extended
weights allows (schedule/optimize.py: while the image fits the flash budget under
`auto`, none under `size`), except where they would take the dispatch's stack past
loops/depthwise.py's STACK_BYTES, which counts the staged rows alone: those are a
constant in every mode (vww_96_int8's 6x6 layers over 128 channels, 5.6 KB each).

The records are doubled (2 x bias, 2 x weights, M, 2 x K_hi, s) when every sum of the
layer stays within +-2**30 (|bias| + 128 x the sum of |w| per channel) and 2 x K_hi is an
int32: twice the sum is then an int32 and the kernel's requantization is SMMLAR + ASR
(runtime_c/ukernel/dsp/mrt_dw_dsp.c, MRT_DW_REQUANT_FAST). The word after the last
channel's record holds the flags word's bit for it (bit 1). The tails kernel's records
of few channels are repeated for each output column of a row (`_over_row`), so that its
channel loop runs on through the row.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load
from toolchain.loops import choose_schedule
from toolchain.loops.depthwise import (
    ASM_CHANNELS,
    CI,
    DOUBLED_FLAG,
    KX,
    KY,
    LAST_CHANNEL,
    QUAD_RECORD_WORDS,
    QUAD_SLOTS,
    RECORD_WORDS,
    ROW_RECORDS_BYTES,
    STACK_BYTES,
    TAIL_COLUMN_END,
    TAIL_NEXT_A,
    TAIL_NEXT_B,
    TAIL_RETURN,
    TAILS_FLAG,
    C,
    RowPairPlan,
    X,
    asm_code_bytes,
    asm_s2_bands,
    asm_s2_code_bytes,
    asm_s2_folds,
    asm_s2_tiles,
    asm_tiles,
    has_row_pairs,
    live_columns,
    quad_rows,
    record_words,
    records_over_row,
    row_pair_plan,
)
from toolchain.schedule.program import Program
from toolchain.schedule.step_records import bind_records, constant_operands
from toolchain.target.descriptors import Target

__all__ = ["DOUBLED_FLAG", "row_pair_records", "store_row_pair_records"]

_BOUND = 1 << 30
_NEXT = 11  # the 4-row records' word of the code after the channel (TAIL_NEXT_A ...)
_SHIFT = 10  # the 4-row records' word of s, the tails kernel's index


def _value(e: Expr, operands: list[np.ndarray | None], point: dict[int, object]
           ) -> np.ndarray | None:
    """`e` at `point` (dim -> index or index array; other dims 0) as int64, for the
    expressions the records are made of: constants, loads of constant operands at
    indices of dims and constants, and conversions between integers; else None."""
    if isinstance(e, Const):
        return np.asarray(int(e.value), dtype=np.int64)
    if isinstance(e, Load):
        arr = operands[e.operand]
        if arr is None or e.pad is not None or e.valid is not None:
            return None
        index = []
        for i in e.index:
            if isinstance(i, Index):
                index.append(point.get(i.dim, 0))
            elif isinstance(i, Const):
                index.append(int(i.value))
            else:
                return None
        return np.asarray(arr, dtype=np.int64)[tuple(index)]
    if isinstance(e, Apply) and e.op == "convert" and e.dtype.kind == "i" and \
            e.dtype.bits >= 32:
        return _value(e.args[0], operands, point)
    return None


def _halves(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """lo in the low 16 bits, hi in the high ones, as int32 words."""
    word = (lo.astype(np.int64) & 0xFFFF) | ((hi.astype(np.int64) & 0xFFFF) << 16)
    return word.astype(np.uint32).view(np.int32)


def row_pair_records(k: Kernel, plan: RowPairPlan, operands: list[np.ndarray | None],
                     quad: bool = False, over_row: bool = True, code_room: int = 0
                     ) -> np.ndarray | None:
    """The records of kernel `k` (module docstring) from its constant operands
    (`operands[j]`: operand j's array, None for a non-constant), or None when one of
    the values is not a constant the records can hold. `quad`: the 4-row kernels'
    records (two words more: s and the next code's stack slot for the tails kernel,
    loops/depthwise.py QUAD_RECORD_WORDS); `over_row`: the tails kernel's repeated over
    the row where they fit (`_over_row`), or the layer's own assembly tiles' where
    loops/depthwise.py asm_tiles takes them with `code_room` bytes of flash for their
    code."""
    channels = k.domain[C]
    c = np.arange(channels)
    at = {C: c}
    conv = next(a for a in k.body.args if isinstance(a, Apply) and a.args[0] is plan.w)
    values = [_value(e, operands, at) for e in (k.init, plan.multiplier, plan.k_high,
                                                 plan.shift)]
    weights = [[_value(conv, operands, {**at, KY: ky, KX: kx, CI: 0}) for kx in range(3)]
               for ky in range(3)]
    if any(v is None for v in values) or any(w is None for row in weights for w in row):
        return None
    bias, multiplier, k_high, shift = (np.broadcast_to(v, (channels,)) for v in values)
    bias = bias + plan.bias
    w = np.stack([np.stack([np.broadcast_to(x, (channels,)) for x in row]) for row in weights])
    reach = np.abs(bias) + 128 * np.abs(w).sum(axis=(0, 1))
    doubled = bool(np.all(reach < _BOUND) and np.all(np.abs(2 * k_high) < (1 << 31)))
    f = 2 if doubled else 1
    fields = []
    for kx in range(3):
        fields += [_halves(f * w[0, kx], f * w[1, kx]), _halves(f * w[1, kx], f * w[2, kx])]
        if kx == 0:
            fields.append(f * bias)
    last = (c == channels - 1) * LAST_CHANNEL
    s = shift + (1 if doubled else 0)
    fields += [multiplier, f * k_high, s + last]
    flags = DOUBLED_FLAG if doubled else 0
    if quad:
        # The tails kernel: after output channel c, head A again (multiplier 1), or head
        # B then A (multiplier 2: B reads the next input channel), the column's end last.
        if plan.depth_multiplier == 2:
            following = np.where(c % 2 == 0, TAIL_NEXT_B, TAIL_NEXT_A)
        else:
            following = np.full(channels, TAIL_NEXT_A)
        following = np.where(c == channels - 1, TAIL_COLUMN_END, following)
        fields += [s, following]
        if doubled and bool(np.all((s >= 1) & (s <= 31))):
            flags |= TAILS_FLAG
    table = np.stack([np.broadcast_to(np.asarray(x, dtype=np.int64), (channels,))
                      for x in fields], axis=-1)
    if table.shape != (channels, record_words(quad)):
        return None
    if over_row and flags & TAILS_FLAG and plan.stride == 1:
        if asm_tiles(k, plan, quad, code_room) and _fits_over_row(table, k.domain[X]):
            table = _asm_rows(k, plan, w * f, f * bias, multiplier, f * k_high)
        else:
            table = _over_row(table, k.domain[X])
    words = (table.reshape(-1) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return np.concatenate([words, np.asarray([flags], np.int32)])


def _asm_rows(k: Kernel, plan: RowPairPlan, w: np.ndarray, bias: np.ndarray,
              multiplier: np.ndarray, k_high: np.ndarray) -> np.ndarray:
    """The records of a layer's own assembly tiles (codegen/depthwise_asm.py), over the
    row: per output column and channel, of each window column that reads the input
    (live_columns) in order the weight words (w0, w1) and (w1, w2), the bias after the
    first's (with the products of the pad columns' pad values: a constant), then M and
    K_hi (`w`, `bias` and `k_high` doubled), zeros to QUAD_RECORD_WORDS."""
    w_in = k.operands[plan.x.operand].shape[2]
    rows = []
    for x in range(k.domain[X]):
        live = live_columns(x, plan.col, w_in)
        pads = [kx for kx in range(3) if kx not in live]
        const = bias + plan.pad * sum((w[:, kx].sum(axis=0) for kx in pads),
                                      np.zeros_like(bias))
        fields = []
        for kx in live:
            fields += [_halves(w[0, kx], w[1, kx]), _halves(w[1, kx], w[2, kx])]
            if kx == live[0]:
                fields.append(const)
        fields += [multiplier, k_high]
        fields += [np.zeros_like(bias)] * (QUAD_RECORD_WORDS - len(fields))
        rows.append(np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), bias.shape)
                              for v in fields], axis=-1))
    return np.concatenate(rows)


def _fits_over_row(table: np.ndarray, columns: int) -> bool:
    """Whether the records `table` repeated for a row's `columns` outputs fit
    ROW_RECORDS_BYTES (int64 here: the int32 words are half its bytes)."""
    return columns >= 2 and table.nbytes // 2 * columns <= ROW_RECORDS_BYTES


def _over_row(table: np.ndarray, columns: int) -> np.ndarray:
    """The tails kernel's records repeated for each of a row's `columns` outputs, where
    they fit ROW_RECORDS_BYTES: each column's last channel then goes on to head A of the
    next column's first (the kernel's record pointer runs on), the row's last to the
    return, and the column's end never runs (loops/depthwise.py)."""
    if not _fits_over_row(table, columns):
        return table
    rows = np.tile(table, (columns, 1))
    channels = table.shape[0]
    rows[channels - 1::channels, _NEXT] = TAIL_NEXT_A
    rows[-1, _NEXT] = TAIL_RETURN
    return rows


def store_row_pair_records(program: Program, target: Target, flash_room: int) -> int:
    """Binds the records to the dispatches whose schedule is the row-pair nest on
    `target`, in order while their bytes fit `flash_room` (the --optimize mode's room
    for pre-extended weights, schedule/optimize.py: none under `size`, where each
    dispatch makes its records on its stack), rewriting `program` in place (a constant,
    the step's buffers, its kernel's operands and `records`). Returns how many it
    bound."""
    if not has_row_pairs(target):
        return 0
    done = 0
    for step in program.steps:
        k = step.kernel
        if not isinstance(k, Kernel) or k.records >= 0:
            continue
        plan = row_pair_plan(k)
        if plan is None:
            continue
        schedule = step.schedule or choose_schedule(k, target)
        nest = next((n for n in schedule.nests if n.row_pairs), None)
        if nest is None:
            continue
        quad = quad_rows(nest)
        operands = constant_operands(program, step)
        # The room the tiles' code may take past 4 channels: what the records over the
        # row (12 words a column and channel, bound below) leave.
        code_room = flash_room - 4 * record_words(quad) * k.domain[X] * k.domain[C]
        records = row_pair_records(k, plan, operands, quad, code_room=code_room)
        if records is None:
            continue
        if records.nbytes > flash_room and records_over_row(records.size, k.domain[C], quad):
            records = row_pair_records(k, plan, operands, quad, over_row=False)
        # Records that would take the dispatch's stack past STACK_BYTES are a constant
        # whatever the room (loops/depthwise.py budgets the stack without them).
        slots = QUAD_SLOTS if quad else plan.slots
        on_stack = plan.stack_bytes(k, slots) + 4 * record_words(quad) * k.domain[C]
        if records.nbytes > flash_room and on_stack <= STACK_BYTES:
            continue
        flash_room = max(0, flash_room - records.nbytes)
        shifts = _s2_shifts(k, plan, records, flash_room)
        if shifts:  # the layer's own stride-2 calls, their records in their order
            records = _asm_s2_records(k, plan, records)
        bind_records(program, step, records)
        if records[-1] & TAILS_FLAG and asm_tiles(k, plan, quad, code_room) and \
                records_over_row(records.size, k.domain[C], quad):
            # The records of the layer's own assembly tiles (_asm_rows), which take the
            # shifts as immediates (codegen/depthwise_asm.py); their code past
            # ASM_CHANNELS takes its bytes of the room.
            if k.domain[C] > ASM_CHANNELS:
                flash_room = max(0, flash_room - asm_code_bytes(k, plan))
            s = row_pair_records(k, plan, operands, quad, over_row=False)
            s = s[:-1].reshape(-1, record_words(quad))[:, _SHIFT]
            step.kernel = replace(step.kernel, record_shifts=tuple(int(v) for v in s))
        elif shifts:
            # past ASM_CHANNELS the stride-2 calls' code takes its bytes of the room
            if k.domain[C] > ASM_CHANNELS:
                flash_room = max(0, flash_room - asm_s2_code_bytes(
                    k, plan, asm_s2_folds(k, plan)))
            step.kernel = replace(step.kernel, record_shifts=shifts)
        done += 1
    return done


# The stride-2 calls' record of a channel (codegen/depthwise_s2_asm.py), as indices of the
# row-pair record's words ((w0, w1) and (w1, w2) of window columns 0-2, the bias after
# column 0's, M, K_hi, s): window column 1's (w0, w1), column 0's two, the bias and
# column 1's (w1, w2) for one LDM into r4, r8-r10 and lr, then M, column 2's two and K_hi
# for one into r4, r8, r9 and lr; no s (an immediate). A column whose window column 0
# reads a pad column (left) or 2 (right) has the products of that column's pad values
# in its bias (_BIAS) and none of its weights.
_S2_ORDER = {"": (3, 0, 1, 2, 4, 7, 5, 6, 8), "left": (3, 4, 2, 7, 5, 6, 8),
             "right": (3, 0, 1, 2, 4, 7, 8)}
_BIAS = 2


def _s2_shifts(k: Kernel, plan: RowPairPlan, records: np.ndarray, code_room: int
               ) -> tuple[int, ...]:
    """The SSAT shifts of stride-2 kernel `k`'s doubled row-pair `records` where its own
    assembly calls take them with `code_room` bytes of flash for their code (loops/
    depthwise.py asm_s2_tiles), else ()."""
    if plan.stride != 2 or not records[-1] & DOUBLED_FLAG:
        return ()
    s = tuple(int(v) & 0xFF for v in records[:-1].reshape(-1, RECORD_WORDS)[:, -1])
    return s if asm_s2_tiles(k, plan, s, code_room) else ()


def _asm_s2_records(k: Kernel, plan: RowPairPlan, records: np.ndarray) -> np.ndarray:
    """Row-pair `records` (the flags word last) as the stride-2 calls' tables
    (_S2_ORDER): the left edge's where a band's first column has one, the inner
    columns', the right edge's where a band's last column has one, the flags word
    last."""
    table = records[:-1].reshape(-1, RECORD_WORDS).astype(np.int64)
    halves = records[:-1].astype(np.int32).view(np.int16).reshape(len(table), RECORD_WORDS, 2)
    bands = asm_s2_bands(k, plan, asm_s2_folds(k, plan))
    tables = []
    for edge, kx, there in (("left", 0, any(b[2] for b in bands)), ("", 0, True),
                            ("right", 2, any(b[3] for b in bands))):
        if not there:
            continue
        words = table.copy()
        if edge:  # the pad value times the window column's (doubled) weights
            w01, w12 = halves[:, 2 * kx + (kx > 0)], halves[:, 2 * kx + 1 + (kx > 0)]
            column = w01[:, 0].astype(np.int64) + w01[:, 1] + w12[:, 1]
            words[:, _BIAS] += plan.pad * column
        tables.append(words[:, list(_S2_ORDER[edge])])
    words = np.concatenate([x.reshape(-1) for x in tables])
    words = (words & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return np.concatenate([words, records[-1:]])
