"""ONNX's backend node tests (`onnx.backend.test.case.node.collect_testcases()`, in the
installed `onnx` package) run through minirt.

Each case is a model of one node (or, `_expanded`, the graph of that node's function
body) with data sets of inputs and expected outputs. Operands that decide a shape (a
Reshape's shape, a Reduce's axes, a TopK's K; frontend/onnx/shape_operands.py) arrive as
graph inputs there; minirt's shapes are static, so the runner pins them with the data
set's values through --input-value's mechanism, as a user would, and feeds the rest:
one graph per data set. A case's row in the report is its op, the `_expanded` cases'
the op whose function body they hold.

Out of scope (EXCLUDED, written into the results with each reason): training-only ops,
random-number ops whose values the spec leaves open, string / sequence / map / optional
types, ImageDecoder. Everything else either passes or is refused in one line.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from toolchain.frontend.onnx.shape_operands import shape_operand_inputs
from toolchain.loader import load_graph
from toolchain.testing.conformance.compare import onnx_close
from toolchain.testing.conformance.outcome import Prepared

__all__ = ["Case", "EXCLUDED", "collect", "exclusion", "prepare"]

_TRAINING = "training-only: computes a loss or an update for training, not inference"
_RANDOM = "random numbers: the spec leaves the values open, so no expected output holds"
_STRINGS = "strings: minirt's tensors hold numbers only"
_SEQUENCES = "sequence / optional values: minirt's graph holds tensors only"

# op -> why its cases are out of scope.
EXCLUDED: dict[str, str] = {
    "SoftmaxCrossEntropyLoss": _TRAINING, "NegativeLogLikelihoodLoss": _TRAINING,
    "Gradient": _TRAINING, "Adagrad": _TRAINING, "Adam": _TRAINING, "Momentum": _TRAINING,
    "RandomNormal": _RANDOM, "RandomUniform": _RANDOM, "RandomNormalLike": _RANDOM,
    "RandomUniformLike": _RANDOM, "Multinomial": _RANDOM, "Bernoulli": _RANDOM,
    "StringNormalizer": _STRINGS, "StringConcat": _STRINGS, "StringSplit": _STRINGS,
    "RegexFullMatch": _STRINGS,
    **{op: _SEQUENCES for op in (
        "SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceAt",
        "SequenceErase", "SequenceLength", "SequenceMap", "SplitToSequence",
        "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement")},
    "ImageDecoder": "decodes compressed image files (JPEG, PNG, ...): not a tensor op",
}
# Ways a case leaves scope other than its op (exclusion() checks them).
TRAINING_MODE = ("training mode: Dropout drops at random and BatchNormalization "
                 "updates its running statistics, which only training does")
NOT_TENSOR = "a graph input or output that is a sequence, map or optional, not a tensor"
STRING_TENSOR = "a string tensor: minirt's tensors hold numbers only"


@dataclass
class Case:
    """One node test: its name, its report row (op) and ONNX's TestCase."""

    name: str
    op: str
    case: object  # onnx.backend.test.case.test_case.TestCase


@cache
def _all() -> tuple:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cases' own numpy overflow warnings
        return tuple(collect_testcases())


def collect() -> list[Case]:
    """Every node test, sorted by name."""
    cases = sorted(_all(), key=lambda c: c.name)
    single = {c.name: c.model.graph.node[0].op_type for c in cases
              if len(c.model.graph.node) == 1}
    out = []
    for c in cases:
        base = re.sub(r"_expanded(_ver\d+)?$", "", c.name)
        op = single.get(c.name) or single.get(base) or c.model.graph.node[0].op_type
        out.append(Case(c.name, op, c))
    return out


def _nodes(graph) -> Iterator:
    import onnx

    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _nodes(g)


def _training(node, case) -> bool:
    """A Dropout or BatchNormalization that runs in training mode in this case."""
    import onnx

    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "BatchNormalization":
        return bool(attrs.get("training_mode", 0))
    if node.op_type != "Dropout":
        return False
    if "is_test" in attrs:  # Dropout before opset 7
        return not attrs["is_test"]
    if len(node.input) < 3 or not node.input[2]:
        return False
    names = [v.name for v in case.model.graph.input]
    if node.input[2] in names:
        return any(bool(np.asarray(inputs[names.index(node.input[2])]).any())
                   for inputs, _ in case.data_sets)
    return True  # a constant training_mode given at all is there to be true


def exclusion(c: Case) -> str | None:
    """Why the case is out of scope, or None."""
    import onnx

    if c.op in EXCLUDED:
        return f"{c.op}: {EXCLUDED[c.op]}"
    graph = c.case.model.graph
    for n in _nodes(graph):
        if n.op_type in EXCLUDED:
            return f"{n.op_type}: {EXCLUDED[n.op_type]}"
        if _training(n, c.case):
            return f"{n.op_type} in {TRAINING_MODE}"
    for v in list(graph.input) + list(graph.output):
        if not v.type.HasField("tensor_type"):
            return NOT_TENSOR
        if v.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            return STRING_TENSOR
    return None


def prepare(c: Case, data_set: int, work: Path | None = None) -> Prepared:
    """Data set `data_set` of the case: the graph with its shape operands pinned, the
    other inputs, and ONNX's expected outputs; raises the loader's refusal."""
    import onnx

    model = c.case.model
    inputs, outputs = c.case.data_sets[data_set]
    inputs = [_array(x) for x in inputs]
    names = [v.name for v in model.graph.input
             if v.name not in {t.name for t in model.graph.initializer}]
    pinned = set(shape_operand_inputs(model))
    values = {n: x for n, x in zip(names, inputs) if n in pinned}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(model, path)
        graph = load_graph(path, input_values=values)
    # The graph's own inputs: pinned ones and those with an empty dimension (no values,
    # so built in) are constants of the graph.
    given = dict(zip(names, inputs))
    feed = [given[n] for n in graph.input_names]
    judge = onnx_close(c.case.rtol, c.case.atol)
    if c.op in WHOLE_AXIS_SUMS:
        judge = _scaled_judge(c.case.rtol, c.case.atol)
    return Prepared(graph, feed, [(i, w, judge) for i, w in enumerate(map(_array, outputs))],
                    len(outputs))


# Ops each of whose outputs sums a whole axis of terms of either sign (DFT): an output
# that cancels to about 0 carries the rounding error of the largest terms, and the
# expected values were made by numpy's float32 FFT, whose error is about one float32 ulp
# of the largest output (onnxruntime's differs from them by as much). Such an output is
# judged with atol at least one float32 ulp (2**-23) of the largest expected magnitude.
WHOLE_AXIS_SUMS = frozenset({"DFT"})


def _scaled_judge(rtol: float, atol: float):
    def judge(got: np.ndarray, want: np.ndarray) -> str | None:
        scale = float(np.abs(want).max()) if want.size else 0.0
        return onnx_close(rtol, max(atol, 2.0**-23 * scale))(got, want)
    return judge


def _array(x: object) -> np.ndarray:
    """A data set's value as an array: numpy can hold some element types (bfloat16, the
    8-bit floats) only through ml_dtypes, so the case gives those as TensorProtos."""
    import onnx

    a = onnx.numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)
    # The sub-byte integers (ml_dtypes int4, uint2, ...) as minirt holds them: a byte each.
    if a.dtype.name in ("int4", "int2"):
        return a.astype(np.int8)
    if a.dtype.name in ("uint4", "uint2"):
        return a.astype(np.uint8)
    return a
