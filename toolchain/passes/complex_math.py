"""The elementwise functions of complex values the StableHLO spec allows beyond
complex_arith.py's (+, -, *, /, abs, sqrt, exp, log, sign): sine, cosine, tan, tanh,
expm1, log1p, logistic, rsqrt, cbrt, power, atan2, maximum and minimum, as real graph
ops on planar pairs. Each is the textbook identity, arranged so that no part cancels
where the real functions it uses do not:

    sin(a + bi)   = sin a cosh b + i cos a sinh b
    cos(a + bi)   = cos a cosh b - i sin a sinh b
    tanh(a + bi)  = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); past |a| = 20 (where
                    cosh 2a overflows f32 soon after and tanh a rounds to +-1 in f64)
                    (sign a, 4 sin b cos b e**-2|a|)
    tan z         = -i tanh(i z)
    expm1(a + bi) = expm1(a) cos b - 2 sin**2(b/2) + i e**a sin b (the real part's
                    e**a cos b - 1 without the cancellation near 0)
    log1p z       = log |1 + z| + i atan2(b, 1 + a), the modulus' log as
                    log1p(2a + a**2 + b**2) / 2 while |z| < 1/2 (numpy's complex log1p
                    takes log |1 + z| there, and loses the digits 1 + z rounds off)
    logistic z    = 1 / (1 + e**-z);  rsqrt z = 1 / sqrt z
    cbrt z        = e**(log z / 3), the principal root
    power(x, y)   = e**(y log x)
    atan2(y, x)   = -i log((x + i y) / sqrt(x**2 + y**2)) (the interpreter's definition,
                    as it is: its branches are those of this sqrt; x**2 + y**2 cancels
                    where x is near +-i y, and the result loses those digits)
    maximum / minimum: lexicographic on (real, imaginary), as the spec and numpy order
                    complex numbers

The reference executor computes these with numpy's complex ufuncs in complex128
(toolchain/reference/kernels.py); tests/passes/test_complex_math.py holds the lowering
to it.
"""

from __future__ import annotations

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.passes.complex_arith import (
    Pair,
    cabs,
    cadd,
    cdiv,
    cexp,
    clog,
    cmul,
    csqrt,
    splat_like,
)

TANH_SATURATION = 20.0  # |a| past which tanh(a + bi) is (sign a, 4 sin b cos b e**-2|a|)


def _op(b: GraphBuilder, name: str, *xs: Tensor, **attrs: object) -> Tensor:
    return b.op(name, list(xs), **attrs)


def _const_pair(b: GraphBuilder, re: float, like: Pair) -> Pair:
    return Pair(splat_like(b, re, like.re), splat_like(b, 0.0, like.re))


def csin(b: GraphBuilder, z: Pair) -> Pair:
    return Pair(_op(b, "multiply", _op(b, "sine", z.re), _op(b, "cosh", z.im)),
                _op(b, "multiply", _op(b, "cosine", z.re), _op(b, "sinh", z.im)))


def ccos(b: GraphBuilder, z: Pair) -> Pair:
    return Pair(_op(b, "multiply", _op(b, "cosine", z.re), _op(b, "cosh", z.im)),
                _op(b, "negate", _op(b, "multiply", _op(b, "sine", z.re),
                                     _op(b, "sinh", z.im))))


def ctanh(b: GraphBuilder, z: Pair) -> Pair:
    two = splat_like(b, 2.0, z.re)
    a2, b2 = _op(b, "multiply", two, z.re), _op(b, "multiply", two, z.im)
    den = _op(b, "add", _op(b, "cosh", a2), _op(b, "cosine", b2))
    re = _op(b, "divide", _op(b, "sinh", a2), den)
    im = _op(b, "divide", _op(b, "sine", b2), den)
    far = _op(b, "compare", _op(b, "abs", z.re), splat_like(b, TANH_SATURATION, z.re),
              direction="GT")
    decay = _op(b, "exponential", _op(b, "negate", _op(b, "abs", a2)))
    far_im = _op(b, "multiply", _op(b, "multiply", splat_like(b, 2.0, z.re),
                                    _op(b, "sine", b2)), decay)  # 4 sin b cos b = 2 sin 2b
    return Pair(_op(b, "select", far, _op(b, "sign", z.re), re),
                _op(b, "select", far, far_im, im))


