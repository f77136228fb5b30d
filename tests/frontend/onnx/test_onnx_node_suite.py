"""ONNX's own backend node tests (onnx.backend.test.case.node) for the ops minirt
imports beyond its first set: every single-node case of those ops runs on the numpy
reference and matches ONNX's expected outputs, or is refused with the one-line error
written down below (an element type minirt does not hold). A size
given at run time (a shape, axes, K, repeats, scales input) is pinned to the case's
value with --input-value's mechanism, as a user would pin it
(frontend/onnx/shape_operands.py says which inputs).

Tolerance: numpy.isclose(rtol=1e-4, atol=1e-5, equal_nan), as bench/peer_suites.py
counts them (ONNX's own runner allows rtol=1e-3 for float32); integers and bools exactly.
The firmware side of these ops is tested by onnx_cases.py's cases on the boards.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx_models import run_ort

from toolchain.frontend.onnx.errors import OnnxError
from toolchain.frontend.onnx.reader import DTYPES
from toolchain.frontend.onnx.shape_operands import shape_operand_inputs
from toolchain.loader import load_graph
from toolchain.reference import run_graph


def run_pinned(path: Path, model: onnx.ModelProto, inputs: list) -> list[np.ndarray]:
    """The reference outputs on one data set, the inputs the model reads as shape
    operands (a Reshape's shape, a Reduce's axes, a TopK's K) pinned to the data set's
    values with --input-value's mechanism, as bench/peer_suites.py pins them."""
    names = [v.name for v in model.graph.input]
    pinned = set(shape_operand_inputs(model))
    graph = load_graph(path, input_values={n: np.asarray(x) for n, x in zip(names, inputs)
                                           if n in pinned})
    # The graph's inputs: pinned ones and those with an empty dimension (no values, so
    # built in as constants) are not among them.
    given = {n: _array(x) for n, x in zip(names, inputs)}
    return run_graph(graph, [given[n] for n in graph.input_names])

def _array(x: object) -> np.ndarray:
    """A data set's value: bfloat16 ones come as TensorProtos (numpy holds them only
    through ml_dtypes)."""
    if isinstance(x, onnx.TensorProto):
        return onnx.numpy_helper.to_array(x)
    return np.asarray(x)


# Op families, as added (toolchain/frontend/onnx/ops.py).
FAMILIES = {
    "logic": {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And",
              "Or", "Xor", "Where", "CastLike"},
    "math": {"Ceil", "Floor", "Round", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
             "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Sign", "BitwiseNot", "BitwiseAnd",
             "BitwiseOr", "BitwiseXor", "Max", "Min", "Sum", "Mean", "Pow", "Mod",
             "Reciprocal", "BitShift", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Mish",
             "Swish", "Gelu", "ThresholdedRelu", "Shrink", "PRelu", "IsNaN", "IsInf"},
    "norms": {"ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
              "ReduceLogSumExp", "ArgMax", "ArgMin", "Hardmax", "LayerNormalization",
              "RMSNormalization", "LpNormalization", "InstanceNormalization",
              "GroupNormalization", "TopK"},
    "movement": {"Split", "Tile", "Trilu", "GatherElements", "SpaceToDepth", "DepthToSpace",
                 "CumSum", "OneHot", "EyeLike", "ScatterND", "ScatterElements"},
    "contractions": {"Einsum", "LpPool"},
    # (every Resize node test gives its scales or sizes at run time: pinned here; the
    # resize case of onnx_cases.py checks the conversion against onnxruntime)
    "resize": {"Resize"},
    # unrolled recurrent layers (recurrent.py)
    "recurrent": {"LSTM", "GRU", "RNN"},
    # ops with bodies as the graph's while / if (loops.py, control.py)
    "control": {"If", "Loop", "Scan"},
    # no converter: imported through the op's ONNX function body (functions.py)
    "functions": {"Attention", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
                  "MeanVarianceNormalization", "SwiGLU",
                  # its body holds a Scan, whose body reads the function body's values
                  "LinearAttention"},
}

# Attribute values a converter refuses on purpose: (op, attribute, value) -> what the
# error says, in the order the converter checks them.
REFUSED_ATTRIBUTES: dict[tuple[str, str, object], str] = {}

# Cases whose expected outputs (from ONNX's reference) differ from onnxruntime's, and
# minirt computes onnxruntime's: compared with onnxruntime instead.
ONNXRUNTIME_INSTEAD: set[str] = set()


# Ops of ONNX's sequence and optional types, which minirt's graph does not hold: a body
# using one is refused (the node that does is named).
SEQUENCE_OPS = {"SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceAt",
                "SequenceErase", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
                "Optional", "OptionalGetElement", "OptionalHasElement"}

# Cases minirt cannot build yet, with what the error says.
LIMITS: dict[str, str] = {
    # A float cast to a 2- or 4-bit integer: ONNX leaves values out of range undefined
    # and its expected outputs hold ml_dtypes' choice, so minirt refuses (docs/onnx.md).
    **{f"test_castlike_{src}_to_{dst}": "a Cast from f"
       for src in ("FLOAT", "FLOAT16") for dst in ("INT2", "INT4", "UINT2", "UINT4")},
}


def _body_ops(graph) -> set[str]:
    ops = set()
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops |= {m.op_type for m in a.g.node} | _body_ops(a.g)
    return ops


# Cases refused on purpose, with what the error says: inputs of an element type minirt
# does not hold (strings, 6-bit floats), attributes a converter
# does not take (REFUSED_ATTRIBUTES).
def _refusal(case) -> str | None:
    node = case.model.graph.node[0]
    if case.name in LIMITS:
        return LIMITS[case.name]
    if any(not v.type.HasField("tensor_type") for v in case.model.graph.input):
        return "is not a tensor"
    if _body_ops(case.model.graph) & SEQUENCE_OPS:
        return "is not supported"
    opset = case.model.opset_import[0].version
    if node.op_type == "Scan" and opset < 9:
        # Scan 8 has a batch axis; onnx's converter to opset 13 rewrites the inputs.
        return "version converter changes its input"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    for (op, name, value), refused in REFUSED_ATTRIBUTES.items():  # the converter's order
        if op == node.op_type and attrs.get(name) == value:
            return refused
    for v in case.model.graph.input:
        if v.name in shape_operand_inputs(case.model):
            continue  # pinned: an empty axes list is a value, not an input
        t = v.type.tensor_type
        if t.elem_type not in DTYPES:
            return "which minirt does not support"
    return None


@cache
def _cases() -> dict[str, object]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cases' own numpy overflow warnings
        return {c.name: c for c in collect_testcases()}


def _single_node(ops: set[str]) -> list[str]:
    return sorted(name for name, c in _cases().items()
                  if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in ops)


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if want.dtype.name == "bfloat16":  # two of its ulps, as ONNX's runner allows
        return bool(np.isclose(np.asarray(got, np.float32), want.astype(np.float32),
                               rtol=2.0**-6, atol=1e-5, equal_nan=True).all())
    if want.dtype.name.startswith(("float8", "float6", "float4")):
        # minirt holds them as float32 already rounded to the format: its conversions
        # are the spec's, so equal values (NaN to NaN) are asked for
        return bool(np.array_equal(np.asarray(got, np.float32), want.astype(np.float32),
                                   equal_nan=True))
    if want.dtype.kind == "f":
        return bool(np.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True).all())
    return bool(np.array_equal(got, want))


