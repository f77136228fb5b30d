"""Helpers for the tests that compare toolchain.quant with TFLite Micro's interpreter.

A plain module beside the tests (not conftest): they import `q`, `const`, `run`,
`assert_exact` from here. Skips the importing test module when the `tflite-micro` wheel
(a dev extra) is absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="the tflite-micro wheel (dev extra) is not installed")

from tflite_models import Tensor, run_tflm, single_op_model  # noqa: E402


def q(shape: Sequence[int], scale: float, zp: int) -> Tensor:
    """An int8 activation tensor, per-tensor quantized."""
    return Tensor(shape, "int8", scale=scale, zero_point=zp)


def const(data: np.ndarray | list, dtype: str = "int32", **quant: object) -> Tensor:
    """A constant tensor (weights, bias, shape / axis operands)."""
    arr = np.asarray(data)
    return Tensor(arr.shape, dtype, data=arr, **quant)


def rand_int8(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    return rng.integers(-128, 128, size=tuple(shape)).astype(np.int8)


def run(model: bytes, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The first output of one TFLite Micro run of `model`."""
    outputs, _ = run_tflm(model, list(inputs))
    return outputs[0]


def run_single(opcode: str, inputs: Sequence[Tensor | None], output: Tensor,
               values: Sequence[np.ndarray], **options: object) -> np.ndarray:
    """Build a one-op model and run it on `values` (one array per non-constant input)."""
    return run(single_op_model(opcode, inputs, [output], **options), values)


def assert_exact(expected: np.ndarray, got: np.ndarray, what: str) -> None:
    """Integers compare exactly: same shape, dtype and every element."""
    expected, got = np.asarray(expected), np.asarray(got)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    if not np.array_equal(expected, got):
        bad = np.argwhere(expected != got)
        first = tuple(bad[0])
        raise AssertionError(
            f"{what}: {len(bad)} of {expected.size} elements differ; first at {first}: "
            f"TFLite Micro {expected[first]}, ours {got[first]}")
