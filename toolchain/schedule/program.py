"""Graph -> Program: lower, fuse, order and place every buffer.

Control flow is flattened first (schedule/control.py): the program is one command list
with branch commands. The arena is planned by linear scan over that order: each buffer
gets the first free, 16-byte aligned hole that fits at its first command and is freed
after its last, where a buffer that a loop's next iteration reads again (used in more
than one block inside the loop) stays live over the whole loop. A result shares memory
with an operand only in place: it takes the buffer of an operand that dies at its
command when the kernel reads that operand element by element at the result's own
index (schedule/inplace.py: element-wise and per-channel ops, epilogues).

The program also records the arena's lower bound for that liveness: the largest sum of
the buffers live at one command (each rounded up to the 16-byte alignment every buffer
has; buffers sharing memory in place count once). No placement of those buffers can
use less; the size report shows the arena against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.kernel.branch import Branch
from toolchain.kernel.flatten import flatten_elementwise
from toolchain.kernel.form import (
    MAX_OPERANDS,
    Kernel,
)
from toolchain.kernel.lower import lower_node
from toolchain.kernel.requant import fold_requantization
from toolchain.loops import LoopSchedule, choose_schedule
from toolchain.loops.depthwise import banded_row_order
from toolchain.loops.depthwise5 import takes_depthwise5
from toolchain.loops.requant_lanes import keeps_vector_requant
from toolchain.loops.rules import takes_row_pairs
from toolchain.schedule.control import Flattener
from toolchain.schedule.copies import elide_copies
from toolchain.schedule.fuse import Dispatch, drop_unused_operands, fuse
from toolchain.schedule.im2col_lanes import kernel_takes_im2col
from toolchain.schedule.immediates import scalars_as_immediates
from toolchain.schedule.inplace import writes_over
from toolchain.schedule.items import Item, Jump, Label, copy_dispatch, reads, writes
from toolchain.schedule.kinds import immediates_in_kinds, inline_into_kinds
from toolchain.schedule.overlap import OverlapWalk
from toolchain.schedule.sources import StepSources, step_sources
from toolchain.schedule.split_tail import inline_tails, split_lookup_tails
from toolchain.schedule.widen16_kernels import widened_schedule
from toolchain.target import Target
from toolchain.types import TensorType

ALIGN = 16


@dataclass(frozen=True)
class Buffer:
    """Where a dispatch operand lives: `arena` offset, `constant` index, `input` / `output`
    index."""

    kind: str
    index: int
    size: int


@dataclass
class Step:
    """One command: a kernel (a generic Kernel, or another kind: a Branch, ...) and the
    buffers bound to it, in the order it takes them."""

    kernel: Any  # Kernel | Branch | another kind with `binding_types`
    buffers: list[Buffer]  # operands, then the result(s)
    # The loop schedule code generation must follow: set when the result overlaps an
    # operand's memory, which is safe for this schedule only (schedule/overlap.py).
    schedule: LoopSchedule | None = None
    # The model's ops the command runs, for the reports only (schedule/sources.py).
    sources: StepSources | None = None

    @property
    def types(self) -> tuple[TensorType, ...]:
        """The tensor type the kernel's code accesses through each binding."""
        if isinstance(self.kernel, Kernel):
            return (*self.kernel.operands, self.kernel.result)
        return tuple(self.kernel.binding_types)

    @property
    def is_branch(self) -> bool:
        """Whether the command picks the next command (control flow)."""
        return isinstance(self.kernel, Branch)


@dataclass
class Program:
    name: str
    steps: list[Step] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    constant_types: list[TensorType] = field(default_factory=list)
    # constant index -> index of the quantized weight whose scales it holds
    constant_scales_of: dict[int, int] = field(default_factory=dict)
    # Constants held as their bit-packed bytes (schedule/sub_byte.py); their
    # constant_types stay the logical sub-byte types.
    bit_packed: set[int] = field(default_factory=set)
    inputs: list[TensorType] = field(default_factory=list)
    outputs: list[TensorType] = field(default_factory=list)
    arena_size: int = 0
    # The largest sum of live arena buffers at one command (module docstring).
    arena_lower_bound: int = 0
    # The bytes of arena buffers live at each command (the lower bound is their peak):
    # the report's memory timeline.
    arena_live: list[int] = field(default_factory=list)
    # The last state_count inputs and outputs are the state's slots (graph/ir.py): one
    # buffer per pair, the image's state region, not the caller's.
    state_count: int = 0
    # What the build chose under --optimize (schedule/optimize.py OptimizeChoice; typed
    # loosely: that module imports this one), None before the weights are stored.
    optimize: Any = None
    # The layers scheduled from the tuning database (tunedb/database.py Session.used):
    # key, label, kernels, schedule, source; the size report lists them.
    tuned: list[dict[str, Any]] = field(default_factory=list)


