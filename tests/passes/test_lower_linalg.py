"""passes/linalg.py: cholesky, triangular_solve, batch_norm_training and batch_norm_grad
rewritten into loops of dynamic slices and dot_generals, reductions and elementwise ops,
run on the host reference executor against the independent numpy reference
(reference/linalg.py).

Tolerance: numpy.isclose(rtol=1e-5, atol=1e-6), `minirt-run --check`'s own bound. The
reference rounds a float64 answer once; the rewrite rounds at every step in the element
type. On the inputs here (tests/linalg_models.py: condition numbers of a few units) the
error stays a few ulp times n; an ill-conditioned matrix would need a looser bound, as
the error of either factorization grows with the condition number.
"""

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
from toolchain.graph.ir import Graph
from toolchain.graph.verify import verify_graph
from toolchain.passes.linalg import LINALG_OPS, lower_linalg
from toolchain.reference import run_graph

RNG = np.random.default_rng(23)


def same_as_reference(text: str, inputs: list[np.ndarray]) -> Graph:
    """Lowers the graph of `text`, checks it computes what the reference computes on the
    graph before lowering; returns the lowered graph."""
    want = run_graph(load(text), inputs)
    lowered = lower_linalg(load(text))
    verify_graph(lowered)
    assert not any(n.op in LINALG_OPS for n in lowered.walk())
    got = run_graph(lowered, inputs)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.isclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True).all(), (g, w)
    return lowered


def cholesky_model(shape: tuple[int, ...], lower: bool, dt: str = "f32") -> str:
    t = ttype(shape, dt)
    return func([f"%a: {t}"], [cholesky_op("%r", "%a", shape, lower, dt)], [t], ["%r"])


@pytest.mark.parametrize("shape,lower,dt", [
    ((1, 1), True, "f32"), ((5, 5), True, "f32"), ((5, 5), False, "f32"),
    ((3, 4, 4), True, "f64"), ((2, 2, 6, 6), False, "f32"), ((12, 12), True, "f32")])
def test_cholesky(shape: tuple[int, ...], lower: bool, dt: str) -> None:
    a = spd(RNG, shape, np.float64 if dt == "f64" else np.float32)
    # The triangle cholesky does not read is garbage: the rewrite must not read it either.
    n = shape[-1]
    skip = (np.triu if lower else np.tril)(np.ones((n, n), bool), 1 if lower else -1)
    a = np.where(skip, np.nan, a).astype(a.dtype)
    same_as_reference(cholesky_model(shape, lower, dt), [a])


def test_cholesky_not_positive_definite_is_nan() -> None:
    a = spd(RNG, (4, 3, 3))
    a[1, 1, 1] = -2.0
    a[2] = 0.0
    a[3, 0, 0] = np.nan
    lowered = lower_linalg(load(cholesky_model((4, 3, 3), True)))
    (got,) = run_graph(lowered, [a])
    assert not np.isnan(got[0]).any() and np.isnan(got[1:]).all()


def test_loop_graph_does_not_grow_with_n() -> None:
    sizes = {len(lower_linalg(load(cholesky_model((n, n), True))).walk()) for n in (2, 16, 40)}
    assert len(sizes) == 1


@pytest.mark.parametrize("left_side,lower,unit_diagonal,transpose_a", list(itertools.product(
    [True, False], [True, False], [False, True], TRANSPOSES)))
def test_triangular_solve(left_side: bool, lower: bool, unit_diagonal: bool,
                          transpose_a: str) -> None:
    a_shape, b_shape = (2, 5, 5), ((2, 5, 3) if left_side else (2, 3, 5))
    text = func([f"%a: {ttype(a_shape)}", f"%b: {ttype(b_shape)}"],
                [solve_op("%r", "%a", "%b", a_shape, b_shape, left_side, lower,
                          unit_diagonal, transpose_a)], [ttype(b_shape)], ["%r"])
    a = triangular(RNG, a_shape, lower)
    if unit_diagonal:
        a[..., np.arange(5), np.arange(5)] = np.inf  # not read
    same_as_reference(text, [a, RNG.standard_normal(b_shape).astype(np.float32)])


def test_triangular_solve_without_batch_dims() -> None:
    text = func(["%a: tensor<1x1xf32>", "%b: tensor<1x4xf32>"],
                [solve_op("%r", "%a", "%b", (1, 1), (1, 4), True, False, False, "ADJOINT")],
                ["tensor<1x4xf32>"], ["%r"])
    same_as_reference(text, [np.array([[4.0]], np.float32),
                             RNG.standard_normal((1, 4)).astype(np.float32)])


