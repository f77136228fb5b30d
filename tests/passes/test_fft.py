"""The fft op's two independent computations, held to the bound that relates them.

The reference (reference/kernels.py) is numpy's FFT in float64 rounded once to the
result type, so it is the exact transform up to one rounding. The firmware computes
passes/fft.py's decomposition in the parts' type, whose error is normwise:
|X - X_exact| <= ERROR_C * eps * log2(m) * ||x||_2 per transformed dim
(passes/fft.py's error_bound: each of the log2(m) Cooley-Tukey levels rounds once per
butterfly, twiddles are rounded once from float64; m is the length actually
transformed, Bluestein's power of two M >= 2n - 1 for a prime factor above MAX_DFT;
inverses carry their 1 / n, IRFFT's half spectrum stands for up to sqrt(2) ||x||).
The worst seen over these lengths is 3.3 eps ||x|| (n = 23, M = 64) against a bound
of 12. Lengths sweep every path: radix 2, mixed radix, a DFT matrix for the primes up
to MAX_DFT, Bluestein above it, and 2-D / 3-D transforms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Graph
from toolchain.passes.fft import MAX_DFT, error_bound, run_fft, transformed_log2
from toolchain.reference import run_graph
from toolchain.types import TensorType, dtype

F32, F64 = dtype("f32"), dtype("f64")
EPS = 2.0**-24  # f32's rounding unit
RNG = np.random.default_rng(0)
POWERS_OF_TWO = (1, 2, 4, 8, 16, 32, 64, 128)
MIXED_RADIX = (6, 9, 12, 60, 100)
SMALL_PRIMES = (3, 5, 7, 11, 13)
BLUESTEIN = (17, 23, 31, 34, 37)
LENGTHS = POWERS_OF_TWO + MIXED_RADIX + SMALL_PRIMES + BLUESTEIN
NUMPY = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
         "IRFFT": np.fft.irfftn}


def reference_fft(x: np.ndarray, kind: str, lengths: tuple[int, ...]) -> np.ndarray:
    """The reference executor's fft of x: one fft node run by run_graph."""
    g = Graph("fft")
    b = GraphBuilder(g)
    part = F64 if x.dtype in (np.float64, np.complex128) else F32
    whole = dtype(f"complex<{part.name}>")
    arg = g.add_input(TensorType(tuple(x.shape), part if kind == "RFFT" else whole))
    g.outputs = [b.op("fft", [arg], fft_type=kind, fft_length=lengths)]
    return run_graph(g, [x])[0]


def _cplx(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def _operand(kind: str, lead: tuple[int, ...], lengths: tuple[int, ...]) -> np.ndarray:
    if kind == "RFFT":
        return RNG.standard_normal(lead + lengths).astype(np.float32)
    if kind == "IRFFT":
        return _cplx(*lead, *lengths[:-1], lengths[-1] // 2 + 1)
    return _cplx(*lead, *lengths)


def _norm(x: np.ndarray, dims: int) -> np.ndarray:
    """||x||_2 over the last `dims` dims, kept for broadcasting."""
    wide = np.abs(x.astype(np.complex128))
    return np.sqrt(np.sum(wide * wide, axis=tuple(range(-dims, 0)), keepdims=True))


def test_the_bound_counts_the_length_actually_transformed() -> None:
    assert transformed_log2(1) == transformed_log2(2) == 1.0
    assert transformed_log2(64) == 6.0
    assert transformed_log2(MAX_DFT - 3) == math.log2(MAX_DFT - 3)  # 13: a DFT matrix
    assert transformed_log2(17) == 6.0  # Bluestein: M = 64 >= 2 * 17 - 1
    assert error_bound("IFFT", (4, 8), 3.0, EPS) == 2 * EPS * (2 + 3) * 3.0 / 32


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("lengths", [(8,), (7,), (17,), (4, 6), (3, 2, 5)])
def test_reference_is_numpy_in_float64_rounded_once(kind: str,
                                                    lengths: tuple[int, ...]) -> None:
    x = _operand(kind, (2,), lengths)
    got = reference_fft(x, kind, lengths)
    axes = tuple(range(-len(lengths), 0))
    exact = NUMPY[kind](x.astype(np.complex128 if kind != "RFFT" else np.float64),
                        lengths, axes)
    want_dtype = np.float32 if kind == "IRFFT" else np.complex64
    assert got.dtype == want_dtype and got.shape == exact.shape
    np.testing.assert_array_equal(got, exact.astype(want_dtype))
    # So it is within the decomposition's bound of the exact transform, trivially.
    bound = error_bound(kind, lengths, _norm(x, len(lengths)), EPS)
    assert np.all(np.abs(got - exact) <= bound)


def test_reference_keeps_f64_parts() -> None:
    x = (RNG.standard_normal((3, 12)) + 1j * RNG.standard_normal((3, 12)))
    np.testing.assert_array_equal(reference_fft(x, "FFT", (12,)), np.fft.fft(x))
    np.testing.assert_array_equal(reference_fft(x[:, :7], "IRFFT", (12,)),
                                  np.fft.irfft(x[:, :7], 12))


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_decomposition_is_within_the_bound_of_the_reference(kind: str, n: int) -> None:
    x = _operand(kind, (2,), (n,))
    got = run_fft(x, kind, (n,), F32)
    want = reference_fft(x, kind, (n,))
    assert got.dtype == want.dtype and got.shape == want.shape
    # The reference's own rounding: half a unit of each part, at most eps |X| over both.
    rounding = EPS * np.abs(want.astype(np.complex128))
    bound = error_bound(kind, (n,), _norm(x, 1), EPS)
    assert np.all(np.abs(got - want) <= bound + rounding)


@pytest.mark.parametrize("kind,lengths", [("FFT", (4, 6)), ("IFFT", (3, 2, 5)),
                                          ("RFFT", (6, 8)), ("IRFFT", (4, 10)),
                                          ("FFT", (2, 17)), ("IRFFT", (3, 7))])
def test_multi_dimensional_transforms(kind: str, lengths: tuple[int, ...]) -> None:
    x = _operand(kind, (2,), lengths)
    got = run_fft(x, kind, lengths, F32)
    want = reference_fft(x, kind, lengths)
    assert got.shape == want.shape
    rounding = EPS * np.abs(want.astype(np.complex128))
    bound = error_bound(kind, lengths, _norm(x, len(lengths)), EPS)
    assert np.all(np.abs(got - want) <= bound + rounding)


def test_spec_example() -> None:
    """The StableHLO spec's fft example: FFT of [1, 0, 0, 0] is [1, 1, 1, 1], both ways."""
    x = np.array([1, 0, 0, 0], np.complex64)
    np.testing.assert_array_equal(run_fft(x, "FFT", (4,), F32), np.ones(4, np.complex64))
    np.testing.assert_array_equal(reference_fft(x, "FFT", (4,)), np.ones(4, np.complex64))
