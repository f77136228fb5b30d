"""Random small graphs over the whole graph op set, for differential testing.

`generate(seed)` builds one verified Graph (toolchain/graph) and says how to draw its
inputs; the same seed always gives the same graph and inputs. A graph is a few inputs of
random shapes and element types (f32, f16, bf16, f64, i8 ... i64, ui8 ... ui64, i1) and
a chain of 2 to `max_ops` ops picked from the op table (toolchain/testing/op_gens.py:
one row per graph op, with its weight and a builder that draws the op's operands and
attributes); builders reuse recent results, so ops chain (a reduce feeding a broadcast
feeding an add: what fusion works on), and adapt what the pool holds to the types they
need (reshape, broadcast, convert), adding inputs or constants when nothing fits.

Float values are either *exact* (the firmware must give the reference's bits: inputs,
constants, data movement, max / min, and the correctly rounded arithmetic of exact
values) or not (transcendental functions, sums, products by constants that affine
folding may regroup): `exactness` decides that from the graph alone. Ops whose result
jumps under the smallest change of their float operands (floor, compare, convert to
integer, remainder, sort keys, ...) only ever read exact values, so a last-bit
difference the tolerance allows can never flip them; ops with a restricted domain (log,
sqrt, a divisor) read inexact values through a guard, |x| + c. The tolerance of each
output follows from the error budget of every inexact op on its path
(toolchain/testing/tolerance.py).
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.ops import OPS, ShapeError
from toolchain.graph.verify import verify_graph
from toolchain.types import DTYPES, DType, TensorType, complex_part, round_to_bf16

__all__ = ["Gen", "InputSpec", "RandomGraph", "generate", "exactness", "random_values",
           "GeneratorError", "expand_rng"]

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
MAX_OUTPUTS = 6

# Float ops that give the reference's bits when their float operands are exact: they
# move values, pick one, or are one IEEE operation rounded once (add, ..., and
# conversions; narrow types compute in f32 and round once more, which is innocuous
# for these). Sums, products and math functions are not: their order and
# polynomials differ.
EXACT_FLOAT_OPS = frozenset({
    "abs", "negate", "maximum", "minimum", "select", "clamp", "convert", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even", "sign", "add", "subtract", "multiply",
    "divide", "remainder", "broadcast_in_dim", "reshape", "transpose", "reverse",
    "concatenate", "slice", "pad", "gather", "dynamic_slice", "dynamic_update_slice",
    "iota", "constant", "dequantize",
    # Ops with regions are generated over exact operands with exact bodies only, and
    # their bodies fold in the order the kernels use (reference/regions.py).
    "while", "if", "case", "sort", "map", "scatter", "select_and_scatter", "reduce_region",
    "reduce_window_region", "cfg",
    # Complex numbers built from and taken apart into their parts; bits seen as another
    # type, and the bits of the rng algorithms (integer arithmetic, bit for bit).
    "complex", "real", "imag", "bitcast_convert", "rng_bit_generator",
})
# Arithmetic by a constant: affine folding (passes/affine.py) may regroup a chain of
# these into x * scale + shift, which rounds differently; so they are inexact.
AFFINE_OPS = frozenset({"add", "subtract", "multiply", "divide"})
# Reductions that pick an element rather than sum: exact.
EXACT_KINDS = frozenset({"maximum", "minimum", "and", "or"})
# Ops whose NaNs have a defined sign when their operands' have: they move values or
# convert them. An arithmetic op that makes a NaN (0 / 0, inf - inf, sqrt(-1)) gives it
# whatever sign the hardware's default NaN has (negative on x86, positive on Arm and
# RISC-V), and TOTALORDER compares (sort and argmax comparators) order -NaN below
# -inf: such values are never compared in total order. abs clears the sign, so its
# NaNs are always positive.
NAN_SIGN_OPS = frozenset({
    "abs", "negate", "select", "convert", "broadcast_in_dim", "reshape", "transpose",
    "reverse", "concatenate", "slice", "pad", "gather", "dynamic_slice",
    "dynamic_update_slice", "iota", "constant", "complex", "real", "imag",
    "bitcast_convert", "rng_bit_generator",
})


class GeneratorError(Exception):
    """The generator built an ill-formed graph (a bug in the generator itself)."""


@dataclass
class Info:
    """What the generator knows of a tensor: exact (its float value is bit-for-bit the
    reference's in the firmware), const (computed from constants alone) and signed
    (its NaNs' signs are the reference's too)."""

    exact: bool = True
    const: bool = False
    signed: bool = True  # every NaN it holds has a defined sign (NAN_SIGN_OPS)


@dataclass
class InputSpec:
    """How a graph input's values are drawn: `data` (the type's usual mix), `index`
    (integers in [lo, hi], a few outside the operand on purpose; in an unsigned type a
    negative one wraps to the largest values, far outside), `shift` (shift counts, some
    past the width), `positive` (floats in [lo, hi])."""

    kind: str = "data"
    lo: float = 0
    hi: float = 0


def node_info(node: Node, info: dict[int, Info]) -> list[Info]:
    """The Info of each result of `node`, from its op, attributes and operands' Info."""
    ins = [info.get(id(t), Info()) for t in node.inputs]
    const = all(i.const for i in ins) and not node.regions
    out = []
    for t in node.outputs:
        if not _floaty(t):
            # Integers and booleans only ever come from exact values (the generator's
            # rule for every op that leaves the floats).
            out.append(Info(True, const))
            continue
        float_ins = [i for i, x in zip(ins, node.inputs) if _floaty(x)]
        exact = node.op in EXACT_FLOAT_OPS and all(i.exact for i in float_ins)
        signed = node.op == "abs" or (node.op in NAN_SIGN_OPS
                                      and all(i.signed for i in float_ins))
        if node.op in ("reduce", "reduce_window"):
            exact = node.attrs["kind"] in EXACT_KINDS and all(i.exact for i in float_ins)
        if node.op in AFFINE_OPS and any(i.const for i in ins) and not const:
            exact = False
        out.append(Info(exact, const, signed))
    return out


