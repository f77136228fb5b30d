"""The TFLite Micro builtins of issue 19 point 1 (comparisons, logical ops, SELECT_V2,
float elementwise math, ...): single-op models with seeded inputs against TFLite
Micro's interpreter.

Integer and bool results must match exactly. Float results: numpy.isclose(rtol=1e-5,
atol=1e-6) — exp / log / sin / cos / sqrt come from our own math library, not the C
library TFLite Micro calls, and may differ in the last bit or two of float32.
"""

from __future__ import annotations

import numpy as np
import pytest
from quant.tflm_oracle import assert_exact, const, q
from tflite_models import OPTIONS_TABLE, Tensor, run_tflm, single_op_model

from toolchain.frontend.tflite import import_model, read_model
from toolchain.reference import run_graph

RTOL, ATOL = 1e-5, 1e-6
OPTIONS_TABLE.update({
    "EQUAL": None, "NOT_EQUAL": None, "LESS": None, "LESS_EQUAL": None, "GREATER": None,
    "GREATER_EQUAL": None, "LOGICAL_AND": None, "LOGICAL_OR": None, "LOGICAL_NOT": None,
    "SELECT_V2": None,
})


def run_both(opcode: str, inputs: list, output: Tensor, values: list[np.ndarray],
             **options) -> tuple[np.ndarray, np.ndarray]:
    """(TFLite Micro's output, our reference's) of a one-op model."""
    model = single_op_model(opcode, inputs, [output], **options)
    want, _ = run_tflm(model, values)
    (got,) = run_graph(import_model(read_model(model)), values)
    return want[0], got


def check_exact(opcode: str, inputs: list, output: Tensor, values: list[np.ndarray],
                **options) -> np.ndarray:
    want, got = run_both(opcode, inputs, output, values, **options)
    assert_exact(want, got, opcode)
    return got


def check_close(opcode: str, inputs: list, output: Tensor, values: list[np.ndarray],
                **options) -> None:
    want, got = run_both(opcode, inputs, output, values, **options)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]


# ------------------------------------------------------------------ comparisons


@pytest.mark.parametrize("opcode", COMPARISONS)
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (3, 1))])
def test_compare_float(opcode: str, shapes: tuple) -> None:
    s1, s2 = shapes
    r = rng(1)
    # Few distinct values, so that equal elements occur.
    a = r.integers(-2, 3, s1).astype(np.float32) / 2
    b = r.integers(-2, 3, s2).astype(np.float32) / 2
    out = np.broadcast_shapes(s1, s2)
    got = check_exact(opcode, [Tensor(s1, "float32"), Tensor(s2, "float32")],
                      Tensor(out, "bool"), [a, b])
    assert got.any() and not got.all()


@pytest.mark.parametrize("opcode", COMPARISONS)
def test_compare_int32(opcode: str) -> None:
    r = rng(2)
    a = r.integers(-3, 3, (4, 5)).astype(np.int32)
    b = r.integers(-3, 3, (5,)).astype(np.int32)
    check_exact(opcode, [Tensor((4, 5), "int32"), Tensor((5,), "int32")],
                Tensor((4, 5), "bool"), [a, b])


@pytest.mark.parametrize("opcode", COMPARISONS)
@pytest.mark.parametrize("quant", [((0.05, 3), (0.05, 3)), ((0.05, -10), (0.031, 7)),
                                   ((0.5, 0), (0.0007, -128))])
def test_compare_int8_scaled(opcode: str, quant: tuple) -> None:
    """Different scales and zero points: TFLite Micro rescales both inputs with its
    fixed-point multipliers, whose rounding decides near-ties."""
    (s1, z1), (s2, z2) = quant
    r = rng(3)
    a = r.integers(-128, 128, (3, 6)).astype(np.int8)
    b = r.integers(-128, 128, (3, 6)).astype(np.int8)
    b[0] = a[0]  # equal stored values
    check_exact(opcode, [q((3, 6), s1, z1), q((3, 6), s2, z2)], Tensor((3, 6), "bool"),
                [a, b])


def test_compare_int8_broadcast_constant() -> None:
    r = rng(4)
    a = r.integers(-128, 128, (2, 3, 5)).astype(np.int8)
    threshold = const(np.array([-3, 0, 40, 100, -128], dtype=np.int8), "int8",
                      scale=0.02, zero_point=-5)
    check_exact("GREATER", [q((2, 3, 5), 0.1, 2), threshold], Tensor((2, 3, 5), "bool"), [a])