def ctan(b: GraphBuilder, z: Pair) -> Pair:
    t = ctanh(b, Pair(_op(b, "negate", z.im), z.re))  # tanh(i z), i z = (-b, a)
    return Pair(t.im, _op(b, "negate", t.re))  # -i (p + i q) = q - i p


def cexpm1(b: GraphBuilder, z: Pair) -> Pair:
    half_sin = _op(b, "sine", _op(b, "multiply", z.im, splat_like(b, 0.5, z.im)))
    re = _op(b, "subtract",
             _op(b, "multiply", _op(b, "exponential_minus_one", z.re), _op(b, "cosine", z.im)),
             _op(b, "multiply", splat_like(b, 2.0, z.re), _op(b, "multiply", half_sin, half_sin)))
    im = _op(b, "multiply", _op(b, "exponential", z.re), _op(b, "sine", z.im))
    return Pair(re, im)


def clog1p(b: GraphBuilder, z: Pair) -> Pair:
    one = splat_like(b, 1.0, z.re)
    u = Pair(_op(b, "add", one, z.re), z.im)
    sq = _op(b, "add", _op(b, "multiply", z.re, _op(b, "add", z.re, splat_like(b, 2.0, z.re))),
             _op(b, "multiply", z.im, z.im))  # |1 + z|**2 - 1 = 2a + a**2 + b**2
    near = _op(b, "multiply", splat_like(b, 0.5, z.re), _op(b, "log_plus_one", sq))
    small = _op(b, "compare", cabs(b, z), splat_like(b, 0.5, z.re), direction="LT")
    re = _op(b, "select", small, near, _op(b, "log", cabs(b, u)))
    return Pair(re, _op(b, "atan2", z.im, u.re))


def clogistic(b: GraphBuilder, z: Pair) -> Pair:
    one = _const_pair(b, 1.0, z)
    e = cexp(b, Pair(_op(b, "negate", z.re), _op(b, "negate", z.im)))
    return cdiv(b, one, cadd(b, one, e))


def crsqrt(b: GraphBuilder, z: Pair) -> Pair:
    return cdiv(b, _const_pair(b, 1.0, z), csqrt(b, z))


def ccbrt(b: GraphBuilder, z: Pair) -> Pair:
    third = splat_like(b, 1.0 / 3.0, z.re)
    lz = clog(b, z)
    return cexp(b, Pair(_op(b, "multiply", lz.re, third), _op(b, "multiply", lz.im, third)))


def cpow(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return cexp(b, cmul(b, y, clog(b, x)))


def catan2(b: GraphBuilder, y: Pair, x: Pair) -> Pair:
    num = cadd(b, x, Pair(_op(b, "negate", y.im), y.re))  # x + i y
    den = csqrt(b, cadd(b, cmul(b, x, x), cmul(b, y, y)))
    w = clog(b, cdiv(b, num, den))
    return Pair(w.im, _op(b, "negate", w.re))  # -i (p + i q) = q - i p


def _greater(b: GraphBuilder, x: Pair, y: Pair) -> Tensor:
    """x > y lexicographically: the real parts, then the imaginary parts."""
    re_gt = _op(b, "compare", x.re, y.re, direction="GT")
    re_eq = _op(b, "compare", x.re, y.re, direction="EQ")
    im_gt = _op(b, "compare", x.im, y.im, direction="GT")
    return _op(b, "or", re_gt, _op(b, "and", re_eq, im_gt))


def _pick(b: GraphBuilder, first: Tensor, x: Pair, y: Pair) -> Pair:
    return Pair(_op(b, "select", first, x.re, y.re), _op(b, "select", first, x.im, y.im))


def cmax(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return _pick(b, _op(b, "not", _greater(b, y, x)), x, y)


def cmin(b: GraphBuilder, x: Pair, y: Pair) -> Pair:
    return _pick(b, _op(b, "not", _greater(b, x, y)), x, y)


UNARY = {"sine": csin, "cosine": ccos, "tan": ctan, "tanh": ctanh,
         "exponential_minus_one": cexpm1, "log_plus_one": clog1p, "logistic": clogistic,
         "rsqrt": crsqrt, "cbrt": ccbrt}
BINARY = {"power": cpow, "atan2": catan2, "maximum": cmax, "minimum": cmin}

__all__ = ["BINARY", "UNARY"]