def _floaty(t: Tensor) -> bool:
    """Float or complex (a pair of floats, judged like one)."""
    return t.type.dtype.is_float or t.type.dtype.is_complex


def exactness(graph: Graph) -> dict[int, Info]:
    """Info of every tensor of `graph` (inputs exact, not const), regions excluded."""
    info: dict[int, Info] = {id(t): Info(True, False) for t in graph.inputs}
    for node in graph.nodes:
        for t, i in zip(node.outputs, node_info(node, info)):
            info[id(t)] = i
    return info


@dataclass
class RandomGraph:
    """One generated graph: `graph` (verified), how to draw each input, the seed both
    come from, and the ops it holds (regions included)."""

    seed: int
    graph: Graph
    specs: list[InputSpec]
    ops: Counter = field(default_factory=Counter)

    def inputs(self) -> list[np.ndarray]:
        """The graph's inputs, drawn from its seed (the same every time)."""
        rng = np.random.default_rng([self.seed, 0x1A2B])
        return [random_values(rng, t.type, s) for t, s in zip(self.graph.inputs, self.specs)]


# ---------------------------------------------------------------------------- values

_SPECIAL = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def random_values(rng: np.random.Generator, ty: TensorType, spec: InputSpec) -> np.ndarray:
    """Values of type `ty` drawn as `spec` says, as the host holds them (bf16 as
    float32 already rounded)."""
    dt, shape = ty.dtype, ty.shape
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        x = rng.random(n) < 0.5
    elif dt.is_complex:
        part = complex_part(dt)
        x = np.empty(n, dt.np_dtype)
        x.real, x.imag = _float_values(rng, part, n, spec), _float_values(rng, part, n, spec)
    elif dt.is_float:
        x = _float_values(rng, dt, n, spec)
    else:
        x = _int_values(rng, dt, n, spec)
    return x.reshape(shape)


def _float_values(rng: np.random.Generator, dt: DType, n: int, spec: InputSpec) -> np.ndarray:
    if spec.kind == "positive":
        x = rng.uniform(spec.lo, spec.hi, n)
    else:
        x = rng.standard_normal(n) * rng.choice([0.5, 1.0, 3.0])
        if rng.random() < 0.35:
            # Multiples of 1/4 (and exact halves): ties for rounding, equal elements for
            # compares and sorts, exact sums.
            x = np.round(x * 4) / 4
        if n and rng.random() < 0.12:
            # Special values: NaN, infinities and signed zeros must flow through exactly.
            k = int(rng.integers(1, min(n, 2) + 1))
            x[rng.choice(n, k, replace=False)] = rng.choice(_SPECIAL, k)
    x = x.astype(dt.np_dtype)
    return round_to_bf16(x) if dt.name == "bf16" else x