def nbytes(t: TensorType) -> int:
    """Bytes of a dense buffer of type t (i1 takes a byte per element, bf16 two)."""
    return t.num_elements * t.dtype.itemsize


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class _Arena:
    """First-fit allocator over [0, size) with a free list of holes."""

    def __init__(self) -> None:
        self.used: list[tuple[int, int]] = []  # (offset, size), sorted
        self.size = 0

    def alloc(self, size: int) -> int:
        size = _align(max(size, 1))
        offset = 0
        for start, length in self.used:
            if start - offset >= size:
                break
            offset = max(offset, _align(start + length))
        self.used.append((offset, size))
        self.used.sort()
        self.size = max(self.size, offset + size)
        return offset

    def free(self, offset: int) -> None:
        self.used = [(s, n) for s, n in self.used if s != offset]


def _dispatches(node: Node) -> list[Dispatch]:
    """The dispatches computing `node`: one, except for a concatenate of more tensors than
    a command can bind, which becomes a tree of concatenates of at most MAX_OPERANDS."""
    inputs = list(node.inputs)
    out: list[Dispatch] = []
    dim = node.attrs.get("dimension")
    while node.op == "concatenate" and len(inputs) > MAX_OPERANDS:
        joined = []
        for i in range(0, len(inputs), MAX_OPERANDS):
            group = inputs[i:i + MAX_OPERANDS]
            if len(group) == 1:
                joined.append(group[0])
                continue
            shape = list(group[0].type.shape)
            shape[dim] = sum(t.type.shape[dim] for t in group)
            part = Node("concatenate", group, [], {"dimension": dim}, node.loc,
                        source=node.source)
            part.outputs = [Tensor(replace(node.output.type, shape=tuple(shape)), "", part)]
            out.append(Dispatch(lower_node(part), group, part.output))
            joined.append(part.output)
        inputs = joined
    if len(inputs) != len(node.inputs):
        node = Node(node.op, inputs, node.outputs, node.attrs, node.loc)
    out.append(Dispatch(lower_node(node), inputs, node.output))
    return out


def _folded_requantization(d: Dispatch, constants: dict[int, np.ndarray],
                           target: Target | None = None,
                           flash_records: bool = True) -> Dispatch:
    """The int8 requantization in d's epilogue as one 64-bit add and shift where its
    constants allow (kernel/requant.py); the per-channel constants that form needs are
    new constant operands, registered in `constants`. On Helium a depthwise layer
    computed in vector lanes keeps TFLite's two steps, which it runs 4 lanes at a time
    (loops/requant_lanes.py), unless a DSP microkernel does better (`flash_records`:
    whether the build may bind records in flash, which the 5x5 one needs)."""
    def constant_of(i: int) -> np.ndarray | None:
        return constants.get(id(d.operands[i]))

    kept = keeps_vector_requant(d.kernel, target, constant_of)
    # The per-channel multiplier is a table in flash: not under --optimize size.
    kernel, new = fold_requantization(d.kernel, constant_of,
                                      flash_records and _shared_per_channel(target))
    # Unless the folded kernel goes to a DSP microkernel instead of lanes: the 3x3 row
    # pairs (loops/rules.py takes_row_pairs: channels not in whole vectors), the 5x5
    # one (loops/depthwise5.py takes_depthwise5) or the im2col one (a first layer,
    # schedule/im2col_lanes.py); the last two run only with their records in flash:
    # without them (--optimize size) the folded 5x5 layer fell to the generic tiles,
    # 0.48 MAC per instruction against the lanes' 0.59 (10x10 over 16 channels).
    if kept is not None and not takes_row_pairs(kernel, target) and \
            not (flash_records and (takes_depthwise5(kernel, target)
                                    or kernel_takes_im2col(kernel, target))):
        return Dispatch(kept, d.operands, d.output)
    if kernel is d.kernel:
        return d
    tensors = [Tensor(t, "requant") for t, _ in new]
    for t, (_, values) in zip(tensors, new, strict=True):
        constants[id(t)] = values
    return drop_unused_operands(Dispatch(kernel, [*d.operands, *tensors], d.output))


