"""The fixed-point primitives of integer requantization, generated code against the
reference: saturating_rounding_doubling_high_mul and rounding_divide_by_pot."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

I32 = dtype("i32")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
EDGES = np.array([INT_MIN, INT_MIN + 1, -(2**30), -3, -2, -1, 0, 1, 2, 3, 2**30, INT_MAX - 1,
                  INT_MAX], dtype=np.int32)


def _pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = (x.ravel() for x in np.meshgrid(EDGES, EDGES))
    ra = rng.integers(INT_MIN, INT_MAX, n, dtype=np.int64, endpoint=True).astype(np.int32)
    rb = rng.integers(INT_MIN, INT_MAX, n, dtype=np.int64, endpoint=True).astype(np.int32)
    return np.concatenate([a, ra]), np.concatenate([b, rb])


def _reference(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    g = Graph("k")
    t = TensorType(a.shape, I32)
    x, y = g.add_input(t), g.add_input(t)
    g.outputs = [g.add(op, [x, y], [t]).output]
    return run_graph(g, [a, b])[0]


def _kernel(op: str, n: int) -> Kernel:
    t = TensorType((n,), I32)
    return Kernel(op, (n,), 1, (t, t), t,
                  Apply(op, (Load(0, (Index(0),)), Load(1, (Index(0),))), I32))


def test_srdhm_reference_by_hand() -> None:
    got = _reference("saturating_rounding_doubling_high_mul",
                     np.array([INT_MIN, 5, -5, 3, -3, 1 << 30], np.int32),
                     np.array([INT_MIN, 1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30], np.int32))
    # 5 * 2**30 / 2**31 = 2.5 -> 3; -2.5 -> -2 (ties toward +infinity); 1.5 -> 2; -1.5 -> -1
    assert got.tolist() == [INT_MAX, 3, -2, 2, -1, 1 << 29]


def test_rdbpot_reference_by_hand() -> None:
    got = _reference("rounding_divide_by_pot",
                     np.array([5, -5, 6, -6, 7, -7, INT_MAX, INT_MIN, 3, 12, 12], np.int32),
                     np.array([1, 1, 2, 2, 1, 1, 31, 31, 0, -4, 40], np.int32))
    # 2.5 -> 3, -2.5 -> -3 (ties away from zero); 1.5 -> 2; -1.5 -> -2; 3.5 -> 4; -3.5 -> -4;
    # exponents are clamped to [0, 31]
    assert got.tolist() == [3, -3, 2, -2, 4, -4, 1, -1, 3, 12, 0]


@pytest.mark.parametrize("op", ["saturating_rounding_doubling_high_mul",
                                "rounding_divide_by_pot"])
def test_generated_code_matches_the_reference(jit, op: str) -> None:
    rng = np.random.default_rng(11)
    a, b = _pairs(rng, 4000)
    if op == "rounding_divide_by_pot":
        b = np.concatenate([rng.integers(0, 32, a.size - 40), np.arange(-5, 35)]).astype(np.int32)
    mod = jit([_kernel(op, a.size)])
    np.testing.assert_array_equal(mod.run(op, a, b), _reference(op, a, b))
