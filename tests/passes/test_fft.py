"""passes/fft.py's algorithm (what the firmware and the reference both compute) against
numpy.fft in float64, for lengths that take every path: radix 2, mixed radix, a DFT
matrix for small primes, Bluestein's chirp-z for primes above MAX_DFT, and 2-D / 3-D
transforms.

The tolerance: an FFT's error is normwise, |X_f32 - X| <= c * eps * log2(n) * ||x||_2
for a Cooley-Tukey recursion (each of the log2(n) levels rounds once per butterfly, and
the twiddles are rounded once from float64). We allow c = 2 with log2 of the length
actually transformed (Bluestein transforms a power of two M >= 2n - 1, so its log2 is
that of M); the worst seen over these lengths is 3.3 eps ||x|| (n = 23, M = 64) against
a bound of 12. Inverses carry their 1 / n (IRFFT: the Hermitian spectrum has n bins of
norm up to sqrt(2) ||h||).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolchain.passes.fft import MAX_DFT, run_fft, smallest_prime_factor
from toolchain.types import dtype

F32 = dtype("f32")
EPS = float(np.finfo(np.float32).eps)
RNG = np.random.default_rng(0)
LENGTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 23, 31, 32, 37, 60, 64, 100, 128)


def _levels(n: int) -> float:
    """log2 of the largest transform computed for length n (at least 1)."""
    big_prime = max((p for p in range(2, n + 1) if n % p == 0 and
                     smallest_prime_factor(p) == p), default=1)
    m = 1 << (2 * n - 2).bit_length() if big_prime > MAX_DFT else n
    return max(1.0, math.log2(max(m, 2)))


def _bound(n: int, norm: np.ndarray) -> np.ndarray:
    return 2 * EPS * _levels(n) * norm


def _cplx(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("n", LENGTHS)
def test_one_dimensional_transforms_are_within_the_bound(n: int) -> None:
    x = _cplx(2, n)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    wide = x.astype(np.complex128)
    got = run_fft(x, "FFT", (n,), F32)
    assert got.dtype == np.complex64 and got.shape == (2, n)
    assert np.all(np.abs(got - np.fft.fft(wide)) <= _bound(n, norm))
    got = run_fft(x, "IFFT", (n,), F32)
    assert np.all(np.abs(got - np.fft.ifft(wide)) <= _bound(n, norm) / n)
    r = RNG.standard_normal((2, n)).astype(np.float32)
    got = run_fft(r, "RFFT", (n,), F32)
    assert got.shape == (2, n // 2 + 1)
    assert np.all(np.abs(got - np.fft.rfft(r.astype(np.float64))) <=
                  _bound(n, np.linalg.norm(r, axis=-1, keepdims=True)))
    h = x[:, :n // 2 + 1]
    got = run_fft(h, "IRFFT", (n,), F32)
    assert got.dtype == np.float32 and got.shape == (2, n)
    want = np.fft.irfft(h.astype(np.complex128), n)
    assert np.all(np.abs(got - want) <=
                  _bound(n, math.sqrt(2) * np.linalg.norm(h, axis=-1, keepdims=True)) / n)


@pytest.mark.parametrize("kind,lengths", [("FFT", (4, 6)), ("IFFT", (3, 2, 5)),
                                          ("RFFT", (6, 8)), ("IRFFT", (4, 10)),
                                          ("FFT", (2, 17))])
def test_multi_dimensional_transforms(kind: str, lengths: tuple[int, ...]) -> None:
    axes = tuple(range(-len(lengths), 0))
    n = math.prod(lengths)
    if kind == "RFFT":
        x = RNG.standard_normal((2, *lengths)).astype(np.float32)
        want = np.fft.rfftn(x.astype(np.float64), axes=axes)
    elif kind == "IRFFT":
        x = _cplx(2, *lengths[:-1], lengths[-1] // 2 + 1)
        want = np.fft.irfftn(x.astype(np.complex128), lengths, axes=axes)
    else:
        x = _cplx(2, *lengths)
        want = (np.fft.fftn if kind == "FFT" else np.fft.ifftn)(x.astype(np.complex128),
                                                                axes=axes)
    got = run_fft(x, kind, lengths, F32)
    assert got.shape == want.shape
    norm = np.linalg.norm(x.reshape(2, -1), axis=-1).max()
    scale = 1.0 if kind in ("FFT", "RFFT") else math.sqrt(2) / n
    levels = sum(_levels(k) for k in lengths)
    assert np.max(np.abs(got - want)) <= 2 * EPS * levels * norm * scale


def test_spec_example() -> None:
    """The StableHLO spec's fft example: FFT of [1, 0, 0, 0] is [1, 1, 1, 1]."""
    got = run_fft(np.array([1, 0, 0, 0], np.complex64), "FFT", (4,), F32)
    np.testing.assert_array_equal(got, np.ones(4, np.complex64))
