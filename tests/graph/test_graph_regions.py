"""Regions in the graph IR: closed sub-graphs checked by the verifier (their signature
per op, their own nodes, no reads from outside) and printed under their node."""

from __future__ import annotations

import pytest

from toolchain.diagnostics import CompileError
from toolchain.graph.ir import Graph, Tensor
from toolchain.graph.printer import print_graph
from toolchain.graph.verify import verify_graph, verify_node
from toolchain.types import TensorType, dtype

I1, I32, F32 = (TensorType((), dtype(n)) for n in ("i1", "i32", "f32"))
VEC = TensorType((4,), dtype("f32"))


def region(ins: list[TensorType], build=None) -> Graph:
    """A region taking `ins`; `build(graph, inputs)` returns its results (default: the
    inputs themselves)."""
    g = Graph("r")
    args = [g.add_input(t) for t in ins]
    g.outputs = build(g, args) if build else args
    return g


def counter_loop(limit: TensorType = I32) -> tuple[Graph, Tensor, Tensor]:
    """while (i < n) { i += 1; x *= 2 } with n captured."""
    g = Graph("main")
    i, x, n = g.add_input(I32), g.add_input(VEC), g.add_input(limit)
    cond = region([I32, VEC, limit], lambda r, a: r.add("compare", [a[0], a[2]], [I1],
                                                       {"direction": "LT"}).outputs)

    def body(r: Graph, a: list[Tensor]) -> list[Tensor]:
        one = r.add("constant", [], [I32], {"value": 1}).output
        return [r.add("add", [a[0], one], [I32]).output,
                r.add("add", [a[1], a[1]], [VEC]).output]

    loop = g.add("while", [i, x, n], [I32, VEC], regions=[cond, region([I32, VEC, limit], body)])
    g.outputs = loop.outputs
    return g, loop, n


def test_a_well_formed_loop_verifies_and_prints() -> None:
    g, _, _ = counter_loop()
    verify_graph(g)
    text = print_graph(g)
    assert "%0, %1 = while(%arg0, %arg1, %arg2) : tensor<i32>, tensor<4xf32>" in text
    assert "    cond(%a0: tensor<i32>, %a1: tensor<4xf32>, %a2: tensor<i32>) {" in text
    assert "      %2 = compare(%a0, %a2) {direction = LT} : tensor<i1>" in text
    assert "    body(%a3: tensor<i32>, %a4: tensor<4xf32>, %a5: tensor<i32>) {" in text
    assert "      return %4, %5\n    }\n  return %0, %1\n}" in text


def test_region_signatures_are_checked() -> None:
    g, loop, _ = counter_loop(limit=TensorType((), dtype("i64")))
    # The captured bound is i64 but the condition compares it with the i32 counter.
    with pytest.raises(CompileError, match="operand 1 has element type i64"):
        verify_graph(g)
    g, loop, _ = counter_loop()
    loop.regions[0].outputs = [loop.regions[0].inputs[0]]
    assert "while's cond region yields (tensor<i32>), expected (tensor<i1>)" in \
        verify_node(loop).message
    g, loop, _ = counter_loop()
    loop.regions = loop.regions[:1]
    assert verify_node(loop).message == "'while' takes 2 regions, got 1"
    g, loop, _ = counter_loop()
    loop.inputs = loop.inputs[:2]  # the capture is missing
    assert "while's cond region takes (tensor<i32>, tensor<4xf32>, tensor<i32>), expected " \
        "(tensor<i32>, tensor<4xf32>)" in verify_node(loop).message


def test_a_region_may_not_read_outer_values() -> None:
    g, loop, n = counter_loop()
    cmp = loop.regions[0].nodes[0]
    cmp.inputs[1] = n  # the outer tensor itself, not the region's input for it
    with pytest.raises(CompileError, match="'compare' uses a value before it is defined"):
        verify_graph(g)


def test_branches_must_agree() -> None:
    g = Graph("main")
    p, x = g.add_input(I1), g.add_input(VEC)
    neg = region([VEC], lambda r, a: [r.add("negate", [a[0]], [VEC]).output])
    node = g.add("if", [p, x], [VEC], regions=[region([VEC]), neg])
    assert verify_node(node) is None
    node.regions[1] = region([VEC], lambda r, a: [r.add("reduce", [a[0], r.add(
        "constant", [], [F32], {"value": 0.0}).output], [F32], {"kind": "add",
                                                               "dims": (0,)}).output])
    assert "if's branch 1 yields (tensor<f32>), expected (tensor<4xf32>)" in \
        verify_node(node).message
    sel = g.add("case", [x], [VEC], regions=[region([])])
    assert "case's index must be a scalar i32" in verify_node(sel).message


def nested_ifs(depth: int) -> Graph:
    """`depth` + 1 nested `if`s, each passing a vector through."""
    inner = region([VEC])
    for level in range(depth + 1):
        g = Graph("main" if level == depth else "r")
        x = g.add_input(VEC)
        p = g.add("constant", [], [I1], {"value": True}).output
        g.outputs = g.add("if", [p, x], [VEC], regions=[inner, region([VEC])]).outputs
        inner = g
    return g


def test_deep_nesting_prints_and_verifies_without_recursion() -> None:
    """Region walks (verify, rename, print) are loops: 2000 nested `if`s, far beyond
    Python's recursion limit, go through."""
    g = nested_ifs(2000)
    verify_graph(g)
    text = print_graph(g)
    assert text.count("true_branch(") == 2001
    assert len(g.walk()) == 2 * 2001
