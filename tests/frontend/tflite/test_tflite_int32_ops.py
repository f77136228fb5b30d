"""Unquantized int32 arithmetic and CAST (toolchain/frontend/tflite/int32.py) against
TFLite Micro's kernels, exactly: broadcasting, fused activations, DIV's truncation
toward zero on negative operands, CAST's wrapping and truncation."""

from __future__ import annotations

import numpy as np
import pytest
from tflite_models import Tensor, run_tflm, single_op_model

from toolchain.frontend.tflite.errors import TFLiteError
from toolchain.frontend.tflite.importer import import_model
from toolchain.frontend.tflite.reader import read_model
from toolchain.reference import run_graph

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")


def _check(model: bytes, inputs: list[np.ndarray]) -> None:
    want = run_tflm(model, inputs)[0][0]
    got = run_graph(import_model(read_model(model)), inputs)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


@pytest.mark.parametrize("opcode,activation", [
    ("ADD", "NONE"), ("SUB", "RELU"), ("SUB", "RELU6"), ("MUL", "NONE"), ("MUL", "RELU"),
    ("DIV", "NONE"), ("MINIMUM", None), ("MAXIMUM", None)])
def test_binary(opcode: str, activation: str | None) -> None:
    rng = np.random.default_rng(len(opcode))
    a = rng.integers(-3000, 3000, (3, 8)).astype(np.int32)
    b = rng.integers(-50, 50, (8,)).astype(np.int32)
    b[b == 0] = 7  # DIV by zero is undefined in C
    options = {} if activation is None else {"fused_activation_function": activation}
    model = single_op_model(opcode, [Tensor((3, 8), "int32"), Tensor((8,), "int32", data=b)],
                            [Tensor((3, 8), "int32")], **options)
    _check(model, [a])


@pytest.mark.parametrize("source,target,values", [
    ("int32", "int8", [-300, -129, -128, 0, 127, 128, 70000]),
    ("uint32", "int32", [0, 1, 2**31 - 1, 2**31, 2**32 - 1]),
    ("int32", "uint32", [-1, 0, 5, -2**31]),
    ("int16", "float32", [-32768, -1, 0, 32767]),
    ("int16", "int32", [-32768, 0, 32767]),
    ("float32", "int32", [-2.7, -0.5, 0.0, 0.5, 2.7, 1e6]),
])
def test_cast(source: str, target: str, values: list[float]) -> None:
    x = np.array(values, dtype=np.float64 if source == "float32" else np.int64).astype(source)
    model = single_op_model("CAST", [Tensor(x.shape, source)], [Tensor(x.shape, target)])
    _check(model, [x])


def test_add_with_an_activation_tflite_micro_skips_is_refused() -> None:
    model = single_op_model("ADD", [Tensor((4,), "int32"), Tensor((4,), "int32")],
                            [Tensor((4,), "int32")], fused_activation_function="RELU")
    with pytest.raises(TFLiteError, match=r"operator 0 \(ADD\): fused activation RELU is not "
                       "supported on int32: TFLite Micro's kernel skips it"):
        import_model(read_model(model))
