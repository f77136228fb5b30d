"""Accuracy of the f64 math functions (codegen/mathlib_f64.py, mathlib_f64_more.py) on
the host JIT, in ulps of the correctly rounded result (mpmath at 100 bits, rounded to
f64): ulp = the f64 spacing at the true result.

Inputs: ±0, ±inf, NaN, the smallest subnormal, then for each function its points of
interest (poles, thresholds) with their neighbours, and random values log-uniform over
every binade where the function is neither constant nor overflowing, both signs. The
bounds are the ones mathlib_f64_more.py's docstring gives, each a few roundings of the
formula's steps (measured worst: 2 ulp for tan, expm1, log1p, tanh, logistic, asin,
asinh, atanh; 1 for the others); the f32 path these replaced was 1e8 ulp and more off.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.types import TensorType, dtype

F64 = dtype("f64")
N = 3000  # random inputs a function (mpmath is the slow part: ~0.2 s a thousand)
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.0, -1.0]

# name: (mpmath reference, largest log10|x| drawn, bound in ulp, points of interest)
CASES = {
    "tan": (mpmath.tan, 6.2, 4.0, [1.57079632, 1.5707963267948966, -1.5707963267948966,
                                   math.pi, 4.71238898038469, 1e6 + 0.5, 0.7853981633974483]),
    "rsqrt": (lambda x: 1 / mpmath.sqrt(x), 308, 2.0, [4.0, 1e-310, 1.7976931348623157e308]),
    "cbrt": (lambda x: mpmath.sign(x) * mpmath.cbrt(abs(x)), 308, 2.0,
             [27.0, -8.0, 1e-310, 1.7976931348623157e308]),
    "exponential_minus_one": (mpmath.expm1, 2.85, 3.0,
                              [1e-300, 0.3465, -0.3466, 39.0, 39.5, -40.5, 709.7, -745.0]),
    "log_plus_one": (mpmath.log1p, 308, 3.0,
                     [-0.9999999999999999, 1e-300, 2**-53, -2**-54, 1e300, 0.5, -0.5]),
    "tanh": (mpmath.tanh, 1.4, 4.0, [1e-300, 0.5493, 21.9, 22.1]),
    "logistic": (lambda x: 1 / (1 + mpmath.exp(-x)), 2.87, 3.0, [-745.0, -709.0, 36.7]),
    "sinh": (mpmath.sinh, 2.85, 3.0, [1e-300, 0.99, 1.01, 709.5, 710.4]),
    "cosh": (mpmath.cosh, 2.85, 3.0, [1e-300, 0.99, 1.01, 709.5, 710.4]),
    "atan": (mpmath.atan, 308, 3.0, [1.0, 0.0625, 0.1875, 1e-300, 1e300]),
    "asin": (mpmath.asin, 0, 3.0, [0.5, 0.9999999999999999, 1.0000000000000002]),
    "acos": (mpmath.acos, 0, 3.0, [0.5, 0.9999999999999999, 1e-300]),
    "asinh": (mpmath.asinh, 308, 3.0, [2.0**28, 1e-300, 0.5]),
    "acosh": (mpmath.acosh, 308, 3.0, [1.0000000000000002, 2.0**28, 1.5, 1e300]),
    "atanh": (mpmath.atanh, 0, 3.0, [0.5, 0.9999999999999999, 1e-300]),
    "exponential": (mpmath.exp, 2.85, 2.0, [709.78, -745.1, -708.4]),
    "log": (mpmath.log, 308, 2.0, [1.0000000000000002, 0.9999999999999999, 1e-310]),
    "sine": (mpmath.sin, 6.2, 2.0, [math.pi, 1.5707963267948966, 1e6 + 0.5]),
    "cosine": (mpmath.cos, 6.2, 2.0, [math.pi, 1.5707963267948966, 1e6 + 0.5]),
}  # fmt: skip


def _inputs(top: float, edges: list[float], rng: np.random.Generator) -> np.ndarray:
    mags = 10.0 ** rng.uniform(-300 if top > 10 else -12, top, N)
    e = np.concatenate([edges, np.negative(edges)])
    near = np.concatenate([np.nextafter(e, np.inf), np.nextafter(e, -np.inf)])
    return np.concatenate([SPECIALS, mags * rng.choice([-1.0, 1.0], N), e, near])


# At ±0, ±inf and NaN, numpy's value (C99 Annex F's), which mpmath does not always give.
AT_INF = {
    "tan": np.tan, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt,
    "exponential_minus_one": np.expm1, "log_plus_one": np.log1p, "tanh": np.tanh,
    "logistic": lambda x: 1 / (1 + np.exp(-x)), "sinh": np.sinh, "cosh": np.cosh,
    "atan": np.arctan, "exponential": np.exp, "log": np.log, "sine": np.sin,
    "cosine": np.cos, "asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh,
}  # fmt: skip


def _truth(op: str, x: np.ndarray) -> np.ndarray:
    ref = CASES[op][0]
    out = np.empty_like(x)
    with mpmath.workprec(100):
        for i, v in enumerate(x.tolist()):
            if not math.isfinite(v) or v == 0:
                with np.errstate(all="ignore"):
                    out[i] = AT_INF[op](np.float64(v))
                continue
            try:
                r = ref(mpmath.mpf(v))
            except (ValueError, ZeroDivisionError):
                r = mpmath.nan
            out[i] = float(r.real) if isinstance(r, mpmath.mpc) and r.imag == 0 else (
                math.nan if isinstance(r, mpmath.mpc) else float(r))
    return out


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in ulps of want; non-finite or zero truths must match exactly."""
    exact = ~np.isfinite(want) | (want == 0)
    err = np.zeros_like(want)
    with np.errstate(all="ignore"):
        err[~exact] = np.abs(got[~exact] - want[~exact]) / np.spacing(np.abs(want[~exact]))
    same = (got[exact] == want[exact]) | (np.isnan(got[exact]) & np.isnan(want[exact]))
    err[np.flatnonzero(exact)[~same]] = np.inf
    err[np.isnan(err)] = np.inf  # a NaN where a finite value was due
    return err


