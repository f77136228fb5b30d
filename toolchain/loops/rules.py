"""Choosing a dispatch's LoopSchedule from its Kernel and the target's capabilities.

Nothing here names a target. What differs between targets is data: the capabilities in
targets/*.yaml (registers, FMA, SIMD instruction set; toolchain/target/descriptors.py)
and the tables of loops/tables.py, one row per SIMD instruction set and one per code
budget (microcontroller code is optimised for size, hosted code for speed). The choice
itself is a small search: every register blocking of up to two parallel dims that fits
the registers is costed with a simple instruction model (loops/cost.py) and the
cheapest wins.
"""

from __future__ import annotations

import dataclasses
import itertools
from math import prod
from typing import Any

from toolchain.kernel.form import Const, Kernel, Load, postorder
from toolchain.loops.access import (
    _deps,
    _flat_index,
    _never_padded,
    _packing,
    interior_ranges,
    lane_dim,
)
from toolchain.loops.cold import cold_kernel
from toolchain.loops.cost import (
    MAX_PARTIAL_VECTORS,
    FloatLanes,
    _code,
    _distinct_tiles,
    _fits,
    _held_window,
    _Shape,
    _shape,
    _tile_cost,
    _total,
    _ukernel_tile,
    float_lanes,
)
from toolchain.loops.dense_rows import (
    dense_rows_candidates,
    dense_rows_only,
    window_rows_candidates,
    window_rows_stage,
)
from toolchain.loops.depthwise import (
    ROW_PAIR_OUTPUT_COST,
    output_cost,
    row_pair_nest,
    row_pair_plan,
)
from toolchain.loops.patterns import dot_operands, int16_dot
from toolchain.loops.phases import nest_kernel, phases_of
from toolchain.loops.requant_lanes import (
    REQUANT_GROUP,
    VECTOR_REQUANT_OPS,
    match_requant,
    requant_dim,
)
from toolchain.loops.schedule import LoopSchedule, Nest, Phase
from toolchain.loops.tables import (
    BUDGETS,
    DOT_WIDTH,
    FACTORS,
    GATHERED_LOAD,
    LANE_KIND,
    LANE_OPS,
    LONG_SUM,
    PAIRED_LOAD,
    PARTIALS,
    RESERVED_INT_REGISTERS,
    SIMD,
    STAGE_MIN_TILES,
    STAGE_MIN_TILES_PIXELS,
    STAGE_MIN_WINDOW_TILES,
    UKERNELS,
    UNPACKED_LOAD,
    VECTOR_DOT_KINDS,
    VECTOR_TEMPS,
    Budget,
    SimdRow,
    Ukernel,
    VectorDot,
    _budget,
    dot_width,
    packed_written_out,
    tiles_for_cold_kernels,
)
from toolchain.loops.tiny_dense import TINY_DENSE_KIND, tiny_dense_candidates
from toolchain.target.descriptors import Target
from toolchain.tunedb.hook import TILES, choose_kernel
from toolchain.tunedb.hook import pick as tuned_pick

# Names other modules import from here: the tables (loops/tables.py), the loads'
# analyses (loops/access.py) and the cost model (loops/cost.py) the rules read.
__all__ = ["BUDGETS", "DOT_WIDTH", "LANE_KIND", "RESERVED_INT_REGISTERS", "SIMD", "UKERNELS",
           "VECTOR_DOT_KINDS", "VECTOR_TEMPS", "Budget", "SimdRow", "Ukernel", "VectorDot",
           "candidate_params", "choose_schedule", "dot_width", "interior_ranges", "lane_dim",
           "packed_written_out", "plain_schedule", "takes_row_pairs",
           "tiles_for_cold_kernels", "tunable_candidates", "two_pixel_dim"]


def _unrolled(k: Kernel, points: int, budget: Budget) -> tuple[int, ...]:
    """Reduced dims to unroll inside the tile: short ones, innermost first, while the
    copies of the body stay within the budget. A long dim stays a loop and the short
    ones outside it move into its body (a 3x3 window's taps inside the loop over input
    channels: one loop instead of three)."""
    chosen: list[int] = []
    copies = points
    for d in reversed(range(k.n_parallel, len(k.domain))):
        n = k.domain[d]
        if n <= 1 or n > budget.max_unroll:
            continue
        if copies * n > budget.max_copies:
            break
        chosen.append(d)
        copies *= n
    return tuple(sorted(chosen))


