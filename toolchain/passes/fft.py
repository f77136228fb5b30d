"""stablehlo.fft as real graph ops over planar complex pairs (passes/complex.py).

A transform of length n along one axis is a recursion on n's smallest prime factor p
(Cooley-Tukey, decimation in time, every level batched over all the sub-transforms):
x viewed as [m, p] and transposed to [p, m] gives p transforms of length m in one go; a
twiddle multiply by W_n^(j0 k1) and transforms of length p across them finish it. For
p = 2 that last step is the butterfly (Y0 + W Y1, Y0 - W Y1), a concatenate, so a
power-of-two length costs log2(n) butterfly levels of n complex multiply-adds. A prime
length up to MAX_DFT is a DFT matrix (one dot_general per part over [re, im]); a larger
prime goes through Bluestein's chirp-z: a convolution of length M = 2^k >= 2n - 1
done with two power-of-two transforms and a precomputed transform of the chirp. So any
length works, in O(n log n) operations and O(n) constants (twiddles rounded once from
float64).

Multi-dimensional transforms apply the 1-D one along each of the last len(fft_length)
axes (moved last by a transpose, an index map). RFFT is the complex transform of
(x, 0) cut to n // 2 + 1 bins; IRFFT rebuilds the Hermitian spectrum and keeps the real
part of the inverse, which is what numpy.fft.irfft computes (the imaginary parts of bin
0 and, for even n, bin n / 2 are ignored). Inverses are scaled by 1 / n per axis.

The reference executor computes fft independently, with numpy's FFT in float64 rounded
once (reference/kernels.py), so `minirt-run --check` can catch an error in this
decomposition. Its rounding error, which the reference does not share, is bounded in
tests/passes/test_fft.py: |X - X_exact| <= 2 eps log2(m) ||x||_2 per transformed dim
(docs/architecture.md, "Complex numbers, FFT and random bits").
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.passes.complex_arith import Pair, cadd, cmul, csub
from toolchain.types import DType

# Prime lengths up to this take a DFT matrix (2 x [2p, p] constants); larger primes use
# Bluestein, whose two power-of-two transforms beat p^2 work and constants from here on.
MAX_DFT = 16

# The decomposition's rounding error, in the parts' type with rounding unit eps, is
# normwise: |X - X_exact| <= ERROR_C * eps * log2(m) * ||x||_2 for one transformed dim,
# m the length actually transformed (Bluestein's power of two M >= 2n - 1 when n has a
# prime factor above MAX_DFT). A Cooley-Tukey recursion rounds once per butterfly on each
# of its log2(m) levels, and each twiddle is rounded once from float64; c = 2 covers the
# worst seen over tests/passes/test_fft.py's sweep (3.3 eps ||x|| for n = 23, M = 64,
# against a bound of 12). The reference (numpy in float64, rounded once) is off the exact
# transform by one rounding of the result only, so this bound is how far the firmware's
# fft may be from it: testing/tolerance.py builds the random-graph budget on it.
ERROR_C = 2.0


def smallest_prime_factor(n: int) -> int:
    p = 2
    while p * p <= n:
        if n % p == 0:
            return p
        p += 1
    return n


def transformed_log2(n: int) -> float:
    """log2 of the length the decomposition transforms for length n (at least 1): n, or
    Bluestein's power of two when a prime factor of n is above MAX_DFT."""
    rest, big = n, 1
    while rest > 1:
        p = smallest_prime_factor(rest)
        big, rest = max(big, p), rest // p
    m = 1 << (2 * n - 2).bit_length() if big > MAX_DFT else n
    return max(1.0, math.log2(max(m, 2)))


def error_bound(kind: str, lengths: tuple[int, ...], norm: np.ndarray | float,
                eps: float) -> np.ndarray | float:
    """The bound on |X - X_exact| of fft `kind` over dims of `lengths` for an operand of
    2-norm `norm` (over those dims), computed in a type of rounding unit eps: ERROR_C eps
    log2(m) ||x|| per dim, the dims' log2(m) adding up as they are transformed one after
    another; inverses carry their 1 / n, and IRFFT's half spectrum of norm ||x|| stands
    for a Hermitian spectrum of norm up to sqrt(2) ||x||."""
    if kind == "IRFFT":
        norm = norm * math.sqrt(2)
    if kind in ("IFFT", "IRFFT"):
        norm = norm / math.prod(lengths)
    return ERROR_C * eps * sum(transformed_log2(n) for n in lengths) * norm


def _const_pair(b: GraphBuilder, values: np.ndarray, part: DType,
                shape: tuple[int, ...]) -> Pair:
    """Complex constants `values` (their trailing dims) broadcast to `shape`."""
    dims = tuple(range(len(shape) - values.ndim, len(shape)))
    pair = []
    for v in (values.real, values.imag):
        c = b.const(v, part)
        pair.append(c if tuple(shape) == v.shape else
                    b.op("broadcast_in_dim", [c], dims=dims, shape=tuple(shape)))
    return Pair(*pair)


