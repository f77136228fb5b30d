"""Random graphs through StableHLO MLIR (toolchain/testing/to_mlir.py): printed in
generic form, parsed, imported and verified, they come back as the same graph; and
graph_diff notices any change."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.frontend import import_module
from toolchain.graph.verify import verify_graph
from toolchain.mlir.parser import parse_text
from toolchain.testing.random_graphs import expand_rng, generate
from toolchain.testing.to_mlir import NotExpressible, graph_diff, graph_to_mlir

SAMPLE = range(3000, 3150)


def round_trip(graph, seed: int):
    text = graph_to_mlir(graph, seed)
    imported = import_module(parse_text(text, f"random_{seed}.mlir"))
    verify_graph(imported)
    return text, imported


def test_random_graphs_survive_the_importer() -> None:
    ops = set()
    done = 0
    for seed in SAMPLE:
        rg = generate(seed)
        try:
            _, imported = round_trip(rg.graph, seed)
        except NotExpressible:
            continue
        assert graph_diff(expand_rng(rg.graph), imported) is None, seed
        ops |= set(rg.ops)
        done += 1
    assert done > 120
    # Regions (captures included) and functions of several blocks come through too.
    assert {"while", "if", "sort", "scatter", "reduce_region", "cfg"} <= ops


@pytest.mark.parametrize("op", ["complex", "real", "imag", "fft", "bitcast_convert",
                                "rng_bit_generator", "rng"])
def test_complex_fft_bit_and_rng_ops_are_printed_and_come_back(op: str) -> None:
    """Each is written as its StableHLO op and imports as the same graph; rng imports
    as the importer's expansion of it (frontend/stablehlo_random.py), which is what
    random_graphs.expand_rng builds from the generated node."""
    rgs = [r for r in (generate(s, ops=(op,)) for s in range(40)) if op in r.ops][:3]
    assert rgs
    for rg in rgs:
        text, imported = round_trip(rg.graph, rg.seed)
        assert f'"stablehlo.{op}"' in text
        assert graph_diff(expand_rng(rg.graph), imported) is None, rg.seed
        if op == "rng":
            assert "rng" not in {n.op for n in imported.nodes}
            assert "rng_bit_generator" in {n.op for n in imported.nodes}


@pytest.mark.parametrize("op", ["cholesky", "triangular_solve", "batch_norm_training",
                                "batch_norm_grad"])
def test_linear_algebra_ops_are_printed_and_come_back(op: str) -> None:
    """Each is written as its StableHLO op (cholesky's false `lower` both written and
    left out) and imports as the same graph."""
    rgs = [r for r in (generate(s, ops=(op,)) for s in range(60)) if op in r.ops][:6]
    assert rgs
    texts = set()
    for rg in rgs:
        text, imported = round_trip(rg.graph, rg.seed)
        texts.add(text)
        assert f'"stablehlo.{op}"' in text
        assert graph_diff(rg.graph, imported) is None, rg.seed
    if op == "cholesky":
        rg = next(r for r in rgs if not any(n.attrs["lower"] for n in r.graph.nodes
                                            if n.op == "cholesky"))
        texts = {graph_to_mlir(rg.graph, seed) for seed in range(12)}
        assert any("lower = false" in t for t in texts)
        assert any("lower" not in t for t in texts)
        for t in texts:
            assert graph_diff(rg.graph, import_module(parse_text(t, "x.mlir"))) is None


def test_minirt_only_ops_are_not_expressible() -> None:
    rg = next(r for r in (generate(s, ops=("dequantize",)) for s in range(50))
              if "dequantize" in r.ops)
    with pytest.raises(NotExpressible, match="dequantize"):
        graph_to_mlir(rg.graph)


def test_default_attributes_are_written_both_ways() -> None:
    rg = next(r for r in (generate(s, ops=("convolution",)) for s in range(100))
              if "convolution" in r.ops and all(
                  set(n.attrs["lhs_dilation"]) == {1} for n in r.graph.walk()
                  if n.op == "convolution"))
    texts = {graph_to_mlir(rg.graph, seed) for seed in range(12)}
    assert any("lhs_dilation" in t for t in texts) and any("lhs_dilation" not in t
                                                           for t in texts)
    for t in texts:
        assert graph_diff(rg.graph, import_module(parse_text(t, "x.mlir"))) is None


def test_graph_diff_finds_a_changed_attribute_or_wire() -> None:
    rg = next(r for r in (generate(s) for s in SAMPLE)
              if any(n.op == "transpose" for n in r.graph.nodes))
    _, imported = round_trip(rg.graph, 0)
    node = next(n for n in imported.nodes if n.op == "transpose")
    node.attrs["permutation"] = tuple(reversed(node.attrs["permutation"]))
    assert "attributes" in graph_diff(rg.graph, imported)
    rg = next(r for r in (generate(s, ops=("subtract",)) for s in range(100))
              if any(n.op == "subtract" and n.inputs[0] is not n.inputs[1]
                     for n in r.graph.nodes))
    _, imported = round_trip(rg.graph, 0)
    node = next(n for n in imported.nodes if n.op == "subtract"
                and n.inputs[0] is not n.inputs[1])
    node.inputs.reverse()
    assert "operand 0 is not the same value" in graph_diff(rg.graph, imported)


CAPTURES = """
func.func @main(%x: tensor<i32>, %y: tensor<i32>) -> tensor<i32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r = "stablehlo.while"(%c) ({
  ^bb0(%i: tensor<i32>):
    %p = stablehlo.compare LT, %i, %x : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>):
    %n = stablehlo.add %i, %y : tensor<i32>
    stablehlo.return %n : tensor<i32>
  }) : (tensor<i32>) -> tensor<i32>
  return %r : tensor<i32>
}
"""


def test_graph_diff_matches_captures_by_what_they_capture() -> None:
    a = import_module(parse_text(CAPTURES, "a.mlir"))
    b = import_module(parse_text(CAPTURES, "b.mlir"))
    assert graph_diff(a, b) is None
    loop = b.nodes[-1]
    assert loop.op == "while" and len(loop.inputs) == 3
    # The captures in the other order, and each region's inputs with them: same graph.
    loop.inputs[1:] = loop.inputs[2:0:-1]
    for r in loop.regions:
        r.inputs[1:] = r.inputs[2:0:-1]
    assert graph_diff(a, b) is None
    # Only the operands swapped: the loop now reads y where it read x.
    loop.inputs[1:] = loop.inputs[2:0:-1]
    assert graph_diff(a, b) is not None


def test_complex_constants_with_nan_come_back_equal() -> None:
    """A complex<f32> constant holding NaN parts is the same value after the round trip
    (compared bit for bit like floats; found by the campaign, seed 90)."""
    rg = generate(90)
    node = next(n for n in rg.graph.nodes if n.op == "constant"
                and n.output.type.dtype.is_complex)
    assert np.isnan(node.attrs["value"]).any()
    _, imported = round_trip(rg.graph, 90)
    assert graph_diff(expand_rng(rg.graph), imported) is None
