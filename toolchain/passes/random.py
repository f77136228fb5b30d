"""rng_bit_generator as plain integer graph ops, before scheduling.

The reference executor computes rng_bit_generator with its own numpy implementation of
XLA's algorithms (reference/rng.py, checked bit for bit against JAX's outputs); the
firmware computes this rewrite of it into ops every backend has (32-bit adds, xors,
rotations as two shifts and an or, 32x32 -> 64-bit multiplies for Philox, iota for the
counters), so `minirt-run --check` holds one against the other. Each Threefry round and
Philox round is a handful of elementwise nodes over all the counters at once; fusion
merges what it can.
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.reference.rng import (
    PHILOX_KEY_STEPS,
    PHILOX_MULTIPLIERS,
    PHILOX_ROUNDS,
    THREEFRY_PARITY,
    THREEFRY_ROTATIONS,
    blocks_used,
    split_dim,
)
from toolchain.types import dtype

U32, U64 = dtype("ui32"), dtype("ui64")


class _Ops:
    """Elementwise integer ops on tensors of one shape, scalars splatted to it."""

    def __init__(self, b: GraphBuilder, shape: tuple[int, ...]) -> None:
        self.b, self.shape = b, shape

    def k(self, value: int, dt=U32) -> Tensor:
        return self.b.splat(value, dt, self.shape)

    def bcast(self, scalar: Tensor) -> Tensor:
        return self.b.op("broadcast_in_dim", [scalar], dims=(), shape=self.shape)

    def __call__(self, op: str, *args: Tensor, **attrs) -> Tensor:
        return self.b.op(op, list(args), **attrs)

    def rotl(self, x: Tensor, r: int) -> Tensor:
        return self("or", self("shift_left", x, self.k(r)),
                    self("shift_right_logical", x, self.k(32 - r)))

    def lo(self, x: Tensor) -> Tensor:
        return self("convert", x, dtype="ui32")

    def hi(self, x: Tensor) -> Tensor:
        return self("convert", self("shift_right_logical", x, self.k(32, U64)), dtype="ui32")

    def join(self, lo: Tensor, hi: Tensor) -> Tensor:
        return self("or", self("convert", lo, dtype="ui64"),
                    self("shift_left", self("convert", hi, dtype="ui64"), self.k(32, U64)))


def _scalar(b: GraphBuilder, state: Tensor, i: int) -> Tensor:
    """state[i] as a ui64 scalar."""
    s = b.op("slice", [state], start=(i,), limit=(i + 1,), strides=(1,))
    s = b.op("reshape", [s], shape=())
    return s if s.type.dtype == U64 else b.op("bitcast_convert", [s], dtype="ui64", shape=())


def _threefry(o: _Ops, x0: Tensor, x1: Tensor, k0: Tensor, k1: Tensor) -> tuple[Tensor, Tensor]:
    ks = [k0, k1, o("xor", o("xor", k0, k1), o.k(THREEFRY_PARITY))]
    x0, x1 = o("add", x0, ks[0]), o("add", x1, ks[1])
    for block in range(5):
        for r in THREEFRY_ROTATIONS[4 * (block % 2):4 * (block % 2) + 4]:
            x0 = o("add", x0, x1)
            x1 = o("xor", o.rotl(x1, r), x0)
        x0 = o("add", x0, ks[(block + 1) % 3])
        x1 = o("add", o("add", x1, ks[(block + 2) % 3]), o.k(block + 1))
    return x0, x1


def _philox(o: _Ops, x: list[Tensor], k0: Tensor, k1: Tensor) -> list[Tensor]:
    for r in range(PHILOX_ROUNDS):
        if r:
            k0 = o("add", k0, o.k(PHILOX_KEY_STEPS[0]))
            k1 = o("add", k1, o.k(PHILOX_KEY_STEPS[1]))
        p0 = o("multiply", o("convert", x[0], dtype="ui64"), o.k(PHILOX_MULTIPLIERS[0], U64))
        p1 = o("multiply", o("convert", x[2], dtype="ui64"), o.k(PHILOX_MULTIPLIERS[1], U64))
        x = [o("xor", o("xor", o.hi(p1), x[1]), k0), o.lo(p1),
             o("xor", o("xor", o.hi(p0), x[3]), k1), o.lo(p0)]
    return x


def _interleave(b: GraphBuilder, words: list[Tensor], n: int) -> Tensor:
    """Element j of word w at position words * j + w, cut to n elements."""
    count = words[0].type.shape[0]
    cols = [b.op("reshape", [w], shape=(count, 1)) for w in words]
    flat = b.op("reshape", [b.op("concatenate", cols, dimension=1)],
                shape=(count * len(words),))
    return b.op("slice", [flat], start=(0,), limit=(n,), strides=(1,)) \
        if n != count * len(words) else flat


def expand_rng_bit_generator(b: GraphBuilder, node: Node) -> list[Tensor]:
    """The graph computing node's (new state, bits), in that order."""
    (state,) = node.inputs
    algo = "PHILOX" if node.attrs["algorithm"] == "DEFAULT" else node.attrs["algorithm"]
    out = node.outputs[1].type
    shape, bits = tuple(out.shape), out.dtype.bits
    n = math.prod(shape)
    key = _scalar(b, state, 0)
    used = blocks_used(algo, bits, shape)
    o = _Ops(b, (used,))
    counter = o("iota", dimension=0, shape=(used,), dtype="ui64")
    k0, k1 = o.lo(o.bcast(key)), o.hi(o.bcast(key))
    if algo == "THREE_FRY":
        c = o("add", o.bcast(_scalar(b, state, 1)), counter)
        y0, y1 = _threefry(o, o.lo(c), o.hi(c), k0, k1)
        if bits == 64:
            raw = b.op("reshape", [o.join(y0, y1)], shape=shape)
        elif not shape:
            raw = b.op("reshape", [y0], shape=())
        else:
            d = split_dim(shape)
            half = list(shape)
            half[d] = (half[d] + 1) // 2
            with_pair = tuple(half[:d + 1]) + (1,) + tuple(half[d + 1:])
            pair = b.op("concatenate", [b.op("reshape", [y], shape=with_pair) for y in (y0, y1)],
                        dimension=d + 1)
            full = list(half)
            full[d] *= 2
            raw = b.op("reshape", [pair], shape=tuple(full))
            if tuple(full) != shape:
                raw = b.op("slice", [raw], start=(0,) * len(shape), limit=shape,
                           strides=(1,) * len(shape))
    else:
        low0 = o.bcast(_scalar(b, state, 1))
        high0 = o.bcast(_scalar(b, state, 2) if state.type.shape[0] == 3 else key)
        low = o("add", low0, counter)
        carry = o("compare", low, low0, direction="LT")
        high = o("select", carry, o("add", high0, o.k(1, U64)), high0)
        x = _philox(o, [o.lo(low), o.hi(low), o.lo(high), o.hi(high)], k0, k1)
        flat = _interleave(b, x, n) if bits <= 32 else \
            _interleave(b, [o.join(x[0], x[1]), o.join(x[2], x[3])], n)
        raw = b.op("reshape", [flat], shape=shape)
    unsigned = dtype(f"ui{bits}")
    if raw.type.dtype != unsigned:
        raw = b.op("convert", [raw], dtype=unsigned.name)  # 8 / 16 bits: the low ones
    if out.dtype != unsigned:
        raw = b.op("bitcast_convert", [raw], dtype=out.dtype.name, shape=shape)
    return [_new_state(b, state, algo, used), raw]