def _shared_per_channel(target: Target | None) -> bool:
    """Whether a layer's one requantization multiplier is read per output channel
    (kernel/requant.py): on a core with no DSP or SIMD and 14 general registers
    (cortex-m3), where the generic reduction loop of 8 accumulators holds every register
    and the multiplier hoisted out of it made two of them spill. Elsewhere, cortex-m0plus
    included, loaded once is faster (docs/architecture.md has the figures)."""
    if target is None:
        return False
    caps = target.capabilities
    return not caps.dsp and caps.simd == "none" and caps.int_registers == 14


def _segments(items: list[Item]) -> list[tuple[int, int]]:
    """[start, end) of each run of consecutive plain dispatches: the units fusion works
    on (a label, jump or other kernel kind ends a run)."""
    runs, start = [], None
    for i, item in enumerate(items + [Label(-1)]):
        if isinstance(item, Dispatch):
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i))
            start = None
    return runs


def _fuse_segments(items: list[Item], outputs: set[int],
                   constants: dict[int, np.ndarray],
                   target: Target | None = None, flash_records: bool = True) -> list[Item]:
    """Fuses each run of dispatches on its own. A run keeps materialized what anything
    outside it reads and every tensor written more than once (a loop's state, an if's
    results), so nothing is inlined across a label or out of its loop iteration."""
    written: dict[int, int] = {}
    for item in items:
        for t in writes(item):
            written[id(t)] = written.get(id(t), 0) + 1
    multi = {tid for tid, n in written.items() if n > 1}
    out: list[Item] = []
    last = 0
    for start, end in _segments(items):
        out += items[last:start]
        outside = {id(t) for k, item in enumerate(items) if not start <= k < end
                   for t in reads(item)}
        run = fuse([i for i in items[start:end] if isinstance(i, Dispatch)],
                   keep=outputs | outside | multi, constants=set(constants))
        parts = [split_lookup_tails(_folded_requantization(
            scalars_as_immediates(d, constants), constants, target, flash_records), target)
            for d in run]
        tails = {id(p[1]) for p in parts if len(p) == 2}
        out += inline_tails([d for p in parts for d in p], tails,
                            outputs | outside | multi)
        last = end
    return out + items[last:]


def _drop_fallthrough_jumps(items: list[Item]) -> list[Item]:
    """An unconditional jump to the label right after it (through other labels) is no
    command at all."""
    out: list[Item] = []
    for k, item in enumerate(items):
        if isinstance(item, Jump) and item.selector is None:
            following = set()
            for nxt in items[k + 1:]:
                if not isinstance(nxt, Label):
                    break
                following.add(nxt.id)
            if item.targets[0] in following:
                continue
        out.append(item)
    return out


def _live_intervals(steps_io: list[tuple[list[Tensor], list[Tensor]]],
                    block_of: list[int], back_edges: list[tuple[int, int]]
                    ) -> dict[int, list[int]]:
    """Per tensor id, [first, last] step that touches it, widened for loops: a tensor
    used in more than one straight-line block, live anywhere within a back edge's span
    [target, jump], stays live over the whole span (its next iteration reads it
    again). A tensor used in one block only is rewritten before it is read on every
    pass, so its own span is enough."""
    span: dict[int, list[int]] = {}
    blocks: dict[int, set[int]] = {}
    for k, (rd, wr) in enumerate(steps_io):
        for t in rd + wr:
            s = span.setdefault(id(t), [k, k])
            s[0], s[1] = min(s[0], k), max(s[1], k)
            blocks.setdefault(id(t), set()).add(block_of[k])
    changed = True
    while changed:
        changed = False
        for lo, hi in back_edges:
            for tid, s in span.items():
                if len(blocks[tid]) > 1 and s[0] <= hi and s[1] >= lo and \
                        (s[0] > lo or s[1] < hi):
                    s[0], s[1] = min(s[0], lo), max(s[1], hi)
                    changed = True
    return span


