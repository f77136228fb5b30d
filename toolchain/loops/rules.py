"""Choosing a dispatch's LoopSchedule from its Kernel and the target's capabilities.

Nothing here names a target. What differs between targets is data: the capabilities in
targets/*.yaml (registers, FMA, SIMD instruction set; toolchain/target/descriptors.py)
and the two tables below, one row per SIMD instruction set and one per code budget
(microcontroller code is optimised for size, hosted code for speed). The choice itself
is a small search: every register blocking of up to two parallel dims that fits the
registers is costed with a simple instruction model and the cheapest wins.

The model, per pass of a tile over the reduction: one load per distinct operand value
the tile needs (a weight shared by the tile's outputs is loaded once), the arithmetic
of every output (a multiply-add counts once with FMA), a loop's own increment, compare
and branch; per output the epilogue and the store. Extents that are no multiple of the
factor pay for their remainder tile.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from math import prod

from toolchain.kernel.form import Apply, Const, Expr, Index, Kernel, Load, postorder
from toolchain.loops.affine import Affine, affine_of
from toolchain.loops.patterns import dot_operands
from toolchain.loops.phases import nest_kernel, phases_of
from toolchain.loops.schedule import LoopSchedule, Nest, Phase
from toolchain.target.descriptors import Target

__all__ = ["BUDGETS", "SIMD", "VECTOR_DOT_KINDS", "Budget", "SimdRow", "VectorDot",
           "choose_schedule", "dot_width", "interior_ranges", "plain_schedule"]


@dataclass(frozen=True)
class SimdRow:
    """What a SIMD instruction set offers the loops: f32 lanes per register, the kind
    of packed int8 dot step (codegen/dot.py's DOT_KINDS or codegen/dot_vector.py's
    VECTOR_DOT_KINDS; "" for none), whether its constant operands (weights) are stored
    pre-extended in the paired layout (kernel/paired.py, schedule/paired.py: twice their
    flash, no unpacking), and the vector registers a vector dot tile may hold (its
    accumulators and operand vectors)."""

    float_lanes: int
    int8_dot: str = ""
    paired_operands: bool = False
    vector_registers: int = 0
    # int8 outputs a tile computes in the lanes of vector accumulators, one lane per
    # output along a parallel dim both operands are contiguous in (a depthwise
    # convolution's channels; codegen/dot_vector.py's LANE_KIND); 0 for none.
    int8_lanes: int = 0
    # Whether float tiles are blocked in whole vectors along an output-channel dim
    # (FloatLanes), for LLVM's SLP vectorizer to make vector FMAs of them.
    float_lane_tiles: bool = False


SIMD: dict[str, SimdRow] = {
    "none": SimdRow(float_lanes=1),
    # SXTB16 + SMLAD in core registers; paired weights: docs/architecture.md, "Where the
    # int8 instructions go (Cortex-M4)", has the measured gain and flash.
    "dsp": SimdRow(float_lanes=1, int8_dot="dsp", paired_operands=True),
    # No float lane tiles: on cortex-m55 they cost dscnn_kws 20% more instructions
    # (4.22 M -> 5.06 M) and leave resnet8 as it was.
    "mve": SimdRow(float_lanes=4, int8_dot="mve", vector_registers=8,  # Q0-Q7
                   int8_lanes=16),
    # Float lane tiles on aarch64 (instructions under QEMU): resnet8 15.9 M -> 7.4 M,
    # dscnn_kws 3.43 M -> 2.06 M, autoencoder 566 K -> 185 K, cnn 170 K -> 56 K.
    "neon": SimdRow(float_lanes=4, int8_dot="neon", vector_registers=32,  # V0-V31
                    int8_lanes=16, float_lane_tiles=True),
    "neon-dotprod": SimdRow(float_lanes=4, int8_dot="sdot", vector_registers=32,
                            int8_lanes=16, float_lane_tiles=True),
    "sse2": SimdRow(float_lanes=4, float_lane_tiles=True),
    "avx2": SimdRow(float_lanes=8, int8_dot="avx2", vector_registers=16,  # YMM0-YMM15
                    int8_lanes=16, float_lane_tiles=True),
}
LANE_KIND = "lanes"  # a nest's `dot` when its outputs are computed in vector lanes
# Instructions per group of lanes and reduction step besides the two loads: widening
# multiply of both halves, widening adds into the four (NEON, Helium) or two (AVX2)
# int32 accumulator registers.
LANE_OPS = 6
DOT_WIDTH = 4  # int8 elements per packed DSP step (a vector kind's width is its own)
# A packed DSP loop of at most this many steps is written out (codegen/nest.py) when
# its steps read at most PACKED_ROWS_UNROLLED paired weight rows: LLVM kept a loop of
# two (vww_96's 8-channel pointwise layer on cortex-m4, 2 pixels x 2 channels: a flag
# toggled per pass, the addresses recomputed; 973 K -> 779 K instructions written
# out); a tile of 4 rows written out loads all 8 LDRDs ahead and spills (ad01_int8's
# 8 -> 128 layer: 3,664 -> 4,370).
PACKED_STEPS_UNROLLED = 2
PACKED_ROWS_UNROLLED = 2


def packed_written_out(steps: int, paired_rows: int) -> bool:
    """Whether a packed DSP loop of `steps` steps whose tile reads `paired_rows` rows of
    paired weights per step is written out instead of looped."""
    return steps <= PACKED_STEPS_UNROLLED and paired_rows <= PACKED_ROWS_UNROLLED
# Instructions a packed DSP step spends on one operand value (4 elements): a word load
# and its 2 SXTB16, or for an operand in the paired layout (kernel/paired.py) one LDRD.
UNPACKED_LOAD = 3
PAIRED_LOAD = 1
# An operand gathered element by element (_packing): 4 byte loads and 2 packs into the
# 16-bit pairs (PKHBT).
GATHERED_LOAD = 6


@dataclass(frozen=True)
class VectorDot:
    """What the cost model knows of a vector int8 dot step (codegen/dot_vector.py):
    int8 lanes per step, the int32 lanes of each output's accumulator (0: a scalar
    register), and instructions per output per step, per distinct operand vector per
    step (its load and any extension) and per output to reduce its accumulator."""

    width: int
    acc_lanes: int
    step_ops: int
    load_ops: int
    finish_ops: int


VECTOR_DOT_KINDS: dict[str, VectorDot] = {
    # SMULL, SMULL2, 2 SADALP; LDR q; ADDV + FMOV
    "neon": VectorDot(width=16, acc_lanes=4, step_ops=4, load_ops=1, finish_ops=2),
    # SDOT; LDR q; ADDV + FMOV (Armv8.2-A's dot product, where the target says so)
    "sdot": VectorDot(width=16, acc_lanes=4, step_ops=1, load_ops=1, finish_ops=2),
    # VPMADDWD + VPADDD; VPMOVSXBW from memory; extract, 2 x (shuffle, add), VMOVD
    "avx2": VectorDot(width=16, acc_lanes=8, step_ops=2, load_ops=1, finish_ops=6),
    # VMLADAVA.S8 into the scalar sum; VLDRB.8
    "mve": VectorDot(width=16, acc_lanes=0, step_ops=1, load_ops=1, finish_ops=0),
}


@dataclass(frozen=True)
class Ukernel:
    """A runtime_c microkernel for the packed loop of a tile of `rows` outputs that
    read one input word and `rows` paired weight rows (codegen/dot_ukernel.py): its
    symbol, the packed steps from which a tile is costed with (and makes) the call,
    the steps from which a tile with unrolled taps, costed as generated code, calls it
    per tap, and the instructions of a call besides its steps (arguments, the
    accumulators through memory, saving registers)."""

    symbol: str
    rows: int
    min_steps: int
    min_tap_steps: int
    call_cost: int
    # The same over several runs of contiguous inputs with a jump between them (a
    # window's rows) and contiguous weights: one call for all the taps of a tile, used
    # from `min_run_tap_steps` steps per tap on.
    runs_symbol: str = ""
    min_run_tap_steps: int = 0
    # The same for an input already in the paired layout (Nest.stage), and the function
    # that pairs a pixel's input for it.
    staged_symbol: str = ""
    pair_symbol: str = ""
    # The same for a tile of two pixels, staged together (`pair_two_symbol`), against
    # weights whose rows are interleaved (kernel/paired.py `to_paired_rows`).
    two_pixel_symbol: str = ""
    pair_two_symbol: str = ""


# By dot kind. "dsp": runtime_c/ukernel/dsp/mrt_dot_dsp.c, 16 instructions per 16 MACs.
# Measured on cortex-m4: a tile without taps takes it from 4 steps on (vww_96's 32- and
# 16-channel pointwise layers: 14.52 M -> 13.91 M instructions with 4 instead of 16;
# 2 gains nothing more); a call per tap pays from 16 steps (pretrainedResnet's 3x3
# layers with 4 or 8 steps per tap lose 4 to 23% with it), one call for the window's
# three rows from 8 (its 32-channel layers -6%, the 64-channel one -8% against a call
# per tap; with 4 steps, 16 channels, the generated loop is 4.6% faster).
UKERNELS: dict[str, Ukernel] = {
    "dsp": Ukernel(symbol="mrt_dot_s8_paired_1x4", rows=4, min_steps=4, min_tap_steps=16,
                   call_cost=28, runs_symbol="mrt_dot_s8_paired_1x4_runs",
                   min_run_tap_steps=8, staged_symbol="mrt_dot_s16_paired_1x4",
                   pair_symbol="mrt_pair_s8", two_pixel_symbol="mrt_dot_s16_paired_2x4",
                   pair_two_symbol="mrt_pair2_s8"),
}
# A pixel's input is paired once (4 instructions a word, and the call) when its output
# channels are at least this many tiles: each saves 2 instructions a step (the SXTB16s).
STAGE_MIN_TILES = 3


def _ukernel_tile(s: _Shape, k: Kernel, tile: dict[int, int], loops: tuple[int, ...],
                  kind: str, unroll: tuple[int, ...], steps: int = 0) -> Ukernel | None:
    """The microkernel a packed tile is costed with, or None: one blocked dim of the
    kind's row count that only the paired (weight) operand depends on, enough steps,
    and no unrolled taps. (A tile with taps calls it per tap where it has the steps,
    codegen/dot_ukernel.py, but is costed as generated code: costed with calls, the
    model took 2 x 2 tiles for pretrainedResnet's last 3x3 layer, 10% slower than the
    4-channel tile it takes otherwise, which the calls then make 3% faster.) `steps`:
    the packed steps of one call where they are not the packed dim's (a staged window's
    taps are one call)."""
    uk = UKERNELS.get(kind)
    if unroll:
        return None
    blocked = [d for d, n in tile.items() if n > 1]
    if uk is None or not loops or (steps or k.domain[loops[-1]] // DOT_WIDTH) < uk.min_steps \
            or len(blocked) != 1 or tile[blocked[0]] != uk.rows \
            or len(s.loads) != 2 or sorted(s.paired) != [False, True]:
        return None
    (xdeps,), (wdeps,) = ([deps for deps, p in zip(s.loads, s.paired) if p is q]
                          for q in (False, True))
    return uk if blocked[0] in wdeps and blocked[0] not in xdeps else None


@dataclass(frozen=True)
class FloatLanes:
    """How a float sum of products computes `width` outputs at a time along parallel
    dim `dim` in the lanes of a vector register (`registers` of them): one operand is
    contiguous along dim (the weights of a convolution's or dense layer's output
    channels), the other does not depend on it (its value is broadcast), and the
    result is contiguous along it too. The emitter writes the tile as scalar code and
    LLVM's SLP vectorizer makes vectors of it, which it does for a tile of whole
    vectors along that dim (x86-64-v3: resnet8 2,249 -> 646 us per inference with
    4 pixels x 16 channels, two ymm accumulators per pixel)."""

    dim: int
    width: int
    registers: int

    def covers(self, tile: dict[int, int]) -> bool:
        """Whether the tile's outputs along dim are whole vectors."""
        return tile.get(self.dim, 1) % self.width == 0