def _layouts(k: Kernel, unroll: tuple[int, ...], dot: str):
    """(unrolled dims, loops, packing of the innermost loop or None, packed only) for a
    tile: the reduced dims not unrolled stay loops; and where the innermost reduced dim
    was unrolled but the packed steps can read it (a 10x4 window's rows of 4 taps), the
    same with that dim as the packed loop (one step per row: it is not unrolled twice)."""
    loops = tuple(d for d in range(k.n_parallel, len(k.domain))
                  if k.domain[d] > 1 and d not in unroll)
    packing = _packing(k, loops[-1], dot) if dot and loops else None
    out = [(unroll, loops, packing, False)]
    inner = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    if dot and inner and inner[-1] in unroll:
        packing = _packing(k, inner[-1], dot)
        if packing is not None:
            out.append((tuple(d for d in unroll if d != inner[-1]),
                        tuple(sorted((*loops, inner[-1]))), packing, True))
    return out


def _reduction_nest(k: Kernel, target: Target, fma: bool,
                    unblocked: frozenset[int] = frozenset()) -> Nest:
    budget = _budget(target)
    s = _shape(k, fma)
    if vector_requant(k, target):  # 4 outputs at a time, costed per output
        s = dataclasses.replace(s, epilogue=VECTOR_REQUANT_OPS)
    par = [d for d in range(k.n_parallel) if k.domain[d] > 1 and d not in unblocked]
    body_operands = len({e.operand for e in postorder(k.body) if isinstance(e, Load)})
    row = SIMD[target.capabilities.simd]
    dot = _dot_kind(k, row)
    interior = interior_ranges(k)
    # A tile whose loop body is one packed step (no unrolled taps) is costed as if its
    # paired operands were unpacked: the model then prefers 4 channels x 1 pixel (18
    # instructions per 16 MACs against 19 for 2 x 2), which spills in LLVM's allocation
    # (kws pointwise 1.89 instructions per MAC, 1.82 with 2 x 2). With a window's taps
    # in the body the paired model's choice pays (resnet's 3x3: 1.17 against 1.41).
    # docs/architecture.md, "Where the int8 instructions go (Cortex-M4)".
    unpaired = dataclasses.replace(s, paired=(False,) * len(s.paired))
    lanes = float_lanes(k, target)
    candidates: list[tuple] = []
    # A candidate's code size (its second field) is only read when the cheapest goes
    # over the code cap or the tuning database asks for another candidate; it was half
    # of the search's time (resnet8: 2,810 tiles costed), so it is left None here with
    # its arguments in `unsized`, and `sized` computes it when read.
    unsized: dict[int, tuple] = {}
    layouts: dict[tuple[int, ...], list] = {}  # by unrolled dims: the same for every tile
    for chosen in itertools.chain([()], itertools.combinations(par, 1),
                                  itertools.combinations(par, 2)):
        for fs in itertools.product(*[[f for f in _factors(d, lanes) if 1 < f <= k.domain[d]]
                                      for d in chosen]):
            factors = dict(zip(chosen, fs))
            width = lanes.width if lanes is not None and lanes.covers(factors) else 1
            # A tile spanning all of such a dim keeps it: its offsets become constants.
            if width == 1 and not budget.block_unshared and \
                    any(_shares_nothing(s, d) and f < k.domain[d] for d, f in factors.items()):
                continue
            points = prod(fs) // width  # registers of accumulators
            if points > budget.max_tile:
                continue
            unrolled = _unrolled(k, points, budget)
            if unrolled not in layouts:
                layouts[unrolled] = _layouts(k, unrolled, dot)
            for unroll, loops, gathered, pack_only in layouts[unrolled]:
                long_sum = (s.float_acc and k.combine == "add" and bool(loops)
                            and k.domain[loops[-1]] >= LONG_SUM)
                for partials, packed in itertools.product(PARTIALS, (False, True)):
                    if partials > 1 and (k.combine != "add" or not loops
                                         or k.domain[loops[-1]] < 2 * partials):
                        continue
                    if packed and (gathered is None or partials > 1):
                        continue
                    if pack_only and not packed:
                        continue
                    if not _fits(s, factors, body_operands, target, partials, packed, dot,
                                 lanes, _held_window(k, factors, unroll)):
                        continue
                    if width > 1 and partials > 1 and \
                            factors[lanes.dim] > MAX_PARTIAL_VECTORS * width:
                        continue
                    # A microkernel's tile is costed as it runs, paired.
                    sc = s if unroll or gathered or (packed and _ukernel_tile(
                        s, k, factors, loops, dot, unroll)) else unpaired
                    g = gathered or ()
                    cost = _total(sc, k, factors, unroll, loops, budget, partials, packed,
                                  dot, g, lanes)
                    # Long float sums first take a split that keeps their error down.
                    key = (long_sum and partials == 1, cost, points, partials)
                    unsized[len(candidates)] = (sc, factors, unroll, loops, packed, g, width)
                    candidates.append((key, None, factors, unroll, loops, partials,
                                       dot if packed else "", width))
    candidates += _lane_candidates(k, target, s, budget, par)
    candidates += _staged_window_candidates(k, s, dot, interior)
    dense = dense_rows_candidates(k, row.int8_dot, s.epilogue, budget.max_tile)
    candidates = dense if dense_rows_only(k, row.int8_dot) else candidates + dense
    candidates += window_rows_candidates(k, row.int8_dot, s.epilogue)
    candidates += tiny_dense_candidates(k, row.int8_dot, s.epilogue)  # loops/tiny_dense.py
    candidates = _vector_requant_tiles(k, target, candidates)
    assert candidates

    def sized(i: int) -> tuple:
        """Candidate i with its code size (computed once, kept in `candidates`)."""
        if i in unsized:
            sc, factors, unroll, loops, packed, g, width = unsized.pop(i)
            code = _code(sc, k, factors, unroll, loops, interior, packed, dot, g) / width
            candidates[i] = (candidates[i][0], code, *candidates[i][2:])
        return candidates[i]

    def all_sized() -> list[tuple]:
        return [sized(i) for i in range(len(candidates))]

    # Within its measured bounds a tiny dense layer's written-out rows are the choice:
    # the calls' fixed costs, which the cost model does not weigh against them.
    chosen = [i for i, c in enumerate(candidates) if c[6] == TINY_DENSE_KIND] or \
        range(len(candidates))
    best = sized(min(chosen, key=lambda i: candidates[i][0]))
    if best[1] > budget.max_code:
        # The cheapest tile under the code cap, if it costs little more (and is as
        # careful with long float sums): only those near the cheapest are sized.
        near = [i for i, c in enumerate(candidates) if c[0][0] == best[0][0]
                and c[0][1] <= best[0][1] * (1 + budget.code_slack)]
        small = [c for c in map(sized, near) if c[1] <= budget.max_code]
        best = min(small, key=lambda c: c[0], default=best)
    # Where the model cannot decide, a measured choice (minirt-tune's database) may take
    # another of these candidates: toolchain/tunedb/hook.py (which asks for them only
    # when it needs them).
    best = tuned_pick(k, target.tuning_targets,
                      lambda: tunable_candidates(all_sized(), best, budget),
                      (candidate_params(best), best))
    _, _, factors, unroll, loops, partials, kind, width = best
    blocks = tuple((d, f) for d, f in sorted(factors.items()) if f > 1)
    return Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), loops, unroll, blocks,
                partials=partials, dot=kind, vector=width if width > 1 else 0,
                stage=(_stages(s, k, factors, unroll, loops, kind)
                       or window_rows_stage(kind, unroll)))


