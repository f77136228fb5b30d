"""Graph with regions -> one linear list of items: dispatches, labels and jumps.

Control flow runs in the module's command list (docs/architecture.md, "Control flow and
regions"): each op with regions becomes straight runs of dispatches joined by branch
commands (toolchain/kernel/branch.py); a function of several blocks (a `cfg` node)
lays its blocks out in order, a branch assigning the destination's arguments on each
edge:

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
their own kernel kind (schedule/kinds.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.kernel.lower import LoweringError
from toolchain.schedule.fuse import Dispatch
from toolchain.schedule.items import Item, Jump, Label, copy_dispatch
from toolchain.schedule.kinds import SPECIAL


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