# Vectors along its lane dim a FloatLanes tile with partial sums may span: LLVM's SLP
# vectorizer leaves wider ones scalar (autoencoder on x86-64-v3: 100 us per inference
# with 24 or 32 lanes x 2 partial sums, 37 us with 16 x 2).
MAX_PARTIAL_VECTORS = 2
# Vector registers a FloatLanes tile leaves free beyond its accumulators, held operand and
# one streamed vector: LLVM loads a tap's weight vectors and broadcasts ahead of their
# FMAs. resnet8 on x86-64-v3 (16 ymm): 883 us per inference with 2, 515 with 4 (3 rows x
# 2 vectors), 715 with 6.
FLOAT_VECTOR_TEMPS = 4


def float_lanes(k: Kernel, target: Target) -> FloatLanes | None:
    """The FloatLanes of kernel `k` on `target`, or None: a float sum of products of
    two loads (either converted, fp16 weights), a SIMD row with float_lane_tiles, and a
    parallel dim that is the result's last (contiguous) one, along
    which one operand is contiguous and unchecked and the other does not vary."""
    row = SIMD[target.capabilities.simd]
    body = k.body
    if not row.float_lane_tiles or k.combine != "add" or not k.acc_dtype.is_float \
            or not (isinstance(body, Apply) and body.op == "multiply"):
        return None
    loads = []
    for a in body.args:
        while isinstance(a, Apply) and a.op == "convert":
            a = a.args[0]
        if not isinstance(a, Load):
            return None
        loads.append(a)
    d = k.n_parallel - 1
    if d < 0 or k.domain[d] < row.float_lanes:
        return None
    if len(loads) != 2:
        return None
    for vector, other in (loads, loads[::-1]):
        flat = _flat_index(k, vector)
        if flat is not None and flat.coeff(d) == 1 and d not in _deps(other) \
                and vector.pad is None and vector.valid is None:
            break
    else:
        return None
    registers = row.vector_registers or target.capabilities.float_registers
    return FloatLanes(d, row.float_lanes, registers)