def _run(jit, op: str, nargs: int, *args: np.ndarray) -> np.ndarray:
    t = TensorType((len(args[0]),), F64)
    loads = tuple(Load(i, (Index(0),)) for i in range(nargs))
    k = Kernel(f"k_{op}", t.shape, 1, (t,) * nargs, t, Apply(op, loads, F64))
    return jit([k]).run(f"k_{op}", *args)


@pytest.mark.parametrize("op", sorted(CASES))
def test_f64_function_within_its_bound(jit, op: str) -> None:
    _, top, bound, edges = CASES[op]
    x = _inputs(top, edges, np.random.default_rng(sorted(CASES).index(op)))
    got = _run(jit, op, 1, x)
    err = _ulps(got, _truth(op, x))
    i = int(np.argmax(err))
    assert err[i] <= bound, f"{op}: {err[i]} ulp at x={x[i]!r}: got {got[i]!r}"
    zeros = x == 0
    if op in ("tan", "cbrt", "exponential_minus_one", "log_plus_one", "tanh", "sinh", "atan",
              "asin", "asinh", "atanh"):
        assert (np.signbit(got[zeros]) == np.signbit(x[zeros])).all(), op  # odd at 0


def test_tan_near_the_pole_is_on_the_right_side(jit) -> None:
    """Issue 20's reproduction: tan(1.57079632) in f64 is 1.47e8 (the f32 path gave
    -2.29e7, the tangent of 1.57079632 rounded to f32, past pi/2)."""
    got = _run(jit, "tan", 1, np.array([1.57079632, -1.57079632]))
    np.testing.assert_allclose(got, [147169271.76124874, -147169271.76124874], rtol=1e-15)


