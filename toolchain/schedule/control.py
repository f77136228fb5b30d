"""Graph with regions -> one linear list of items: dispatches, labels and jumps.

Control flow runs in the module's command list (docs/architecture.md, "Control flow"):
each op with regions becomes straight runs of dispatches joined by branch commands
(toolchain/kernel/branch.py):

    while:  C = init (copies)            if:   branch pred -> T / F        case: likewise,
      head: <cond>                         T:   <true branch>; R = results     one label
            branch cond -> body / exit          jump end                       per branch
      body: <body>; C = results (copies)   F:   <false branch>; R = results
            jump head                      end:
      exit:

The loop state C is the while node's own result tensors, so after the loop its readers
read the state; a region's inputs are aliases of the tensors that feed them (the state,
the captured outer values), so nothing is copied into a region. Copies back into the
state are a parallel assignment: a state buffer that another assignment still reads is
staged through a temporary first.

Ops without regions become dispatches by their lowering rule; ops whose result cannot be
one generic Kernel (several results, in-place updates) become a `MultiDispatch` of
their own kernel kind (SPECIAL below).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolchain.diagnostics import CompileError, Location
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.kernel.form import Expr, Index, Kernel, Load, rewrite, with_children
from toolchain.kernel.lower import LoweringError
from toolchain.kernel.reduction import lower_reduce_region, lower_reduce_window_region
from toolchain.kernel.regions import region_expr, substitute
from toolchain.kernel.scatter import lower_scatter
from toolchain.kernel.select_and_scatter import lower_select_and_scatter
from toolchain.kernel.sort import lower_sort
from toolchain.schedule.fuse import Dispatch


@dataclass
class Label:
    """A place in the command list a jump can target."""

    id: int


@dataclass
class Jump:
    """A branch command: `targets` are label ids (see kernel/branch.py for how the
    selector picks one)."""

    selector: Tensor | None
    targets: tuple[int, ...]
    loc: Location | None = None


@dataclass
class MultiDispatch:
    """A dispatch of another kernel kind than Kernel, with several results; `in_place`:
    it also reads its results (a sort or scatter updating them after copies)."""

    kernel: Any
    operands: list[Tensor]
    outputs: list[Tensor]
    in_place: bool = False


Item = Dispatch | MultiDispatch | Label | Jump


def copy_dispatch(src: Tensor, dst: Tensor) -> Dispatch:
    """dst = src, element by element."""
    rank = len(src.type.shape)
    k = Kernel("copy", tuple(src.type.shape), rank, (src.type,), dst.type,
               Load(0, tuple(Index(d) for d in range(rank))))
    return Dispatch(k, [src], dst)


def reads(item: Item) -> list[Tensor]:
    """The tensors an item reads."""
    if isinstance(item, Dispatch):
        return list(item.operands)
    if isinstance(item, MultiDispatch):
        return list(item.operands) + (list(item.outputs) if item.in_place else [])
    if isinstance(item, Jump):
        return [] if item.selector is None else [item.selector]
    return []


def writes(item: Item) -> list[Tensor]:
    """The tensors an item writes."""
    if isinstance(item, Dispatch):
        return [item.output]
    if isinstance(item, MultiDispatch):
        return list(item.outputs)
    return []


@dataclass
class Flattener:
    """Walks a graph and its regions into `items`, collecting every constant."""

    dispatches_of: Callable[[Node], list[Dispatch]]
    items: list[Item] = field(default_factory=list)
    constants: dict[int, np.ndarray] = field(default_factory=dict)
    scales_of: dict[int, int] = field(default_factory=dict)  # see schedule()
    alias: dict[int, Tensor] = field(default_factory=dict)
    # The copies `assign` made, as (destination, source, copy dispatch); their sources
    # stay materialized through fusion (`pinned`), so that a copy is only ever a copy:
    # fusing a computation into it could read a state buffer an earlier copy of the
    # same assignment has overwritten. schedule() then removes the copies it can.
    assignments: list[tuple[Tensor, Tensor, Dispatch]] = field(default_factory=list)
    pinned: set[int] = field(default_factory=set)
    _labels: Any = field(default_factory=itertools.count)

    def resolve(self, t: Tensor) -> Tensor:
        """The tensor that holds `t`'s value: a region input is its feeder's."""
        while id(t) in self.alias:
            t = self.alias[id(t)]
        return t

    def label(self) -> int:
        return next(self._labels)

    def place(self, label: int) -> None:
        self.items.append(Label(label))

    def graph(self, graph: Graph) -> None:
        for node in graph.nodes:
            self.node(node)

    def node(self, node: Node) -> None:
        if node.op == "constant":
            self.constants[id(node.output)] = np.asarray(node.attrs["value"])
            if "scales_of" in node.attrs:
                self.scales_of[id(node.output)] = id(node.attrs["scales_of"])
            return
        control = CONTROL.get(node.op)
        if control is not None:
            control(self, node)
            return
        resolved = Node(node.op, [self.resolve(t) for t in node.inputs], node.outputs,
                        node.attrs, node.loc, node.regions)
        try:
            special = SPECIAL.get(node.op)
            if special is not None:
                self.items += special(resolved)
            else:
                self.items += self.dispatches_of(resolved)
        except LoweringError as e:
            raise CompileError(str(e), node.loc) from None

    def bind(self, region: Graph, tensors: list[Tensor]) -> None:
        """Makes the region's inputs aliases of `tensors`."""
        for arg, t in zip(region.inputs, tensors, strict=True):
            self.alias[id(arg)] = t

    def assign(self, dsts: list[Tensor], srcs: list[Tensor]) -> None:
        """dsts = srcs as one parallel assignment: a source that is also a destination
        is staged through a temporary before anything is overwritten."""
        moves = [(d, s) for d, s in zip(dsts, srcs, strict=True) if s is not d]
        targets = {id(d) for d, _ in moves}
        staged = []
        for d, s in moves:
            if id(s) in targets:
                tmp = Tensor(s.type, "staged")
                self.items.append(copy_dispatch(s, tmp))
                s = tmp
            staged.append((d, s))
        for d, s in staged:
            copy = copy_dispatch(s, d)
            self.items.append(copy)
            self.assignments.append((d, s, copy))
            self.pinned.add(id(s))