def candidate_params(c: tuple) -> dict[str, Any]:
    """A candidate tile of _reduction_nest as the tuning database stores it (JSON
    values): blocked dims and factors, unrolled and looped reduced dims, partial sums,
    dot kind and float vector width; together they fix the Nest."""
    _, _, factors, unroll, loops, partials, kind, width = c
    return {"blocks": [[d, f] for d, f in sorted(factors.items()) if f > 1],
            "unroll": list(unroll), "loops": list(loops), "partials": partials,
            "dot": kind, "vector": width}


def tunable_candidates(candidates: list[tuple], best: tuple,
                       budget: Budget) -> list[tuple[dict[str, Any], tuple]]:
    """(parameters, candidate) of the candidates a measurement may prefer to the rules'
    pick `best`: as careful with long float sums as it, under the code cap (or `best`
    itself), each schedule once, cheapest first by the cost model."""
    out: dict[str, tuple[dict[str, Any], tuple]] = {}
    for c in sorted(candidates, key=lambda c: c[0]):
        if c[0][0] != best[0][0] or (c[1] > budget.max_code and c is not best):
            continue
        params = candidate_params(c)
        out.setdefault(repr(params), (params, c))
    return list(out.values())


def vector_requant(k: Kernel, target: Target) -> bool:
    """Whether k's output channels are requantized 4 at a time from scalar sums
    (Helium, loops/requant_lanes.py; a depthwise layer in lanes is its own case)."""
    return SIMD[target.capabilities.simd].lane_requant and lane_dim(k) is None and \
        match_requant(k) is not None


