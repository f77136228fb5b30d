"""Graph passes and nodes with regions: constant folding folds inside regions and never
runs a loop at build time; the affine pass and int8 quantization leave region nodes
alone or refuse them with a located error."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.diagnostics import CompileError
from toolchain.frontend.stablehlo import import_module
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_text
from toolchain.passes import fold_affine, fold_constants, quantize_graph
from toolchain.reference import run_graph
from toolchain.reference.kernels import KERNELS

# A loop whose inputs are all constants, with a constant expression inside its body.
LOOP = """
func.func @main(%x: tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = "stablehlo.while"(%i0) ({
  ^bb0(%i: tensor<i32>):
    %n = stablehlo.constant dense<5> : tensor<i32>
    %c = "stablehlo.compare"(%i, %n) <{comparison_direction =
        #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>):
    %one = stablehlo.constant dense<1> : tensor<i32>
    %two = stablehlo.add %one, %one : tensor<i32>
    %n = stablehlo.add %i, %two : tensor<i32>
    "stablehlo.return"(%n) : (tensor<i32>) -> ()
  }) : (tensor<i32>) -> tensor<i32>
  %s = stablehlo.multiply %x, %x : tensor<4xf32>
  %y = stablehlo.add %s, %x : tensor<4xf32>
  return %r#0, %y : tensor<i32>, tensor<4xf32>
}
""".replace("%r:2", "%r:1")


def load(text: str):
    g = import_module(parse_text(text, "test.mlir"))
    verify_graph(g)
    return g


def fold_without_running(g, op: str, monkeypatch):
    """fold_constants(g), failing if it evaluates an `op` node."""
    def refuse(*args):
        raise AssertionError(f"constant folding ran a {op}")

    monkeypatch.setitem(KERNELS, op, refuse)
    fold_constants(g)
    monkeypatch.undo()
    return g


def test_fold_never_runs_a_while_but_folds_inside_it(monkeypatch) -> None:
    g = fold_without_running(load(LOOP), "while", monkeypatch)
    (loop,) = [n for n in g.nodes if n.op == "while"]
    body = loop.regions[1]
    # `one + one` is folded into a constant inside the body.
    assert [n.op for n in body.nodes] == ["constant", "add"]
    assert int(body.nodes[0].attrs["value"]) == 2
    verify_graph(g)
    i, _ = run_graph(g, [np.zeros(4, np.float32)])
    assert int(i) == 6


# A loop of blocks whose inputs are all constants and which never ends (i >= 0 stays
# true): folding it would hang the build (found by issue 24's hostile models).
BLOCK_LOOP = """
func.func @main() -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  cf.br ^head(%zero : tensor<i32>)
^head(%i: tensor<i32>):
  %ge = stablehlo.compare GE, %i, %zero : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %c = "builtin.unrealized_conversion_cast"(%ge) : (tensor<i1>) -> i1
  cf.cond_br %c, ^head(%i : tensor<i32>), ^after
^after:
  return %i : tensor<i32>
}
"""


def test_fold_never_runs_a_loop_of_blocks(monkeypatch) -> None:
    g = fold_without_running(load(BLOCK_LOOP), "cfg", monkeypatch)
    assert [n.op for n in g.nodes] == ["cfg"]


def test_affine_and_int8_quantization_with_region_nodes() -> None:
    g = fold_affine(fold_constants(load(LOOP)))  # multi-result and region nodes pass through
    verify_graph(g)
    # The loop is integer work and carries over as it is; the float part is quantized.
    calib = [np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)]
    q = quantize_graph(g, calib)
    verify_graph(q)
    (loop,) = [n for n in q.nodes if n.op == "while"]
    assert len(loop.regions) == 2
    # A float loop has no int8 form: a located error.
    text = LOOP.replace("return %r#0, %y", "return %r#0, %f").replace(
        "  %s = stablehlo.multiply", """  %f = "stablehlo.if"(%c0) ({
    "stablehlo.return"(%x) : (tensor<4xf32>) -> ()
  }, {
    "stablehlo.return"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> tensor<4xf32>
  %s = stablehlo.multiply""").replace(
        "  %i0 = ", "  %c0 = stablehlo.constant dense<true> : tensor<i1>\n  %i0 = ")
    g = fold_affine(load(text))
    with pytest.raises(CompileError) as info:
        quantize_graph(g, calib)
    assert "'if': no int8 kernel" in info.value.message
    assert info.value.loc.line_col == (18, 8)
