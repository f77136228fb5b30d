"""The instruction model the loop-schedule rules (loops/rules.py) cost a register tile
with, and the register budget it must fit.

The model, per pass of a tile over the reduction: one load per distinct operand value
the tile needs (a weight shared by the tile's outputs is loaded once), the arithmetic
of every output (a multiply-add counts once with FMA), a loop's own increment, compare
and branch; per output the epilogue and the store. Extents that are no multiple of the
factor pay for their remainder tile. Packed int8 steps (DSP, vector dot kinds, the
microkernels) and float tiles in vector lanes (FloatLanes) are costed as they run.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod

from toolchain.kernel.form import Apply, Expr, Kernel, Load, postorder
from toolchain.loops.access import _deps, _flat_index
from toolchain.loops.affine import Affine, affine_of
from toolchain.loops.patterns import int16_dot
from toolchain.loops.tables import (
    DOT_WIDTH,
    GATHERED_LOAD,
    PAIRED_LOAD,
    RESERVED_INT_REGISTERS,
    SIMD,
    UKERNELS,
    UNPACKED_LOAD,
    VECTOR_DOT_KINDS,
    VECTOR_TEMPS,
    Budget,
    Ukernel,
    packed_written_out,
)
from toolchain.target.descriptors import Target

__all__ = ["FloatLanes", "float_lanes"]


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
    # An int16 dot's operands are read as stored, a word pair per packed step (one
    # LDRD), as paired int8 weights are.
    natural = int16_dot(k)
    seen: set[tuple] = set()
    for e in postorder(k.body):
        if isinstance(e, Load):
            key = (e.operand, e.index)
            if key not in seen:
                seen.add(key)
                loads.append(_deps(e))
                paired.append(natural or e.operand in k.paired)
                operands.append(e.operand)
    body_ops = _arith_ops(k.body, k) + 1
    float_acc = k.acc_dtype.is_float
    mul_add = isinstance(k.body, Apply) and k.body.op == "multiply" and k.combine == "add"
    if mul_add and (fma or not float_acc):  # VFMA / FMADD, and MLA / MADD for integers
        body_ops -= 1
    epi = (_arith_ops(k.epilogue, k) if k.epilogue is not None else 0) + 1
    return _Shape(tuple(loads), tuple(paired), tuple(operands), body_ops, epi, float_acc)


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
    registers = row.float_vector_registers or row.vector_registers or \
        target.capabilities.float_registers
    return FloatLanes(d, row.float_lanes, registers)


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
        return points // lanes.width + max(held, window) + 1 + FLOAT_VECTOR_TEMPS \
            <= lanes.registers
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
