"""tests/tflite_models.py builds models TFLite Micro accepts and runs, for every op it covers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import tflite
from tflite_models import (
    OPTIONS_TABLE,
    Op,
    Tensor,
    build_model,
    run_tflm,
    single_op_model,
    tensor_value,
)

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def q(shape: tuple[int, ...], scale: float = 0.05, zp: int = 0) -> Tensor:
    return Tensor(shape, "int8", scale=scale, zero_point=zp)


def const(data: np.ndarray | list, dtype: str = "int32", **quant: object) -> Tensor:
    arr = np.asarray(data)
    return Tensor(arr.shape, dtype, data=arr, **quant)


_W = np.arange(-27, 27, dtype=np.int8)


def _cases() -> dict[str, Callable[[], tuple[bytes, list[tuple[int, ...]]]]]:
    """Opcode -> a function building one model of it and naming its input shapes."""
    x = (1, 5, 6, 2)
    return {
        "CONV_2D": lambda: (single_op_model(
            "CONV_2D", [q(x), const(_W[:36].reshape(2, 3, 3, 2), "int8", scale=[0.02, 0.03],
                                   zero_point=[0, 0]),
                        const([10, -10], scale=[0.001, 0.0015], zero_point=[0, 0])],
            [q((1, 5, 6, 2), 0.1)], padding="SAME", stride_w=1, stride_h=1), [x]),
        "DEPTHWISE_CONV_2D": lambda: (single_op_model(
            "DEPTHWISE_CONV_2D", [q(x), const(_W[:36].reshape(1, 3, 3, 4), "int8",
                                             scale=[0.02] * 4, zero_point=[0] * 4,
                                             quantized_dimension=3),
                                  const([1, 2, 3, 4], scale=[0.001] * 4, zero_point=[0] * 4)],
            [q((1, 3, 4, 4), 0.1)], padding="VALID", stride_w=1, stride_h=1,
            depth_multiplier=2), [x]),
        "FULLY_CONNECTED": lambda: (single_op_model(
            "FULLY_CONNECTED", [q((2, 6)), const(_W[:18].reshape(3, 6), "int8", scale=0.02,
                                                 zero_point=0), None],
            [q((2, 3), 0.1)]), [(2, 6)]),
        "AVERAGE_POOL_2D": lambda: (single_op_model(
            "AVERAGE_POOL_2D", [q(x)], [q((1, 2, 3, 2))], padding="VALID", stride_w=2,
            stride_h=2, filter_width=2, filter_height=2), [x]),
        "MAX_POOL_2D": lambda: (single_op_model(
            "MAX_POOL_2D", [q(x)], [q((1, 3, 3, 2))], padding="SAME", stride_w=2,
            stride_h=2, filter_width=3, filter_height=3), [x]),
        "ADD": lambda: (single_op_model("ADD", [q(x, 0.05, 3), q(x, 0.02, -4)], [q(x, 0.1, 1)]),
                        [x, x]),
        "SUB": lambda: (single_op_model("SUB", [q(x, 0.05, 3), q(x, 0.02, -4)], [q(x, 0.1, 1)]),
                        [x, x]),
        "MUL": lambda: (single_op_model("MUL", [q(x, 0.05, 3), q(x, 0.02, -4)], [q(x, 0.01, 1)]),
                        [x, x]),
        "RESHAPE": lambda: (single_op_model("RESHAPE", [q(x), const([1, 60])], [q((1, 60))]),
                            [x]),
        "SOFTMAX": lambda: (single_op_model("SOFTMAX", [q((2, 10), 0.1)],
                                            [q((2, 10), 1 / 256, -128)], beta=1.0), [(2, 10)]),
        "PAD": lambda: (single_op_model("PAD", [q(x), const([[0, 0], [1, 2], [0, 1], [0, 0]])],
                                        [q((1, 8, 7, 2))]), [x]),
        "MEAN": lambda: (single_op_model("MEAN", [q(x), const([1, 2])], [q((1, 1, 1, 2))],
                                         keep_dims=True), [x]),
        "CONCATENATION": lambda: (single_op_model(
            "CONCATENATION", [q(x), q(x)], [q((1, 5, 6, 4))], axis=3), [x, x]),
        "LOGISTIC": lambda: (single_op_model("LOGISTIC", [q(x, 0.1)], [q(x, 1 / 256, -128)]),
                             [x]),
        "TANH": lambda: (single_op_model("TANH", [q(x, 0.1)], [q(x, 1 / 128, 0)]), [x]),
        "RELU": lambda: (single_op_model("RELU", [q(x, 0.05, 2)], [q(x, 0.03, -128)]), [x]),
        "RELU6": lambda: (single_op_model("RELU6", [q(x, 0.05, 2)], [q(x, 6 / 255, -128)]), [x]),
        "HARD_SWISH": lambda: (single_op_model("HARD_SWISH", [q(x, 0.05, 2)], [q(x, 0.03, -20)]),
                               [x]),
        "LEAKY_RELU": lambda: (single_op_model("LEAKY_RELU", [q(x, 0.05, 2)], [q(x, 0.03, -20)],
                                               alpha=0.2), [x]),
        "TRANSPOSE": lambda: (single_op_model("TRANSPOSE", [q(x), const([0, 3, 1, 2])],
                                              [q((1, 2, 5, 6))]), [x]),
        "STRIDED_SLICE": lambda: (single_op_model(
            "STRIDED_SLICE", [q(x), const([0, 1, 0, 0]), const([1, 5, 6, 2]),
                              const([1, 2, 3, 1])], [q((1, 2, 2, 2))]), [x]),
        "SQUEEZE": lambda: (single_op_model("SQUEEZE", [q((1, 5, 1, 2))], [q((5, 2))],
                                            squeeze_dims=[0, 2]), [(1, 5, 1, 2)]),
        "QUANTIZE": lambda: (single_op_model("QUANTIZE", [Tensor(x, "float32")], [q(x)]), [x]),
        "DEQUANTIZE": lambda: (single_op_model("DEQUANTIZE", [q(x)], [Tensor(x, "float32")]),
                               [x]),
    }


REQUIRED = ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D",
            "ADD", "SUB", "MUL", "RESHAPE", "SOFTMAX", "PAD", "MEAN", "CONCATENATION",
            "LOGISTIC", "TANH", "RELU", "RELU6", "HARD_SWISH", "TRANSPOSE", "STRIDED_SLICE",
            "SQUEEZE", "QUANTIZE", "DEQUANTIZE"]


def test_every_required_op_has_a_case() -> None:
    assert set(REQUIRED) <= set(_cases()) <= set(OPTIONS_TABLE)


@pytest.mark.parametrize("opcode", sorted(_cases()))
def test_builds_and_runs_in_tflm(opcode: str) -> None:
    model, shapes = _cases()[opcode]()
    parsed = tflite.Model.GetRootAs(model, 0)
    sg = parsed.Subgraphs(0)
    assert sg.OperatorsLength() == 1
    code = parsed.OperatorCodes(sg.Operators(0).OpcodeIndex()).BuiltinCode()
    assert code == getattr(tflite.BuiltinOperator, opcode)
    rng = np.random.default_rng(1)
    inputs = []
    for i, shape in enumerate(shapes):
        dtype = sg.Tensors(sg.Inputs(i)).Type()
        if dtype == tflite.TensorType.FLOAT32:
            inputs.append(rng.uniform(-3, 3, shape).astype(np.float32))
        else:
            inputs.append(rng.integers(-128, 128, shape).astype(np.int8))
    (out,), _ = run_tflm(model, inputs)
    expected = sg.Tensors(sg.Outputs(0))
    assert out.shape == tuple(expected.ShapeAsNumpy())
    # Something was computed: not every output element is the output zero point.
    assert np.unique(out).size > 1


def test_chain_and_intermediate_tensors() -> None:
    """A two-op chain; the intermediate tensor is readable after the run."""
    x = Tensor((1, 4, 4, 2), "float32")
    mid = q((1, 4, 4, 2), 0.05, 3)
    y = q((1, 4, 4, 2), 1 / 256, -128)
    model = build_model([Op("QUANTIZE", [x], [mid]), Op("LOGISTIC", [mid], [y])], [x], [y])
    data = np.linspace(-4, 4, 32, dtype=np.float32).reshape(1, 4, 4, 2)
    (out,), interp = run_tflm(model, [data], keep_tensors=True)
    mid_value = tensor_value(interp, 1)
    # No quotient here is a .5 tie, so floor(v + 0.5) rounds like TFLite's half-away.
    expected_mid = np.clip(np.floor(data / np.float32(0.05) + 0.5) + 3, -128, 127)
    assert np.array_equal(mid_value, expected_mid.astype(np.int8))
    assert out.dtype == np.int8 and out.shape == (1, 4, 4, 2)


def test_bad_option_names_are_refused() -> None:
    with pytest.raises(ValueError, match="no field"):
        single_op_model("CONV_2D", [q((1, 2, 2, 1))], [q((1, 2, 2, 1))], stride=1)
    with pytest.raises(ValueError, match="takes no options"):
        single_op_model("RELU", [q((1, 2))], [q((1, 2))], alpha=1.0)
