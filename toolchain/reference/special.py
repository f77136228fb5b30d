"""Special functions in float64 for the reference executor: CHLO's math functions.

The reference computes each of these in float64 and rounds once to the result type, so
a compiled kernel's error can be measured against it in ulps of f32 (or f16 / bf16).
Where Python's `math` module has the function (erf, erfc, lgamma) it is used, applied
element by element; the others are written here from their textbook series:

- `erf_inv`: Halley's iteration on erf (or on erfc near +-1, where 1 - |x| is exact),
  started from the first terms of its Maclaurin series or, for |x| >= 1/2, from
  Winitzki's closed-form approximation; three steps reach float64's precision.
- `digamma`: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
  asymptotic series; next to its positive root x0 a Taylor series in x - x0 (x0 in
  two parts), whose coefficients are Hurwitz zeta values, keeps the relative accuracy
  where psi crosses 0; negative x by the reflection psi(1 - x) - pi cot(pi x).
- `bessel_i1e`: exp(-|x|) I1(x) from I1's power series for |x| <= 30 (positive terms:
  no cancellation), else from its asymptotic series.
- `zeta` (Hurwitz): the Euler-Maclaurin sum with the summation start moved past
  q >= s + 20, where ten Bernoulli terms leave less than 1e-16; `polygamma` from it.

CHLO's domains (StableHLO's ChloLegalizeToStablehlo decompositions) fix the special
values: digamma is NaN at 0 and the negative integers; lgamma is +inf there and at
+-inf; zeta(s, q) is NaN for s < 1, +inf at s = 1, and for q <= 0 NaN unless s is an
integer (then the finite sum, or at an integer q the pole: +inf for even s, NaN for
odd); polygamma(n, x) is NaN unless n is a natural number.

tests/reference/test_special.py checks each against closed forms, identities and
independent formulas (integral representations summed numerically).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = ["bessel_i1e", "digamma", "erf", "erf_inv", "erfc", "lgamma", "next_after",
           "polygamma", "zeta", "DIGAMMA_ROOT"]

EULER_GAMMA = 0.5772156649015329
# The positive root of digamma (OEIS A030169), split into float64 hi + lo.
_ROOT = Decimal("1.4616321449683623412626595423257213284681962040064463512959884086")
DIGAMMA_ROOT = float(_ROOT)
_ROOT_LO = float(_ROOT - Decimal(DIGAMMA_ROOT))

# B_2, B_4, ..., B_20 (Bernoulli numbers).
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)


def _quiet(f: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """f with numpy's floating-point warnings off: NaN and inf are expected values
    here (poles, domains), not accidents."""
    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return f(*args, **kwargs)

    return wrapped


def _f64(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _elementwise(f, x: np.ndarray) -> np.ndarray:
    """A scalar Python function applied to every element (float64 result)."""
    x = _f64(x)
    # asarray: on a rank-0 operand frompyfunc gives a Python float, not an array.
    return np.asarray(np.frompyfunc(f, 1, 1)(x), dtype=np.float64).reshape(x.shape)


@_quiet
def erf(x: np.ndarray) -> np.ndarray:
    """The error function, by the C library's erf."""
    return _elementwise(math.erf, x)


@_quiet
def erfc(x: np.ndarray) -> np.ndarray:
    """1 - erf(x), by the C library's erfc (relative accuracy in the tail)."""
    return _elementwise(math.erfc, x)


def _lgamma1(v: float) -> float:
    if v <= 0 and (math.isinf(v) or v == math.floor(v)):  # poles, -inf
        return math.inf
    try:
        return math.lgamma(v)
    except OverflowError:
        return math.inf


