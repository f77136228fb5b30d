"""Affine forms, intervals and the simplification of index expressions."""

from __future__ import annotations

from toolchain.kernel.form import INDEX, Apply, Const, Index, Load
from toolchain.loops.affine import Affine, affine_of, as_expr, interval_of, simplify
from toolchain.types import TensorType, dtype

I1, I8 = dtype("i1"), dtype("i8")


def c(v: int) -> Const:
    return Const(v, INDEX)


def add(a, b):
    return Apply("add", (a, b), INDEX)


def mul(a, k: int):
    return Apply("multiply", (a, c(k)), INDEX)


def div(a, k: int):
    return Apply("divide", (a, c(k)), INDEX)


def rem(a, k: int):
    return Apply("remainder", (a, c(k)), INDEX)


def test_affine_forms_of_window_indices() -> None:
    # 2*i1 + i4 - 1: a strided, padded window.
    e = add(add(mul(Index(1), 2), Index(4)), c(-1))
    assert affine_of(e) == Affine(((1, 2), (4, 1)), -1)
    assert affine_of(Apply("subtract", (c(7), Index(0)), INDEX)) == Affine(((0, -1),), 7)
    assert affine_of(div(Index(0), 2)) is None  # not affine
    assert affine_of(Load(0, (Index(0),))) is None
    assert affine_of(as_expr(Affine(((0, 3), (2, -1)), 5))) == Affine(((0, 3), (2, -1)), 5)


def test_intervals() -> None:
    ranges = {0: (0, 4), 1: (2, 3)}
    e = add(mul(Index(0), -2), Index(1))  # -2*i0 + i1
    assert interval_of(e, ranges, ()) == (-6, 3)
    assert interval_of(div(Apply("subtract", (Index(0), c(3)), INDEX), 2), ranges, ()) == (-1, 0)
    assert interval_of(rem(Index(0), 3), ranges, ()) == (0, 2)
    assert interval_of(Index(5), ranges, ()) is None  # a dim without a range
    assert interval_of(Apply("convert", (Load(0, ()),), INDEX), ranges,
                       (TensorType((), I8),)) == (-128, 127)


def test_reshape_division_folds_when_the_ranges_allow() -> None:
    # A reshape's (64*i0 + i2) / 64 and % 64 with i2 in [0, 63]: i0 and i2.
    lin = add(mul(Index(0), 64), Index(2))
    ranges = {0: (0, 0), 2: (0, 63)}
    assert simplify(div(lin, 64), ranges, ()) == Index(0)
    assert simplify(rem(lin, 64), ranges, ()) == Index(2)
    # i2 up to 64 would carry into the quotient: left alone.
    assert simplify(div(lin, 64), {0: (0, 0), 2: (0, 64)}, ()) == div(lin, 64)
    # A dividend that may be negative keeps StableHLO's truncating division.
    neg = add(mul(Index(0), 2), c(-1))
    assert simplify(div(neg, 2), {0: (0, 3)}, ()) == div(neg, 2)


def test_exact_residues_decide_the_dilation_guard() -> None:
    # (2*i + 1 + 2*t - 1) is even whatever i and t are (a transposed convolution's phase).
    v = add(add(mul(Index(0), 2), mul(Index(1), 2)), c(0))
    guard = Apply("compare.EQ", (rem(v, 2), c(0)), I1)
    assert simplify(guard, {0: (-5, 5), 1: (0, 2)}, ()) == Const(True, I1)
    odd = Apply("compare.EQ", (rem(add(v, c(1)), 2), c(0)), I1)
    assert simplify(odd, {0: (-5, 5), 1: (0, 2)}, ()) == Const(False, I1)
    # Exact division works for negative values too.
    assert simplify(div(v, 2), {0: (-5, 5), 1: (0, 2)}, ()) == add(Index(0), Index(1))


def test_a_load_whose_guard_is_false_is_its_pad() -> None:
    t = (TensorType((4,), dtype("f32")),)
    never = Load(0, (Index(0),), pad=Const(0.0, dtype("f32")),
                 valid=Apply("compare.LT", (Index(0), c(0)), I1))
    assert simplify(never, {0: (0, 3)}, t) == Const(0.0, dtype("f32"))
    always = Load(0, (Index(0),), pad=Const(0.0, dtype("f32")),
                  valid=Apply("compare.GE", (Index(0), c(0)), I1))
    assert simplify(always, {0: (0, 3)}, t) == Load(0, (Index(0),), Const(0.0, dtype("f32")))
