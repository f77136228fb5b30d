"""ONNX's own backend node tests (onnx.backend.test.case.node) for the ops minirt
imports beyond its first set: every single-node case of those ops runs on the numpy
reference and matches ONNX's expected outputs, or is refused with the one-line error
written down below (an element type minirt does not hold, an empty tensor, a size
given at run time).

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

from toolchain.frontend.onnx.errors import OnnxError
from toolchain.frontend.onnx.reader import DTYPES
from toolchain.loader import load_graph
from toolchain.reference import run_graph

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
    # (every Resize node test gives its scales or sizes at run time: refused; the
    # resize case of onnx_cases.py checks the conversion against onnxruntime)
    "resize": {"Resize"},
    # no converter: imported through the op's ONNX function body (functions.py)
    "functions": {"Attention", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
                  "MeanVarianceNormalization", "SwiGLU"},
}

# Inputs that decide an output's shape (or the computation's structure): minirt's shapes
# are static, so these must be constants.
SIZES = {"axes", "axis", "split", "repeats", "depth", "scales", "sizes"}
OP_SIZES = {"TopK": {"K"}}  # (Attention's K is the keys)


# Cases refused on purpose, with what the error says: inputs of an element type minirt
# does not hold (strings, 2-, 4- and 8-bit floats and integers; bfloat16 in a function
# body), empty tensors, and a SIZES input given at run time.
def _refusal(case) -> str | None:
    for v in case.model.graph.input:
        t = v.type.tensor_type
        if t.elem_type not in DTYPES:
            return "which minirt does not support"
        if any(d.HasField("dim_value") and d.dim_value == 0 for d in t.shape.dim):
            return "has an empty dimension"
        if t.elem_type == onnx.TensorProto.BFLOAT16 and case.model.graph.node[
                0].op_type in FAMILIES["functions"]:
            # bfloat16 inputs load, but a function body's constants of the input's
            # type are bfloat16 tensors, which the graph does not hold.
            return "holds bfloat16 values, which minirt does not support"
    node = case.model.graph.node[0]
    schema = onnx.defs.get_schema(node.op_type)
    given = {v.name for v in case.model.graph.input}
    for i, name in enumerate(node.input):
        sizes = SIZES | OP_SIZES.get(node.op_type, set())
        if name in given and i < len(schema.inputs) and schema.inputs[i].name in sizes:
            return f"input {i} \\({schema.inputs[i].name}\\) must be a constant"
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
            load_graph(path)
        return
    graph = load_graph(path)
    for inputs, outputs in case.data_sets:
        got = run_graph(graph, [np.asarray(x) for x in inputs])
        assert len(got) == len(outputs)
        for g, w in zip(got, outputs):
            w = np.asarray(w)
            assert _close(np.asarray(g), w), f"{name}: got {g}, expected {w}"


def test_every_family_has_cases() -> None:
    """Each family's ops have node tests (a renamed op would otherwise test nothing)."""
    for fam, ops in FAMILIES.items():
        names = _single_node(ops)
        assert {_cases()[n].model.graph.node[0].op_type for n in names} == ops, fam
