"""Complex arithmetic on planar pairs: a complex value as two real tensors, and the real
graph ops computing +, -, *, /, abs, sqrt, exp, log and sign of such values.

Both the complex lowering (passes/complex.py, whose op rules use all of these) and the
FFT (passes/fft.py, its butterflies and twiddle multiplies) build on them, and the
lowering calls the FFT for the fft op: the arithmetic lives here, below both, so that
neither imports the other's module for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.types import DType, dtype


@dataclass(frozen=True)
class Pair:
    """A complex value as its real and imaginary parts, two real tensors of one shape."""

    re: Tensor
    im: Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.re.type.shape)

    @property
    def part(self) -> DType:
        return self.re.type.dtype


Value = Tensor | Pair


def cadd(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return Pair(b.op("add", [x.re, y.re]), b.op("add", [x.im, y.im]))


def csub(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return Pair(b.op("subtract", [x.re, y.re]), b.op("subtract", [x.im, y.im]))


def cmul(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i, as numpy computes it."""
    re = b.op("subtract", [b.op("multiply", [x.re, y.re]), b.op("multiply", [x.im, y.im])])
    im = b.op("add", [b.op("multiply", [x.re, y.im]), b.op("multiply", [x.im, y.re])])
    return Pair(re, im)


def cdiv(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    """Smith's division, as numpy computes it: the ratio of the divisor's smaller part to
    its larger one keeps the intermediate products in range (the textbook
    (ac + bd) / (c^2 + d^2) overflows for |y| > 2**64 in f32). Both branches are
    computed and one selected; a zero divisor gives inf / NaN like IEEE division."""
    a, c = x, y
    ar, ai = b.op("abs", [c.re]), b.op("abs", [c.im])
    real_big = b.op("compare", [ar, ai], direction="GE")
    # |c.re| >= |c.im|: r = d / c, s = 1 / (c + d r): ((a + b r) s, (b - a r) s).
    r1 = b.op("divide", [c.im, c.re])
    s1 = b.op("divide", [splat_like(b, 1.0, c.re), b.op("add", [c.re, b.op("multiply",
                                                                               [c.im, r1])])])
    re1 = b.op("multiply", [b.op("add", [a.re, b.op("multiply", [a.im, r1])]), s1])
    im1 = b.op("multiply", [b.op("subtract", [a.im, b.op("multiply", [a.re, r1])]), s1])
    # Both parts zero: numpy divides by |c.re| itself (inf or NaN, never a 0/0 ratio).
    zero = b.op("compare", [ar, splat_like(b, 0.0, ar)], direction="EQ")
    both_zero = b.op("and", [zero, b.op("compare", [ai, splat_like(b, 0.0, ai)],
                                        direction="EQ")])
    re1 = b.op("select", [both_zero, b.op("divide", [a.re, ar]), re1])
    im1 = b.op("select", [both_zero, b.op("divide", [a.im, ar]), im1])
    # |c.im| > |c.re|: r = c / d, s = 1 / (d + c r): ((a r + b) s, (b r - a) s).
    r2 = b.op("divide", [c.re, c.im])
    s2 = b.op("divide", [splat_like(b, 1.0, c.re), b.op("add", [c.im, b.op("multiply",
                                                                               [c.re, r2])])])
    re2 = b.op("multiply", [b.op("add", [b.op("multiply", [a.re, r2]), a.im]), s2])
    im2 = b.op("multiply", [b.op("subtract", [b.op("multiply", [a.im, r2]), a.re]), s2])
    return Pair(b.op("select", [real_big, re1, re2]), b.op("select", [real_big, im1, im2]))


def cabs(b: GraphBuilder, z: Pair) -> Tensor:
    """|z| without overflow or underflow in the squares: big * sqrt(1 + (small/big)^2),
    0 for 0, +inf when a part is infinite (even if the other is NaN, as C's hypot)."""
    ax, ay = b.op("abs", [z.re]), b.op("abs", [z.im])
    big, small = b.op("maximum", [ax, ay]), b.op("minimum", [ax, ay])
    zero = splat_like(b, 0.0, big)
    ratio = b.op("divide", [small, big])
    one = splat_like(b, 1.0, big)
    r = b.op("multiply", [big, b.op("sqrt", [b.op("add", [one, b.op("multiply",
                                                                      [ratio, ratio])])])])
    r = b.op("select", [b.op("compare", [big, zero], direction="EQ"), zero, r])
    inf = splat_like(b, np.inf, big)
    is_inf = b.op("or", [b.op("compare", [ax, inf], direction="EQ"),
                         b.op("compare", [ay, inf], direction="EQ")])
    return b.op("select", [is_inf, inf, r])


def splat_like(b: GraphBuilder, value: float, like: Tensor) -> Tensor:
    return b.splat(value, like.type.dtype, tuple(like.type.shape))


def _signbit(b: GraphBuilder, x: Tensor) -> Tensor:
    """x's sign bit (true for -0.0 too): its bits as a signed integer, below zero."""
    bits = dtype({"f32": "i32", "f64": "i64"}[x.type.dtype.name])
    ints = b.op("bitcast_convert", [x], dtype=bits.name, shape=tuple(x.type.shape))
    return b.op("compare", [ints, b.splat(0, bits, tuple(x.type.shape))], direction="LT")


def csqrt(b: GraphBuilder, z: Pair) -> Pair:
    """The principal square root (the branch cut on the negative reals, the imaginary
    part's sign kept): t = sqrt((|z| + |re|) / 2); re >= 0: (t, im / 2t); re < 0:
    (|im| / 2t, t with im's sign). sqrt(+-0 + 0i) = (0, the imaginary zero)."""
    half = splat_like(b, 0.5, z.re)
    t = b.op("sqrt", [b.op("add", [b.op("multiply", [cabs(b, z), half]),
                                   b.op("multiply", [b.op("abs", [z.re]), half])])])
    two_t = b.op("add", [t, t])
    zero = splat_like(b, 0.0, z.re)
    t_zero = b.op("compare", [t, zero], direction="EQ")
    other = b.op("select", [t_zero, zero, b.op("divide", [b.op("abs", [z.im]), two_t])])
    positive = b.op("not", [_signbit(b, z.re)])
    signed_t = b.op("select", [_signbit(b, z.im), b.op("negate", [t]), t])
    im_pos = b.op("select", [t_zero, z.im, b.op("divide", [z.im, two_t])])
    return Pair(b.op("select", [positive, t, other]),
                b.op("select", [positive, im_pos, signed_t]))


def cexp(b: GraphBuilder, z: Pair) -> Pair:
    """e^re (cos im, sin im); a zero imaginary part stays exactly that zero (so
    exp(inf + 0i) = inf + 0i, not inf * 0 = NaN), as C's cexp."""
    e = b.op("exponential", [z.re])
    im = b.op("multiply", [e, b.op("sine", [z.im])])
    real_axis = b.op("compare", [z.im, splat_like(b, 0.0, z.im)], direction="EQ")
    re = b.op("multiply", [e, b.op("cosine", [z.im])])
    return Pair(b.op("select", [real_axis, e, re]), b.op("select", [real_axis, z.im, im]))


def clog(b: GraphBuilder, z: Pair) -> Pair:
    """(log |z|, atan2(im, re)): the principal branch."""
    return Pair(b.op("log", [cabs(b, z)]), b.op("atan2", [z.im, z.re]))


def csign(b: GraphBuilder, z: Pair) -> Pair:
    """z / |z|; (0, 0) for zero; NaN parts give (NaN, NaN) (the spec's sign)."""
    m = cabs(b, z)
    zero = splat_like(b, 0.0, m)
    is_zero = b.op("compare", [m, zero], direction="EQ")
    nan = b.op("or", [b.op("compare", [z.re, z.re], direction="NE"),
                      b.op("compare", [z.im, z.im], direction="NE")])
    nans = splat_like(b, np.nan, m)
    parts = []
    for p in (z.re, z.im):
        q = b.op("select", [is_zero, zero, b.op("divide", [p, m])])
        parts.append(b.op("select", [nan, nans, q]))
    return Pair(*parts)


__all__ = ["Pair", "Value", "cabs", "cadd", "cdiv", "cexp", "clog", "cmul", "csign",
           "csqrt", "csub", "splat_like"]
