"""Elementwise kernels over whole buffers become one flat loop (toolchain/kernel/flatten.py)."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.kernel.flatten import flatten_elementwise
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.kernel.interpret import run_kernel
from toolchain.types import QuantParams, TensorType, dtype

F32 = dtype("f32")
T = TensorType((3, 4), F32)
IJ = (Index(0), Index(1))


def _muladd() -> Kernel:
    prod = Apply("multiply", (Load(0, IJ), Load(1, IJ)), F32)
    body = Apply("add", (prod, Apply("exponential", (Load(2, IJ),), F32)), F32)
    return Kernel("k", (3, 4), 2, (T, T, T), T, body)


def test_an_elementwise_kernel_becomes_one_loop_and_computes_the_same() -> None:
    k = _muladd()
    flat = flatten_elementwise(k)
    assert flat.domain == (12,) and flat.n_parallel == 1
    assert all(t.shape == (12,) for t in (*flat.operands, flat.result))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3)]
    want = run_kernel(k, args)
    got = run_kernel(flat, [a.reshape(12) for a in args])
    np.testing.assert_array_equal(got.reshape(3, 4), want)


def test_a_shared_subexpression_stays_shared() -> None:
    x = Load(0, IJ)
    sq = Apply("multiply", (x, x), F32)
    k = Kernel("k", (3, 4), 2, (T,), T, Apply("add", (sq, sq), F32))
    flat = flatten_elementwise(k)
    assert flat.body.args[0] is flat.body.args[1]


@pytest.mark.parametrize("why, kernel", [
    ("a transpose", Kernel("k", (3, 4), 2, (TensorType((4, 3), F32),), T,
                           Load(0, (Index(1), Index(0))))),
    ("a broadcast", Kernel("k", (3, 4), 2, (TensorType((4,), F32),), T, Load(0, (Index(1),)))),
    ("an index in the body", Kernel("k", (3, 4), 2, (T,), TensorType((3, 4), dtype("i32")),
                                    Apply("add", (Index(0), Index(1)), dtype("i32")))),
    ("a padded load", Kernel("k", (3, 4), 2, (T,), T, Load(0, IJ, pad=Const(0.0, F32)))),
    ("a reduction", Kernel("k", (3, 4), 1, (T,), TensorType((3,), F32), Load(0, IJ),
                           combine="add", init=Const(0.0, F32))),
    ("a per-channel quantized operand", Kernel(
        "k", (3, 4), 2, (TensorType((3, 4), dtype("i8"),
                                    QuantParams(dtype("i8"), F32, (0.5,) * 4, (0,) * 4, axis=1)),),
        T, Apply("convert", (Load(0, IJ),), F32))),
    ("one dimension already", Kernel("k", (12,), 1, (TensorType((12,), F32),),
                                     TensorType((12,), F32), Load(0, (Index(0),)))),
])
def test_other_kernels_are_left_as_they_are(why: str, kernel: Kernel) -> None:
    assert flatten_elementwise(kernel) is kernel, why


def test_other_dispatch_kinds_pass_through() -> None:
    other = object()
    assert flatten_elementwise(other) is other