def _while(f: Flattener, node: Node) -> None:
    cond, body = node.regions
    n = len(node.outputs)
    ins = [f.resolve(t) for t in node.inputs]
    state = list(node.outputs)
    # A value the body passes through unchanged (lax.scan's inputs) is never written:
    # the loop reads its initial tensor, with no state buffer and no copy.
    for i in range(n):
        if body.outputs[i] is body.inputs[i]:
            f.alias[id(state[i])] = state[i] = ins[i]
    f.assign(state, ins[:n])
    f.bind(cond, state + ins[n:])
    f.bind(body, state + ins[n:])
    head, loop, done = f.label(), f.label(), f.label()
    f.place(head)
    f.graph(cond)
    f.items.append(Jump(f.resolve(cond.outputs[0]), (done, loop), node.loc))
    f.place(loop)
    f.graph(body)
    f.assign(state, [f.resolve(t) for t in body.outputs])
    f.items.append(Jump(None, (head,), node.loc))
    f.place(done)


def _branches(f: Flattener, node: Node) -> None:
    """if / case: a branch on operand 0, then each region writing the node's results."""
    selector, *captures = (f.resolve(t) for t in node.inputs)
    labels = [f.label() for _ in node.regions]
    end = f.label()
    # if: false (0) runs the second region, true (1) the first.
    targets = (labels[1], labels[0]) if node.op == "if" else tuple(labels)
    f.items.append(Jump(selector, targets, node.loc))
    for region, label in zip(node.regions, labels):
        f.place(label)
        f.bind(region, captures)
        f.graph(region)
        f.assign(list(node.outputs), [f.resolve(t) for t in region.outputs])
        f.items.append(Jump(None, (end,), node.loc))
    f.place(end)