def _int_values(rng: np.random.Generator, dt: DType, n: int, spec: InputSpec) -> np.ndarray:
    info = np.iinfo(dt.np_dtype)
    if spec.kind == "index":
        return rng.integers(int(spec.lo), int(spec.hi) + 1, n).astype(dt.np_dtype)
    if spec.kind == "shift":
        width = dt.bits
        x = rng.integers(0, width, n)
        wild = rng.random(n) < 0.2  # past the width, or negative: defined results
        x = np.where(wild, rng.integers(-2, width + 3, n), x)
        return np.clip(x, info.min, info.max).astype(dt.np_dtype)
    mode = rng.random()
    if mode < 0.55:
        x = rng.integers(-9, 10, n)
    elif mode < 0.8:
        # Full range: wrapping sums and products, conversions that saturate.
        return rng.integers(info.min, info.max, n, dtype=dt.np_dtype, endpoint=True)
    else:
        edges = np.array(sorted({info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max}),
                         dtype=object)
        edges = np.array([e for e in edges if info.min <= e <= info.max], dtype=object)
        x = np.where(rng.random(n) < 0.5, rng.choice(edges, n),
                     rng.integers(-9, 10, n).astype(object))
    return np.clip(np.array(x, dtype=object), info.min, info.max).astype(dt.np_dtype)


# ---------------------------------------------------------------------------- generator


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
        return not exact or not _floaty(t) or self.is_exact(t)

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


# ---------------------------------------------------------------------------- graphs


def generate(seed: int, max_ops: int = 8, ops: tuple[str, ...] | None = None) -> RandomGraph:
    """Random graph number `seed`: 2 to `max_ops` ops of the op table (or only of
    `ops`), verified. The same seed gives the same graph."""
    from toolchain.testing.op_gens import OP_GENS, build_one

    rng = random.Random(seed)
    graph = Graph("main")
    g = Gen(rng, graph)
    table = {k: v for k, v in OP_GENS.items() if ops is None or k in ops}
    if not table:
        raise GeneratorError(f"no generator for ops {ops}")
    first = g.dtype()
    g.add_input(TensorType(g.shape(), first))
    want = rng.randint(2, max_ops)
    for _ in range(want * 4):
        if sum(n for k, n in g.ops.items() if k != "constant") >= want:
            break
        build_one(g, table)
    outputs = _outputs(g)
    graph.outputs = outputs
    _drop_unused_inputs(g)
    verify_graph(graph)
    return RandomGraph(seed, graph, g.specs, Counter(g.ops))


def expand_rng(graph: Graph) -> Graph:
    """`graph` with every `rng` node replaced by what the importer makes of a
    stablehlo.rng (frontend/stablehlo_random.py: the shape operand's constant, then the
    bits of its own key through XLA's distributions, keys 1, 2, ... in source order),
    so the reference and the compiler can run it; `graph` itself when it has none. The
    generator draws rng at the top level only, where node order is source order."""
    if not any(n.op == "rng" for n in graph.nodes):
        return graph
    from toolchain.frontend.stablehlo_random import expand_rng as expansion
    from toolchain.graph.builder import GraphBuilder

    g = copy.deepcopy(graph)
    nodes: list[Node] = []
    sub: dict[int, Tensor] = {}
    key = 0
    for node in g.nodes:
        node.inputs = [sub.get(id(t), t) for t in node.inputs]
        if node.op != "rng":
            nodes.append(node)
            continue
        key += 1
        part = Graph("rng")
        b = GraphBuilder(part, node.loc)
        b.const(np.array(node.attrs["shape"], np.int64), DTYPES["i64"])  # the shape operand
        (sub[id(node.output)],) = expansion(b, node.inputs, node.attrs, key)
        nodes += part.nodes
    g.nodes = nodes
    g.outputs = [sub.get(id(t), t) for t in g.outputs]
    return g


def _outputs(g: Gen) -> list[Tensor]:
    """Every result nothing reads (the last one first, at most MAX_OUTPUTS), so that
    every op is computed by the firmware rather than dropped as dead code."""
    graph = g.graph
    produced = [t for n in graph.nodes for t in n.outputs if n.op != "constant"]
    if not produced:
        produced = list(graph.inputs)
    read = {id(t) for n in graph.nodes for t in n.inputs}
    outs = [produced[-1]]
    for t in reversed(produced[:-1]):
        if len(outs) >= MAX_OUTPUTS:
            break
        if id(t) not in read:
            outs.append(t)
    return outs


def _drop_unused_inputs(g: Gen) -> None:
    """Inputs that nothing reads and no output is (adapters may leave some behind)."""
    graph = g.graph
    used = {id(t) for n in graph.nodes for t in n.inputs} | {id(t) for t in graph.outputs}
    keep = [(t, s) for t, s in zip(graph.inputs, g.specs) if id(t) in used]
    if not keep:  # a graph of constants only: keep the first input anyway
        keep = [(graph.inputs[0], g.specs[0])]
    graph.inputs = [t for t, _ in keep]
    g.specs = [s for _, s in keep]
