"""The Signal library's real FFTs (SignalRfft / SignalIrfft) as graph ops.

TFLite Micro computes the int16 and int32 ones with kiss_fft in 16- or 32-bit fixed
point (kiss_fftr over a complex FFT of half the length): every butterfly first divides
its inputs by the radix with a rounding Q15 (Q31) multiply, twiddles are Q15 (Q31)
values rounded from cos / sin, products round to nearest with ties up, and every store
into a sample wraps. Those rules make the result depend on the exact order of
operations, so this file rebuilds kiss_fft's own decomposition: the input in
digit-reversed order, then one vectorized stage per radix (4s first, then a 2, as
kiss_fft factors a power of two), innermost stage first, then kiss_fftr's split of the
complex spectrum into the real input's spectrum (kiss_fftri's merge before an inverse).
The float32 ones use the graph's own fft op.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.frontend.tflite.signal_math import IntBuilder
from toolchain.graph.ir import Tensor


@dataclass(frozen=True)
class FixedFormat:
    """One of kiss_fft's FIXED_POINT widths: samples of `store` type, products computed
    in `work` (kiss_fft's SAMPPROD)."""

    bits: int
    store: str
    work: str

    @property
    def one(self) -> int:  # SAMP_MAX
        return (1 << (self.bits - 1)) - 1

    def twiddles(self, phases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """kiss_fft's fixed-point twiddles: floor(0.5 + SAMP_MAX * cos / sin(phase))."""
        return (np.floor(0.5 + self.one * np.cos(phases)).astype(np.int64),
                np.floor(0.5 + self.one * np.sin(phases)).astype(np.int64))


FORMATS = {"i16": FixedFormat(16, "i16", "i32"), "i32": FixedFormat(32, "i32", "i64")}


def radices(n: int) -> list[int]:
    """kiss_fft's factors of a power of two n: 4s while they divide, then a 2."""
    out = []
    while n % 4 == 0 and n > 1:
        out.append(4)
        n //= 4
    if n == 2:
        out.append(2)
        n = 1
    if n != 1:
        raise Unsupported("fft_length must be a power of two of at least 4")
    return out


class _Fixed:
    """Complex arithmetic of kiss_fft's fixed-point macros, on (re, im) pairs of tensors
    of the format's work type that hold sample values."""

    def __init__(self, b: IntBuilder, fmt: FixedFormat):
        self.b = b
        self.fmt = fmt

    def wrap(self, x: Tensor) -> Tensor:
        """A store into a sample variable."""
        return self.b.wrap(x, self.fmt.store)

    def sround(self, x: Tensor) -> Tensor:
        bits = self.fmt.bits
        return self.wrap(self.b.shr(self.b.add(x, 1 << (bits - 2)), bits - 1))

    def fixdiv(self, c: tuple[Tensor, Tensor], radix: int) -> tuple[Tensor, Tensor]:
        """C_FIXDIV: each part times SAMP_MAX / radix (integer), rounded."""
        k = self.fmt.one // radix
        return self.sround(self.b.mul(c[0], k)), self.sround(self.b.mul(c[1], k))

    def mul(self, a: tuple[Tensor, Tensor], w: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """C_MUL: the complex product, each part one rounded Q15 sum of products."""
        b = self.b
        re = b.sub(b.mul(a[0], w[0]), b.mul(a[1], w[1]))
        im = b.add(b.mul(a[0], w[1]), b.mul(a[1], w[0]))
        return self.sround(re), self.sround(im)

    def add(self, a: tuple[Tensor, Tensor], c: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        return self.wrap(self.b.add(a[0], c[0])), self.wrap(self.b.add(a[1], c[1]))

    def sub(self, a: tuple[Tensor, Tensor], c: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        return self.wrap(self.b.sub(a[0], c[0])), self.wrap(self.b.sub(a[1], c[1]))

    def negate(self, x: Tensor) -> Tensor:
        return self.wrap(self.b.sub(self.b.filled(0, x), x))

    def twiddle(self, values: tuple[np.ndarray, np.ndarray], shape: tuple[int, ...]
                ) -> tuple[Tensor, Tensor]:
        """Constant (m,) twiddle parts broadcast over the leading dims of `shape`."""
        ctx = self.b.ctx
        re, im = (ctx.broadcast(ctx.const(v, self.fmt.work), shape) for v in values)
        return re, im


def _stage(f: _Fixed, z: tuple[Tensor, Tensor], radix: int, m: int, stride: int,
           tw: tuple[np.ndarray, np.ndarray], inverse: bool) -> tuple[Tensor, Tensor]:
    """One kiss_fft butterfly stage (kf_bfly2 / kf_bfly4) over every group of radix * m
    elements: group element j * m + k is input j of butterfly k."""
    b, ctx = f.b, f.b.ctx
    batch, n = z[0].type.shape
    groups = n // (radix * m)
    shape = (batch, groups, 1, m)

    def part(t: Tensor, j: int) -> Tensor:
        t = ctx.reshape(t, (batch, groups, radix, m))
        return ctx.node("slice", [t], start=(0, 0, j, 0), limit=(batch, groups, j + 1, m),
                        strides=(1, 1, 1, 1))

    ins = [f.fixdiv((part(z[0], j), part(z[1], j)), radix) for j in range(radix)]
    k = np.arange(m)

    def twiddle(j: int) -> tuple[Tensor, Tensor]:
        idx = j * k * stride
        return f.twiddle((tw[0][idx], tw[1][idx]), shape)

    if radix == 2:
        t = f.mul(ins[1], twiddle(1))
        outs = [f.add(ins[0], t), f.sub(ins[0], t)]
    else:
        s0, s1, s2 = (f.mul(ins[j], twiddle(j)) for j in (1, 2, 3))
        s5 = f.sub(ins[0], s1)
        f0 = f.add(ins[0], s1)
        s3, s4 = f.add(s0, s2), f.sub(s0, s2)
        # Fout[m] and Fout[3m]: s5 -/+ i * s4 (kf_bfly4's two directions swap them).
        plus_i = (f.wrap(b.sub(s5[0], s4[1])), f.wrap(b.add(s5[1], s4[0])))
        minus_i = (f.wrap(b.add(s5[0], s4[1])), f.wrap(b.sub(s5[1], s4[0])))
        outs = [f.add(f0, s3), plus_i if inverse else minus_i, f.sub(f0, s3),
                minus_i if inverse else plus_i]
    re, im = (ctx.reshape(ctx.node("concatenate", [o[p] for o in outs], dimension=2),
                          (batch, n)) for p in (0, 1))
    return re, im


def complex_fft(f: _Fixed, re: Tensor, im: Tensor, inverse: bool = False
                ) -> tuple[Tensor, Tensor]:
    """kiss_fft (fixed point) of (batch, n) parts; `inverse` turns the twiddles' phase,
    unscaled like kiss_fft's."""
    ctx = f.b.ctx
    batch, n = re.type.shape
    factors = radices(n)
    tw = f.fmt.twiddles((1 if inverse else -1) * 2 * math.pi * np.arange(n) / n)
    # kf_work's recursion reads element q0 + p0*q1 + p0*p1*q2 ... into position
    # q0*m0 + q1*m1 + ...: a reshape by the reversed factors, transposed.
    dims = (batch, *reversed(factors))
    perm = (0, *range(len(factors), 0, -1))
    re, im = (ctx.reshape(ctx.node("transpose", [ctx.reshape(t, dims)], permutation=perm),
                          (batch, n)) for t in (re, im))
    m = n
    stages = []
    stride = 1
    for p in factors:
        m //= p
        stages.append((p, m, stride))
        stride *= p
    for p, m, stride in reversed(stages):
        re, im = _stage(f, (re, im), p, m, stride, tw, inverse)
    return re, im


def rfft_fixed(b: IntBuilder, x: Tensor, fft_length: int) -> Tensor:
    """SignalRfft of int16 or int32 frames x (batch, input_length), zero padded to
    fft_length: (batch, fft_length + 2) of x's type, real and imaginary parts
    interleaved."""
    ctx = b.ctx
    f = _Fixed(b, FORMATS[x.type.dtype.name])
    batch, length = x.type.shape
    if fft_length < 8 or length > fft_length:
        raise Unsupported(f"fft_length {fft_length} must be at least 8 and at least the "
                          f"input length {length}")
    half = fft_length // 2
    radices(half)
    x32 = b.cast(x, f.fmt.work)
    if length < fft_length:
        x32 = ctx.node("pad", [x32, ctx.const(0, f.fmt.work)], low=(0, 0),
                       high=(0, fft_length - length), interior=(0, 0))
    pairs = ctx.reshape(x32, (batch, half, 2))

    def column(t: Tensor, j: int, width: int) -> Tensor:
        rows = t.type.shape[1]
        s = ctx.node("slice", [t], start=(0, 0, j), limit=(batch, rows, j + 1),
                     strides=(1, 1, 1))
        return ctx.reshape(s, (batch, width))

    re, im = complex_fft(f, column(pairs, 0, half), column(pairs, 1, half))

    def cols(t: Tensor, start: int, stop: int) -> Tensor:
        return ctx.node("slice", [t], start=(0, start), limit=(batch, stop), strides=(1, 1))

    # DC and Nyquist from tmp[0]: halved, then its parts' sum and difference.
    dc = f.fixdiv((cols(re, 0, 1), cols(im, 0, 1)), 2)
    first = f.wrap(b.add(dc[0], dc[1]))
    last = f.wrap(b.sub(dc[0], dc[1]))
    # k = 1 .. half/2: tmp[k] and conj(tmp[half - k]), both halved.
    q = half // 2
    fpk = f.fixdiv((cols(re, 1, q + 1), cols(im, 1, q + 1)), 2)
    rev = [ctx.node("reverse", [cols(t, q, half)], dims=(1,)) for t in (re, im)]
    fpnk = f.fixdiv((rev[0], f.negate(rev[1])), 2)
    f1k, f2k = f.add(fpk, fpnk), f.sub(fpk, fpnk)
    super_tw = f.fmt.twiddles(-math.pi * ((np.arange(q) + 1) / half + 0.5))
    tw = f.mul(f2k, f.twiddle(super_tw, (batch, q)))
    # HALF_OF: sums in the work type, halved, stored.
    low = (f.wrap(b.shr(b.add(f1k[0], tw[0]), 1)), f.wrap(b.shr(b.add(f1k[1], tw[1]), 1)))
    high = (f.wrap(b.shr(b.sub(f1k[0], tw[0]), 1)), f.wrap(b.shr(b.sub(tw[1], f1k[1]), 1)))
    # freq[k] = low[k] for k < half/2; freq[half - k] = high[k] for k <= half/2 (the
    # middle bin is written twice, high last).
    zero = b.filled(0, first)
    parts = []
    for p, end in ((0, first), (1, zero)):
        parts.append([end, cols(low[p], 0, q - 1),
                      ctx.node("reverse", [high[p]], dims=(1,)),
                      last if p == 0 else zero])
    spectrum = [ctx.node("concatenate", ps, dimension=1) for ps in parts]
    both = ctx.node("concatenate", [ctx.reshape(s, (batch, half + 1, 1)) for s in spectrum],
                    dimension=2)
    return b.cast(ctx.reshape(both, (batch, fft_length + 2)), f.fmt.store)


def irfft_fixed(b: IntBuilder, x: Tensor, fft_length: int) -> Tensor:
    """SignalIrfft of int16 or int32 spectra x (batch, fft_length + 2), real and
    imaginary parts interleaved: (batch, fft_length) of x's type, kiss_fftri's
    fixed-point arithmetic (unnormalized: each stage's division by the radix is the
    only scaling)."""
    ctx = b.ctx
    f = _Fixed(b, FORMATS[x.type.dtype.name])
    batch, width = x.type.shape
    half = fft_length // 2
    if fft_length < 8 or width != fft_length + 2:
        raise Unsupported(f"input of {width} values per spectrum; fft_length {fft_length} "
                          f"(at least 8) takes {fft_length + 2}")
    radices(half)
    q = half // 2
    pairs = ctx.reshape(b.cast(x, f.fmt.work), (batch, half + 1, 2))

    def part(j: int, start: int, stop: int) -> Tensor:
        s = ctx.node("slice", [pairs], start=(0, start, j), limit=(batch, stop, j + 1),
                     strides=(1, 1, 1))
        return ctx.reshape(s, (batch, stop - start))

    dc = f.fixdiv((f.wrap(b.add(part(0, 0, 1), part(0, half, half + 1))),
                   f.wrap(b.sub(part(0, 0, 1), part(0, half, half + 1)))), 2)
    fk = f.fixdiv((part(0, 1, q + 1), part(1, 1, q + 1)), 2)
    mirror = [ctx.node("reverse", [part(j, q, half)], dims=(1,)) for j in (0, 1)]
    fnkc = f.fixdiv((mirror[0], f.negate(mirror[1])), 2)
    fek, diff = f.add(fk, fnkc), f.sub(fk, fnkc)
    super_tw = f.fmt.twiddles(math.pi * ((np.arange(q) + 1) / half + 0.5))
    fok = f.mul(diff, f.twiddle(super_tw, (batch, q)))
    low = f.add(fek, fok)
    high = f.sub(fek, fok)
    high = (high[0], f.negate(high[1]))

    def cols(t: Tensor, start: int, stop: int) -> Tensor:
        return ctx.node("slice", [t], start=(0, start), limit=(batch, stop), strides=(1, 1))

    # tmp[k] = low[k] for k < half/2, tmp[half - k] = high[k] for k <= half/2 (the
    # middle one written twice, high last), tmp[0] the folded DC and Nyquist.
    re, im = (ctx.node("concatenate", [dc[p], cols(low[p], 0, q - 1),
                                       ctx.node("reverse", [high[p]], dims=(1,))],
                       dimension=1) for p in (0, 1))
    re, im = complex_fft(f, re, im, inverse=True)
    both = ctx.node("concatenate", [ctx.reshape(t, (batch, half, 1)) for t in (re, im)],
                    dimension=2)
    return b.cast(ctx.reshape(both, (batch, fft_length)), f.fmt.store)


def rfft_float(ctx: OpContext, x: Tensor, fft_length: int) -> Tensor:
    """SignalRfft of float32 frames (batch, input_length), zero padded: the graph's own
    RFFT (kiss_fft's float butterflies round differently: close, not bit-equal)."""
    batch, length = x.type.shape
    if length > fft_length:
        raise Unsupported(f"fft_length {fft_length} is less than the input length {length}")
    if length < fft_length:
        x = ctx.node("pad", [x, ctx.const(0, "f32")], low=(0, 0), high=(0, fft_length - length),
                     interior=(0, 0))
    spectrum = ctx.node("fft", [x], fft_type="RFFT", fft_length=(fft_length,))
    bins = fft_length // 2 + 1
    parts = [ctx.reshape(ctx.node(p, [spectrum]), (batch, bins, 1)) for p in ("real", "imag")]
    return ctx.reshape(ctx.node("concatenate", parts, dimension=2), (batch, fft_length + 2))


def irfft_float(ctx: OpContext, x: Tensor, fft_length: int) -> Tensor:
    """SignalIrfft of float32 spectra (batch, fft_length + 2), interleaved: the graph's
    IRFFT, normalized by 1 / fft_length as TFLite Micro divides kiss_fftri's result."""
    batch, width = x.type.shape
    bins = fft_length // 2 + 1
    if width != 2 * bins:
        raise Unsupported(f"input of {width} values per spectrum; fft_length {fft_length} "
                          f"takes {2 * bins}")
    pairs = ctx.reshape(x, (batch, bins, 2))
    re, im = (ctx.reshape(ctx.node("slice", [pairs], start=(0, 0, j), limit=(batch, bins, j + 1),
                                   strides=(1, 1, 1)), (batch, bins)) for j in (0, 1))
    spectrum = ctx.node("complex", [re, im])
    return ctx.node("fft", [spectrum], fft_type="IRFFT", fft_length=(fft_length,))


__all__ = ["FORMATS", "FixedFormat", "complex_fft", "irfft_fixed", "irfft_float", "radices",
           "rfft_fixed", "rfft_float"]
