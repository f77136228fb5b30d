"""The reference meaning of cholesky, triangular_solve, batch_norm_training and
batch_norm_grad (toolchain/reference/linalg.py): StableHLO's spec examples, and checks
that need no second implementation (L L^T = A, op(A) X = B, a finite-difference
gradient). These are what `--check` holds the firmware to."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.linalg_models import (
    TRANSPOSES,
    bn_grad_op,
    bn_training_op,
    cholesky_op,
    func,
    load,
    solve_op,
    spd,
    triangular,
    ttype,
)
from toolchain.reference import run_graph

RNG = np.random.default_rng(5)


def cholesky(a: np.ndarray, lower: bool | None) -> np.ndarray:
    t = ttype(a.shape, "f64" if a.dtype == np.float64 else "f32")
    g = load(func([f"%a: {t}"], [cholesky_op("%r", "%a", a.shape, lower,
                                             "f64" if a.dtype == np.float64 else "f32")],
                  [t], ["%r"]))
    return run_graph(g, [a])[0]


def solve(a: np.ndarray, b: np.ndarray, **attrs) -> np.ndarray:
    g = load(func([f"%a: {ttype(a.shape)}", f"%b: {ttype(b.shape)}"],
                  [solve_op("%r", "%a", "%b", a.shape, b.shape, **attrs)],
                  [ttype(b.shape)], ["%r"]))
    return run_graph(g, [a, b])[0]


def test_cholesky_spec_example() -> None:
    a = np.array([[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]], np.float32)
    want = np.array([[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]], np.float32)
    np.testing.assert_array_equal(cholesky(a, True), want)
    np.testing.assert_array_equal(cholesky(a, False), want.T)


@pytest.mark.parametrize("lower", [True, False, None])
def test_cholesky_batch_reads_one_triangle(lower: bool | None) -> None:
    a = spd(RNG, (2, 3, 5, 5), np.float64)
    low = np.linalg.cholesky(a)
    # The triangle StableHLO does not read holds garbage; the result's other triangle is 0.
    skip = np.triu(np.ones((5, 5)), 1) if lower else np.tril(np.ones((5, 5)), -1)
    garbled = np.where(skip.astype(bool), -7e5, a)
    got = cholesky(garbled, lower)
    want = low if lower else np.swapaxes(low, -1, -2)  # None: lower defaults to false
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    assert np.all(got[..., skip.astype(bool)] == 0)


def test_cholesky_not_positive_definite_is_nan() -> None:
    a = spd(RNG, (3, 4, 4))
    a[1, 2, 2] = -1.0  # a negative pivot
    a[2] = 0.0  # a zero pivot: positive semi-definite only
    got = cholesky(a, True)
    assert np.isnan(got[1:]).all()
    np.testing.assert_allclose(got[0] @ got[0].T, a[0], rtol=1e-5, atol=1e-5)


def test_triangular_solve_spec_example() -> None:
    a = np.array([[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]], np.float32)
    b = np.array([[2.0, 0.0, 0.0], [4.0, 8.0, 0.0], [6.0, 10.0, 12.0]], np.float32)
    got = solve(a, b, left_side=True, lower=True, unit_diagonal=False,
                transpose_a="NO_TRANSPOSE")
    np.testing.assert_array_equal(got, 2 * np.eye(3, dtype=np.float32))


@pytest.mark.parametrize("left_side,lower,unit_diagonal,transpose_a", list(itertools.product(
    [True, False], [True, False], [False, True], TRANSPOSES)))
def test_triangular_solve_every_form(left_side: bool, lower: bool, unit_diagonal: bool,
                                     transpose_a: str) -> None:
    a = triangular(RNG, (2, 4, 4), lower, np.float64).astype(np.float32)
    b_shape = (2, 4, 3) if left_side else (2, 3, 4)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    x = solve(a, b, left_side=left_side, lower=lower, unit_diagonal=unit_diagonal,
              transpose_a=transpose_a)
    m = np.tril(a) if lower else np.triu(a)  # the triangle read
    if unit_diagonal:
        m[..., np.arange(4), np.arange(4)] = 1.0
    if transpose_a != "NO_TRANSPOSE":
        m = np.swapaxes(m, -1, -2)
    product = m @ x if left_side else x @ m
    # x is rounded to f32 (relative 6e-8) and |m| x stays below ~10 |b| for these
    # diagonally dominant matrices: 1e-5 is ~20x that.
    np.testing.assert_allclose(product, b, rtol=1e-5, atol=1e-5)


def _bn_training(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, fi: int,
                 eps: float) -> list[np.ndarray]:
    tf = ttype((x.shape[fi],))
    g = load(func([f"%x: {ttype(x.shape)}", f"%s: {tf}", f"%o: {tf}"],
                  [bn_training_op("%y, %m, %v", "%x", "%s", "%o", x.shape, fi, eps)],
                  [ttype(x.shape), tf, tf], ["%y", "%m", "%v"]))
    return run_graph(g, [x, scale, offset])


def _bn_grad(x, scale, mean, var, grad, fi: int, eps: float) -> list[np.ndarray]:
    tx, tf = ttype(x.shape), ttype((x.shape[fi],))
    g = load(func([f"%x: {tx}", f"%s: {tf}", f"%m: {tf}", f"%v: {tf}", f"%g: {tx}"],
                  [bn_grad_op("%a, %b, %c", "%x", "%s", "%m", "%v", "%g", x.shape, fi, eps)],
                  [tx, tf, tf], ["%a", "%b", "%c"]))
    return run_graph(g, [x, scale, mean, var, grad])


SPEC_X = np.array([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]], np.float32)


def test_batch_norm_training_spec_example() -> None:
    ones = np.ones(2, np.float32)
    y, mean, var = _bn_training(SPEC_X, ones, ones, 2, 0.0)
    np.testing.assert_array_equal(y, [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]])
    np.testing.assert_array_equal(mean, [2.0, 3.0])
    np.testing.assert_array_equal(var, [1.0, 1.0])


def test_batch_norm_grad_spec_example() -> None:
    ones = np.ones(2, np.float32)
    grad = np.full((2, 2, 2), 0.1, np.float32)
    gx, gs, go = _bn_grad(SPEC_X, ones, np.array([2.0, 3.0], np.float32), ones, grad, 2, 0.0)
    np.testing.assert_allclose(gx, 0.0, atol=1e-7)
    np.testing.assert_allclose(gs, [0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(go, [0.4, 0.4], rtol=1e-6)


def test_batch_norm_grad_is_the_gradient_of_training() -> None:
    # Central differences in float64 of sum(g * batch_norm_training(x)) agree with
    # grad_operand, and grad_scale / grad_offset with their closed forms.
    fi, eps = 1, 0.01
    x = RNG.standard_normal((2, 3, 4))
    scale, offset = RNG.standard_normal(3), RNG.standard_normal(3)
    g = RNG.standard_normal(x.shape)
    axes = (0, 2)

    def loss(x: np.ndarray) -> float:
        mean = x.mean(axis=axes, keepdims=True)
        var = x.var(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + eps) * scale[:, None] + offset[:, None]
        return float((g * y).sum())

    h = 1e-6
    numeric = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        numeric[idx] = (loss(x + e) - loss(x - e)) / (2 * h)
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    _, mean, var = _bn_training(f32(x), f32(scale), f32(offset), fi, eps)
    gx, gs, go = _bn_grad(f32(x), f32(scale), mean, var, f32(g), fi, eps)
    # rtol 1e-4: the reference's results are rounded to f32 (6e-8) and so are its inputs;
    # the differences' own error (h**2 and rounding / h) is below 1e-9.
    np.testing.assert_allclose(gx, numeric, rtol=1e-4, atol=1e-5)
    xhat = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(
        x.var(axis=axes, keepdims=True) + eps)
    np.testing.assert_allclose(gs, (g * xhat).sum(axis=axes), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(go, g.sum(axis=axes), rtol=1e-6, atol=1e-6)
