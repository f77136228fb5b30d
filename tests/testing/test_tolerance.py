"""Tolerances of random graphs (toolchain/testing/tolerance.py): wide enough for what
the firmware legitimately computes differently, zero for exact values."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from toolchain.graph.ir import Graph
from toolchain.reference import run_graph
from toolchain.testing.tolerance import compare_outputs, tolerances
from toolchain.types import TensorType, dtype


def _graph(op: str, ty: TensorType) -> Graph:
    g = Graph("main")
    x = g.add_input(ty)
    g.outputs = [g.add(op, [x], [ty], {}).output]
    return g


def test_f64_math_in_f32_is_covered_where_the_moves_cancel() -> None:
    """An f64 logistic runs in f32 (codegen/mathlib.py): its operand rounded to f32
    moves the result one way, the f32 function's error the other; with every move up
    (or down) they cancel, so the tolerance came out 100 times too small at
    x = -5.672 (found by the random graph fuzzer)."""
    ty = TensorType((64,), dtype("f64"))
    g = _graph("logistic", ty)
    x = np.linspace(-19.5, 19.5, 64)
    x[0] = -5.672104932393778
    want = run_graph(g, [x])
    atol = tolerances(g, [x], want)
    x32 = x.astype(np.float32)
    as_f32 = (1 / (1 + np.exp(-x32))).astype(np.float64)  # the firmware's computation
    assert not compare_outputs([as_f32], want, atol)


def test_exact_outputs_get_no_tolerance() -> None:
    ty = TensorType((4,), dtype("f32"))
    g = _graph("negate", ty)
    x = np.array([1.5, -0.0, np.nan, np.inf], np.float32)
    want = run_graph(g, [x])
    atol = tolerances(g, [x], want)
    assert not atol[0].any()
    assert not compare_outputs([-x], want, atol)
    off = -x
    off[0] = np.nextafter(off[0], np.float32(0))
    assert compare_outputs([off], want, atol)


LINALG = ("cholesky", "triangular_solve", "batch_norm_training", "batch_norm_grad")


def _host_lowered(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """What the firmware computes, on the host: passes/linalg.py's loops and reductions
    in the element types, run by the reference interpreter."""
    import copy

    from toolchain.passes.linalg import lower_linalg

    return run_graph(lower_linalg(copy.deepcopy(graph)), inputs)


def _largest_moved_is_caught(got: list[np.ndarray], want: list[np.ndarray],
                             atol: list[np.ndarray | None]) -> bool | None:
    """Whether output 0 with its largest finite element moved 2**-8 relative fails the
    comparison (None when it has no nonzero finite element to move)."""
    wrong = [np.array(x, copy=True) for x in got]
    flat = wrong[0].reshape(-1)
    mag = np.where(np.isfinite(flat), np.abs(flat).astype(np.float64), 0)
    if not mag.any():
        return None
    k = int(np.argmax(mag))
    flat[k] = flat[k] * (1 + 2.0**-8)
    return bool(compare_outputs(wrong, want, atol))


@pytest.mark.parametrize("op", LINALG)
def test_linear_algebra_tolerance_covers_the_lowering_and_catches_an_error(op: str) -> None:
    """The lowering's own results (f32 loops against the float64 reference, f16 steps
    for the batch norms) are within the tolerance; a result 2**-8 off relative in its
    largest element (f32 and f64 graphs) is not."""
    _covers_and_catches(op, range(80), _host_lowered, ("f32", "f64"))


def _covers_and_catches(op: str, seeds: range, lowered: Callable[..., list[np.ndarray]],
                        types: tuple[str, ...],
                        usable: Callable[..., bool] = lambda graph, inputs: True) -> None:
    """Over random graphs of `op` (those `usable` accepts): the host run of `lowered`
    is within the tolerance, and output 0, when `op` computes it in one of `types`, is
    caught with its largest element 2**-8 off relative (at least 5 times)."""
    from toolchain.testing.random_graphs import generate

    caught = checked = 0
    for s in seeds:
        rg = generate(s, ops=(op,))
        if op not in rg.ops:
            continue
        inputs = rg.inputs()
        if not usable(rg.graph, inputs):
            continue
        want = run_graph(rg.graph, inputs)
        atol = tolerances(rg.graph, inputs, want, s)
        got = lowered(rg.graph, inputs)
        assert not compare_outputs(got, want, atol), s
        out = rg.graph.outputs[0]
        if out.producer.op != op or out.type.dtype.name not in types:
            continue
        seen = _largest_moved_is_caught(got, want, atol)
        if seen is None:
            continue
        checked += 1
        caught += seen
    assert checked >= 5 and caught == checked, (caught, checked)


def _host_lowered_fft(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """What the firmware computes, on the host: passes/complex.py's real ops, with
    passes/fft.py's decomposition in the parts' type, run by the reference interpreter;
    complex values cross the boundary as real arrays with a last axis of 2."""
    import copy

    from toolchain.passes import complex_io, lower_complex

    lowered = lower_complex(copy.deepcopy(graph))
    real = [np.stack([x.real, x.imag], axis=-1) if np.iscomplexobj(x) else x
            for x in inputs]
    return complex_io(run_graph(lowered, real), graph.outputs)


def _fft_operands_finite(graph: Graph, inputs: list[np.ndarray]) -> bool:
    """Whether every fft of the graph reads finite values only (on the reference)."""
    probe = Graph(graph.name, nodes=list(graph.nodes), inputs=list(graph.inputs))
    probe.outputs = [n.inputs[0] for n in graph.nodes if n.op == "fft"]
    return all(np.isfinite(x).all() for x in run_graph(probe, inputs))


def test_fft_tolerance_covers_the_decomposition_and_catches_an_error() -> None:
    """The reference's fft is numpy's in float64; the firmware's decomposition (f32 or
    f64 parts) is within the tolerance passes/fft.py's error_bound gives it, and a result
    2**-8 off relative in its largest element is not. Finite operands only: with an
    infinity the two put their NaNs in different bins (docs/random_graphs.md)."""
    _covers_and_catches("fft", range(60), _host_lowered_fft,
                        ("f32", "f64", "complex<f32>", "complex<f64>"), _fft_operands_finite)


def test_fft_line_with_an_infinity_is_open_and_the_rest_is_held() -> None:
    """A line (the transformed dims) that reads an infinity has no finite result, but
    which results are NaN depends on the order of the sums (numpy's against
    passes/fft.py's): any value passes there; the finite lines are held as before."""
    ty = TensorType((3, 8), dtype("complex<f32>"))
    g = Graph("main")
    x = g.add_input(ty)
    g.outputs = [g.add("fft", [x], [ty], {"fft_type": "FFT", "fft_length": [8]}).output]
    rng = np.random.default_rng(5)
    inputs = [(rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8)))
              .astype(np.complex64)]
    inputs[0][1, 3] = np.inf
    want = run_graph(g, inputs)
    atol = tolerances(g, inputs, want)
    assert np.isinf(atol[0][1]).all() and np.isfinite(atol[0][[0, 2]]).all()
    got = _host_lowered_fft(g, inputs)
    assert not compare_outputs(got, want, atol)
    shuffled = got[0].copy()
    shuffled[1] = np.where(np.isnan(shuffled[1]), np.inf, np.nan)
    assert not compare_outputs([shuffled], want, atol)
    shuffled[2, 0] += 2.0**-8 * np.abs(shuffled[2]).max()
    assert compare_outputs([shuffled], want, atol)