def _new_state(b: GraphBuilder, state: Tensor, algo: str, used: int) -> Tensor:
    """[key, counter + used] (a 3-value PHILOX state carries into its third value)."""
    size = state.type.shape[0]
    parts = [b.op("slice", [state], start=(i,), limit=(i + 1,), strides=(1,))
             for i in range(size)]
    step = b.const(np.array([used]), state.type.dtype)
    low = b.op("add", [parts[1], step])
    rest = [parts[0], low]
    if size == 3:
        unsigned = [b.op("bitcast_convert", [t], dtype="ui64", shape=(1,))
                    if t.type.dtype != U64 else t for t in (low, parts[1])]
        carry = b.op("compare", unsigned, direction="LT")
        one = b.const(np.array([1]), state.type.dtype)
        rest.append(b.op("select", [carry, b.op("add", [parts[2], one]), parts[2]]))
    return b.op("concatenate", rest, dimension=0)


def lower_random(graph: Graph) -> Graph:
    """graph with every rng_bit_generator node replaced by the ops computing it, in
    place (regions included); returns graph."""
    for g in [graph, *(r for n in graph.walk() for r in n.regions)]:
        if not any(n.op == "rng_bit_generator" for n in g.nodes):
            continue
        nodes, g.nodes = g.nodes, []
        replaced: dict[int, Tensor] = {}
        for node in nodes:
            node.inputs = [replaced.get(id(t), t) for t in node.inputs]
            if node.op != "rng_bit_generator":
                g.nodes.append(node)
                continue
            for old, new in zip(node.outputs, expand_rng_bit_generator(GraphBuilder(
                    g, node.loc), node)):
                replaced[id(old)] = new
        g.outputs = [replaced.get(id(t), t) for t in g.outputs]
    return graph


__all__ = ["expand_rng_bit_generator", "lower_random"]