PARAMS = [pytest.param(name, id=name) for fam in FAMILIES.values()
          for name in _single_node(fam)]


@pytest.mark.parametrize("name", PARAMS)
def test_node_case(name: str, tmp_path: Path) -> None:
    case = _cases()[name]
    path = tmp_path / "model.onnx"
    onnx.save(case.model, path)
    refusal = _refusal(case)
    if refusal is not None:
        with pytest.raises(OnnxError, match=refusal):
            run_pinned(path, case.model, case.data_sets[0][0])
        return
    for inputs, outputs in case.data_sets:
        got = run_pinned(path, case.model, inputs)
        if name in ONNXRUNTIME_INSTEAD:
            outputs = run_ort(case.model.SerializeToString(), inputs)
            if outputs is None:
                pytest.skip("onnxruntime is not installed")
        assert len(got) == len(outputs)
        for g, w in zip(got, outputs):
            w = _array(w)
            assert _close(np.asarray(g), w), f"{name}: got {g}, expected {w}"


def test_every_family_has_cases() -> None:
    """Each family's ops have node tests (a renamed op would otherwise test nothing)."""
    for fam, ops in FAMILIES.items():
        names = _single_node(ops)
        assert {_cases()[n].model.graph.node[0].op_type for n in names} == ops, fam