@_quiet
def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)|: +inf at the poles and at +-inf."""
    return _elementwise(_lgamma1, x)


@_quiet
def erf_inv(x: np.ndarray) -> np.ndarray:
    """The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside."""
    x = _f64(x)
    ax = np.abs(x)
    inside = ax < 1
    a = np.where(inside, ax, 0.5)
    # Starting values: Maclaurin to x**7 below 1/2 (relative error < 2e-4), Winitzki's
    # approximation above (< 2e-3).
    z = a * a
    series = math.sqrt(math.pi) / 2 * a * (1 + z * (math.pi / 12 + z * (
        7 * math.pi**2 / 480 + z * 127 * math.pi**3 / 40320)))
    lw = np.log((1 - a) * (1 + a))
    t = 2 / (math.pi * 0.147) + lw / 2
    winitzki = np.sqrt(np.sqrt(t * t - lw / 0.147) - t)
    y = np.where(a < 0.5, series, winitzki)
    tail = a >= 0.5
    c = 1 - a  # exact for a >= 1/2 (Sterbenz)
    for _ in range(3):
        # Halley on f(y) = erf(y) - a, or erfc(y) - c near 1; f'' = -2y f' for both.
        f = np.where(tail, erfc(y) - c, erf(y) - a)
        slope = np.where(tail, -1.0, 1.0) * 2 / math.sqrt(math.pi) * np.exp(-y * y)
        step = f / slope
        y = y - step / (1 + y * step)
    y = np.where(a == 0, 0.0, y)
    r = np.copysign(y, x)
    r = np.where(ax == 1, np.copysign(np.inf, x), r)
    return np.where((ax > 1) | np.isnan(x), np.nan, r)


def _psi_asymptotic(y: np.ndarray) -> np.ndarray:
    """digamma(y) for y >= 10: log y - 1/(2y) - sum B_2k / (2k y**2k) (< 1e-20 left)."""
    z = 1 / (y * y)
    acc = np.zeros_like(y)
    for k in range(len(_BERNOULLI), 0, -1):
        acc = acc * z + _BERNOULLI[k - 1] / (2 * k)
    return np.log(y) - 0.5 / y - z * acc


def _psi_positive(x: np.ndarray) -> np.ndarray:
    """digamma for x > 0 (finite), without the root's Taylor series."""
    shift = np.zeros_like(x)
    y = x.copy()
    for _ in range(10):
        low = y < 10
        shift += np.where(low, 1 / y, 0.0)
        y = np.where(low, y + 1, y)
    return _psi_asymptotic(y) - shift


def _psi_near_root(x: np.ndarray) -> np.ndarray:
    """digamma(x0 + d) = sum_k (-1)**(k+1) zeta(k+1, x0) d**k with d = x - x0 carried
    in two parts: no cancellation where digamma crosses 0."""
    d = (x - DIGAMMA_ROOT) - _ROOT_LO
    acc = np.zeros_like(x)
    for k in range(14, 0, -1):
        acc = acc * d + (-1) ** (k + 1) * float(zeta(np.float64(k + 1), DIGAMMA_ROOT))
    return acc * d


@_quiet
def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) = Gamma'(x) / Gamma(x): NaN at 0, the negative integers and -inf."""
    x = _f64(x)
    finite = np.isfinite(x)
    pole = (x <= 0) & (x == np.floor(x))
    xs = np.where(finite & ~pole, x, 2.0)
    reflect = xs < 0.5
    pos = np.where(reflect, 1 - xs, xs)
    with np.errstate(all="ignore"):
        r = np.where(np.abs(pos - DIGAMMA_ROOT) < 2.0**-4, _psi_near_root(pos),
                     _psi_positive(pos))
    # pi cot(pi x) with x reduced to [-1/2, 1/2] exactly: cot has period 1.
    frac = xs - np.round(xs)
    cot = np.pi / np.tan(np.pi * np.where(reflect, frac, 0.25))
    r = np.where(reflect, r - cot, r)
    r = np.where(x == np.inf, np.inf, r)
    return np.where(pole | np.isnan(x) | (x == -np.inf), np.nan, r)


@_quiet
def bessel_i1e(x: np.ndarray) -> np.ndarray:
    """exp(-|x|) * I1(x), the exponentially scaled modified Bessel function of order 1
    (odd; 0 at +-inf)."""
    x = _f64(x)
    ax = np.abs(x)
    small = np.where(ax <= 30, ax, 0.0)
    # I1(x) = (x/2) sum_k (x**2/4)**k / (k! (k+1)!): 120 terms reach 1e-30 at |x| = 30.
    y = small * small / 4
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, 120):
        term = term * y / (k * (k + 1))
        total = total + term
    series = np.exp(-small) * small / 2 * total
    # I1(x) e**-x ~ (2 pi x)**-1/2 sum_k (-1)**k a_k / x**k, a_k = prod_{j<=k} (4 - (2j-1)**2)
    # / (k! 8**k): the terms shrink until k ~ 2x; 30 terms at x > 30 leave < 1e-25.
    big = np.where((ax > 30) & np.isfinite(ax), ax, 31.0)
    coeff, acc = 1.0, np.ones_like(x)
    for k in range(1, 30):
        coeff *= (4 - (2 * k - 1) ** 2) / (k * 8)
        acc = acc + (-1) ** k * coeff / big**k
    asym = acc / np.sqrt(2 * np.pi * big)
    r = np.where(ax <= 30, series, asym)
    r = np.where(np.isinf(ax), 0.0, r)
    return np.where(np.isnan(x), np.nan, np.copysign(r, x))