def _vector_requant_tiles(k: Kernel, target: Target, candidates: list[tuple]) -> list[tuple]:
    """The candidates whose tiles block the output channels in fours where k's epilogue
    is requantized 4 at a time (vector_requant): another tile would run the unfolded
    scalar steps (about 20 instructions an output). All of them if none does."""
    if not vector_requant(k, target):
        return candidates
    c = requant_dim(k)
    whole = [cand for cand in candidates if cand[2].get(c, 1) % REQUANT_GROUP == 0]
    return whole or candidates


def _dot_kind(k: Kernel, row: SimdRow) -> str:
    """The packed dot kind of kernel `k` on SIMD row `row` ("" for none): the row's
    int16 or int8 kind, or its short int8 kind in a window (2 reduced dims or more)
    where no reduced dim can take the int8 kind's steps and one can take the short
    kind's (on Helium, a 10x4 window's rows of 4 taps over one input channel:
    VMLADAVA.S32 per row instead of 4 scalar MACs)."""
    if not dot_operands(k):
        return ""
    if int16_dot(k):
        return row.int16_dot
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    short = row.int8_dot_short
    # Windows only: a lone short row (ad01's 8-input dense layer) ran 2.02 instructions
    # per MAC in LLVM's own loop and 3.20 (2.58 written out) in 4-lane steps.
    if short and len(reduced) >= 2 and \
            all(_packing(k, d, row.int8_dot) is None for d in reduced) and \
            any(_packing(k, d, short) is not None for d in reduced):
        return short
    return row.int8_dot


def _shares_nothing(s: _Shape, d: int) -> bool:
    """Whether every load of an integer dot's body depends on parallel dim `d`, so that
    outputs blocked along it share no loaded value (Budget.block_unshared). Integer
    sums only: they are what was measured (int8 depthwise layers on cortex-m4); a
    float tile's accumulators live in the FPU's own registers."""
    return not s.float_acc and len(s.loads) >= 2 and all(d in deps for deps in s.loads)


