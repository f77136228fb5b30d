"""passes/merge_constants.py: equal constants become one; outputs and regions stay."""

from __future__ import annotations

import numpy as np

from toolchain.graph.ir import Graph
from toolchain.passes import merge_equal_constants
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

I32 = dtype("i32")
T = TensorType((4,), I32)


def _const(g: Graph, values: list[int]):
    return g.add("constant", [], [T], {"value": np.asarray(values, np.int32)}).output


def test_equal_constants_are_stored_once_and_results_do_not_change() -> None:
    g = Graph("main")
    x = g.add_input(T, "x")
    a, b, c = _const(g, [1, 2, 3, 4]), _const(g, [1, 2, 3, 4]), _const(g, [1, 2, 3, 5])
    y = g.add("add", [x, a], [T], {}).output
    y = g.add("multiply", [y, b], [T], {}).output
    y = g.add("subtract", [y, c], [T], {}).output
    g.outputs.append(y)
    xs = [np.arange(4, dtype=np.int32)]
    want = run_graph(g, xs)[0]
    merge_equal_constants(g)
    constants = [n for n in g.nodes if n.op == "constant"]
    assert len(constants) == 2  # [1, 2, 3, 4] once, [1, 2, 3, 5]
    assert np.array_equal(run_graph(g, xs)[0], want)


def test_constants_differing_only_in_type_are_kept_apart() -> None:
    g = Graph("main")
    a = g.add("constant", [], [T], {"value": np.zeros(4, np.int32)}).output
    f = TensorType((4,), dtype("f32"))
    b = g.add("constant", [], [f], {"value": np.zeros(4, np.float32)}).output
    g.outputs.append(g.add("add", [b, g.add("convert", [a], [f], {}).output], [f], {}).output)
    merge_equal_constants(g)
    assert len([n for n in g.nodes if n.op == "constant"]) == 2


def test_graph_outputs_keep_their_own_constants() -> None:
    g = Graph("main")
    a, b = _const(g, [7, 7, 7, 7]), _const(g, [7, 7, 7, 7])
    g.outputs.extend([a, b])
    merge_equal_constants(g)
    assert g.outputs[0] is a and g.outputs[1] is b
    assert len([n for n in g.nodes if n.op == "constant"]) == 2