def _cfg(f: Flattener, node: Node) -> None:
    """A function's blocks in their order, each ending in jumps: every shared value has
    a home tensor (an operand, a block argument's own, or the tensor its defining block
    computes), a branch assigns the destination's arguments on its edge."""
    blocks = node.attrs["blocks"]
    homes: dict[int, Tensor] = {i: f.resolve(t) for i, t in enumerate(node.inputs)}
    for k, ((n_args, reads, writes, _), region) in enumerate(zip(blocks, node.regions)):
        for i, t in zip(reads[:n_args], region.inputs):
            homes.setdefault(i, Tensor(t.type, f"bb{k}_arg"))
        for i, t in zip(writes, region.outputs[len(region.outputs) - len(writes):]):
            homes[i] = t
    labels = [f.label() for _ in blocks]
    end = f.label()

    def edge(dest: int, values: list[Tensor]) -> None:
        f.assign([homes[i] for i in blocks[dest][1][:blocks[dest][0]]], values)
        f.items.append(Jump(None, (labels[dest],), node.loc))

    for k, ((_, reads, _, term), region) in enumerate(zip(blocks, node.regions)):
        f.place(labels[k])
        f.bind(region, [homes[i] for i in reads])
        f.graph(region)
        outs = [f.resolve(t) for t in region.outputs]
        if term[0] == "return":
            f.assign(list(node.outputs), outs[:term[1]])
            f.items.append(Jump(None, (end,), node.loc))
        elif term[0] == "br":
            edge(term[1], outs[:term[2]])
        else:
            _, t, n_t, fl, n_f = term
            if n_t == n_f == 0:
                f.items.append(Jump(outs[0], (labels[fl], labels[t]), node.loc))
                continue
            on_true, on_false = f.label(), f.label()
            f.items.append(Jump(outs[0], (on_false, on_true), node.loc))
            f.place(on_true)
            edge(t, outs[1:1 + n_t])
            f.place(on_false)
            edge(fl, outs[1 + n_t:1 + n_t + n_f])
    f.place(end)


CONTROL: dict[str, Callable[[Flattener, Node], None]] = {
    "while": _while, "if": _branches, "case": _branches, "cfg": _cfg,
}

def _reduction(lower: Callable[[Node], Any]) -> Callable[[Node], list[Item]]:
    return lambda node: [MultiDispatch(lower(node), list(node.inputs), list(node.outputs))]


def _in_place(lower: Callable[[Node], Any]) -> Callable[[Node], list[Item]]:
    """sort / scatter: copies of the N operands into the results, then the kernel that
    updates them in place, reading the node's other operands."""

    def items(node: Node) -> list[Item]:
        kernel = lower(node)
        n = len(node.outputs)
        copies: list[Item] = [copy_dispatch(x, y)
                              for x, y in zip(node.inputs[:n], node.outputs)]
        return copies + [MultiDispatch(kernel, list(node.inputs[n:]), list(node.outputs),
                                       True)]

    return items


def _select_and_scatter(node: Node) -> list[Item]:
    """The result filled with the init value, then the in-place kernel."""
    kernel = lower_select_and_scatter(node)
    out = node.output
    rank = out.type.rank
    fill = Kernel("fill", tuple(out.type.shape), rank, (node.inputs[2].type,), out.type,
                  Load(0, ()))
    return [Dispatch(fill, [node.inputs[2]], out),
            MultiDispatch(kernel, [node.inputs[0], node.inputs[1], *node.inputs[3:]], [out],
                          True)]