def _twiddles(n: int, rows: int, cols: int, sign: int) -> np.ndarray:
    """W_n^(j k) = exp(sign 2 pi i j k / n) for j < rows, k < cols, in float64, the
    exponent reduced modulo n first so that every angle is exact before the cosine."""
    e = (np.arange(rows)[:, None] * np.arange(cols)[None, :]) % n
    return np.exp(sign * 2j * np.pi * e / n)


def _on_parts(b: GraphBuilder, z: Pair, op: str, **attrs) -> Pair:
    return Pair(b.op(op, [z.re], **attrs), b.op(op, [z.im], **attrs))


def _swap_last(b: GraphBuilder, z: Pair, axis: int) -> Pair:
    rank = len(z.shape)
    if axis == rank - 1:
        return z
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return _on_parts(b, z, "transpose", permutation=tuple(perm))


def _dft(b: GraphBuilder, z: Pair, sign: int) -> Pair:
    """The unnormalized transform of z along its last axis (exponent sign `sign`)."""
    n = z.shape[-1]
    if n == 1:
        return z
    p = smallest_prime_factor(n)
    if p == n:
        return _dft_matrix(b, z, sign) if n <= MAX_DFT else _bluestein(b, z, sign)
    m = n // p
    lead = z.shape[:-1]
    rank = len(z.shape)
    # j = p j1 + j0: [.., m, p] -> [.., p, m]; m-point transforms of each j0 row at once.
    y = _on_parts(b, z, "reshape", shape=lead + (m, p))
    y = _on_parts(b, y, "transpose", permutation=tuple(range(rank - 1)) + (rank, rank - 1))
    y = _dft(b, y, sign)  # Y[.., j0, k1]
    if p == 2:
        # X[k1] = Y0 + W^k1 Y1, X[k1 + m] = Y0 - W^k1 Y1.
        halves = [_on_parts(b, y, "slice", start=(0,) * (rank - 1) + (j, 0),
                            limit=lead + (j + 1, m), strides=(1,) * (rank + 1))
                  for j in (0, 1)]
        y0, y1 = (_on_parts(b, h, "reshape", shape=lead + (m,)) for h in halves)
        t = cmul(b, y1, _const_pair(b, _twiddles(n, 2, m, sign)[1], z.part, lead + (m,)))
        out = [cadd(b, y0, t), csub(b, y0, t)]
        return Pair(b.op("concatenate", [out[0].re, out[1].re], dimension=rank - 1),
                    b.op("concatenate", [out[0].im, out[1].im], dimension=rank - 1))
    t = cmul(b, y, _const_pair(b, _twiddles(n, p, m, sign), z.part, lead + (p, m)))
    # p-point transforms across j0: [.., k1, j0] -> [.., k1, k0] -> [.., k0, k1].
    swap = tuple(range(rank - 1)) + (rank, rank - 1)
    x = _dft(b, _on_parts(b, t, "transpose", permutation=swap), sign)
    x = _on_parts(b, x, "transpose", permutation=swap)
    return _on_parts(b, x, "reshape", shape=lead + (n,))


def _dft_matrix(b: GraphBuilder, z: Pair, sign: int) -> Pair:
    """X = x W as two dot_generals of [re, im] (last axis 2n) with [2n, n] real matrices:
    re = xr C - s xi S, im = xi C + s xr S for W = C + i s S."""
    n = z.shape[-1]
    rank = len(z.shape)
    w = _twiddles(n, n, n, sign)
    u = b.op("concatenate", [z.re, z.im], dimension=rank - 1)
    parts = []
    for m in (np.concatenate([w.real, -w.imag]), np.concatenate([w.imag, w.real])):
        parts.append(b.op("dot_general", [u, b.const(m, z.part)], lhs_batch=(), rhs_batch=(),
                          lhs_contract=(rank - 1,), rhs_contract=(0,), dtype=z.part.name))
    return Pair(*parts)


def _bluestein(b: GraphBuilder, z: Pair, sign: int) -> Pair:
    """Prime n: with w_j = exp(sign pi i j^2 / n), X_k = w_k sum_j (x_j w_j) conj(w_(k-j)),
    a linear convolution of length 2n - 1, computed circularly at a power of two M."""
    n = z.shape[-1]
    rank = len(z.shape)
    lead = z.shape[:-1]
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n)
    w = np.exp(sign * 1j * np.pi * ((j * j) % (2 * n)) / n)
    chirp = np.zeros(m, np.complex128)
    chirp[:n] = np.conj(w)
    chirp[m - n + 1:] = np.conj(w[1:])[::-1]
    spectrum = np.fft.fft(chirp) / m  # the inverse transform's 1 / M folded in
    a = cmul(b, z, _const_pair(b, w, z.part, z.shape))
    zero = b.const(0.0, z.part)
    a = Pair(*(b.op("pad", [p, zero], low=(0,) * rank, high=(0,) * (rank - 1) + (m - n,),
                    interior=(0,) * rank) for p in (a.re, a.im)))
    a = _dft(b, a, -1)
    conv = _dft(b, cmul(b, a, _const_pair(b, spectrum, z.part, lead + (m,))), 1)
    conv = _on_parts(b, conv, "slice", start=(0,) * rank, limit=lead + (n,),
                     strides=(1,) * rank)
    return cmul(b, conv, _const_pair(b, w, z.part, z.shape))