def schedule(graph: Graph, in_place: bool = True, target: Target | None = None,
             materialize: frozenset[int] = frozenset(), flash_records: bool = True
             ) -> Program:
    """Builds the Program for a verified, constant-folded graph. With `in_place` False,
    every result gets a buffer of its own (to measure what in-place saves). With a
    `target`, a result may also start below an operand that dies at its step, by a
    distance checked against the loop schedule the step will run on that target
    (schedule/overlap.py); such steps record that schedule (Step.schedule). The
    tensors whose ids are in `materialize` are never fused into their readers
    (schedule/pad_channels.py's padded inputs). `flash_records`: whether the build may
    bind microkernel records in flash (not under --optimize size), which decides some
    kernels' requantization (`_folded_requantization`)."""
    flat = Flattener(_dispatches)
    flat.graph(graph)
    items, constants = flat.items, flat.constants
    # Every graph output must be written by a dispatch of its own (outputs are separate
    # caller buffers): copy inputs, constants and repeated outputs into place.
    outputs: list[Tensor] = []
    produced = {id(t) for item in items for t in writes(item)}
    seen: set[int] = set()
    alias: dict[int, Tensor] = {id(d): src for d, src, _ in flat.assignments}
    n_states = len(graph.states)
    state_values = [flat.resolve(t) for t in graph.outputs[len(graph.outputs) - n_states:]]
    for t in map(flat.resolve, graph.user_outputs):
        if id(t) not in produced or id(t) in seen:
            dst = Tensor(t.type, "copy")
            alias[id(dst)] = t
            items.append(copy_dispatch(t, dst))
            t = dst
        seen.add(id(t))
        outputs.append(t)
    out_ids = {id(t) for t in outputs}
    # The new state values are kept whole (each is stored in the state region: below).
    kept = out_ids | {id(t) for t in state_values}
    items = inline_into_kinds(items, set(constants))
    items = _fuse_segments(items, kept | flat.pinned | materialize, constants, target,
                           flash_records)
    items = immediates_in_kinds(items, constants)
    items = elide_copies(items, flat.assignments, kept)
    stores, state_outputs = _state_stores(items, graph, state_values, out_ids)
    items += stores
    outputs += state_outputs
    items = _drop_fallthrough_jumps(items)

    # Steps in order; labels name the step that follows them.
    label_step: dict[int, int] = {}
    entries: list[tuple[Item, list[Tensor], list[Tensor]]] = []
    block_of: list[int] = []
    block = 0
    for item in items:
        if isinstance(item, Label):
            label_step[item.id] = len(entries)
            block += 1
            continue
        entries.append((item, reads(item), writes(item)))
        block_of.append(block)
        if isinstance(item, Jump):
            block += 1
    back_edges = [(label_step[t], k) for k, (item, _, _) in enumerate(entries)
                  if isinstance(item, Jump) for t in item.targets if label_step[t] <= k]
    span = _live_intervals([(rd, wr) for _, rd, wr in entries], block_of, back_edges)

    program = Program(graph.name, inputs=[t.type for t in graph.inputs],
                      outputs=[t.type for t in outputs], state_count=len(graph.states))
    where: dict[int, Buffer] = {}
    for i, t in enumerate(graph.inputs):
        where[id(t)] = Buffer("input", i, nbytes(t.type))
    for i, t in enumerate(outputs):
        where[id(t)] = Buffer("output", i, nbytes(t.type))
    arena_tensors: dict[int, Tensor] = {}
    for _, rd, wr in entries:
        for t in wr + rd:
            if id(t) not in where and id(t) not in constants:
                arena_tensors.setdefault(id(t), t)
    plan = _place(entries, span, arena_tensors, where, in_place, {})
    options = {} if target is None else _overlaps(entries, span, back_edges,
                                                  arena_tensors, where, target)
    # Overlapped results chain (each starts below or above its operand), so a pair's
    # saving is not always worth its drift: every pair, only the pairs that save at
    # least 7/8 of their result, or none; the smallest arena wins. Each chain takes the
    # directions that keep its block smallest (_directions).
    close = {tid: kept for tid, opts in options.items()
             if (kept := tuple(o for o in opts
                               if 8 * o.distance <= nbytes(arena_tensors[tid].type)))}
    for some in (options, close):
        if some:
            chosen = _directions(some, arena_tensors)
            candidate = _place(entries, span, arena_tensors, where, in_place, chosen)
            if candidate.size < plan.size:
                plan = candidate
    where.update(plan.where)
    # Equal constants share one pool entry: the per-dispatch parameters folded above
    # repeat with every step of an unrolled recurrence (an LSTM's time steps).
    pooled: dict[tuple, Buffer] = {}
    for k, (item, rd, wr) in enumerate(entries):
        for t in rd:
            if id(t) not in where:  # a constant, placed in the pool at its first use
                value = np.asarray(constants[id(t)])
                key = (t.type, value.dtype.str, value.shape, value.tobytes())
                if key not in pooled:
                    program.constants.append(constants[id(t)])
                    program.constant_types.append(t.type)
                    pooled[key] = Buffer("constant", len(program.constants) - 1,
                                         nbytes(t.type))
                where[id(t)] = pooled[key]
        # Dispatch functions are symbols in one object: number them to keep names unique.
        if isinstance(item, Jump):
            kernel: Any = Branch(f"d{k}_branch", tuple(t.type for t in rd), item.targets)
            bound = rd
        else:
            kernel = replace(item.kernel, name=f"d{k}_{item.kernel.name}")
            bound = list(item.operands) + wr
        step = Step(kernel, [where[id(t)] for t in bound])
        if k in plan.schedules:
            step.schedule = replace(plan.schedules[k], kernel=kernel.name)
        program.steps.append(step)
    program.arena_size = plan.size
    program.arena_lower_bound = plan.lower_bound
    program.arena_live = plan.live
    _branch_to_steps(program, label_step)
    _name_steps(program, graph, entries, constants, alias)
    index = {tid: b.index for tid, b in where.items() if b.kind == "constant"}
    for scale_id, weight_id in flat.scales_of.items():
        if scale_id in index and weight_id in index:
            program.constant_scales_of[index[scale_id]] = index[weight_id]
    return program