@pytest.mark.parametrize("shape,fi", [((2, 3, 4, 5), 1), ((6, 4), 0), ((3, 2, 7), 2), ((3,), 0)])
def test_batch_norm_training_and_grad(shape: tuple[int, ...], fi: int) -> None:
    tx, tf = ttype(shape), ttype((shape[fi],))
    text = func([f"%x: {tx}", f"%s: {tf}", f"%o: {tf}", f"%g: {tx}"],
                [bn_training_op("%y, %m, %v", "%x", "%s", "%o", shape, fi, 1e-3),
                 bn_grad_op("%a, %b, %c", "%x", "%s", "%m", "%v", "%g", shape, fi, 1e-3)],
                [tx, tf, tf, tx, tf, tf], ["%y", "%m", "%v", "%a", "%b", "%c"])
    inputs = [RNG.standard_normal(s).astype(np.float32) * 2 + 1
              for s in (shape, (shape[fi],), (shape[fi],), shape)]
    same_as_reference(text, inputs)


def test_inside_a_loop_body() -> None:
    # A cholesky in a while body, reading a value captured from outside the loop.
    text = """
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<3x3xf32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %z) : tensor<i32>, tensor<3x3xf32>
   cond {
    %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %l = stablehlo.cholesky %a, lower = true : tensor<3x3xf32>
    %s = stablehlo.add %acc, %l : tensor<3x3xf32>
    %j = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %j, %s : tensor<i32>, tensor<3x3xf32>
  }
  return %r#1 : tensor<3x3xf32>
}
"""
    same_as_reference(text, [spd(RNG, (3, 3))])


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_half_precision_is_computed_in_f32(dt: str) -> None:
    # Rounded once at the end, like the reference: each step rounded to f16 would not be.
    n, shape = 5, (2, 5, 5)
    t, tb, tf = ttype(shape, dt), ttype((2, 5, 3), dt), ttype((5,), dt)
    text = func([f"%a: {t}", f"%b: {tb}", f"%s: {tf}"],
                [cholesky_op("%l", "%a", shape, True, dt),
                 solve_op("%x", "%l", "%b", shape, (2, 5, 3), True, True, False, "TRANSPOSE",
                          dt),
                 bn_training_op("%y, %m, %v", "%a", "%s", "%s", shape, 1, 1e-3, dt)],
                [t, tb, t, tf, tf], ["%l", "%x", "%y", "%m", "%v"])
    lowered = same_as_reference(text, [spd(RNG, shape), RNG.standard_normal((2, n, 3)),
                                       RNG.standard_normal(n)])
    assert {n.op for n in lowered.walk() if n.op == "dot_general"
            and n.outputs[0].type.dtype.name == dt} == set()


def test_empty_operands() -> None:
    # n = 0, a batch of 0, no element per feature (NaN statistics) and no feature.
    text = func(["%a: tensor<0x0xf32>", "%b: tensor<3x0x0xf32>", "%c: tensor<3x0x2xf32>",
                 "%x: tensor<0x3xf32>", "%s: tensor<3xf32>", "%f: tensor<2x0xf32>",
                 "%e: tensor<0xf32>"],
                [cholesky_op("%r", "%a", (0, 0), True),
                 solve_op("%y", "%b", "%c", (3, 0, 0), (3, 0, 2), True, True, False,
                          "NO_TRANSPOSE"),
                 bn_training_op("%n, %m, %v", "%x", "%s", "%s", (0, 3), 1, 1e-3),
                 bn_grad_op("%gx, %gs, %go", "%f", "%e", "%e", "%e", "%f", (2, 0), 1, 1e-3)],
                ["tensor<0x0xf32>", "tensor<3x0x2xf32>", "tensor<0x3xf32>", "tensor<3xf32>",
                 "tensor<2x0xf32>", "tensor<0xf32>"],
                ["%r", "%y", "%n", "%m", "%gx", "%gs"])
    same_as_reference(text, [np.zeros((0, 0)), np.zeros((3, 0, 0)), np.zeros((3, 0, 2)),
                             np.zeros((0, 3)), np.ones(3), np.zeros((2, 0)), np.zeros(0)])