def transform(b: GraphBuilder, z: Pair, axis: int, inverse: bool) -> Pair:
    """The 1-D FFT (IFFT, scaled by 1 / n) of z along `axis`."""
    z = _swap_last(b, z, axis)
    n = z.shape[-1]
    x = _dft(b, z, 1 if inverse else -1)
    if inverse and n > 1:
        scale = b.splat(1.0 / n, z.part, x.shape)
        x = Pair(b.op("multiply", [x.re, scale]), b.op("multiply", [x.im, scale]))
    return _swap_last(b, x, axis)


def _hermitian(b: GraphBuilder, z: Pair, n: int) -> Pair:
    """The n bins of a real signal's spectrum from its first n // 2 + 1: bin n - k is the
    conjugate of bin k."""
    rank = len(z.shape)
    h = z.shape[-1]
    if n - h == 0:
        return z
    tail = _on_parts(b, z, "slice", start=(0,) * (rank - 1) + (1,),
                     limit=z.shape[:-1] + (n - h + 1,), strides=(1,) * rank)
    tail = _on_parts(b, tail, "reverse", dims=(rank - 1,))
    tail = Pair(tail.re, b.op("negate", [tail.im]))
    return Pair(b.op("concatenate", [z.re, tail.re], dimension=rank - 1),
                b.op("concatenate", [z.im, tail.im], dimension=rank - 1))


def fft(b: GraphBuilder, x: Pair | Tensor, kind: str,
        lengths: tuple[int, ...]) -> Pair | Tensor:
    """stablehlo.fft of `x` (a Pair, or a real tensor for RFFT) over its last
    len(lengths) axes."""
    k = len(lengths)
    if kind == "RFFT":
        assert isinstance(x, Tensor)
        rank = x.type.rank
        zero = b.splat(0.0, x.type.dtype, tuple(x.type.shape))
        z = transform(b, Pair(x, zero), rank - 1, inverse=False)
        z = _on_parts(b, z, "slice", start=(0,) * rank,
                      limit=z.shape[:-1] + (lengths[-1] // 2 + 1,), strides=(1,) * rank)
        for axis in range(rank - 2, rank - k - 1, -1):
            z = transform(b, z, axis, inverse=False)
        return z
    assert isinstance(x, Pair)
    rank = len(x.shape)
    axes = list(range(rank - 1, rank - k - 1, -1))  # the last axis first
    if kind == "FFT":
        for axis in axes:
            x = transform(b, x, axis, inverse=False)
        return x
    for axis in reversed(axes[1:] if kind == "IRFFT" else axes):
        x = transform(b, x, axis, inverse=True)
    if kind == "IFFT":
        return x
    x = transform(b, _hermitian(b, x, lengths[-1]), rank - 1, inverse=True)
    return x.re


def run_fft(x: np.ndarray, kind: str, lengths: tuple[int, ...], part: DType) -> np.ndarray:
    """fft of the host array x computed by the graph above on the reference executor, in
    the parts' type: the arithmetic the firmware does, for measuring its error."""
    from toolchain.graph.ir import Graph
    from toolchain.reference.executor import run_graph
    from toolchain.types import TensorType

    g = Graph("fft")
    b = GraphBuilder(g)
    shape = tuple(x.shape)
    if kind == "RFFT":
        arg: Pair | Tensor = g.add_input(TensorType(shape, part))
        arrays = [np.asarray(x, part.np_dtype)]
    else:
        arg = Pair(g.add_input(TensorType(shape, part)), g.add_input(TensorType(shape, part)))
        arrays = [np.ascontiguousarray(x.real, part.np_dtype),
                  np.ascontiguousarray(x.imag, part.np_dtype)]
    y = fft(b, arg, kind, lengths)
    g.outputs = [y.re, y.im] if isinstance(y, Pair) else [y]
    outs = run_graph(g, arrays)
    if len(outs) == 1:
        return outs[0]
    z = np.empty(outs[0].shape, np.result_type(part.np_dtype, np.complex64))
    z.real, z.imag = outs
    return z


__all__ = ["ERROR_C", "MAX_DFT", "error_bound", "fft", "run_fft", "smallest_prime_factor",
           "transform", "transformed_log2"]
