"""Accuracy of the math library's special functions (toolchain/codegen/mathlib_special.py,
CHLO's erf, erfc, erf_inv, lgamma, digamma, bessel_i1e, zeta, polygamma, the inverse
trigonometric and hyperbolic functions, next_after) over the whole f32 range, against
the float64 references of toolchain/reference/special.py and numpy.

The sweeps and the error measure are test_codegen_mathlib.py's: every exponent field of
f32 with SWEEP_PER_BINADE significands, both signs, the special values, a dense linear
sweep where the function varies and the neighbourhoods of its edges; errors in ulps of
the true result (ulp_error). Two functions get a second measure on the negative axis:
lgamma and digamma cross zero between every pair of poles there, and a float32 input
already carries a relative error of 2**-24 into a result near a zero, so their error
for x < 0 is counted in ulps of a scale instead of the result: max(|lgamma(x)|, 1) for
lgamma, max(|digamma(x)|, |digamma(1 - x)|) for digamma (the reflection's cancelled
term). `ulp` is the bound asserted, `worst` the largest error this test measures
(seeded; x86-64 with hardware sqrt); bench/mathlib_special.py measures wider sweeps and
f16 / bf16 exhaustively and writes bench/results/mathlib_special.md, the figures
docs/mathlib.md quotes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from test_codegen_mathlib import SPECIALS, Runner, around, full_range, ulp_error

from toolchain.reference import special

SWEEP_PER_BINADE = 256  # 130k inputs a function (the bench: 2048)
DENSE = 1 << 16


def scaled_error(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """|got - want| in f32 ulps of max(|want|, scale); the special values as ulp_error."""
    w = np.maximum(np.abs(want), np.abs(scale))
    _, e = np.frexp(w)
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - want) / ulp
    return np.where(np.isfinite(err), np.minimum(err, ulp_error(got, want)),
                    ulp_error(got, want))


def _lgamma_scale(x: np.ndarray) -> np.ndarray:
    return np.ones_like(x)


def _digamma_scale(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.abs(special.digamma(1 - x))


@dataclass(frozen=True)
class Case:
    """One function's sweep, its float64 reference and the bound asserted."""

    op: str
    ref: Callable[[np.ndarray], np.ndarray]
    ulp: float
    worst: float
    dense: tuple[float, float]
    edges: tuple[float, ...] = ()
    negative_scale: Callable[[np.ndarray], np.ndarray] | None = None
    negative_ulp: float = 0.0  # the bound in ulps of the scale, for x < 0
    negative_worst: float = 0.0


UNARY: list[Case] = [
    # |x| < 1: Maclaurin; else 1 - erfc(|x|) with erfc <= 0.16.
    Case("erf", special.erf, 2, 1.15, (-4, 4), (0.84375, 1.0, 3.0, 10.0546)),
    # exp(-x*x) with the square split exact, times a Chebyshev fit of x erfc(x) e**(x*x).
    Case("erfc", special.erfc, 4, 3.08, (-2, 10.1), (0.5, 0.84375, 1.0, 3.0, 10.0546)),
    # Two Halley steps on erf (erfc near +-1, where 1 - |x| is exact).
    Case("erf_inv", special.erf_inv, 3, 1.34, (-1, 1), (1.0, 0.5)),
    # Taylor tables on [0.75, 3.75), Stirling above, both with log in double-f32.
    Case("lgamma", special.lgamma, 3, 1.46, (-40, 40), (1.0, 2.0, 0.75, 3.75, 2.0**64),
         _lgamma_scale, 3, 1.55),
    # Taylor tables (one around the positive root), the asymptotic series from 3.75.
    Case("digamma", special.digamma, 3, 1.51, (-40, 40),
         (special.DIGAMMA_ROOT, 0.75, 3.75), _digamma_scale, 8, 6.82),
    Case("bessel_i1e", special.bessel_i1e, 4, 2.99, (-20, 20), (4.0, 16.0)),
    # atan2 of (x, sqrt((1 - x)(1 + x))): atan2's 3 ulp plus the root's rounding.
    Case("asin", np.arcsin, 4, 3.16, (-1, 1), (0.5, 1.0)),
    Case("acos", np.arccos, 4, 2.95, (-1, 1), (0.5, 1.0)),
    Case("atan", np.arctan, 3, 2.28, (-10, 10)),
    Case("sinh", np.sinh, 3, 1.60, (-90, 90), (9.0, 89.4, 2.0**-12)),
    Case("cosh", np.cosh, 3, 1.33, (-90, 90), (9.0, 89.4, 0.34657359)),
    Case("asinh", np.arcsinh, 4, 2.73, (-10, 10), (2.0, 4096.0, 2.0**-12)),
    Case("acosh", np.arccosh, 4, 2.24, (1, 10), (1.0, 2.0, 4096.0)),
    Case("atanh", np.arctanh, 4, 2.49, (-1, 1), (0.5, 1.0, 2.0**-12)),
]  # fmt: skip