def _state_stores(items: list[Item], graph: Graph, values: list[Tensor], user_outputs: set[int]
                  ) -> tuple[list[Item], list[Tensor]]:
    """How each new state value gets into the state region, where the inference reads
    the old one in place (graph/ir.py): the steps to run after `items`, and the output
    tensor of each state's slot.

    A value is computed straight into its slot when that is safe whatever the loop
    schedule: its dispatch runs after every other read of the old value and reads the
    old value only element by element at its own index (inplace.writes_over, the arena's
    own in-place rule), in a program without control flow (a loop could read the old
    value again). Otherwise it is computed like any tensor and copied in at the end,
    once nothing reads the old value any more; a value that is another state's old
    value is first copied aside (two variables that swap). A state the inference does
    not change is not written."""
    n = len(graph.states)
    if not n:
        return [], []
    olds = graph.inputs[len(graph.inputs) - n:]
    old_of = {id(t): k for k, t in enumerate(olds)}
    aside: dict[int, Tensor] = {}
    stores: list[Item] = []
    for v in values:
        if id(v) in old_of and id(v) not in aside:
            aside[id(v)] = Tensor(v.type, "copy")
            stores.append(copy_dispatch(v, aside[id(v)]))
    steps = items + stores
    straight = not any(isinstance(item, Jump | Label) for item in items)
    producer = {id(item.output): p for p, item in enumerate(items)
                if isinstance(item, Dispatch)}
    slots: list[Tensor] = []
    for k, v in enumerate(values):
        p = producer.get(id(v))
        if id(v) in old_of and old_of[id(v)] == k:
            slots.append(Tensor(v.type, f"state{k}"))  # unchanged: nothing to store
        elif (straight and p is not None and id(v) not in user_outputs
              and sum(w is v for w in values) == 1
              and not any(olds[k] in reads(step) for step in steps[p + 1:])
              and (olds[k] not in items[p].operands or writes_over(items[p], olds[k]))):
            slots.append(v)  # computed in the region, in place
        else:
            slots.append(Tensor(v.type, f"state{k}"))
            stores.append(copy_dispatch(aside.get(id(v), v), slots[-1]))
    return stores, slots


def _name_steps(program: Program, graph: Graph,
                entries: list[tuple[Item, list[Tensor], list[Tensor]]],
                constants: dict[int, np.ndarray], alias: dict[int, Tensor]) -> None:
    """Each step's sources: the graph nodes it runs (schedule/sources.py)."""
    written = {id(t) for _, _, wr in entries for t in wr}
    boundary = written | {id(alias[i]) for i in written if i in alias} | set(constants) \
        | {id(t) for t in graph.inputs}
    order = {id(n): i for i, n in enumerate(graph.walk())}
    for step, (item, rd, wr) in zip(program.steps, entries):
        fallback = "branch" if step.is_branch else "copy"
        step.sources = step_sources(wr, rd if step.is_branch else getattr(item, "operands", rd),
                                    boundary, alias, order, fallback)


@dataclass(frozen=True)
class Overlap:
    """The result of step `step` placed `distance` bytes below its operand `source`
    (above it when `above`: the schedule runs in reverse), which dies there, when the
    step runs `schedule` (schedule/overlap.py)."""

    source: Tensor
    step: int
    distance: int
    schedule: LoopSchedule
    above: bool = False

    @property
    def offset(self) -> int:
        """Where the result starts, relative to its source's start."""
        return self.distance if self.above else -self.distance


