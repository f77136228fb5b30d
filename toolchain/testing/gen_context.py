"""The state a random graph is generated in: `Gen`, with the draws every op builder
shares (element types, shapes, pool tensors, adapted or new operands, guards).

It sits at the bottom of the generator: the op builders (the *_gens.py modules) add
their ops through it, the op table (op_table.py) dispatches to them, and the driver
(random_graphs.py) makes one Gen per graph. Region builders (region_gens.py) make a
child Gen per region body.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS, ShapeError
from toolchain.testing.exactness import Info, floaty, node_info
from toolchain.testing.input_values import InputSpec, random_values
from toolchain.types import DTYPES, DType, TensorType, round_to_bf16

__all__ = ["DTYPE_WEIGHTS", "FLOATS", "MAX_ELEMENTS", "MAX_DIM", "GeneratorError", "Gen",
           "source"]

# Element types and how often a new tensor takes each (f32 and i32 are what models
# mostly hold; every other type still comes up in a few percent of the graphs).
DTYPE_WEIGHTS: dict[str, float] = {
    "f32": 8, "f16": 2, "bf16": 2, "f64": 2,
    "i32": 3, "i8": 1.5, "i16": 1, "i64": 1.5, "ui8": 1, "ui16": 0.7, "ui32": 1, "ui64": 0.7,
    "i1": 1.2,
}
FLOATS = ("f32", "f16", "bf16", "f64")
# Tensors stay small: every graph is compiled and run under QEMU on four boards.
MAX_ELEMENTS = 96
MAX_DIM = 6


class GeneratorError(Exception):
    """The generator built an ill-formed graph (a bug in the generator itself)."""


class Gen:
    """The state of one graph (or one region) being generated: the graph, the pool of
    tensors ops may read, and the Info of each. A region's Gen cannot add inputs (a
    region reads its block arguments and what it captured); it adds constants instead."""

    def __init__(self, rng: random.Random, graph: Graph, *, parent: Gen | None = None,
                 max_elements: int = MAX_ELEMENTS) -> None:
        self.rng = rng
        self.graph = graph
        self.parent = parent
        self.root: Gen = parent.root if parent else self
        self.info: dict[int, Info] = parent.info if parent else {}
        self.pool: list[Tensor] = []
        self.specs: list[InputSpec] = []
        self.ops: Counter = parent.ops if parent else Counter()
        self.nrng = parent.nrng if parent else np.random.default_rng(rng.getrandbits(64))
        self.max_elements = max_elements
        # Nesting depth of regions: bodies get smaller and stop holding regions.
        self.depth = parent.depth + 1 if parent else 0
        # Region bodies read exact values only (region_gens.py).
        self.exact_only = False

    # ------------------------------------------------------------------ choices

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def dtype(self, kinds: str = "fiub", names: tuple[str, ...] | None = None) -> DType:
        """A random element type of the given kinds (or among `names`)."""
        pool = [n for n in DTYPE_WEIGHTS if DTYPES[n].kind in kinds
                and (names is None or n in names)]
        return DTYPES[self.rng.choices(pool, [DTYPE_WEIGHTS[n] for n in pool])[0]]

    def shape(self, rank: int | None = None, max_elements: int | None = None) -> tuple[int, ...]:
        """A random shape of `rank` (default: 0 to 4, mostly 1 to 3)."""
        limit = max_elements or self.max_elements
        if rank is None:
            rank = self.rng.choices(range(5), [1, 3, 4, 3, 1])[0]
        dims: list[int] = []
        for _ in range(rank):
            room = max(1, limit // max(1, int(np.prod(dims, dtype=np.int64))))
            dims.append(self.rng.randint(1, max(1, min(MAX_DIM, room))))
        return tuple(dims)

    # ------------------------------------------------------------------ tensors

    def add_input(self, ty: TensorType, spec: InputSpec | None = None) -> Tensor:
        if self.parent is not None:
            raise GeneratorError("a region cannot add graph inputs")
        t = self.graph.add_input(ty)
        self.specs.append(spec or InputSpec())
        self.info[id(t)] = Info(True, False)
        self.pool.append(t)
        return t

    def const(self, ty: TensorType, value: Any = None, spec: InputSpec | None = None) -> Tensor:
        """A constant of `ty`: `value` (broadcast to the shape) or random values."""
        if value is None:
            array = random_values(self.nrng, ty, spec or InputSpec())
        else:
            array = np.broadcast_to(np.asarray(value), ty.shape).astype(ty.dtype.np_dtype)
            if ty.dtype.name == "bf16":
                array = round_to_bf16(array)
        node = self.graph.add("constant", [], [ty], {"value": np.array(array)})
        self.ops["constant"] += 1
        self.info[id(node.output)] = Info(True, True)
        return node.output

    def fresh(self, ty: TensorType, spec: InputSpec | None = None) -> Tensor:
        """A new input of `ty` (a constant inside regions, or one time in five)."""
        if self.parent is not None or self.chance(0.2):
            return self.const(ty, spec=spec)
        return self.add_input(ty, spec)

    def node(self, op: str, inputs: list[Tensor], attrs: dict[str, Any] | None = None,
             regions: list[Graph] | None = None, pool: bool = True) -> list[Tensor]:
        """Adds `op` with result types from the op table; the results join the pool."""
        attrs = dict(attrs or {})
        probe = Node(op, list(inputs), [], attrs, None, list(regions or []))
        try:
            types = OPS[op].infer(probe)
        except ShapeError as e:
            raise GeneratorError(f"{op}: {e}") from None
        node = self.graph.add(op, inputs, types, attrs, None, regions)
        self.ops[op] += 1
        for t, i in zip(node.outputs, node_info(node, self.info)):
            self.info[id(t)] = i
            if pool:
                self.pool.append(t)
        return node.outputs

    def op(self, op: str, inputs: list[Tensor], **attrs: Any) -> Tensor:
        """A one-result node."""
        return self.node(op, inputs, attrs)[0]

    def is_exact(self, t: Tensor) -> bool:
        return self.info.get(id(t), Info()).exact

    def usable(self, t: Tensor, exact: bool) -> bool:
        """May an op that needs exact floats (when `exact`) read `t`?"""
        return not exact or not floaty(t) or self.is_exact(t)

    def is_signed(self, t: Tensor) -> bool:
        """Are the NaNs of `t` (if any) of the reference's sign? (NAN_SIGN_OPS)"""
        return not t.type.dtype.is_float or self.info.get(id(t), Info()).signed

    def pick(self, pred: Callable[[Tensor], bool] = lambda t: True, exact: bool = False,
             signed: bool = False, complex_ok: bool = False) -> Tensor | None:
        """A tensor of the pool that satisfies `pred` (exact, and signed: read by
        TOTALORDER compares, when asked; region bodies ask both), recent ones more
        likely (so ops chain), or None. Complex tensors only when `complex_ok`: only
        the ops of graph/ops.py's COMPLEX_OPS take them, and only builders that know
        it ask."""
        exact = exact or self.exact_only
        signed = signed or self.exact_only
        cands = [t for t in self.pool if pred(t) and self.usable(t, exact)
                 and (complex_ok or not t.type.dtype.is_complex)
                 and (not signed or self.is_signed(t))
                 and t.type.num_elements <= self.max_elements]
        if not cands:
            return None
        weights = [1.0 + 4.0 * ((i + 1) / len(cands)) ** 3 for i in range(len(cands))]
        return self.rng.choices(cands, weights)[0]

    def operand(self, ty: TensorType, exact: bool = False, spec: InputSpec | None = None,
                new: float = 0.25, signed: bool = False) -> Tensor:
        """A tensor of exactly `ty`: from the pool, adapted from a pool tensor (reshape,
        broadcast, convert, slice), or new (more often with a `spec`, which the pool's
        tensors do not follow)."""
        if spec is not None and spec.kind != "data":
            return self.fresh(ty, spec)
        if not self.chance(new):
            same = self.pick(lambda t: t.type == ty, exact, signed)
            if same is not None and self.chance(0.8):
                return same
            adapted = self.adapt(ty, exact, signed)
            if adapted is not None:
                return adapted
            if same is not None:
                return same
        return self.fresh(ty, spec)

    def adapt(self, ty: TensorType, exact: bool, signed: bool = False) -> Tensor | None:
        """A pool tensor made into `ty` by one or two layout or type ops, or None."""
        n = ty.num_elements
        ways = self.rng.sample(["reshape", "broadcast", "convert", "slice"], 4)
        for way in ways:
            if way == "reshape":
                src = self.pick(lambda t: t.type.dtype == ty.dtype and t.type.num_elements == n
                                and t.type.shape != ty.shape, exact, signed)
                if src is not None:
                    return self.op("reshape", [src], shape=ty.shape)
            elif way == "broadcast":
                src = self.pick(lambda t: t.type.dtype == ty.dtype and t.type.rank <= ty.rank
                                and _broadcast_dims(t.type.shape, ty.shape) is not None,
                                exact, signed)
                if src is not None:
                    dims = _broadcast_dims(src.type.shape, ty.shape)
                    return self.op("broadcast_in_dim", [src], dims=dims, shape=ty.shape)
            elif way == "convert":
                want_exact = exact or not ty.dtype.is_float
                src = self.pick(lambda t: t.type.shape == ty.shape and t.type.dtype != ty.dtype
                                and self.convertible(t, ty.dtype), want_exact, signed)
                if src is not None:
                    return self.op("convert", [src], dtype=ty.dtype.name)
            else:
                src = self.pick(lambda t: t.type.dtype == ty.dtype and t.type.rank == ty.rank
                                and t.type.shape != ty.shape
                                and all(a >= b for a, b in zip(t.type.shape, ty.shape)),
                                exact, signed)
                if src is not None:
                    starts = tuple(self.rng.randint(0, a - b)
                                   for a, b in zip(src.type.shape, ty.shape))
                    return self.op("slice", [src], start=starts,
                                   limit=tuple(s + b for s, b in zip(starts, ty.shape)),
                                   strides=(1,) * ty.rank)
        return None

    def convertible(self, t: Tensor, to: DType) -> bool:
        """convert(t) to `to` is allowed: a float becomes an integer or boolean only when
        exact (truncation jumps at every integer)."""
        return to.is_float or not t.type.dtype.is_float or self.is_exact(t)

    # ------------------------------------------------------------------ guards

    def positive(self, t: Tensor, floor: float | None = None) -> Tensor:
        """|t| + c, c > 0: keeps an inexact value away from a domain edge at 0 (log,
        sqrt, a divisor) so the tolerance never straddles it."""
        c = floor if floor is not None else self.rng.choice([0.25, 0.5, 1.0, 2.0])
        a = self.op("abs", [t])
        return self.op("add", [a, self.splat(c, t.type)])

    def splat(self, value: float, ty: TensorType) -> Tensor:
        """A scalar constant broadcast to `ty` (how JAX writes one)."""
        scalar = self.const(TensorType((), ty.dtype), value)
        if ty.rank == 0:
            return scalar
        return self.op("broadcast_in_dim", [scalar], dims=(), shape=ty.shape)

    def bounded(self, t: Tensor, limit: float) -> Tensor:
        """clamp(-limit, t, limit)."""
        lo = self.const(TensorType((), t.type.dtype), -limit)
        hi = self.const(TensorType((), t.type.dtype), limit)
        return self.op("clamp", [lo, t, hi])


def _broadcast_dims(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[int, ...] | None:
    """broadcast_in_dim dims aligning src's trailing dimensions with dst's, or None."""
    if len(src) > len(dst):
        return None
    off = len(dst) - len(src)
    if any(s not in (1, dst[off + i]) for i, s in enumerate(src)):
        return None
    return tuple(range(off, len(dst)))


def source(g: Gen, types: tuple[str, ...], exact: bool = False, rank: int | None = None,
           min_rank: int = 0, max_rank: int = 4) -> Tensor:
    """A pool tensor of one of `types` (and rank bounds), or a new one."""
    x = g.pick(lambda t: t.type.dtype.name in types and min_rank <= t.type.rank <= max_rank
               and (rank is None or t.type.rank == rank), exact)
    if x is None or g.chance(0.1):
        r = rank if rank is not None else g.rng.randint(min_rank, max(min_rank, min(max_rank, 3)))
        x = g.fresh(TensorType(g.shape(r), g.dtype(names=types)))
    return x
