"""Short names of the model's layers (graph/sources.py): TFLite's fused tensor names,
common and wrapper prefixes, repeats, long names and unnamed dispatches."""

from __future__ import annotations

from toolchain.graph.ir import Graph
from toolchain.graph.sources import MAX_LABEL, Source, layer_labels, short_name, tag_new
from toolchain.types import TensorType, dtype


def test_short_name_takes_the_layer_most_fused_names_belong_to() -> None:
    # kws_ref_model's first CONV_2D output: the layer is conv2d, not the activation.
    name = ("functional_1/activation/Relu;functional_1/batch_normalization/FusedBatchNormV3;"
            "functional_1/conv2d/BiasAdd/ReadVariableOp/resource;functional_1/conv2d/BiasAdd;"
            "functional_1/conv2d_4/Conv2D;functional_1/conv2d/Conv2D1")
    assert short_name(name) == "functional_1/conv2d"
    # The fused activation is not the layer (ad01's dense layers, ResNet's residual add).
    assert short_name("functional_1/activation/Relu;functional_1/dense/BiasAdd") == \
        "functional_1/dense"
    assert short_name("model/activation_2/Relu6;model/add/add") == "model/add"
    assert short_name("/conv1/Conv") == "/conv1"
    assert short_name("Identity") == "Identity"


def test_labels_drop_common_and_wrapper_prefixes() -> None:
    names = ["model/conv1/Conv2D", "model/conv2/Conv2D", "model/dense/MatMul"]
    assert layer_labels(names, ["convolution"] * 3) == ["conv1", "conv2", "dense"]
    wrapped = ["StatefulPartitionedCall/sequential_1/conv/BiasAdd",
               "StatefulPartitionedCall/fc/MatMul"]
    assert layer_labels(wrapped, ["convolution", "dot_general"]) == ["conv", "fc"]
    # A wrapper inside a path is a name of the model's own.
    assert layer_labels(["x/model/fc/MatMul", "y/fc/MatMul"], ["dot"] * 2) == ["x/model/fc",
                                                                               "y/fc"]


def test_unnamed_dispatches_are_their_op_kind_and_labels_are_unique() -> None:
    labels = layer_labels([None, "a/Relu", None, "Identity", "Identity"],
                          ["convolution", "maximum", "convolution", "reduce", "reduce"])
    assert labels == ["convolution", "a", "convolution#2", "Identity:reduce",
                      "Identity:reduce#2"]
    assert len(set(labels)) == len(labels)


def test_long_labels_are_elided_in_the_middle() -> None:
    (label,) = layer_labels(["a" * 30 + "/" + "b" * 30 + "/" + "c" * 30 + "/op"], ["dot"])
    assert len(label) == MAX_LABEL and "..." in label
    assert label.startswith("aaa") and label.endswith("ccc")


def test_tag_new_names_only_the_new_untagged_nodes() -> None:
    t = TensorType((2,), dtype("f32"))
    g = Graph("main")
    x = g.add_input(t)
    old = g.add("negate", [x], [t])
    start = len(g.nodes)
    inner = g.add("abs", [old.output], [t])
    inner.source = Source("callee_op")
    outer = g.add("exponential", [inner.output], [t])
    tag_new(g, start, Source("call_site", "mlir func.call"))
    assert old.source is None
    assert inner.source == Source("callee_op")
    assert outer.source == Source("call_site", "mlir func.call")