def sweep(case: Case, rng: np.random.Generator, per_binade: int = SWEEP_PER_BINADE,
          dense: int = DENSE) -> np.ndarray:
    """full_range + the case's dense sweep + the neighbourhoods of its edges."""
    lo, hi = case.dense
    return np.concatenate([full_range(rng, per_binade),
                           np.linspace(lo, hi, dense).astype(np.float32),
                           around(list(case.edges))])


def errors(case: Case, x: np.ndarray, got: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ulp errors where they are measured in ulps of the result, errors in ulps of the
    scale for x < 0 (empty without a negative_scale))."""
    with np.errstate(all="ignore"):
        want = case.ref(x.astype(np.float64))
        err = ulp_error(got, want)
        if case.negative_scale is None:
            return err, np.zeros(0)
        neg = x < 0
        scaled = scaled_error(got[neg], want[neg], case.negative_scale(x[neg].astype(
            np.float64)))
    return err[~neg], scaled


@pytest.fixture(scope="module")
def run(jit) -> Runner:
    ops = [(c.op, 1) for c in UNARY] + [("zeta", 2), ("polygamma", 2)]
    return Runner(jit, ops)


def _worst(op: str, x: np.ndarray, got: np.ndarray, err: np.ndarray) -> str:
    i = int(np.argmax(err))
    return f"{op}: {err[i]} ulp at x={x[i]!r}: got {got[i]!r}"


@pytest.mark.parametrize("case", UNARY, ids=lambda c: c.op)
def test_special_accuracy_over_the_whole_range(run: Runner, case: Case) -> None:
    x = sweep(case, np.random.default_rng(21))
    got = run(case.op, x)
    err, scaled = errors(case, x, got)
    xs = x if case.negative_scale is None else x[x >= 0]
    assert err.max() <= case.ulp, _worst(case.op, xs, got[np.isin(x, xs)], err)
    if case.negative_scale is not None:
        neg = x[x < 0]
        assert scaled.max() <= case.negative_ulp, _worst(case.op, neg, got[x < 0], scaled)


def zeta_inputs(rng: np.random.Generator, n: int = 1 << 15) -> tuple[np.ndarray, np.ndarray]:
    """(s, q): s from just above 1 to 40 and integers, q over 2**-10 .. 2**17, and every
    pair of special values (CHLO's domain: q <= 0 only with an integer s)."""
    s = np.concatenate([rng.uniform(1, 40, n), np.exp(rng.uniform(0, 4, n)),
                        rng.integers(2, 30, n)]).astype(np.float32)
    q = np.concatenate([np.exp(rng.uniform(-7, 12, n)), np.exp(rng.uniform(-4, 4, n)),
                        rng.uniform(0, 10, n)]).astype(np.float32)
    sa, sb = np.meshgrid(np.concatenate([SPECIALS, [2.0, 3.0, 1.5]]).astype(np.float32),
                         np.concatenate([SPECIALS, [-2.5, -3.0, 0.5]]).astype(np.float32))
    return np.concatenate([s, sa.ravel()]), np.concatenate([q, sb.ravel()])


def polygamma_inputs(rng: np.random.Generator, n: int = 1 << 15
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(n, x): orders 0..40 (n! overflows f32 from 35), x over 2**-11 .. 2**13, and every
    pair of special values."""
    order = rng.integers(0, 40, 2 * n).astype(np.float32)
    x = np.concatenate([np.exp(rng.uniform(-8, 9, n)), rng.uniform(0, 20, n)]).astype(
        np.float32)
    sa, sb = np.meshgrid(np.concatenate([SPECIALS, [0.5, 2.0, 3.0, 35.0]]).astype(np.float32),
                         SPECIALS)
    return np.concatenate([order, sa.ravel()]), np.concatenate([x, sb.ravel()])


def test_zeta_for_positive_q(run: Runner) -> None:
    """<= 4 ulp [3.22]: nine terms in two-sum and Euler-Maclaurin's tail, every term
    scaled by 2**m so that results near the subnormals round once; (q + k)**-s with
    q + k in two parts. Special values and poles as CHLO's domain gives them."""
    s, q = zeta_inputs(np.random.default_rng(22))
    got = run("zeta", s, q)
    with np.errstate(all="ignore"):
        err = ulp_error(got, special.zeta(s.astype(np.float64), q.astype(np.float64)))
    ok = ~((q < 0) & np.isfinite(q))  # negative q: the next test
    i = int(np.argmax(np.where(ok, err, 0)))
    assert err[ok].max() <= 4, f"zeta: {err[i]} ulp at s={s[i]!r}, q={q[i]!r}: {got[i]!r}"


def test_zeta_for_negative_q(run: Runner) -> None:
    """q < 0 with an integer s: the terms with q + k < 0 summed first, in a loop, then
    the positive part. Terms of both signs cancel, so the error is bounded in ulps of
    the largest term, |q - round(q)|**-s, not of the result: <= 5 [4.14]."""
    rng = np.random.default_rng(24)
    s = rng.integers(2, 13, 1 << 14).astype(np.float32)
    q = rng.uniform(-30, 0, 1 << 14).astype(np.float32)
    got = run("zeta", s, q)
    s64, q64 = s.astype(np.float64), q.astype(np.float64)
    with np.errstate(all="ignore"):
        want = special.zeta(s64, q64)
        err = scaled_error(got, want, np.abs(q64 - np.round(q64)) ** -s64)
    i = int(np.argmax(err))
    assert err.max() <= 5, f"zeta: {err[i]} at s={s[i]!r}, q={q[i]!r}: {got[i]!r}"


def test_polygamma(run: Runner) -> None:
    """<= 4 ulp [2.73] for x > 0: n! enters zeta's scaled sum (polygamma(11, 3000) is
    normal while zeta(12, 3000) is subnormal). n >= 35 gives +-inf, as n! in f32 (JAX's
    exp(lgamma(n + 1)) too); NaN for a non-natural n."""
    n, x = polygamma_inputs(np.random.default_rng(23))
    got = run("polygamma", n, x)
    with np.errstate(all="ignore"):
        err = ulp_error(got, special.polygamma(n.astype(np.float64), x.astype(np.float64)))
    i = int(np.argmax(err))
    assert err.max() <= 4, f"polygamma: {err[i]} ulp at n={n[i]!r}, x={x[i]!r}: {got[i]!r}"


# ------------------------------------------------------------------ next_after


def _c_nextafter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's nextafter: y itself when x == y (numpy returns x, so -0 vs +0 differ)."""
    with np.errstate(all="ignore"):
        return np.where(x == y, y, np.nextafter(x, y)).astype(x.dtype)


def _pairs_of(bits: np.ndarray, dt: np.dtype, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    """Every pattern of `bits` against a random partner, its neighbours and the special
    values; plus every pair of special values."""
    x = bits.view(dt)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], dt)
    with np.errstate(all="ignore"):
        partners = np.concatenate([rng.permutation(x), np.nextafter(x, dt.type(np.inf)),
                                   np.nextafter(x, dt.type(-np.inf)), x])
    xs = np.concatenate([x, x, x, x])
    sa, sb = np.meshgrid(specials, specials)
    return np.concatenate([xs, sa.ravel()]), np.concatenate([partners, sb.ravel()])


@pytest.mark.parametrize("name", ["f32", "f64", "f16"])
def test_next_after_is_exact(jit, name: str) -> None:
    """Bit arithmetic on the format's own grid: equal to C's nextafter bit for bit, the
    subnormals, zeros of both signs, infinities and NaN included (f16: every pattern)."""
    from test_codegen_mathlib import _kernel

    from toolchain.types import dtype

    rng = np.random.default_rng(25)
    if name == "f16":
        bits = np.arange(1 << 16, dtype=np.uint16)
    elif name == "f32":
        bits = full_range(rng, 64).view(np.uint32)
    else:
        bits = rng.integers(0, 1 << 64, 1 << 16, dtype=np.uint64)
        bits[:4] = [0, 1, 0x7FEFFFFFFFFFFFFF, 0x8000000000000001]
    dt = np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[name])
    x, y = _pairs_of(bits, dt, rng)
    k = _kernel("next_after", 2, len(x), dtype(name))
    got = jit([k]).run(k.name, x, y)
    want = _c_nextafter(x, y)
    same = (got.view(bits.dtype) == want.view(bits.dtype)) | (np.isnan(got) & np.isnan(want))
    i = int(np.argmin(same))
    assert same.all(), f"{name}: next_after({x[i]!r}, {y[i]!r}) = {got[i]!r}, not {want[i]!r}"