def test_f64_atan2_over_quadrants_and_specials(jit) -> None:
    """atan2 in every quadrant, with every pair of zeros, infinities and NaN: specials
    exactly as numpy (C99 Annex F), the rest within 3 ulp of the rounded truth."""
    rng = np.random.default_rng(5)
    sp = np.array(SPECIALS + [2.5, -2.5])
    sy, sx = (a.ravel() for a in np.meshgrid(sp, sp))
    mags = 10.0 ** rng.uniform(-300, 300, (2, N))
    y = np.concatenate([sy, mags[0] * rng.choice([-1.0, 1.0], N)])
    x = np.concatenate([sx, mags[1] * rng.choice([-1.0, 1.0], N)])
    got = _run(jit, "atan2", 2, y, x)
    with mpmath.workprec(100):
        want = np.array([np.arctan2(a, b) if not (np.isfinite(a) and np.isfinite(b))
                         or a == 0 or b == 0 else float(mpmath.atan2(a, b))
                         for a, b in zip(y.tolist(), x.tolist(), strict=True)])
    err = _ulps(got, want)
    i = int(np.argmax(err))
    assert err[i] <= 3.0, f"atan2: {err[i]} ulp at y={y[i]!r}, x={x[i]!r}: {got[i]!r}"
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


def _pow_inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Integer powers of integers (the interpreter's 10000**10 among them), x near 1 with
    large |y|, negative x with integer y, and x log-uniform with |y log x| up to 700
    (where an error in the exponent y log x is magnified most)."""
    n = 600
    xi = rng.integers(1, 100000, n).astype(float)
    yi = rng.integers(-20, 21, n).astype(float)
    yi = np.where(np.abs(yi * np.log(xi)) > 700, 1.0, yi)
    x1 = 1 + rng.uniform(-1e-3, 1e-3, n)
    y1 = rng.uniform(-1e5, 1e5, n)
    xn, yn = -rng.integers(1, 50, n).astype(float), rng.integers(-30, 30, n).astype(float)
    xr = np.exp(rng.uniform(-700, 700, n))
    yr = rng.uniform(-1, 1, n) * np.minimum(1.0, 700 / np.abs(np.log(xr)))
    return (np.concatenate([[10000.0, 2.0, 3.0], xi, x1, xn, xr]),
            np.concatenate([[10.0, 0.5, -1.0], yi, y1, yn, yr]))


def test_f64_pow_is_within_a_little_over_half_an_ulp(jit) -> None:
    """pow in double-double (mathlib_f64.py): within 0.52 ulp of the truth (measured
    0.511), so 10000**10 is 1e40 as the interpreter's std::pow gives (a plain f64
    exp(y log x) was 7 ulp off there), and integer powers that f64 holds are exact."""
    x, y = _pow_inputs(np.random.default_rng(40))
    got = _run(jit, "power", 2, x, y)
    with mpmath.workprec(200):
        truth = [mpmath.power(mpmath.mpf(a), mpmath.mpf(b))
                 for a, b in zip(x.tolist(), y.tolist(), strict=True)]
        want = np.array([float(t) for t in truth])
        # against the unrounded truth: a correctly rounded result is within 0.5 ulp.
        err = np.array([float(abs(mpmath.mpf(float(g)) - t)) / np.spacing(abs(w))
                        for g, t, w in zip(got.tolist(), truth, want, strict=True)])
    i = int(np.argmax(err))
    assert err[i] <= 0.52, f"{err[i]} ulp at {x[i]!r} ** {y[i]!r}: got {got[i]!r}"
    assert got[0] == 1e40
    exact = np.abs(want) < 2.0**53
    exact &= (want == np.round(want)) & (want != 0)
    np.testing.assert_array_equal(got[exact], want[exact])


def test_f64_pow_overflow_and_underflow_with_huge_y(jit) -> None:
    """|y log x| beyond f64's range (inf - inf in the exact-product terms) still gives
    numpy's inf or 0, with y's parity for negative x."""
    x = np.array([1e300, 1e-300, -1e300, 2.0, 0.5, 2.0, 1.0000001, -2.0, 3.0, 10.0,
                  2.0, 1e-310, 0.9999999999999999])
    y = np.array([1e307, 1e307, 1.7e308, 1e300, 1e300, -1e300, 1e20, 3e300, 700.0, -400.0,
                  1024.0, -2.0, -1e300])
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(_run(jit, "power", 2, x, y), want)