def dot_width(kind: str) -> int:
    """int8 elements per packed step of dot kind `kind`."""
    vk = VECTOR_DOT_KINDS.get(kind)
    return vk.width if vk is not None else DOT_WIDTH


# Vector registers a vector dot step needs besides the tile's accumulators and operand
# vectors: NEON's two 16-bit product registers between SMULL and SADALP.
VECTOR_TEMPS = 2


@dataclass(frozen=True)
class Budget:
    """How much code a tile may become."""

    max_tile: int  # outputs computed together (accumulators)
    max_copies: int  # copies of the body in one tile: outputs x unrolled taps
    max_unroll: int  # a reduced dim longer than this stays a loop
    loop_cost: int  # instructions a loop iteration costs besides its body
    # A cap on the straight-line code of a nest (_code: instructions, every tile shape
    # and region counted once). When the cheapest tile exceeds it, the cheapest tile
    # under it is taken instead if it costs at most `code_slack` more (else the
    # cheapest stays). docs/architecture.md, "Code size", has the measured trade.
    max_code: float = float("inf")
    code_slack: float = 0.0
    # A kernel of at most this many points (outputs x reduction steps) keeps its loops
    # as written (plain_schedule, with FMA where the target has it): a tile can save it
    # only a few thousand instructions, and costs its code. The int8 softmax's scalar
    # steps and dense head on cortex-m4: kws_ref_model 288 B less code for 3,805 more
    # instructions (0.07%), pretrainedResnet 468 B for 3,077; ad01's 8x128 layers
    # (1,024 points) would lose 3%, so they stay above it.
    cold_points: int = 0