def _map(node: Node) -> list[Item]:
    """map is elementwise: one generic Kernel whose body is the region."""
    n = node.attrs["operands"]
    out = node.output.type
    captures: list[Expr] = []
    for j, t in enumerate(node.inputs[n:]):
        if t.type.shape != ():
            raise LoweringError(f"map's computation reads a {t.type} from outside; only "
                                "scalars can be captured")
        captures.append(Load(n + j, ()))
    (body,) = region_expr(node.regions[0], captures, "map's computation")
    own = tuple(Index(d) for d in range(out.rank))
    body = substitute(body, arg=lambda a: Load(a.index, own))
    kernel = Kernel("map", tuple(out.shape), out.rank, tuple(t.type for t in node.inputs),
                    out, body)
    return [Dispatch(kernel, list(node.inputs), node.output)]


# Ops lowered to other kernel kinds than Kernel: node (operands resolved) -> items.
SPECIAL: dict[str, Callable[[Node], list[Item]]] = {
    "reduce_region": _reduction(lower_reduce_region),
    "reduce_window_region": _reduction(lower_reduce_window_region),
    "sort": _in_place(lower_sort),
    "scatter": _in_place(lower_scatter),
    "select_and_scatter": _select_and_scatter,
    "map": _map,
}


def _in_place_safe(d: Dispatch, dst: Tensor) -> bool:
    """Whether `d` may write `dst` while reading it: an elementwise kernel that reads
    `dst` only at the element it writes (each element is read, then overwritten)."""
    k = d.kernel
    if not isinstance(k, Kernel) or k.combine is not None or k.n_parallel != len(k.domain):
        return False
    own = tuple(Index(i) for i in range(k.n_parallel))
    return all(ld.index == own and ld.pad is None for ld in _loads(k)
               if d.operands[ld.operand] is dst)


def _loads(k: Kernel) -> list[Load]:
    from toolchain.kernel.form import postorder

    return [e for root in k.roots for e in postorder(root) if isinstance(e, Load)]


def elide_copies(items: list[Item], assignments: list[tuple[Tensor, Tensor, Dispatch]],
                 outputs: set[int]) -> list[Item]:
    """Removes the copies of `assignments` whose source's producer can write the
    destination itself: it sits in the same straight run before the copy, nothing else
    writes the source or reads it outside that run, and nothing from the producer to
    the copy reads the destination's old value (but the producer itself, elementwise at
    the element it writes). Readers of the source in between read the destination."""
    items = list(items)
    for dst, src, copy in assignments:
        k = next((i for i, item in enumerate(items) if item is copy), None)
        if k is None or id(src) in outputs:
            continue
        j = k - 1
        while j >= 0 and isinstance(items[j], Dispatch | MultiDispatch) and \
                not any(t is src for t in writes(items[j])):
            j -= 1
        if j < 0 or not isinstance(items[j], Dispatch) or items[j].output is not src:
            continue
        producer = items[j]
        elsewhere = [i for i, item in enumerate(items) if not j <= i <= k and (
            any(t is src for t in reads(item) + writes(item)))]
        between = [items[i] for i in range(j + 1, k)]
        if elsewhere or any(t is dst for item in between for t in reads(item) + writes(item)):
            continue
        if any(t is dst for t in producer.operands) and not _in_place_safe(producer, dst):
            continue
        items[j] = Dispatch(producer.kernel, producer.operands, dst)
        for i in range(j + 1, k):
            items[i] = _reading(items[i], src, dst)
        del items[k]
    return items


def _reading(item: Item, old: Tensor, new: Tensor) -> Item:
    """`item` reading `new` where it read `old`."""
    if isinstance(item, Dispatch):
        return Dispatch(item.kernel, [new if t is old else t for t in item.operands],
                        item.output)
    if isinstance(item, MultiDispatch):
        return MultiDispatch(item.kernel, [new if t is old else t for t in item.operands],
                             item.outputs, item.in_place)
    return item


def _cheap(d: Dispatch, constants: set[int]) -> bool:
    """A producer worth recomputing inside the kernel that reads it: an index map (one
    load, or none: an iota), or anything computed from constants only."""
    k = d.kernel
    if not isinstance(k, Kernel) or k.combine is not None:
        return False
    loads = _loads(k)
    if isinstance(k.body, Load) and k.body.pad is None:
        return True
    return not loads or all(id(d.operands[ld.operand]) in constants for ld in loads)