def _staged_window_candidates(k: Kernel, s: _Shape, dot: str,
                              interior: dict[int, tuple[int, int]]) -> list[tuple]:
    """The staged tile (Nest.stage) of a window whose packed steps gather the input
    element by element (a 10x4 window over one input channel, whose rows of 4 taps
    start at odd bytes): every reduced dim but the packed one unrolled as taps, the
    pixel's window staged once in the paired layout, each tile of the microkernel's
    rows of output channels one call over all its steps. The other layouts cost its
    gathers once per tile, so this one is costed here: per tile the staged call's steps
    (an LDRD of input and one per row, 2 SMLADs per row), its call and the epilogues;
    per pixel the staging (a gathered or unpacked step per step) and the channels past
    the last whole tile (5x5 over 32 channels to 61: 0.49 -> 1.09 MAC per instruction
    staged on cortex-m4)."""
    uk = UKERNELS.get(dot)
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    if uk is None or not uk.staged_symbol or len(reduced) < 2:
        return []
    *taps, packed = reduced
    unroll, loops = tuple(taps), (packed,)
    d = k.n_parallel - 1
    factors = {d: uk.rows}
    packing = _packing(k, packed, dot)
    if packing is None or not _stages(s, k, factors, unroll, loops, dot):
        return []
    steps = prod(k.domain[u] for u in unroll) * k.domain[packed] // DOT_WIDTH
    tile = steps * (PAIRED_LOAD + 3 * uk.rows) + uk.call_cost + uk.rows * s.epilogue
    stage = steps * (GATHERED_LOAD if packing else UNPACKED_LOAD)
    # Output channels past the last whole tile (61 = 15 x 4 + 1) are generated code:
    # per channel and step an input value, a paired weight and 2 SMLADs.
    rest = k.domain[d] % uk.rows * (steps * (UNPACKED_LOAD + PAIRED_LOAD + 2) + s.epilogue)
    pixels = prod(k.domain[:k.n_parallel]) // k.domain[d]
    cost = pixels * (k.domain[d] // uk.rows * tile + stage + rest)
    code = len(_distinct_tiles(k, factors, interior)) * (stage + uk.rows * s.epilogue)
    return [((False, cost, uk.rows, 1), code, factors, unroll, loops, 1, dot, 1)]


def _stages(s: _Shape, k: Kernel, factors: dict[int, int], unroll: tuple[int, ...],
            loops: tuple[int, ...], kind: str) -> bool:
    """Whether a tile's input is staged in the paired layout once per pixel
    (Nest.stage): its tiles would call a microkernel with a staged variant (with a
    window's taps unrolled, reading whole words of input or gathering it element by
    element: the staged window is one call), the blocked dim is the innermost parallel
    one and spans at least STAGE_MIN_TILES tiles, and the input's only test is its
    padding (a window's tap outside the input is staged as the pad value)."""
    uk = UKERNELS.get(kind)
    if uk is None or not uk.staged_symbol or not loops:
        return False
    packing = _packing(k, loops[-1], kind)
    # A window read element by element (packing names the input) is staged by element,
    # every tap in one call.
    steps = prod(k.domain[u] for u in unroll) * (k.domain[loops[-1]] // DOT_WIDTH) \
        if unroll and packing is not None else 0
    if _ukernel_tile(s, k, factors, loops, kind, (), steps) is not uk:
        return False
    if unroll and (packing is None or k.domain[loops[-1]] % DOT_WIDTH or len(loops) != 1):
        return False
    (d,) = [d for d, n in factors.items() if n > 1]
    operands = dot_operands(k)
    x = next(ld for ld in operands if ld.operand not in k.paired)
    pixels = prod(k.domain[:k.n_parallel]) // k.domain[d]
    least = STAGE_MIN_WINDOW_TILES if unroll else \
        STAGE_MIN_TILES if pixels == 1 else STAGE_MIN_TILES_PIXELS
    return d == k.n_parallel - 1 and k.domain[d] >= least * uk.rows \
        and (x.pad is None or (bool(unroll) and isinstance(x.pad, Const))
             or _never_padded(k, x)) \
        and x.valid is None


def _factors(d: int, lanes: FloatLanes | None) -> tuple[int, ...]:
    """The blocking factors tried for parallel dim d: FACTORS, and along a FloatLanes
    dim one to four whole vectors."""
    if lanes is None or d != lanes.dim:
        return FACTORS
    return tuple(sorted({*FACTORS, *(lanes.width * m for m in range(1, 5))}))


def _lane_candidates(k: Kernel, target: Target, s: _Shape, budget: Budget,
                     par: list[int]) -> list[tuple]:
    """Tiles whose outputs along lane_dim(k) are the lanes of vector accumulators, 16
    at a time, with up to one other parallel dim blocked: per reduction step one input
    vector per group of lanes, one weight vector shared by the groups, LANE_OPS each;
    per output its lane's extraction and the epilogue. A tile smaller than the lanes
    (the dim's remainder) runs as scalar code: costed as the 1-output tile."""
    row = SIMD[target.capabilities.simd]
    c = lane_dim(k)
    lanes = row.int8_lanes
    if not lanes or c is None or c not in par or k.domain[c] < lanes:
        return []
    acc_regs = max(1, lanes * 32 // max(target.capabilities.vector_bits, 1))
    out = []
    others = [d for d in par if d != c]
    for d, f in [(None, 1)] + [(d, f) for d in others for f in FACTORS
                                if 1 < f <= k.domain[d]]:
        if f * acc_regs + f + 1 + VECTOR_TEMPS > row.vector_registers:
            continue
        unroll = _unrolled(k, f, budget)
        loops = tuple(x for x in range(k.n_parallel, len(k.domain))
                      if k.domain[x] > 1 and x not in unroll)
        steps = prod(k.domain[x] for x in loops) * prod(k.domain[x] for x in unroll)
        loop_steps = prod(k.domain[x] for x in loops)
        rest = k.domain[c] % lanes
        full_tiles = k.domain[c] // lanes
        total = 0.0
        n_d = k.domain[d] if d is not None else 1
        for size, count in [(f, n_d // f), (n_d % f, 1 if n_d % f else 0)]:
            if not count:
                continue
            tile_cost = (steps * (size + 1 + LANE_OPS * size) + loop_steps * budget.loop_cost
                         + lanes * size * (s.epilogue + 2) + budget.loop_cost)
            total += count * full_tiles * tile_cost
            if rest:
                scalar = _tile_cost(s, k, {}, _unrolled(k, 1, budget),
                                    tuple(x for x in range(k.n_parallel, len(k.domain))
                                          if k.domain[x] > 1
                                          and x not in _unrolled(k, 1, budget)), budget)
                total += count * size * rest * scalar
        total *= prod(n for x, n in enumerate(k.domain[:k.n_parallel]) if x not in (c, d))
        factors = {c: lanes} if d is None else {c: lanes, d: f}
        key = (False, total, lanes * f, 1)
        out.append((key, 0.0, factors, unroll, loops, 1, LANE_KIND, 1))
    return out


ROW_PAIRS = "row_pairs"  # the family name of the row-pair nest in the tuning database


def takes_row_pairs(k: Kernel, target: Target) -> bool:
    """Whether `k`'s schedule on `target` is the depthwise row-pair nest
    (loops/depthwise.py) when no dim is kept unblocked: the scheduler asks it of a
    folded kernel before it keeps a Helium kernel's requantization unfolded for lanes
    (schedule/program.py)."""
    return row_pair_nest(k, target) is not None and \
        not _lanes_beat_row_pairs(k, target, target.capabilities.fma, frozenset()) and \
        _row_pairs_wanted(k, target)


def _row_pairs_wanted(k: Kernel, target: Target) -> bool:
    """Whether the tuning database leaves depthwise kernel `k` to the row-pair nest the
    rules give it (tunedb/hook.py choose_kernel): it may want the tile search's. A
    kernel with its records bound (schedule/row_pair_records.py) is past that choice:
    it was made for the kernel before, whose key the entry has."""
    return k.records >= 0 or \
        choose_kernel(k, target.tuning_targets, (ROW_PAIRS, TILES), ROW_PAIRS) != TILES


# Instructions an output of a 3x3 depthwise layer of stride 1 in Helium's lanes (every
# channel in whole vectors), measured on cortex-m55 (bench/shapes.py layers and
# vww_96's, 16-256 channels, 3x3 to 25x5 maps): a pixel's vectors of channels cost
# about LANE_OUTPUT_COST an output where every tap is inside the input, one vector
# (no channel loop) LANE_ONE_VECTOR less, and an output on the SAME border, whose taps
# are tested one by one, LANE_BORDER_COST more (19x6 over 64 channels: 40 % of the
# outputs on the border, 16.2 measured and modelled; 6x6 over 128: 56 %, 18.8 against
# 17.9; 24x24 over 32: 16 %, 14.2 against 13.9). The lane model of _lane_candidates (12.9
# whatever the shape) knows none of it.
LANE_OUTPUT_COST = 12.3
LANE_ONE_VECTOR = 1.5
LANE_BORDER_COST = 10.0


def _lanes_beat_row_pairs(k: Kernel, target: Target, fma: bool,
                          unblocked: frozenset[int]) -> bool:
    """Whether depthwise kernel `k`'s outputs computed in vector lanes (a SIMD row with
    int8_lanes: Helium) cost less than the row-pair microkernel's (loops/depthwise.py
    `output_cost`). Only when the lanes take every channel in whole vectors: the
    channels past the last one run scalar tiles (cortex-m55, 3x3 over 61 channels on
    19x6: 203,637 instructions in lanes, about 76 an output of those 13 channels,
    against 143,927 in row pairs on cortex-m4). At a stride of 1 the lanes' measured
    model (`_lane_output_cost`) against the kernel's tile: 16 channels, and wide maps
    (24x24 over 32, 12x12 over 64, whose row pairs are 2-row tiles) keep the lanes; 32
    channels and more on narrow maps (kws's 25x5 over 64: 132,493 instructions in lanes,
    120,466 in 4-row tiles) and small ones (vww_96's 6x6 over 128) take the kernel. At a
    stride of 2 the lane model of _lane_candidates against ROW_PAIR_OUTPUT_COST."""
    row = SIMD[target.capabilities.simd]
    c = lane_dim(k)
    if not row.int8_lanes or c is None or k.domain[c] % row.int8_lanes:
        return False
    par = [d for d in range(k.n_parallel) if k.domain[d] > 1 and d not in unblocked]
    costs = [cand[0][1] for cand in
             _lane_candidates(k, target, _shape(k, fma), _budget(target), par)]
    if not costs:
        return False
    plan = row_pair_plan(k)
    outputs = prod(k.domain[:k.n_parallel])
    if plan is not None and plan.stride == 1:
        return _lane_output_cost(k, c, row.int8_lanes) < output_cost(k, plan)
    return min(costs) < ROW_PAIR_OUTPUT_COST * outputs


def _lane_output_cost(k: Kernel, c: int, lanes: int) -> float:
    """The measured model of a depthwise layer's instructions an output in vector
    lanes (LANE_OUTPUT_COST): `c` its lane dim, `lanes` a vector's."""
    interior = interior_ranges(k)
    pixels = [d for d in range(k.n_parallel) if d != c]
    inside = prod((interior[d][1] - interior[d][0]) if d in interior else k.domain[d]
                  for d in pixels)
    border = 1 - inside / max(prod(k.domain[d] for d in pixels), 1)
    one = LANE_ONE_VECTOR if k.domain[c] == lanes else 0.0
    return LANE_OUTPUT_COST - one + LANE_BORDER_COST * border


def _elementwise_nest(k: Kernel, target: Target) -> Nest:
    lanes = SIMD[target.capabilities.simd].float_lanes
    vector = lanes if lanes > 1 and k.result.dtype.is_float else 0
    return Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), vector=vector)


def _nest(k: Kernel, phases: tuple[Phase, ...], target: Target, fma: bool,
          unblocked: frozenset[int] = frozenset()) -> Nest:
    nk = nest_kernel(k, phases)
    if 0 in nk.domain[:nk.n_parallel]:
        return Nest(nk.domain, nk.n_parallel, tuple(range(nk.n_parallel)), phases=phases)
    pairs = row_pair_nest(nk, target, unblocked) if not phases else None
    # A depthwise window's rows paired in SMLAD (loops/depthwise.py), unless the
    # target's vector lanes do better.
    if pairs is not None and not _lanes_beat_row_pairs(nk, target, fma, unblocked) and \
            _row_pairs_wanted(nk, target):
        return pairs
    if nk.combine is not None and 0 not in nk.domain:
        nest = _reduction_nest(nk, target, fma, unblocked)
    else:
        nest = _elementwise_nest(nk, target)
        if nk.combine is not None:  # an empty reduction: init and epilogue only
            nest = Nest(nk.domain, nk.n_parallel, nest.order)
    # A dim one tile of scalar outputs spans is not split: its points are constants in
    # the tile's code, so the bounds tests of its border values fold away at compile
    # time (kws's 3x3 depthwise layers over 5-wide rows: 0.354 M -> 0.205 M
    # instructions each, and smaller, against a checked loop over both border columns
    # and a 3-wide interior; vww_96 on riscv32 +0.9%). A tile of vector lanes keeps the
    # split: without it resnet8 f32 on aarch64 took 11.55 M against 9.38 M (its 8-row
    # tiles of 3 vectors), kws int8 2.86 M against 2.80 M (rows of 5 x 16 lanes).
    # Where the SIMD row says so (AVX-512: a checked load is one masked VMOVSS), a dim
    # a float vector tile blocks and spans in at most two tiles is not split either:
    # its border would be 1-pixel tiles that stream every weight vector per FMA
    # (resnet8 on x86-64-v4, 8- and 16-wide layers: 272 -> 220 us per inference).
    lanes = nest.vector or nest.dot == LANE_KIND
    checked = SIMD[target.capabilities.simd].float_checked_tiles and nest.vector > 1
    interior = tuple((d, lo, hi) for d, (lo, hi) in sorted(interior_ranges(nk).items())
                     if (lanes or nest.block(d) < nk.domain[d])
                     and not (checked and nest.block(d) > 1
                              and nk.domain[d] <= 2 * nest.block(d)))
    if nest.stage and nest.unroll and _packing(nk, nest.reduction[-1], nest.dot):
        interior = ()
    blocks, stage = nest.blocks, nest.stage
    if nk.interleaved:
        p = two_pixel_dim(nk, nest, unblocked, interior)
        if p is None:
            raise ValueError(f"kernel {k.name!r}: its interleaved weights need the 2x4 "
                             f"microkernel, which its schedule cannot take")
        blocks, stage = tuple(sorted((*blocks, (p, 2)))), 2
    return Nest(nest.domain, nest.n_parallel, nest.order, nest.reduction, nest.unroll,
                blocks, interior, phases, nest.vector, nest.partials, nest.dot,
                stage=stage)


def two_pixel_dim(k: Kernel, nest: Nest, unblocked: frozenset[int] = frozenset(),
                  interior: tuple[tuple[int, int, int], ...] = ()) -> int | None:
    """The parallel dim whose pixels a staged nest of `k` can take two at a time (the 2x4
    microkernel: UKERNELS' two_pixel_symbol), with its weights' rows interleaved, or
    None. The nest stages one pixel's input for tiles of the kernel's rows of output
    channels (the innermost dim; the weights hold whole groups of rows, the last one
    padded with zero rows where the channels end inside it), and each weight row is
    `k`'s reduction, read whole and in order by every output: the weights are indexed
    by that channel first (a row per channel) and by the reduced dims after, a multiple
    of 4 elements. Of the dims the input depends on and the weights do not (not
    `unblocked`), the one that leaves the fewest pixels without a partner, then the
    longest, then the innermost; a dim the nest's `interior` splits into regions pairs
    within each, so its pixels without a partner are counted per region (a 19x6 map
    under a 3x3 window: along its 6 columns, split 1 + 4 + 1, a third of the pixels;
    along its 19 rows, 1 + 17 + 1, a sixth). Only for an integer result (a requantized int8 one):
    the 8 outputs' float epilogues of kws_ref_model_float32's pointwise layers (int8
    products, dequantized) spilled, 0.718 M -> 0.808 M instructions a layer against 1 x 4."""
    uk = UKERNELS.get(nest.dot)
    operands = dot_operands(k)
    d = k.n_parallel - 1
    if uk is None or not uk.two_pixel_symbol or nest.stage != 1 or operands is None or \
            nest.block(d) != uk.rows or k.result.dtype.is_float:
        return None
    x, w = operands if operands[1].operand in k.paired else operands[::-1]
    shape = k.operands[w.operand].shape
    length = prod(shape[1:])
    # Channels past the last whole tile take the call too where the weights hold zero
    # rows up to a whole group (schedule/paired.py `_interleave_rows`): its extra sums
    # are dropped (codegen/dot_ukernel.py _two_pixel_call).
    if shape[0] != -(-k.domain[d] // uk.rows) * uk.rows or length % DOT_WIDTH or \
            length != prod(k.domain[k.n_parallel:]):
        return None
    # The row's elements in the order the staged input holds them: the taps (the first
    # unrolled dim slowest), then the packed dim.
    flat = _flat_index(k, w)
    if flat is None or flat.const or flat.coeff(d) != length:
        return None
    stride = 1
    expected = {d: length}
    for r in reversed((*nest.unroll, nest.reduction[-1])):
        expected[r] = stride
        stride *= k.domain[r]
    if any(expected.get(dim) != c for dim, c in flat.terms if k.domain[dim] > 1):
        return None
    xdeps, wdeps = _deps(x), _deps(w)
    pixels = [p for p in range(d) if k.domain[p] > 1 and p in xdeps and p not in wdeps
              and p not in unblocked]
    # On a tie the innermost: its pairs are neighbours in memory, so a result overlapping
    # the input (schedule/overlap.py) stores in the order the input is staged.
    splits = {d: (lo, hi) for d, lo, hi in interior}

    def alone(p: int) -> float:
        n = k.domain[p]
        lo, hi = splits.get(p, (0, n))
        return (lo % 2 + (hi - lo) % 2 + (n - hi) % 2) / n

    return max(pixels, key=lambda p: (-alone(p), k.domain[p], p), default=None)


def plain_schedule(k: Kernel) -> LoopSchedule:
    """The schedule that takes no liberty: the domain's loops in order, one output at a
    time, every bounds check kept, no FMA (what any target computes the same way)."""
    n = len(k.domain)
    loops = tuple(d for d in range(k.n_parallel, n) if k.domain[d] != 1)
    nest = Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), loops)
    return LoopSchedule(k.name, (nest,) if 0 not in k.domain[:k.n_parallel] else ())


def choose_schedule(k: Kernel, target: Target,
                    unblocked: frozenset[int] = frozenset()) -> LoopSchedule:
    """The schedule for kernel `k` on `target` (a transposed convolution gets one nest
    per phase, every other kernel one nest). `unblocked`: parallel dims no register tile
    may span (the arena planner asks for that when a result written over its operand's
    memory must run one row at a time: schedule/overlap.py)."""
    caps = target.capabilities
    # An f64 multiply-add is fused only where the FPU does f64: on a single-precision
    # FPU (Cortex-M4, riscv32 with F) llvm.fma.f64 becomes a call to libm's fma, which
    # no firmware links (and the soft-float multiply and add cost the same anyway).
    fma = caps.fma and caps.fpu != "none" and (k.acc_dtype.name != "f64" or caps.fpu == "dp")
    # A padded window is not cold: its plain loops test every tap's bounds, where a tile's
    # interior tests none (a 3x3 depthwise over one channel on 10x10, 900 points, took
    # 25,985 instructions on cortex-m4 plain, 29 per MAC); nor is a packed dot product.
    if cold_kernel(k, target):  # loops/cold.py
        return dataclasses.replace(plain_schedule(k), fma=fma)
    phases = phases_of(k) or [()]
    nests = tuple(n for n in (_nest(k, p, target, fma, unblocked) for p in phases)
                  if 0 not in n.domain[:n.n_parallel])
    return LoopSchedule(k.name, nests, fma)