def test_next_after_bf16_steps_on_its_own_grid(jit) -> None:
    """bf16 values are computed in f32 but step on bf16's grid: every bf16 pattern
    against a random partner and its neighbours, bit for bit with the reference (which
    steps the 16-bit patterns, toolchain/reference/special.py)."""
    import ctypes

    from test_codegen_mathlib import _kernel

    from toolchain.types import bf16_bits, bf16_from_bits, dtype

    rng = np.random.default_rng(26)
    pats = np.arange(1 << 16, dtype=np.uint16)
    a = np.concatenate([pats, pats])
    b = np.concatenate([rng.permutation(pats), (pats.astype(np.int32) + 1).astype(np.uint16)])
    n = len(a)
    k = _kernel("next_after", 2, n, dtype("bf16"))
    j = jit([k])
    out = np.zeros(n, np.uint16)
    bufs = [np.ascontiguousarray(a), np.ascontiguousarray(b), out]
    ptrs = (ctypes.c_void_p * 3)(*[buf.ctypes.data for buf in bufs])
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(j.engine.get_function_address(k.name))(
        ctypes.cast(ptrs, ctypes.c_void_p))
    got = bf16_from_bits(out)
    with np.errstate(all="ignore"):
        want = special.next_after(bf16_from_bits(a), bf16_from_bits(b), bf16=True)
    same = (bf16_bits(got) == bf16_bits(want)) | (np.isnan(got) & np.isnan(want))
    i = int(np.argmin(same))
    assert same.all(), f"next_after({a[i]:#06x}, {b[i]:#06x}) = {out[i]:#06x}"


@pytest.mark.parametrize("name", ["cortex-m0plus", "riscv32-nofpu"])
def test_special_functions_compile_for_soft_float_targets(name: str) -> None:
    """Without an FPU every special function compiles to code that calls only libgcc's
    float helpers: no libm symbol (the link would fail) and no double-precision helper
    (everything is f32 and integer arithmetic)."""
    from test_codegen_mathlib import _F64_HELPER, _kernel
    from test_codegen_targets import _HELPER, _LIBM, undefined_symbols

    from toolchain.codegen import TargetInfo, emit_kernel
    from toolchain.target.descriptors import load_target

    assert load_target(name).capabilities.fpu == "none"
    info = TargetInfo.load(name)
    module = info.new_module()
    for case in UNARY:
        emit_kernel(module, _kernel(case.op, 1, 16))
    for op in ("zeta", "polygamma", "next_after"):
        emit_kernel(module, _kernel(op, 2, 16))
    undefined = undefined_symbols(info.emit_object(module))
    assert not [s for s in undefined if _LIBM.match(s)], undefined
    assert all(_HELPER.match(s) for s in undefined), undefined
    assert not [s for s in undefined if any(h in s for h in _F64_HELPER)], undefined