@pytest.mark.parametrize("opcode", ["EQUAL", "NOT_EQUAL"])
def test_compare_bool(opcode: str) -> None:
    r = rng(5)
    a, b = r.integers(0, 2, (2, 4)).astype(bool), r.integers(0, 2, (4,)).astype(bool)
    check_exact(opcode, [Tensor((2, 4), "bool"), Tensor((4,), "bool")],
                Tensor((2, 4), "bool"), [a, b])


def test_ordered_compare_of_bool_is_refused() -> None:
    model = single_op_model("LESS", [Tensor((3,), "bool"), Tensor((3,), "bool")],
                            [Tensor((3,), "bool")])
    with pytest.raises(Exception, match="LESS of i1"):
        import_model(read_model(model))


# ------------------------------------------------------------------ logical ops


@pytest.mark.parametrize("opcode", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_binary(opcode: str) -> None:
    r = rng(6)
    a, b = r.integers(0, 2, (3, 1, 4)).astype(bool), r.integers(0, 2, (2, 4)).astype(bool)
    check_exact(opcode, [Tensor((3, 1, 4), "bool"), Tensor((2, 4), "bool")],
                Tensor((3, 2, 4), "bool"), [a, b])


def test_logical_not() -> None:
    a = rng(7).integers(0, 2, (5, 3)).astype(bool)
    got = check_exact("LOGICAL_NOT", [Tensor((5, 3), "bool")], Tensor((5, 3), "bool"), [a])
    np.testing.assert_array_equal(got, ~a)


# ------------------------------------------------------------------ SELECT_V2


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_select_v2_broadcast(dtype: str) -> None:
    r = rng(8)
    cond = r.integers(0, 2, (2, 1, 4)).astype(bool)
    x = r.integers(-100, 100, (3, 4)).astype(dtype)
    y = r.integers(-100, 100, (2, 3, 1)).astype(dtype)
    check_exact("SELECT_V2", [Tensor((2, 1, 4), "bool"), Tensor((3, 4), dtype),
                              Tensor((2, 3, 1), dtype)], Tensor((2, 3, 4), dtype),
                [cond, x, y])


def test_select_v2_int8() -> None:
    r = rng(9)
    cond = r.integers(0, 2, (4, 6)).astype(bool)
    x, y = (r.integers(-128, 128, (4, 6)).astype(np.int8) for _ in range(2))
    check_exact("SELECT_V2", [Tensor((4, 6), "bool"), q((4, 6), 0.1, 3), q((4, 6), 0.1, 3)],
                q((4, 6), 0.1, 3), [cond, x, y])


def test_select_v2_int32_is_refused() -> None:
    """TFLite Micro's SELECT_V2 takes int8, int16 and float32 values only."""
    model = single_op_model("SELECT_V2", [Tensor((3,), "bool"), Tensor((3,), "int32"),
                                          Tensor((3,), "int32")], [Tensor((3,), "int32")])
    with pytest.raises(Exception, match="SELECT_V2 of i32"):
        import_model(read_model(model))


# ------------------------------------------------------------------ MAXIMUM, MINIMUM, ...

OPTIONS_TABLE.update({"FLOOR_DIV": None, "FLOOR_MOD": None, "ADD_N": None})


@pytest.mark.parametrize("opcode", ["MAXIMUM", "MINIMUM"])
def test_extremum_int8_and_float(opcode: str) -> None:
    r = rng(10)
    a, b = (r.integers(-128, 128, s).astype(np.int8) for s in ((3, 4), (4,)))
    check_exact(opcode, [q((3, 4), 0.1, 2), q((4,), 0.1, 2)], q((3, 4), 0.1, 2), [a, b])
    fa, fb = r.standard_normal((2, 5)).astype(np.float32), r.standard_normal((2, 1)).astype(
        np.float32)
    check_exact(opcode, [Tensor((2, 5), "float32"), Tensor((2, 1), "float32")],
                Tensor((2, 5), "float32"), [fa, fb])


@pytest.mark.parametrize("opcode", ["FLOOR_DIV", "FLOOR_MOD"])
def test_floor_div_mod_float(opcode: str) -> None:
    """Every sign combination; the quotients are exact or well away from integers."""
    r = rng(11)
    a = (r.integers(-20, 21, (4, 6)) * 0.75).astype(np.float32)
    b = np.array([-3.5, -2.0, -0.5, 0.5, 2.0, 3.5], np.float32)
    check_close(opcode, [Tensor((4, 6), "float32"), Tensor((6,), "float32")],
                Tensor((4, 6), "float32"), [a, b])


def test_add_n_float() -> None:
    xs = [rng(12 + i).standard_normal((2, 3)).astype(np.float32) for i in range(3)]
    check_close("ADD_N", [Tensor((2, 3), "float32") for _ in xs], Tensor((2, 3), "float32"), xs)
