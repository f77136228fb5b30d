"""Shrinking a failing random graph, and saving it as a reproducer.

`shrink` makes a failing graph smaller while it keeps failing the same way (greedy,
each step one candidate build and run): keep a single output, or make an intermediate
tensor the only output; cut the graph at a
tensor (its uses read a new input holding the value the reference computes there, and
everything only it needed goes); bypass a node (its result replaced by an operand of
the same type). Dead nodes and inputs go after every step. `save_reproducer` writes
what a person needs to see the bug: the graph as MLIR (when StableHLO can spell it),
its inputs as npz, the graph's text form and what failed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.printer import print_graph
from toolchain.reference.kernels import KERNELS
from toolchain.testing.to_mlir import NotExpressible, graph_to_mlir
from toolchain.types import to_dtype

__all__ = ["shrink", "save_reproducer", "dead_code"]

Fails = Callable[[Graph, list[np.ndarray]], bool]


def _values(graph: Graph, inputs: list[np.ndarray]) -> dict[int, np.ndarray]:
    """Every top-level tensor's reference value."""
    env = {id(t): to_dtype(np.asarray(x), t.type.dtype) for t, x in zip(graph.inputs, inputs)}
    for node in graph.nodes:
        with np.errstate(all="ignore"):
            result = KERNELS[node.op](node, *[env[id(t)] for t in node.inputs])
        outs = result if isinstance(result, tuple | list) else [result]
        for t, v in zip(node.outputs, outs):
            env[id(t)] = np.asarray(v).reshape(t.type.shape)
    return env


def dead_code(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Drops nodes nothing reads and inputs nothing uses (in place); returns the inputs
    that remain."""
    live = {id(t) for t in graph.outputs}
    kept = []
    for node in reversed(graph.nodes):
        if any(id(t) in live for t in node.outputs):
            kept.append(node)
            live.update(id(t) for t in node.inputs)
    graph.nodes = kept[::-1]
    pairs = [(t, x) for t, x in zip(graph.inputs, inputs) if id(t) in live]
    graph.inputs = [t for t, _ in pairs]
    return [x for _, x in pairs]


def _replace(graph: Graph, old: Tensor, new: Tensor) -> None:
    for node in graph.nodes:
        node.inputs = [new if t is old else t for t in node.inputs]
    graph.outputs = [new if t is old else t for t in graph.outputs]


def _candidates(graph: Graph, inputs: list[np.ndarray]
                ) -> Iterator[tuple[Graph, list[np.ndarray]]]:
    """Smaller variants of (graph, inputs), the most aggressive first."""
    n_out = len(graph.outputs)
    if n_out > 1:
        for i in range(n_out):
            g, ins = copy.deepcopy((graph, inputs))
            g.outputs = [g.outputs[i]]
            yield g, dead_code(g, ins)
    # An intermediate tensor as the only output: what follows it goes (a failing op
    # followed by reshapes, which no bypass can drop).
    produced = [(k, i) for k, n in enumerate(graph.nodes) for i in range(len(n.outputs))
                if n.op != "constant" and not any(t is n.outputs[i] for t in graph.outputs)]
    for k, i in produced:
        g, ins = copy.deepcopy((graph, inputs))
        g.outputs = [g.nodes[k].outputs[i]]
        yield g, dead_code(g, ins)
    values = None
    for k in reversed(range(len(graph.nodes))):
        for j in range(len(graph.nodes[k].inputs)):
            t = graph.nodes[k].inputs[j]
            if t.producer is None or t.producer.op == "constant":
                continue
            if values is None:
                values = _values(graph, inputs)
            value = values[id(t)]
            g, ins = copy.deepcopy((graph, inputs))
            old = g.nodes[k].inputs[j]
            new = g.add_input(old.type)
            _replace(g, old, new)
            yield g, dead_code(g, ins + [value])
    for k in reversed(range(len(graph.nodes))):
        node = graph.nodes[k]
        if len(node.outputs) != 1:
            continue
        for j, t in enumerate(node.inputs):
            if t.type == node.output.type:
                g, ins = copy.deepcopy((graph, inputs))
                _replace(g, g.nodes[k].output, g.nodes[k].inputs[j])
                yield g, dead_code(g, ins)
                break


def _size(graph: Graph) -> int:
    return len(graph.walk())


def shrink(graph: Graph, inputs: list[np.ndarray], fails: Fails, budget: int = 80,
           log: Callable[[str], None] = lambda _: None) -> tuple[Graph, list[np.ndarray]]:
    """The smallest variant of (graph, inputs) found for which `fails` stays true,
    trying at most `budget` candidates."""
    current = copy.deepcopy((graph, inputs))
    tried = 0
    progress = True
    while progress and tried < budget:
        progress = False
        for cand in _candidates(*current):
            if _size(cand[0]) >= _size(current[0]) and len(cand[0].outputs) >= len(
                    current[0].outputs):
                continue
            tried += 1
            if fails(*cand):
                log(f"shrink: {_size(current[0])} -> {_size(cand[0])} nodes")
                current = cand
                progress = True
                break
            if tried >= budget:
                break
    return current


def save_reproducer(directory: Path, graph: Graph, inputs: list[np.ndarray], info: dict
                    ) -> Path:
    """Writes model.mlir (when StableHLO can spell the graph), inputs.npz (input_0,
    ...), graph.txt and failure.json into `directory`; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(directory / "inputs.npz", **{f"input_{i}": x for i, x in enumerate(inputs)})
    (directory / "graph.txt").write_text(print_graph(graph))
    try:
        (directory / "model.mlir").write_text(graph_to_mlir(graph))
        info = {**info, "replay": f"minirt-run --board {info.get('board')} "
                f"{directory / 'model.mlir'} --inputs {directory / 'inputs.npz'} --check"}
    except NotExpressible as e:
        info = {**info, "mlir": f"none: {e}"}
    (directory / "failure.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    return directory
