"""Random small graphs over the whole graph op set, for differential testing.

`generate(seed)` builds one verified Graph (toolchain/graph) and says how to draw its
inputs; the same seed always gives the same graph and inputs. A graph is a few inputs of
random shapes and element types (f32, f16, bf16, f64, i8 ... i64, ui8 ... ui64, i1) and
a chain of 2 to `max_ops` ops picked from the op table (listed in
toolchain/testing/op_gens.py: one row per graph op, with its weight and a builder that
draws the op's operands and attributes); builders reuse recent results, so ops chain (a
reduce feeding a broadcast feeding an add: what fusion works on), and adapt what the
pool holds to the types they need (reshape, broadcast, convert), adding inputs or
constants when nothing fits.

Float values are either *exact* (the firmware must give the reference's bits: inputs,
constants, data movement, max / min, and the correctly rounded arithmetic of exact
values) or not (transcendental functions, sums, products by constants that affine
folding may regroup): `exactness` (exactness.py) decides that from the graph alone. Ops
whose result jumps under the smallest change of their float operands (floor, compare,
convert to integer, remainder, sort keys, ...) only ever read exact values, so a
last-bit difference the tolerance allows can never flip them; ops with a restricted
domain (log, sqrt, a divisor) read inexact values through a guard, |x| + c. The
tolerance of each output follows from the error budget of every inexact op on its path
(toolchain/testing/tolerance.py).

This module is the generator's top: it makes the Gen of a graph (gen_context.py), draws
ops from the table until the graph has enough, picks the outputs and verifies the
result. The names the rest of the package reads from here (Gen, InputSpec, exactness,
...) live in the modules below it and are re-exported.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from toolchain.graph.ir import Graph, Node, Tensor
from toolchain.graph.verify import verify_graph
from toolchain.testing.exactness import Info, exactness, node_info
from toolchain.testing.gen_context import DTYPE_WEIGHTS, FLOATS, Gen, GeneratorError
from toolchain.testing.input_values import InputSpec, random_values
from toolchain.testing.op_gens import OP_GENS
from toolchain.testing.op_table import build_one
from toolchain.types import DTYPES, TensorType

__all__ = ["Gen", "InputSpec", "RandomGraph", "generate", "exactness", "random_values",
           "GeneratorError", "expand_rng", "node_info", "Info", "DTYPE_WEIGHTS", "FLOATS"]

# A graph returns at most this many of its unread results (_outputs).
MAX_OUTPUTS = 6


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


# ---------------------------------------------------------------------------- graphs


def generate(seed: int, max_ops: int = 8, ops: tuple[str, ...] | None = None) -> RandomGraph:
    """Random graph number `seed`: 2 to `max_ops` ops of the op table (or only of
    `ops`), verified. The same seed gives the same graph."""
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
