"""Graph -> Program: lower, fuse, order and place every buffer.

The arena is planned by linear scan over the dispatch order: each result gets the
first free, 16-byte aligned hole that fits, and a buffer is freed after its last
reader runs. A result never shares memory with its own operands.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.kernel.form import (
    MAX_OPERANDS,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    rewrite_kernel,
    with_children,
)
from toolchain.kernel.lower import lower_node
from toolchain.schedule.fuse import Dispatch, drop_unused_operands, fuse
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
    kernel: Kernel
    buffers: list[Buffer]  # operands, then the result


@dataclass
class Program:
    name: str
    steps: list[Step] = field(default_factory=list)
    constants: list[np.ndarray] = field(default_factory=list)
    constant_types: list[TensorType] = field(default_factory=list)
    # constant index -> index of the quantized weight whose scales it holds
    constant_scales_of: dict[int, int] = field(default_factory=dict)
    inputs: list[TensorType] = field(default_factory=list)
    outputs: list[TensorType] = field(default_factory=list)
    arena_size: int = 0


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


def _copy(src: Tensor, dst: Tensor) -> Dispatch:
    rank = len(src.type.shape)
    k = Kernel("copy", tuple(src.type.shape), rank, (src.type,), dst.type,
               Load(0, tuple(Index(d) for d in range(rank))))
    return Dispatch(k, [src], dst)


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
            part = Node("concatenate", group, [], {"dimension": dim}, node.loc)
            part.outputs = [Tensor(replace(node.output.type, shape=tuple(shape)), "", part)]
            out.append(Dispatch(lower_node(part), group, part.output))
            joined.append(part.output)
        inputs = joined
    if len(inputs) != len(node.inputs):
        node = Node(node.op, inputs, node.outputs, node.attrs, node.loc)
    out.append(Dispatch(lower_node(node), inputs, node.output))
    return out


def _scalars_as_immediates(d: Dispatch, constants: dict[int, np.ndarray]) -> Dispatch:
    """Loads of scalar constants (zero points, clamp bounds, a splat zero) become
    constants in the code: an immediate instead of a binding and a load per element."""
    scalar = {i: constants[id(t)] for i, t in enumerate(d.operands)
              if id(t) in constants and t.type.shape == ()}
    if not scalar:
        return d

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Load) and e.operand in scalar:
            return Const(scalar[e.operand].item(), d.operands[e.operand].type.dtype)
        return with_children(e, kids)

    return drop_unused_operands(Dispatch(rewrite_kernel(d.kernel, fn), d.operands, d.output))


def schedule(graph: Graph) -> Program:
    """Builds the Program for a verified, constant-folded graph."""
    constants: dict[int, np.ndarray] = {}
    scales_of: dict[int, int] = {}  # id(scales tensor) -> id(quantized weight tensor)
    dispatches: list[Dispatch] = []
    for node in graph.nodes:
        if node.op == "constant":
            constants[id(node.output)] = np.asarray(node.attrs["value"])
            if "scales_of" in node.attrs:
                scales_of[id(node.output)] = id(node.attrs["scales_of"])
        else:
            dispatches += _dispatches(node)
    # Every graph output must be written by a dispatch of its own (outputs are separate
    # caller buffers): copy inputs, constants and repeated outputs into place.
    outputs: list[Tensor] = []
    produced = {id(d.output) for d in dispatches}
    seen: set[int] = set()
    for t in graph.outputs:
        if id(t) not in produced or id(t) in seen:
            dst = Tensor(t.type, "copy")
            dispatches.append(_copy(t, dst))
            t = dst
        seen.add(id(t))
        outputs.append(t)
    dispatches = fuse(dispatches, keep={id(t) for t in outputs}, constants=set(constants))
    dispatches = [_scalars_as_immediates(d, constants) for d in dispatches]

    program = Program(graph.name, inputs=[t.type for t in graph.inputs],
                      outputs=[t.type for t in outputs])
    where: dict[int, Buffer] = {}
    for i, t in enumerate(graph.inputs):
        where[id(t)] = Buffer("input", i, nbytes(t.type))
    for i, t in enumerate(outputs):
        where[id(t)] = Buffer("output", i, nbytes(t.type))
    last_use: dict[int, int] = {}
    for step, d in enumerate(dispatches):
        for t in d.operands:
            last_use[id(t)] = step
    arena = _Arena()
    for step, d in enumerate(dispatches):
        for t in d.operands:
            if id(t) not in where:
                if id(t) not in constants:
                    raise AssertionError(f"operand of {d.kernel.name} has no buffer")
                program.constants.append(constants[id(t)])
                program.constant_types.append(t.type)
                where[id(t)] = Buffer("constant", len(program.constants) - 1, nbytes(t.type))
        if id(d.output) not in where:
            where[id(d.output)] = Buffer("arena", arena.alloc(nbytes(d.output.type)),
                                         nbytes(d.output.type))
        # Dispatch functions are symbols in one object: number them to keep names unique.
        kernel = replace(d.kernel, name=f"d{step}_{d.kernel.name}")
        program.steps.append(Step(kernel, [where[id(t)] for t in d.operands]
                                  + [where[id(d.output)]]))
        for t in d.operands:
            b = where[id(t)]
            if b.kind == "arena" and last_use[id(t)] == step:
                arena.free(b.index)
    program.arena_size = arena.size
    index = {tid: b.index for tid, b in where.items() if b.kind == "constant"}
    for scale_id, weight_id in scales_of.items():
        if scale_id in index and weight_id in index:
            program.constant_scales_of[index[scale_id]] = index[weight_id]
    return program
