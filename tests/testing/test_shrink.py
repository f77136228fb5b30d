"""Shrinking a failing random graph and saving it (toolchain/testing/shrink.py): the
shrunk graph still fails, is much smaller, and its reproducer replays."""

from __future__ import annotations

import json

import numpy as np

from toolchain.frontend import import_module
from toolchain.mlir.parser import parse_text
from toolchain.reference import run_graph
from toolchain.testing.random_graphs import generate
from toolchain.testing.shrink import save_reproducer, shrink
from toolchain.testing.to_mlir import graph_diff


def _with(op: str):
    """A graph of at least 6 nodes holding `op`, with its inputs."""
    rg = next(r for r in (generate(s, ops=(op, "add", "reshape", "abs", "transpose"))
                          for s in range(200))
              if op in r.ops and len(r.graph.walk()) >= 6)
    return rg.graph, rg.inputs()


def test_a_graph_shrinks_to_the_op_that_fails() -> None:
    """A stand-in failure (the graph holds a transpose whose result the reference
    computes): everything else goes, and the values at the cut are the reference's."""
    graph, inputs = _with("transpose")
    tried = []

    def fails(g, ins) -> bool:
        tried.append(g)
        return any(n.op == "transpose" for n in g.nodes)

    small, small_inputs = shrink(graph, inputs, fails, budget=200)
    assert fails(small, small_inputs)
    assert [n.op for n in small.nodes] == ["transpose"] and len(small.outputs) == 1
    assert len(small.inputs) == len(small_inputs) == 1
    # The cut reads the value the original computed there: same output as before.
    node = next(n for n in graph.nodes if n.op == "transpose")
    original = run_graph(_upto(graph, node.output), inputs)[0]
    np.testing.assert_array_equal(run_graph(small, small_inputs)[0], original)
    assert len(tried) < 200


def _upto(graph, t):
    import copy

    g = copy.deepcopy(graph)
    idx = [id(x) for n in graph.nodes for x in n.outputs].index(id(t))
    g.outputs = [[x for n in g.nodes for x in n.outputs][idx]]
    return g


def test_a_reproducer_replays(tmp_path) -> None:
    graph, inputs = _with("reshape")
    d = save_reproducer(tmp_path / "r", graph, inputs, {"board": "x86-64", "seed": 1})
    info = json.loads((d / "failure.json").read_text())
    assert info["replay"].startswith("minirt-run --board x86-64 ")
    back = import_module(parse_text((d / "model.mlir").read_text(), "model.mlir"))
    assert graph_diff(graph, back) is None
    saved = np.load(d / "inputs.npz")
    for i, x in enumerate(inputs):
        np.testing.assert_array_equal(saved[f"input_{i}"], x)
    assert (d / "graph.txt").read_text().startswith("graph @main")
