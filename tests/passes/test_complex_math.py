"""passes/complex_math.py: each complex function lowered to real ops (lower_complex) and
run on the reference executor, against numpy's complex128 value of the same input
(the reference's own, before lowering), over a grid of real and imaginary parts from
-6 to 6 with zeros, and real parts out to +-30 for tanh's saturation.

Tolerance: complex64 results within rtol 2e-5 of |want| (the real functions each part
is built from are a few f32 ulp, ~1e-7, and the identities add a few roundings and the
condition of the function, which grows near its zeros: rtol is taken against |want|,
not each part); complex128 within 1e-12 of |want| for the same reason at f64. atan2 is
the log of a value near modulus 1, so its error is absolute: within rtol of
max(|want|, 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.frontend import import_module
from toolchain.mlir import parse_text
from toolchain.passes.complex import lower_complex
from toolchain.reference import run_graph

UNARY = ["sine", "cosine", "tan", "tanh", "exponential_minus_one", "log_plus_one",
         "logistic", "rsqrt", "cbrt"]
BINARY = ["power", "atan2", "maximum", "minimum"]
RTOL = {"f32": 2e-5, "f64": 1e-12}


def _grid() -> np.ndarray:
    parts = np.array([-6.0, -2.5, -1.0, -0.3, -1e-3, 0.0, 1e-3, 0.3, 1.0, 2.5, 6.0])
    z = (parts[:, None] + 1j * parts[None, :]).ravel()
    return np.concatenate([z, [25 + 1j, -30 - 2j, 21.5 + 0.5j, -0.5 + 0j, 1e-6 + 1e-6j]])


def _model(op: str, n: int, part: str, arity: int) -> str:
    t = f"tensor<{n}xcomplex<{part}>>"
    args = ", ".join(f"%a{i}: {t}" for i in range(arity))
    operands = ", ".join(f"%a{i}" for i in range(arity))
    return (f"func.func @main({args}) -> {t} {{\n  %0 = stablehlo.{op} {operands} : {t}\n"
            f"  return %0 : {t}\n}}\n")


def _planar(z: np.ndarray, part: str) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(np.float32 if part == "f32" else np.float64)


def _check(op: str, part: str, inputs: list[np.ndarray], floor: float = 1e-30) -> None:
    cdt = np.complex64 if part == "f32" else np.complex128
    inputs = [x.astype(cdt) for x in inputs]
    graph = import_module(parse_text(_model(op, len(inputs[0]), part, len(inputs)), "c.mlir"))
    (want,) = run_graph(graph, inputs)
    (got,) = run_graph(lower_complex(graph), [_planar(x, part) for x in inputs])
    got = got[..., 0] + 1j * got[..., 1]
    finite = np.isfinite(want)
    err = np.abs(got - want)[finite] / np.maximum(np.abs(want[finite]), floor)
    i = int(np.argmax(err))
    assert err[i] <= RTOL[part], (op, part, inputs[0][finite][i], got[finite][i],
                                  want[finite][i])


@pytest.mark.parametrize("part", ["f32", "f64"])
@pytest.mark.parametrize("op", UNARY)
def test_unary_complex_lowering_matches_numpy(op: str, part: str) -> None:
    _check(op, part, [_grid()])


@pytest.mark.parametrize("part", ["f32", "f64"])
@pytest.mark.parametrize("op", BINARY)
def test_binary_complex_lowering_matches_numpy(op: str, part: str) -> None:
    z = _grid()
    w = np.random.default_rng(3).permutation(z)
    if op == "power":  # |x**y| spans e**+-100 on the grid: keep it where f32 is finite
        z, w = z[np.abs(z) > 0.1], w[np.abs(z) > 0.1] / 4
    if op in ("maximum", "minimum"):  # ties on the real part pick by the imaginary
        w = np.where(np.arange(len(z)) % 3 == 0, z.real + 1j * w.imag, w)
    if op == "atan2":  # the definition's x**2 + y**2 cancels near x = +-i y: both the
        # lowering and the reference lose those digits, differently (f32 vs complex128)
        keep = np.abs(w * w + z * z) > 0.1 * (np.abs(w) ** 2 + np.abs(z) ** 2)
        z, w = z[keep], w[keep]
    # atan2 is the log of a ratio near modulus 1: its error is absolute, an ulp of 1.
    _check(op, part, [z, w], floor=1.0 if op == "atan2" else 1e-30)


def test_reference_definitions() -> None:
    """The reference's complex cbrt and atan2 are the principal cube root and the
    interpreter's atan2 (-i log((x + i y) / sqrt(x**2 + y**2))), which for real
    operands is the real atan2; maximum / minimum are lexicographic."""
    z = np.array([8 + 0j, -8 + 0j, 1j, 3 - 4j])
    graph = import_module(parse_text(_model("cbrt", 4, "f64", 1), "c.mlir"))
    (got,) = run_graph(graph, [z])
    np.testing.assert_allclose(got ** 3, z, atol=1e-12)
    assert abs(got[0] - 2) < 1e-15 and abs(got[1] - (1 + np.sqrt(3) * 1j)) < 1e-14
    graph = import_module(parse_text(_model("atan2", 3, "f64", 2), "c.mlir"))
    y, x = np.array([1.0, -2.0, 0.5]) + 0j, np.array([1.0, 3.0, -4.0]) + 0j
    (got,) = run_graph(graph, [y, x])
    np.testing.assert_allclose(got, np.arctan2(y.real, x.real), atol=1e-15)
    graph = import_module(parse_text(_model("maximum", 3, "f64", 2), "c.mlir"))
    a, b = np.array([1 + 5j, 2 + 1j, 2 + 3j]), np.array([2 + 0j, 2 + 2j, 1 + 9j])
    (got,) = run_graph(graph, [a, b])
    np.testing.assert_array_equal(got, [2 + 0j, 2 + 2j, 2 + 3j])
