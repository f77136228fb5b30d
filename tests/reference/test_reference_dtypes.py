"""Reference semantics by element type: bf16 results are rounded once to bf16, unsigned
integers behave as unsigned, integer power follows StableHLO for negative exponents.

The expected values are computed by hand: bf16 from the exact (float64) result with
`round_to_bf16`, integers with Python's unbounded integers wrapped to the type's width.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_node
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype, round_to_bf16, to_bf16

RNG = np.random.default_rng(11)


def run(op: str, inputs: list[tuple[np.ndarray, str]], out: str, **attrs) -> np.ndarray:
    """Runs one verified node on (array, MLIR element type) inputs; the output has the
    shape the verifier infers."""
    g = Graph("k")
    ins = [g.add_input(TensorType(x.shape, dtype(t))) for x, t in inputs]
    node = g.add(op, ins, [TensorType(attrs.pop("shape", inputs[0][0].shape), dtype(out))],
                 attrs)
    err = verify_node(node)
    assert err is None, err.message
    g.outputs = node.outputs
    (result,) = run_graph(g, [x for x, _ in inputs])
    return result


def bf16_values(n: int, scale: float = 1.0) -> np.ndarray:
    """n random values that are exactly bf16 (as the host holds them: float32)."""
    return round_to_bf16((RNG.standard_normal(n) * scale).astype(np.float32))


def exact_f32(x64: np.ndarray) -> np.ndarray:
    """x64 as float32, checking that no rounding happened (so round_to_bf16 of it is the
    single rounding of the float64 value)."""
    x32 = x64.astype(np.float32)
    assert (x32.astype(np.float64) == x64).all()
    return x32


def is_bf16(x: np.ndarray) -> bool:
    return bool((x.view(np.uint32) & 0xFFFF == 0).all())


# ------------------------------------------------------------------------------ bf16


def test_convert_f32_to_bf16_rounds_to_nearest_even() -> None:
    x = RNG.standard_normal(64).astype(np.float32)
    # Ties (bit 15 set, bits 0-14 clear) go to the even neighbour: 1 + 2**-8 -> 1.0,
    # 1 + 3 * 2**-8 -> 1 + 2**-6.
    x[:4] = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.0e38]
    got = run("convert", [(x, "f32")], "bf16", dtype="bf16")
    np.testing.assert_array_equal(got, round_to_bf16(x))
    assert got[:3].tolist() == [1.0, 1 + 2**-6, -1.0]
    assert is_bf16(got)


def test_convert_of_a_scalar_integer_to_bf16() -> None:
    # Rank 0 once raised in the round-to-odd step (found by the random graph fuzzer).
    # 2**40 + 2**32 + 1 is just above a bf16 tie: rounded once it goes up (through f32
    # to nearest it would land on the tie and go down to 2**40).
    for t, v, want in (("i64", 2**40 + 2**32 + 1, 2**40 + 2**33), ("i32", 7, 7),
                       ("ui64", 2**64 - 1, 2**64)):
        got = run("convert", [(np.array(v, dtype(t).np_dtype), t)], "bf16", dtype="bf16")
        assert got.shape == () and float(got) == want


def test_convert_rounds_once_from_f64_and_wide_integers() -> None:
    # Through f32 with rounding to nearest these land on a bf16 tie and then go to the
    # even side; rounded once they go up.
    x = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30)])
    assert run("convert", [(x, "f64")], "bf16", dtype="bf16").tolist() == [1 + 2**-7,
                                                                        -(1 + 2**-7)]
    n = np.array([2**24 + 2**16 + 1, 2**31 - 1, -(2**31)], np.int32)
    assert run("convert", [(n, "i32")], "bf16", dtype="bf16").tolist() == [
        2**24 + 2**17, 2.0**31, -(2.0**31)]
    big = np.array([2**63 + 2**55 + 1, 2**64 - 1], np.uint64)
    assert run("convert", [(big, "ui64")], "bf16", dtype="bf16").tolist() == [
        2.0**63 + 2**56, 2.0**64]


@pytest.mark.parametrize("op,f", [("add", np.add), ("subtract", np.subtract),
                                  ("multiply", np.multiply)])
def test_bf16_arithmetic_rounds_each_result(op: str, f) -> None:
    a, b = bf16_values(256), bf16_values(256, 4.0)
    got = run(op, [(a, "bf16"), (b, "bf16")], "bf16")
    # Sums and products of two bf16 values are exact in float64 and float32.
    want = round_to_bf16(exact_f32(f(a.astype(np.float64), b.astype(np.float64))))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, f(a, b))  # the float32 result was not bf16


def test_bf16_divide_and_math_round_their_float32_result() -> None:
    a, b = bf16_values(128), bf16_values(128)
    np.testing.assert_array_equal(run("divide", [(a, "bf16"), (b, "bf16")], "bf16"),
                                  round_to_bf16(a / b))
    np.testing.assert_array_equal(run("exponential", [(a, "bf16")], "bf16"),
                                  round_to_bf16(np.exp(a)))
    assert is_bf16(run("logistic", [(a, "bf16")], "bf16"))


def test_bf16_reduction_accumulates_wide_and_rounds_once() -> None:
    x = bf16_values(4 * 16).reshape(4, 16)
    init = np.array(0.0, np.float32)
    got = run("reduce", [(x, "bf16"), (init, "bf16")], "bf16", kind="add", dims=(1,),
              shape=(4,))
    np.testing.assert_array_equal(got, round_to_bf16(exact_f32(x.astype(np.float64)
                                                               .sum(axis=1))))
    # 1 + 2**-8 + 2**-30 is just above a bf16 tie: summed in f32 it would be the tie.
    tie = np.array([[1.0, 2**-8, 2**-30]], np.float32)
    got = run("reduce", [(tie, "bf16"), (init, "bf16")], "bf16", kind="add", dims=(1,),
              shape=(1,))
    assert got.tolist() == [1 + 2**-7]
    top = run("reduce", [(x, "bf16"), (np.array(-np.inf, np.float32), "bf16")], "bf16",
              kind="maximum", dims=(1,), shape=(4,))
    np.testing.assert_array_equal(top, x.max(axis=1))


def test_bf16_dot_general_rounds_once() -> None:
    a, b = bf16_values(3 * 8).reshape(3, 8), bf16_values(8 * 2).reshape(8, 2)
    got = run("dot_general", [(a, "bf16"), (b, "bf16")], "bf16", shape=(3, 2), lhs_batch=(),
              rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,), dtype="bf16")
    np.testing.assert_array_equal(got, to_bf16(a.astype(np.float64) @ b.astype(np.float64)))
    assert is_bf16(got)


def test_bf16_inputs_are_rounded_like_the_firmware_gets_them() -> None:
    x = RNG.standard_normal(32).astype(np.float32)
    got = run("convert", [(x, "bf16")], "f32", dtype="f32")
    np.testing.assert_array_equal(got, round_to_bf16(x))


# -------------------------------------------------------------------------- unsigned

UNSIGNED = ["ui8", "ui16", "ui32", "ui64"]


def unsigned_values(t: str, n: int = 64) -> np.ndarray:
    """Random values of the whole range (top bit set in half of them) and the corners."""
    np_dt = dtype(t).np_dtype
    info = np.iinfo(np_dt)
    x = RNG.integers(0, info.max, n, dtype=np_dt, endpoint=True)
    x[:4] = [0, 1, info.max, info.max // 2 + 1]
    return x


@pytest.mark.parametrize("t", UNSIGNED)
def test_unsigned_division_remainder_and_compare(t: str) -> None:
    a, b = unsigned_values(t), unsigned_values(t)
    b[4:8] = [0, 1, 3, 7]
    pa, pb = a.tolist(), b.tolist()
    # x / 0 = x and x % 0 = x, as the compiled kernels define them.
    assert run("divide", [(a, t), (b, t)], t).tolist() == [
        x // y if y else x for x, y in zip(pa, pb)]
    assert run("remainder", [(a, t), (b, t)], t).tolist() == [
        x % y if y else x for x, y in zip(pa, pb)]
    assert run("compare", [(a, t), (b, t)], "i1", direction="LT").tolist() == [
        x < y for x, y in zip(pa, pb)]
    assert run("maximum", [(a, t), (b, t)], t).tolist() == [max(x, y) for x, y in zip(pa, pb)]
    assert run("minimum", [(a, t), (b, t)], t).tolist() == [min(x, y) for x, y in zip(pa, pb)]


@pytest.mark.parametrize("t", UNSIGNED)
def test_unsigned_shifts(t: str) -> None:
    width = dtype(t).bits
    a = unsigned_values(t)
    n = np.array([i % (width + 2) for i in range(a.size)], a.dtype)
    mask = (1 << width) - 1
    pa, pn = a.tolist(), n.tolist()
    assert run("shift_left", [(a, t), (n, t)], t).tolist() == [
        (x << c) & mask if c < width else 0 for x, c in zip(pa, pn)]
    assert run("shift_right_logical", [(a, t), (n, t)], t).tolist() == [
        x >> c if c < width else 0 for x, c in zip(pa, pn)]


@pytest.mark.parametrize("t", UNSIGNED)
def test_unsigned_converts(t: str) -> None:
    width = dtype(t).bits
    top = (1 << width) - 1
    x = np.array([0.0, 0.7, -0.7, -5.0, 3e9, 2.0**width, 1e30, -np.inf, np.inf, np.nan,
                  200.9], np.float32)
    want = [0, 0, 0, 0, min(3_000_000_000, top), top, top, 0, top, 0, 200]
    assert run("convert", [(x, "f32")], t, dtype=t).tolist() == want
    a = unsigned_values(t)
    np.testing.assert_array_equal(run("convert", [(a, t)], "f64", dtype="f64"),
                                  [float(v) for v in a.tolist()])
    assert run("convert", [(a, t)], "i64", dtype="i64").tolist() == [
        v - (1 << 64) if v >= 1 << 63 else v for v in a.tolist()]
    neg = np.array([-1, -2, 5], np.int32)
    assert run("convert", [(neg, "i32")], t, dtype=t).tolist() == [top, top - 1, 5]


def test_float_to_64_bit_integers_saturates() -> None:
    x = np.array([np.inf, -np.inf, 1e30, -1e30, 2.0**63, -(2.0**63), np.nan], np.float32)
    assert run("convert", [(x, "f32")], "i64", dtype="i64").tolist() == [
        2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 0]


# ---------------------------------------------------------------------- integer power


def spec_power(base: int, exp: int, width: int, signed: bool) -> int:
    """StableHLO's integer power (the interpreter's rule): a negative exponent gives 1
    for a base of 1, +-1 for -1 by the exponent's parity, else 0; otherwise base**exp
    wrapped to the width."""
    if exp < 0:
        r = 1 if base == 1 else (-1 if exp % 2 else 1) if base == -1 else 0
    else:
        r = pow(base, exp, 1 << width)
    r &= (1 << width) - 1
    return r - (1 << width) if signed and r >> (width - 1) else r


@pytest.mark.parametrize("t", ["i8", "i16", "i32", "i64"])
def test_signed_power_with_negative_exponents(t: str) -> None:
    info = np.iinfo(dtype(t).np_dtype)
    bases = [1, -1, 2, -2, 0, 3, info.min, info.max]
    exps = [-1, -2, -3, 0, 1, 2, 5, info.min]
    a = np.array([x for x in bases for _ in exps], dtype(t).np_dtype)
    b = np.array([e for _ in bases for e in exps], dtype(t).np_dtype)
    got = run("power", [(a, t), (b, t)], t).tolist()
    want = [spec_power(x, e, dtype(t).bits, True) for x, e in zip(a.tolist(), b.tolist())]
    assert got == want
    assert got[:3] == [1, 1, 1] and got[8:11] == [-1, 1, -1] and got[16:19] == [0, 0, 0]


@pytest.mark.parametrize("t", ["ui8", "ui32", "ui64"])
def test_unsigned_power_wraps(t: str) -> None:
    a = unsigned_values(t, 16)
    b = np.array([0, 1, 2, 3, 200, 63, 64, 65] * 2, a.dtype)
    width = dtype(t).bits
    got = run("power", [(a, t), (b, t)], t).tolist()
    assert got == [spec_power(x, e, width, False) for x, e in zip(a.tolist(), b.tolist())]