def _hurwitz(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) for s > 1, q > 0: sum_{k<n} (q+k)**-s + Euler-Maclaurin at a = q + n,
    n chosen so that a >= s + 20 (at most 220 direct terms; past s = 200 the direct
    terms alone: their tail is below (q + 220)**-s * (q + 220) / (s - 1))."""
    n = np.clip(np.ceil(s + 20 - q), 0, 220)
    total = np.zeros_like(s)
    for k in range(220):
        on = k < n
        total = total + np.where(on, np.power(np.where(on, q + k, 1.0), -s), 0.0)
    a = q + n
    a_s = np.power(a, -s)
    em = a_s * a / (s - 1) + a_s / 2
    # sum_j B_2j / (2j)! * s (s+1) ... (s+2j-2) * a**(-s-2j+1)
    rising = s.copy()
    term = a_s / a
    for j in range(1, len(_BERNOULLI) + 1):
        em = em + _BERNOULLI[j - 1] / math.factorial(2 * j) * rising * term
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        term = term / (a * a)
    em = np.where(a_s == 0, 0.0, em)  # s huge: a**-s is 0 and so is every term
    return total + np.where(s + 20 - q > 220, 0.0, em)


@_quiet
def zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The Hurwitz zeta function sum_{k>=0} (q + k)**-s with CHLO's domain."""
    s, q = np.broadcast_arrays(_f64(s), _f64(q))
    s_int = s == np.floor(s)
    q_pole = (q <= 0) & (q == np.floor(q))
    ok = (s > 1) & np.isfinite(s) & np.isfinite(q)
    # q <= 0 with an integer s: move q into (0, 1] by the terms left behind.
    neg = ok & (q <= 0) & s_int & ~q_pole
    m = np.where(neg, np.ceil(-q), 0.0)
    qs = np.where(ok & ~q_pole, q + m, 1.0)
    ss = np.where(ok, s, 2.0)
    r = _hurwitz(ss, qs)
    if neg.any():
        extra = np.zeros_like(r)
        for k in range(int(m.max())):
            on = neg & (k < m)
            extra = extra + np.where(on, np.power(np.where(on, q + k, 1.0), -ss), 0.0)
        r = r + extra
    r = np.where((s > 1) & (q == np.inf), 0.0, r)
    # s = +inf: q**-inf is 0 past 1, 1 at 1, inf below (NaN for q <= 0).
    r = np.where(s == np.inf, np.where(q > 1, 0.0, np.where(q == 1, 1.0, np.where(
        q > 0, np.inf, np.nan))), r)
    r = np.where(s < 1, np.nan, r)
    r = np.where((q <= 0) & ~s_int, np.nan, r)
    even = s_int & (np.fmod(s, 2) == 0)
    r = np.where(q_pole, np.where(even, np.inf, np.nan), r)
    r = np.where(s == 1, np.inf, r)
    return np.where(np.isnan(s) | np.isnan(q), np.nan, r)


@_quiet
def polygamma(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma: (-1)**(n+1) n! zeta(n+1, x) for n >= 1."""
    n, x = np.broadcast_arrays(_f64(n), _f64(x))
    natural = (n >= 0) & (n == np.floor(n)) & np.isfinite(n)
    nn = np.where(natural, n, 1.0)
    # n! as the firmware holds it, an f32: from n = 35 it overflows to inf (as JAX's
    # exp(lgamma(n + 1)) in f32), and the result is +-inf (NaN where zeta is 0).
    fact = np.array([float(math.factorial(int(v))) if v < 35 else math.inf
                     for v in nn.reshape(-1)]).reshape(nn.shape)
    sign = np.where(np.fmod(nn, 2) == 1, 1.0, -1.0)
    with np.errstate(all="ignore"):
        r = sign * fact * zeta(nn + 1, x)
    # n! = inf times zeta > 0 is inf, also where float64's zeta underflows.
    r = np.where(np.isinf(fact) & (x > 0), sign * np.inf, r)
    r = np.where(x == np.inf, sign * 0.0, r)  # zeta(n + 1, inf) = 0, whatever n! is
    r = np.where(n == 0, digamma(x), r)
    return np.where(natural, r, np.nan)


def next_after(x: np.ndarray, y: np.ndarray, bf16: bool = False) -> np.ndarray:
    """The representable value after x in the direction of y (C's nextafter); for bf16
    (held in float32) steps of the bf16 grid."""
    if not bf16:
        with np.errstate(all="ignore"):
            # C returns y when x == y (numpy's float16 returns x: nextafter(-0, +0)).
            return np.where(x == y, y, np.nextafter(x, y)).astype(np.result_type(x, y))
    x, y = np.broadcast_arrays(np.asarray(x, np.float32), np.asarray(y, np.float32))
    bits = (x.view(np.uint32) >> np.uint32(16)).astype(np.int32)
    up = (y > x) == (x > 0)
    stepped = np.where(up, bits + 1, bits - 1)
    tiny = np.where(np.signbit(y), 0x8001, 0x0001)
    stepped = np.where(x == 0, tiny, stepped).astype(np.uint32) << np.uint32(16)
    r = stepped.view(np.float32)
    r = np.where(x == y, y, r)
    return np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan), r)