@dataclass
class _Plan:
    """Where the arena's tensors go (by tensor id), the arena's size and lower bound, and
    the loop schedule each overlapped step was checked with (by step)."""

    where: dict[int, Buffer]
    size: int
    lower_bound: int
    schedules: dict[int, LoopSchedule]
    live: list[int] = field(default_factory=list)  # arena bytes live at each step


def _directions(options: dict[int, tuple[Overlap, ...]], arena_tensors: dict[int, Tensor]
                ) -> dict[int, Overlap]:
    """One option per overlapped result (below its source, or above it with a reversed
    schedule), chosen per chain for the smallest block: the block spans from the
    chain's lowest start to its highest end, so a chain that only goes down drifts by
    the sum of its distances, and one that alternates stays near where it started.
    Exact, by dynamic programming over the chain: a state is (how far the chain's
    lowest start lies below the current member, how far its highest end lies above
    it); states that another beats or equals in both are dropped, which keeps them
    few. Of equal states, and among the smallest blocks, the one with the fewest
    distinct loop nests wins (identical dispatches share one function body,
    codegen/image.py, and a layer repeated forward and reversed needs two), then the
    one with the fewest reversed steps, then the fewest of those that split a border
    from an interior (kws on cortex-m4, reversing its depthwise layers instead of its
    pointwise ones, which ties, took 6,512,885 instructions and 32 B more stack
    against 6,506,533)."""
    following = {id(o[0].source): tid for tid, o in options.items()}
    out: dict[int, Overlap] = {}
    for head in following.keys() - options.keys():
        size = _align(max(nbytes(arena_tensors[head].type), 1))
        # (below, top, nests used, (reversed steps, of which with borders), picks)
        states: list[tuple[int, int, frozenset, tuple[int, int], dict[int, Overlap]]] = [
            (0, size, frozenset(), (0, 0), {})]
        tid = head
        while tid in following:
            tid = following[tid]
            size = _align(max(nbytes(arena_tensors[tid].type), 1))
            grown = [(max(below + o.offset, 0), max(top - o.offset, size),
                      used | {o.schedule.nests}, _plus(rev, _reversed_border(o)),
                      {**picks, tid: o})
                     for below, top, used, rev, picks in states for o in options[tid]]
            # Kept: the states no other beats or equals in both distances; of equals,
            # the one with the fewest nests, then reversed steps, then reversed borders.
            grown.sort(key=lambda g: (g[0], g[1], len(g[2]), g[3]))
            states, least_top = [], None
            for g in grown:
                if least_top is None or g[1] < least_top:
                    states.append(g)
                    least_top = g[1]
        out.update(min(states, key=lambda g: (g[0] + g[1], len(g[2]), g[3]))[4])
    return out


def _plus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


def _reversed_border(o: Overlap) -> tuple[int, int]:
    """(1 when the option runs in reverse, 1 when it also splits a border from an
    interior there)."""
    return int(o.above), int(o.above and any(n.interior for n in o.schedule.nests))


def _chains(overlaps: dict[int, Overlap]) -> dict[int, tuple[int, int]]:
    """Per tensor id of an overlapped result or source: (its chain's first tensor id, its
    offset in the chain's block). Each result starts its `distance` below (or above) its
    source, so a chain of n steps drifts by the sum of their offsets; the block holds
    them all."""
    following = {id(o.source): tid for tid, o in overlaps.items()}
    out: dict[int, tuple[int, int]] = {}
    for head in following.keys() - overlaps.keys():
        members, rel = [head], [0]
        while members[-1] in following:
            nxt = following[members[-1]]
            members.append(nxt)
            rel.append(rel[-1] + overlaps[nxt].offset)
        low = min(rel)
        for tid, r in zip(members, rel, strict=True):
            out[tid] = (head, r - low)
    return out


