"""ONNX node names reach the dispatches (graph/sources.py): a named node by its name,
an unnamed one by its output's name; and names never change the image's bytes."""

from __future__ import annotations

import numpy as np
from onnx import helper
from onnx_models import build, import_bytes, node

from toolchain.pipeline import compile_image, prepare_graph
from toolchain.report.layers import layers_of_program
from toolchain.schedule import schedule
from toolchain.target import load_board


def _model() -> bytes:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    k = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    w = rng.standard_normal((64, 5)).astype(np.float32)
    return build([node("Conv", ["x", "k"], ["c"], name="/features/conv1/Conv"),
                  helper.make_node("Relu", ["c"], ["relu_out"]),  # no name
                  node("Flatten", ["relu_out"], ["f"], name="/flatten/Flatten"),
                  node("MatMul", ["f", "w"], ["y"], name="/classifier/fc/MatMul")],
                 inputs={"x": x}, outputs=["y"], consts={"k": k, "w": w})


def test_nodes_keep_their_names_or_their_outputs() -> None:
    graph = import_bytes(_model())
    names = {n.source.name for n in graph.nodes if n.source is not None}
    assert {"/features/conv1/Conv", "relu_out", "/classifier/fc/MatMul"} <= names
    conv = next(n for n in graph.nodes if n.op == "convolution")
    assert conv.source.origin == "onnx node '/features/conv1/Conv' (Conv)"


def test_dispatches_are_labelled_by_layer() -> None:
    graph = import_bytes(_model())
    prepare_graph(graph)
    layers = layers_of_program(schedule(graph))
    by_kind = {layer.kind: layer for layer in layers}
    conv, fc = by_kind["convolution"], by_kind["dot_general"]
    assert conv.label == "features/conv1" and fc.label == "classifier/fc"
    assert "relu_out" in [s["name"] for s in conv.sources]  # the ReLU fused into the conv
    # Each reads its own weights from the pool (the conv also the ReLU's zeros).
    assert 4 * 2 * 3 * 3 * 4 in [n for _, n in conv.constants]
    assert 64 * 5 * 4 in [n for _, n in fc.constants]
    assert conv.weights_bytes == sum(n for _, n in conv.constants)


def test_names_do_not_change_the_image() -> None:
    board = load_board("cortex-m4")
    named = compile_image(import_bytes(_model()), board, log=lambda _: None)
    graph = import_bytes(_model())
    for n in graph.walk():
        n.source = None
    anonymous = compile_image(graph, board, log=lambda _: None)
    assert named.module == anonymous.module and named.obj == anonymous.obj
    assert [s.sources.main for s in anonymous.program.steps] == \
        [None] * len(anonymous.program.steps)
    assert any(s.sources.main is not None for s in named.program.steps)