BUDGETS: dict[str, Budget] = {
    "size": Budget(max_tile=24, max_copies=72, max_unroll=4, loop_cost=3, max_code=800,
                   code_slack=0.01, cold_points=1000),
    "speed": Budget(max_tile=32, max_copies=256, max_unroll=8, loop_cost=2),
}

FACTORS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
PARTIALS = (1, 2, 4)
# A float sum whose innermost loop runs at least this many times folds into 2 or more
# partial sums (when the registers allow): shorter chains of roundings. With one chain,
# the shared autoencoder's 128- and 640-term dots drift past --check's tolerance under
# FMA (worst element 1.15x the tolerance; 0.30x with partial sums). Convolutions, whose
# innermost loop is their input channels (at most 64 in the shared models), stay well
# within it (worst 0.02x) and keep their registers for larger tiles.
LONG_SUM = 128
# Registers a tile leaves for pointers and loop counters, beyond one per operand.
RESERVED_INT_REGISTERS = 2


@contextmanager
def tiles_for_cold_kernels() -> Iterator[None]:
    """Within it, microcontrollers tile every kernel however few its points (the size
    budget's cold_points is 0). The random-graph campaign builds in it: its graphs'
    tensors hold at most 96 elements, so nearly all their kernels are cold and would
    take the plain schedule, and the campaign is there to test the register tiles,
    interiors and packed steps the rules choose (the plain schedule is what every
    other schedule is checked against)."""
    saved = BUDGETS["size"]
    BUDGETS["size"] = dataclasses.replace(saved, cold_points=0)
    try:
        yield
    finally:
        BUDGETS["size"] = saved


def _budget(target: Target) -> Budget:
    return BUDGETS["size" if target.os == "none" else "speed"]


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


# --------------------------------------------------------------------------- cost model


def _deps(e: Expr) -> frozenset[int]:
    return frozenset(x.dim for x in postorder(e) if isinstance(x, Index))


def _arith_ops(e: Expr, k: Kernel) -> int:
    """Value operations of an expression: applies outside load indices (conversions
    of loads to a wider type are free: a sign-extending load). INDEX is i32, so index
    arithmetic is told apart by where it is, not by its type."""
    index_nodes: set[int] = set()
    for x in postorder(e):
        if isinstance(x, Load):
            for i in x.index:
                index_nodes.update(id(y) for y in postorder(i))
    return sum(1 for x in postorder(e) if isinstance(x, Apply) and x.op != "convert"
               and id(x) not in index_nodes)


@dataclass(frozen=True)
class _Shape:
    """What the cost model needs of a reduction nest's kernel."""

    loads: tuple[frozenset[int], ...]  # dims each distinct load of the body depends on
    paired: tuple[bool, ...]  # per load: its operand is in the paired layout
    operands: tuple[int, ...]  # per load: its kernel operand
    ops: int  # arithmetic per body value, the combine included
    epilogue: int  # arithmetic per output after the reduction, the store included
    float_acc: bool


def _shape(k: Kernel, fma: bool) -> _Shape:
    loads, paired, operands = [], [], []
    seen: set[tuple] = set()
    for e in postorder(k.body):
        if isinstance(e, Load):
            key = (e.operand, e.index)
            if key not in seen:
                seen.add(key)
                loads.append(_deps(e))
                paired.append(e.operand in k.paired)
                operands.append(e.operand)
    body_ops = _arith_ops(k.body, k) + 1
    float_acc = k.acc_dtype.is_float
    mul_add = isinstance(k.body, Apply) and k.body.op == "multiply" and k.combine == "add"
    if mul_add and (fma or not float_acc):  # VFMA / FMADD, and MLA / MADD for integers
        body_ops -= 1
    epi = (_arith_ops(k.epilogue, k) if k.epilogue is not None else 0) + 1
    return _Shape(tuple(loads), tuple(paired), tuple(operands), body_ops, epi, float_acc)


def _packed_load(paired: bool, operand: int, gathered: tuple[int, ...]) -> int:
    """Instructions a packed step spends on 4 elements of a load of `operand`."""
    if operand in gathered:
        return GATHERED_LOAD
    return PAIRED_LOAD if paired else UNPACKED_LOAD