def _place(entries: list[tuple[Item, list[Tensor], list[Tensor]]],
           span: dict[int, list[int]], arena_tensors: dict[int, Tensor],
           fixed: dict[int, Buffer], in_place: bool, overlaps: dict[int, Overlap]) -> _Plan:
    """Linear scan over the steps: a buffer takes the first hole that fits at its first
    step and is freed after its last (so a result never shares its operands' memory),
    unless it is written in place over an operand that dies at that step, or is an
    overlapped result: a chain of those (each below its source) takes one block."""
    chains = _chains(overlaps)
    chain_size: dict[int, int] = {}
    chain_end: dict[int, int] = {}
    for tid, (head, rel) in chains.items():
        t = arena_tensors[tid]
        chain_size[head] = max(chain_size.get(head, 0), rel + _align(max(nbytes(t.type), 1)))
        chain_end[head] = max(chain_end.get(head, 0), span[tid][1])
    where = dict(fixed)
    arena = _Arena()
    starting: dict[int, list[Tensor]] = {}
    for tid, t in arena_tensors.items():
        starting.setdefault(span[tid][0], []).append(t)
    ending: dict[int, list[Tensor]] = {}
    holders: dict[int, int] = {}  # arena offset -> tensors placed there not yet ended
    chain_at: dict[int, int] = {}  # chain head id -> block offset
    # For the lower bound: [size, first step, last step] of each placement (by offset
    # while placed, then in `placed`); an overlapped pair counts its union at its step.
    blocks: dict[int, list[int]] = {}
    placed: list[list[int]] = []
    for k, (item, _, _) in enumerate(entries):
        for t in starting.get(k, []):
            size = _align(max(nbytes(t.type), 1))
            if id(t) in chains:
                head, rel = chains[id(t)]
                if head not in chain_at:
                    chain_at[head] = arena.alloc(chain_size[head])
                    ending.setdefault(chain_end[head], []).append(arena_tensors[head])
                where[id(t)] = Buffer("arena", chain_at[head] + rel, nbytes(t.type))
                continue
            donor = _in_place_donor(item, t, k, span, where, holders) if in_place else None
            if donor is None:
                offset = arena.alloc(nbytes(t.type))
                holders[offset] = 0
                blocks[offset] = [size, k, k]
            else:
                offset = where[id(donor)].index
            holders[offset] += 1
            blocks[offset][2] = max(blocks[offset][2], span[id(t)][1])
            where[id(t)] = Buffer("arena", offset, nbytes(t.type))
            ending.setdefault(span[id(t)][1], []).append(t)
        for t in ending.get(k, []):
            if id(t) in chains:  # a chain's head stands for its block
                arena.free(chain_at[id(t)])
                continue
            offset = where[id(t)].index
            holders[offset] -= 1
            if holders[offset] == 0:
                arena.free(offset)
                placed.append(blocks.pop(offset))
    following = {id(o.source): tid for tid, o in overlaps.items()}
    for tid in chains:
        size = _align(max(nbytes(arena_tensors[tid].type), 1))
        first, last = span[tid]
        if tid in following:  # a source: at its last step its pair counts as their union
            result = _align(max(nbytes(arena_tensors[following[tid]].type), 1))
            offset = overlaps[following[tid]].offset
            union = max(size, offset + result) - min(0, offset)
            placed += [[size, first, last - 1], [union - result, last, last]]
        else:
            placed.append([size, first, last])
    live = _timeline(placed + list(blocks.values()), len(entries))
    return _Plan({tid: where[tid] for tid in arena_tensors}, arena.size, max(live, default=0),
                 {o.step: o.schedule for o in overlaps.values()}, live)