def inline_into_kinds(items: list[Item], constants: set[int]) -> list[Item]:
    """Other kernel kinds (a Reduction: argmax's iota, a transposed or widened operand)
    read cheap producers of the same straight run directly, by substituting their
    bodies into their loads, so the producer's tensor need not be in memory."""
    items = list(items)
    for k, item in enumerate(items):
        if not isinstance(item, MultiDispatch) or not hasattr(item.kernel, "with_exprs"):
            continue
        for pos in range(len(item.operands)):
            t = item.operands[pos]
            j = k - 1
            while j >= 0 and isinstance(items[j], Dispatch | MultiDispatch) and \
                    not any(w is t for w in writes(items[j])):
                j -= 1
            if j < 0 or not isinstance(items[j], Dispatch) or not _cheap(items[j], constants):
                continue
            producer = items[j]
            written = {id(w) for i in items[j + 1:k] for w in writes(i)}
            if any(id(o) in written for o in producer.operands):
                continue
            ops = list(item.operands)
            remap = []
            for o in producer.operands:
                if not any(o is have for have in ops):
                    ops.append(o)
                remap.append(next(i for i, have in enumerate(ops) if have is o))
            swap = functools.partial(_inline_load, pos=pos, body=producer.kernel.body,
                                     remap=remap)
            kernel = item.kernel.with_exprs(swap, tuple(o.type for o in ops))
            item = MultiDispatch(kernel, ops, item.outputs, item.in_place)
        items[k] = _without_unused(item)
    return items


def _inline_load(e: Expr, pos: int, body: Expr, remap: list[int]) -> Expr:
    """`e` with every unpadded load of operand `pos` replaced by `body` (a producer's,
    its operands renumbered by `remap`) evaluated at that load's index."""

    def at(index: tuple[Expr, ...]) -> Expr:
        def fn(x: Expr, kids: tuple[Expr, ...]) -> Expr:
            if isinstance(x, Index):
                return index[x.dim]
            if isinstance(x, Load):
                return with_children(x, kids, remap[x.operand])
            return with_children(x, kids)

        return rewrite(body, fn)

    def swap(x: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(x, Load) and x.operand == pos and x.pad is None:
            return at(kids[:len(x.index)])
        return with_children(x, kids)

    return rewrite(e, swap)


def _without_unused(item: MultiDispatch) -> MultiDispatch:
    """`item` without the operands none of its expressions reads any more."""
    if not hasattr(item.kernel, "used_operands"):
        return item
    used = item.kernel.used_operands()
    if used == list(range(len(item.operands))):
        return item
    kernel = item.kernel.renumbered(used)
    return MultiDispatch(kernel, [item.operands[i] for i in used], item.outputs, item.in_place)


def immediates_in_kinds(items: list[Item], constants: dict[int, np.ndarray]) -> list[Item]:
    """Loads of scalar constants in other kernel kinds (a Reduction's init values)
    become constants in the code, as schedule does for Kernels."""
    from toolchain.kernel.form import Const

    out: list[Item] = []
    for item in items:
        if isinstance(item, MultiDispatch) and hasattr(item.kernel, "with_exprs"):
            scalar = {i: constants[id(t)] for i, t in enumerate(item.operands)
                      if id(t) in constants and t.type.shape == ()}
            if scalar:
                def fn(x: Expr, kids: tuple[Expr, ...], scalar=scalar, ops=item.operands
                       ) -> Expr:
                    if isinstance(x, Load) and x.operand in scalar:
                        return Const(scalar[x.operand].item(), ops[x.operand].type.dtype)
                    return with_children(x, kids)

                kernel = item.kernel.with_exprs(lambda e, fn=fn: rewrite(e, fn),
                                                item.kernel.operands)
                item = _without_unused(MultiDispatch(kernel, item.operands, item.outputs,
                                                     item.in_place))
        out.append(item)
    return out