def _tile_cost(s: _Shape, k: Kernel, tile: dict[int, int], unroll: tuple[int, ...],
               loops: tuple[int, ...], budget: Budget, partials: int = 1,
               packed: bool = False, kind: str = "",
               gathered: tuple[int, ...] = (), lanes: FloatLanes | None = None) -> float:
    """Instructions of one tile of `tile` outputs (dim -> size)."""
    width = lanes.width if lanes is not None and lanes.covers(tile) else 1
    points = prod(tile.values()) / width
    copies = points * prod(k.domain[d] for d in unroll)
    loads = 0.0
    packed_loads = 0  # per 4 elements: a word and its 2 unpacks, or a paired LDRD
    for deps, paired, op in zip(s.loads, s.paired, s.operands, strict=True):
        if not deps & set(loops):
            continue  # loop-invariant in the reduction: hoisted, counted per tile below
        n = prod(n for d, n in tile.items() if d in deps) * \
            prod(k.domain[d] for d in unroll if d in deps)
        if width > 1 and lanes.dim in deps:
            n /= width  # one vector load for the lanes; the other operand is broadcast
        loads += n
        packed_loads += n * _packed_load(paired, op, gathered)
    step = loads + copies * s.ops + (budget.loop_cost / partials if loops else 0)
    steps = prod(k.domain[d] for d in loops)
    vk = VECTOR_DOT_KINDS.get(kind) if packed else None
    if vk is not None:
        # Per 16 elements: the kind's loads and steps; the last 0-15 elements one at a
        # time; per output, the accumulator's zeroing, reduction and add to the sum.
        n = k.domain[loops[-1]]
        outer = steps // n
        full, rest = divmod(n, vk.width)
        vstep = vk.load_ops * loads + vk.step_ops * copies + budget.loop_cost
        per_pass = full * vstep + rest * step + points * (vk.finish_ops + 2)
        return outer * per_pass + points * (s.epilogue + partials - 1) + budget.loop_cost
    if packed:  # per 4 elements: the loads, 2 MACs per copy
        uk = _ukernel_tile(s, k, tile, loops, kind, unroll)
        # A microkernel's loop (unrolled once) costs 1 instruction a step, and a call per
        # pass over the packed dim.
        rows = max([prod(n for d, n in tile.items() if d in deps)
                    for deps, paired in zip(s.loads, s.paired, strict=True) if paired],
                   default=0)
        written_out = packed_written_out(k.domain[loops[-1]] // DOT_WIDTH, rows)
        step = packed_loads + 2 * copies + (1 if uk else 0 if written_out else budget.loop_cost)
        steps /= DOT_WIDTH
        if uk is not None:
            calls = steps * DOT_WIDTH / k.domain[loops[-1]]
            return (steps * step + calls * uk.call_cost + points * (s.epilogue + partials - 1)
                    + budget.loop_cost)
    return steps * step + points * (s.epilogue + partials - 1) + budget.loop_cost


_LOAD_FORMS: dict[int, tuple[Expr, list[list[Affine]]]] = {}


def _affine_loads(body: Expr) -> list[list[Affine]]:
    """The affine forms of the indices of each distinct load in `body` whose indices
    are all affine; cached by the body (the tile search asks for every candidate)."""
    hit = _LOAD_FORMS.get(id(body))
    if hit is not None and hit[0] is body:
        return hit[1]
    out, seen = [], set()
    for e in postorder(body):
        if isinstance(e, Load) and (e.operand, e.index) not in seen:
            seen.add((e.operand, e.index))
            forms = [affine_of(i) for i in e.index]
            if all(f is not None for f in forms):
                out.append(forms)
    if len(_LOAD_FORMS) > 256:
        _LOAD_FORMS.clear()
    _LOAD_FORMS[id(body)] = (body, out)
    return out


def _held_window(k: Kernel, tile: dict[int, int], unroll: tuple[int, ...]) -> int:
    """Values of a load the tile keeps live across its unrolled taps, or 0. The emitter
    runs the taps in order, the first unrolled dim slowest, and reads each distinct
    value once. Where an index slides with both a blocked dim and that outermost tap
    dim (a tile of rows against the window's ky), a value read in one pass of it is read
    again in a later one: every value of the window stays live from its first tap to
    its last. A tile along an inner tap dim (columns against kx) uses each value within
    one pass. On cortex-m4 a 2 x 4 tile of vww_96's 3x3 depthwise layers spilled its
    24 window values (3.85 instructions per MAC; 1 x 6 columns: 3.4)."""
    if len(unroll) < 2:
        return 0
    outer = set(unroll[:1])
    extents = {d: n for d, n in tile.items() if n > 1}
    extents.update((u, k.domain[u]) for u in unroll)
    held = 0
    for forms in _affine_loads(k.body):
        if not any(any(d in tile and tile[d] > 1 for d, _ in f.terms)
                   and any(d in outer for d, _ in f.terms) for f in forms):
            continue
        values = 1
        for f in forms:
            spans = [(extents[d], abs(c)) for d, c in f.terms if d in extents]
            values *= min(prod(n for n, _ in spans), 1 + sum((n - 1) * c for n, c in spans))
        held = max(held, values)
    return held


def _fits(s: _Shape, tile: dict[int, int], n_operands: int, target: Target,
          partials: int = 1, packed: bool = False, kind: str = "",
          lanes: FloatLanes | None = None, window: int = 0) -> bool:
    caps = target.capabilities
    points = prod(tile.values()) * partials
    # The tile holds one operand's values for all its outputs and streams the others
    # through a register: the smallest set is the one to hold; a window the taps share
    # (_held_window) is held too.
    footprints = sorted(prod(n for d, n in tile.items() if d in deps) for deps in s.loads)
    widest = max(footprints[0] if footprints else 1, window)
    if lanes is not None and lanes.covers(tile):
        # Vector accumulators, the held operand's vectors (or its one broadcast value)
        # and a streamed vector.
        held = min((prod(n for d, n in tile.items() if d in deps)
                    // (lanes.width if lanes.dim in deps else 1)) for deps in s.loads)
        return points // lanes.width + held + 1 + FLOAT_VECTOR_TEMPS <= lanes.registers
    vk = VECTOR_DOT_KINDS.get(kind) if packed else None
    if vk is not None:
        # Vector registers: the accumulators (unless they are scalars), the held
        # operand's vectors, the streamed ones (all loaded ahead, as for the DSP words)
        # and the step's temporaries; general registers: scalar accumulators and the
        # operands' pointers.
        vacc = points if vk.acc_lanes else 0
        vectors = vacc + sum(footprints) + VECTOR_TEMPS
        scalars = (0 if vk.acc_lanes else points) + n_operands + RESERVED_INT_REGISTERS
        return (vectors <= SIMD[caps.simd].vector_registers
                and scalars <= caps.int_registers)
    if packed:
        # The held operand's words live unpacked, as two registers of 16-bit pairs.
        # LLVM issues the streamed operand's word loads of a step together, ahead of
        # their SXTB16s (to hide load latency), so those words are all live at once:
        # counting them as one register let a 6-output dense tile through that spilled
        # its accumulators on every step (ad01_int8 on cortex-m4: 2.53 instructions per
        # MAC in its 128x128 layers, 2.07 with the 4-output tile this admits instead).
        widest = 2 * widest + sum(footprints[1:])
    if s.float_acc and caps.float_registers:
        return points + widest + 1 <= caps.float_registers
    free = caps.int_registers - n_operands - RESERVED_INT_REGISTERS
    return points + widest <= max(free, 2)


def _total(s: _Shape, k: Kernel, factors: dict[int, int], unroll: tuple[int, ...],
           loops: tuple[int, ...], budget: Budget, partials: int, packed: bool,
           kind: str = "", gathered: tuple[int, ...] = (),
           lanes: FloatLanes | None = None) -> float:
    """Cost of the whole nest: full tiles and the remainder tiles of each dim."""
    parts: list[list[tuple[int, int]]] = []  # per blocked dim: (tile size, how many)
    for d, f in factors.items():
        n = k.domain[d]
        opts = [(f, n // f)] + ([(n % f, 1)] if n % f else [])
        parts.append([(size, count) for size, count in opts if count])
    others = prod(n for d, n in enumerate(k.domain[:k.n_parallel]) if d not in factors)
    total = 0.0
    dims = list(factors)
    for combo in itertools.product(*parts):
        tile = {d: size for d, (size, _) in zip(dims, combo)}
        count = prod(c for _, c in combo)
        total += count * _tile_cost(s, k, tile, unroll, loops, budget, partials, packed,
                                    kind, gathered, lanes)
    return total * others


def _distinct_tiles(k: Kernel, factors: dict[int, int],
                    interior: dict[int, tuple[int, int]]) -> list[dict[int, int]]:
    """The tiles (dim -> size, sizes above 1) the emitter writes out once each: a tile
    differs by its size in each blocked dim (the full tile, the remainder) and, in a dim
    with an interior, by region (the border, one value at a time, and the interior's
    tiles: different checks)."""
    variants: list[list[int]] = []
    for d in range(k.n_parallel):
        n, f = k.domain[d], factors.get(d, 1)
        lo, hi = interior.get(d, (0, n)) if f < n else (0, n)  # _nest: no split
        sizes = [1] if (lo, hi) != (0, n) else []  # the border
        full, rest = divmod(hi - lo, f)
        sizes += ([f] if full else []) + ([rest] if rest else [])
        variants.append(sizes)
    return [{d: t for d, t in enumerate(combo) if t > 1}
            for combo in itertools.product(*variants)]


def _code(s: _Shape, k: Kernel, factors: dict[int, int], unroll: tuple[int, ...],
          loops: tuple[int, ...], interior: dict[int, tuple[int, int]],
          packed: bool, kind: str = "", gathered: tuple[int, ...] = ()) -> float:
    """Instructions of straight-line code the nest becomes (a size estimate): each
    distinct tile (_distinct_tiles) written out once."""
    code = 0.0
    for tile in _distinct_tiles(k, factors, interior):
        points = prod(tile.values())
        copies = points * prod(k.domain[d] for d in unroll)
        counts = [(prod(n for d, n in tile.items() if d in deps)
                   * prod(k.domain[d] for d in unroll if d in deps), paired, op)
                  for deps, paired, op in zip(s.loads, s.paired, s.operands, strict=True)]
        loads = sum(n for n, _, _ in counts)
        packed_loads = sum(n * _packed_load(paired, op, gathered) for n, paired, op in counts)
        vk = VECTOR_DOT_KINDS.get(kind) if packed else None
        if vk is not None:
            step = vk.load_ops * loads + vk.step_ops * copies + points * vk.finish_ops
            if loops and k.domain[loops[-1]] % vk.width:  # the remainder, one at a time
                step += loads + copies * s.ops
        else:
            step = packed_loads + 2 * copies if packed else loads + copies * s.ops
        code += step + points * s.epilogue
    return code


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
    words = [_word_packable(k, ld, d) for ld in operands]
    if all(words):
        return ()
    if any(words):
        gathered = next(ld for ld, w in zip(operands, words, strict=True) if not w)
        if gathered.operand not in k.paired and \
                all(affine_of(i) is not None for i in gathered.index):
            return (gathered.operand,)
    return None


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
    par = [d for d in range(k.n_parallel) if k.domain[d] > 1 and d not in unblocked]
    body_operands = len({e.operand for e in postorder(k.body) if isinstance(e, Load)})
    dot = SIMD[target.capabilities.simd].int8_dot if dot_operands(k) else ""
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
    layouts: dict[tuple[int, ...], list] = {}  # by unrolled dims: the same for every tile
    for chosen in itertools.chain([()], itertools.combinations(par, 1),
                                  itertools.combinations(par, 2)):
        for fs in itertools.product(*[[f for f in _factors(d, lanes) if 1 < f <= k.domain[d]]
                                      for d in chosen]):
            factors = dict(zip(chosen, fs))
            width = lanes.width if lanes is not None and lanes.covers(factors) else 1
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
                    code = _code(sc, k, factors, unroll, loops, interior, packed, dot, g) \
                        / width
                    # Long float sums first take a split that keeps their error down.
                    key = (long_sum and partials == 1, cost, points, partials)
                    candidates.append((key, code, factors, unroll, loops, partials,
                                       dot if packed else "", width))
    candidates += _lane_candidates(k, target, s, budget, par)
    candidates += _staged_window_candidates(k, s, dot, interior)
    assert candidates
    best = min(candidates, key=lambda c: c[0])
    if best[1] > budget.max_code:
        # The cheapest tile under the code cap, if it costs little more (and is as
        # careful with long float sums).
        small = [c for c in candidates if c[1] <= budget.max_code and c[0][0] == best[0][0]
                 and c[0][1] <= best[0][1] * (1 + budget.code_slack)]
        best = min(small, key=lambda c: c[0], default=best)
    _, _, factors, unroll, loops, partials, kind, width = best
    blocks = tuple((d, f) for d, f in sorted(factors.items()) if f > 1)
    return Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), loops, unroll, blocks,
                partials=partials, dot=kind, vector=width if width > 1 else 0,
                stage=_stages(s, k, factors, unroll, loops, kind))


def _staged_window_candidates(k: Kernel, s: _Shape, dot: str,
                              interior: dict[int, tuple[int, int]]) -> list[tuple]:
    """The staged tile (Nest.stage) of a window whose packed steps gather the input
    element by element (a 10x4 window over one input channel, whose rows of 4 taps
    start at odd bytes): every reduced dim but the packed one unrolled as taps, the
    pixel's window staged once in the paired layout, each tile of the microkernel's
    rows of output channels one call over all its steps. The other layouts cost its
    gathers once per tile, so this one is costed here: per tile the staged call's steps
    (an LDRD of input and one per row, 2 SMLADs per row), its call and the epilogues;
    per pixel the staging, a gathered step per step."""
    uk = UKERNELS.get(dot)
    reduced = [d for d in range(k.n_parallel, len(k.domain)) if k.domain[d] > 1]
    if uk is None or not uk.staged_symbol or len(reduced) < 2:
        return []
    *taps, packed = reduced
    unroll, loops = tuple(taps), (packed,)
    d = k.n_parallel - 1
    factors = {d: uk.rows}
    if _packing(k, packed, dot) in (None, ()) or k.domain[d] % uk.rows or \
            not _stages(s, k, factors, unroll, loops, dot):
        return []
    steps = prod(k.domain[u] for u in unroll) * k.domain[packed] // DOT_WIDTH
    tile = steps * (PAIRED_LOAD + 3 * uk.rows) + uk.call_cost + uk.rows * s.epilogue
    stage = steps * GATHERED_LOAD
    pixels = prod(k.domain[:k.n_parallel]) // k.domain[d]
    cost = pixels * (k.domain[d] // uk.rows * tile + stage)
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
        if unroll and packing else 0
    if _ukernel_tile(s, k, factors, loops, kind, (), steps) is not uk:
        return False
    if unroll and (packing is None or k.domain[loops[-1]] % DOT_WIDTH or len(loops) != 1):
        return False
    (d,) = [d for d, n in factors.items() if n > 1]
    operands = dot_operands(k)
    x = next(ld for ld in operands if ld.operand not in k.paired)
    return d == k.n_parallel - 1 and k.domain[d] >= STAGE_MIN_TILES * uk.rows \
        and (x.pad is None or (bool(unroll) and isinstance(x.pad, Const))
             or _never_padded(k, x)) \
        and x.valid is None


def _never_padded(k: Kernel, ld: Load) -> bool:
    """Whether every index of `ld` stays inside its operand over the whole domain (a
    padding of zero widths: a 1x1 convolution behind a `pad` op of nothing)."""
    ranges = {d: (0, n - 1) for d, n in enumerate(k.domain)}
    forms = [affine_of(i) for i in ld.index]
    return all(f is not None and f.interval(ranges)[0] >= 0 and f.interval(ranges)[1] < n
               for f, n in zip(forms, k.operands[ld.operand].shape, strict=True))


def _factors(d: int, lanes: FloatLanes | None) -> tuple[int, ...]:
    """The blocking factors tried for parallel dim d: FACTORS, and along a FloatLanes
    dim one to four whole vectors."""
    if lanes is None or d != lanes.dim:
        return FACTORS
    return tuple(sorted({*FACTORS, *(lanes.width * m for m in range(1, 5))}))


def lane_dim(k: Kernel) -> int | None:
    """The parallel dim of an int8 sum of products along which both operands are
    contiguous (stride 1: a depthwise convolution's channels), else None."""
    operands = dot_operands(k)
    if operands is None:
        return None
    flats = [_flat_index(k, ld) for ld in operands]
    if any(f is None for f in flats):
        return None
    found = None
    for d in range(k.n_parallel):
        if all(f.coeff(d) == 1 for f in flats):
            found = d
    return found


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


def _elementwise_nest(k: Kernel, target: Target) -> Nest:
    lanes = SIMD[target.capabilities.simd].float_lanes
    vector = lanes if lanes > 1 and k.result.dtype.is_float else 0
    return Nest(k.domain, k.n_parallel, tuple(range(k.n_parallel)), vector=vector)


def _nest(k: Kernel, phases: tuple[Phase, ...], target: Target, fma: bool,
          unblocked: frozenset[int] = frozenset()) -> Nest:
    nk = nest_kernel(k, phases)
    if 0 in nk.domain[:nk.n_parallel]:
        return Nest(nk.domain, nk.n_parallel, tuple(range(nk.n_parallel)), phases=phases)
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
    lanes = nest.vector or nest.dot == LANE_KIND
    interior = tuple((d, lo, hi) for d, (lo, hi) in sorted(interior_ranges(nk).items())
                     if lanes or nest.block(d) < nk.domain[d])
    if nest.stage and nest.unroll and _packing(nk, nest.reduction[-1], nest.dot):
        interior = ()
    blocks, stage = nest.blocks, nest.stage
    if nk.interleaved:
        p = two_pixel_dim(nk, nest, unblocked)
        if p is None:
            raise ValueError(f"kernel {k.name!r}: its interleaved weights need the 2x4 "
                             f"microkernel, which its schedule cannot take")
        blocks, stage = tuple(sorted((*blocks, (p, 2)))), 2
    return Nest(nest.domain, nest.n_parallel, nest.order, nest.reduction, nest.unroll,
                blocks, interior, phases, nest.vector, nest.partials, nest.dot,
                stage=stage)


def two_pixel_dim(k: Kernel, nest: Nest, unblocked: frozenset[int] = frozenset()) -> int | None:
    """The parallel dim whose pixels a staged nest of `k` can take two at a time (the 2x4
    microkernel: UKERNELS' two_pixel_symbol), with its weights' rows interleaved, or
    None. The nest stages one pixel's input for tiles of the kernel's rows of output
    channels (the innermost dim, a whole number of tiles), and each weight row is
    `k`'s reduction, read whole and in order by every output: the weights are indexed
    by that channel first (a row per channel) and by the reduced dims after, a multiple
    of 4 elements. Of the dims the input depends on and the weights do not (not
    `unblocked`), the one that leaves the fewest pixels without a partner, then the
    longest. Only for an integer result (a requantized int8 one): the 8 outputs' float
    epilogues of kws_ref_model_float32's pointwise layers (int8 products, dequantized)
    spilled, 0.718 M -> 0.808 M instructions a layer against 1 x 4."""
    uk = UKERNELS.get(nest.dot)
    operands = dot_operands(k)
    d = k.n_parallel - 1
    if uk is None or not uk.two_pixel_symbol or nest.stage != 1 or operands is None or \
            nest.block(d) != uk.rows or k.domain[d] % uk.rows or k.result.dtype.is_float:
        return None
    if nest.unroll and _packing(k, nest.reduction[-1], nest.dot) == ():
        return None  # a window staged by words: one pixel (its taps in runs)
    x, w = operands if operands[1].operand in k.paired else operands[::-1]
    shape = k.operands[w.operand].shape
    length = prod(shape[1:])
    if shape[0] != k.domain[d] or length % DOT_WIDTH or \
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
    return max(pixels, key=lambda p: (k.domain[p] // 2 * 2 / k.domain[p], k.domain[p]),
               default=None)


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
    if prod(k.domain) <= _budget(target).cold_points and not phases_of(k) and \
            not k.interleaved:
        return dataclasses.replace(plain_schedule(k), fma=fma)
    phases = phases_of(k) or [()]
    nests = tuple(n for n in (_nest(k, p, target, fma, unblocked) for p in phases)
                  if 0 not in n.domain[:n.n_parallel])
    return LoopSchedule(k.name, nests, fma)