def _overlaps(entries: list[tuple[Item, list[Tensor], list[Tensor]]],
              span: dict[int, list[int]], back_edges: list[tuple[int, int]],
              arena_tensors: dict[int, Tensor], fixed: dict[int, Buffer],
              target: Target) -> dict[int, tuple[Overlap, ...]]:
    """Per result tensor id, how far below a dying operand it may start, and how far
    above it with the same loops run in reverse (module docstring; one option or both):
    for each generic dispatch outside any loop whose arena result is new
    at its step and whose arena operand dies there, the distance overlap.py proves safe
    for the schedule the target's rules choose. When that saves less than 7/8 of the
    result's bytes (a tile several rows tall: the rows the tile
    writes ahead of the input it still reads), the rules' cheapest schedule whose tiles
    do not span that outermost blocked dim is tried, and kept if it saves more; it costs
    some reuse of loaded values, which the rules weighed without knowing about memory."""
    out: dict[int, Overlap] = {}
    looped = {k for lo, hi in back_edges for k in range(lo, hi + 1)}
    for k, (item, _, _) in enumerate(entries):
        if (not isinstance(item, Dispatch) or not isinstance(item.kernel, Kernel)
                or k in looped or id(item.output) not in arena_tensors
                or span[id(item.output)][0] != k):
            continue
        kernel = flatten_elementwise(item.kernel)
        size = nbytes(item.output.type)
        for source in dict.fromkeys(item.operands):
            if (id(source) not in arena_tensors or id(source) in fixed
                    or span[id(source)][1] != k or writes_over(item, source)):
                continue
            walk = OverlapWalk(kernel, {i for i, t in enumerate(item.operands)
                                        if t is source})
            chosen = choose_schedule(kernel, target)
            # A 16x8 layer's schedule once its weights are widened (after this plan):
            # the place must suit it too (widen16_kernels.py).
            wide = widened_schedule(item.kernel, target)
            found = []
            looser: list[LoopSchedule] | None = None  # found when first needed
            for reverse in (False, True):  # below, then above (the same loops reversed)
                first = reversed_tiles(chosen) if reverse else chosen
                best = (walk.distance(first), first)
                if best[0] is None or 8 * best[0] > size:
                    if looser is None:
                        looser = _looser(kernel, chosen, target)
                    for loose in looser:
                        if reverse:
                            loose = reversed_tiles(loose)
                        d = walk.distance(loose)
                        if d is not None and (best[0] is None or d < best[0]):
                            best = (d, loose)
                        if best[0] is not None and 8 * best[0] <= size:
                            break  # saves enough: the later ones cost more reuse
                if best[0] is not None and wide is not None:
                    best = (walk.shared_distance(
                        best[1], reversed_tiles(wide) if reverse else wide), best[1])
                if best[0] is not None:
                    found.append(Overlap(source, k, best[0], best[1], reverse))
            if found:
                out[id(item.output)] = tuple(found)
                break
    return out


def reversed_tiles(s: LoopSchedule) -> LoopSchedule:
    """`s` with its parallel tiles run in reverse (Nest.reverse)."""
    return replace(s, nests=tuple(replace(n, reverse=True) for n in s.nests))


def _looser(k: Kernel, s: LoopSchedule, target: Target) -> list[LoopSchedule]:
    """The schedules `_overlaps` tries for `k` where `s` saves too little: the same
    stride-2 row-pair bands in row order (loops/depthwise.py `banded_row_order`; each
    band's call stages a pair more), then `_without_outer_block`'s; in that order, a
    later one tried only while none saves 7/8 of the result, taken if it saves more."""
    out = []
    if len(s.nests) == 1:
        rows = banded_row_order(s.nests[0])
        if rows is not None:
            out.append(replace(s, nests=(rows,)))
    loose = _without_outer_block(k, s, target)
    return out + ([loose] if loose is not None else [])


def _without_outer_block(k: Kernel, s: LoopSchedule, target: Target) -> LoopSchedule | None:
    """The rules' cheapest schedule for `k` whose tiles do not span the outermost dim `s`
    blocks, or None when `s` blocks no dim or has several nests."""
    if len(s.nests) != 1 or not s.nests[0].blocks:
        return None
    nest = s.nests[0]
    outer = next(d for d in nest.order if nest.block(d) > 1)
    return choose_schedule(k, target, frozenset({outer}))


def _in_place_donor(item: Item, t: Tensor, k: int, span: dict[int, list[int]],
                    where: dict[int, Buffer], holders: dict[int, int]) -> Tensor | None:
    """The operand whose arena buffer the result `t` of step `k` may take: one that
    dies at this step, alone in its buffer, which the kernel may write over
    (inplace.writes_over). None if there is none."""
    if not isinstance(item, Dispatch) or item.output is not t:
        return None
    for operand in item.operands:
        b = where.get(id(operand))
        if (b is not None and b.kind == "arena" and span[id(operand)][1] == k
                and holders.get(b.index) == 1 and writes_over(item, operand)):
            return operand
    return None


def _timeline(blocks: list[list[int]], steps: int) -> list[int]:
    """The sum of block sizes live at each step; a block is [size, first step, last
    step]."""
    delta = [0] * (steps + 1)
    for size, first, last in blocks:
        delta[first] += size
        delta[last + 1] -= size
    live, out = 0, []
    for d in delta[:steps]:
        live += d
        out.append(live)
    return out


def _branch_to_steps(program: Program, label_step: dict[int, int]) -> None:
    """Branch targets from labels to the indices of the steps they continue at
    (len(program.steps): the end). The command byte offsets the image's code returns are
    the module format's business (module/from_program.py, image_kernels)."""
    for step in program.steps:
        if isinstance(step.kernel, Branch):
            step.kernel = replace(step.kernel, targets=tuple(
                label_step[t] for t in step.kernel.targets))
