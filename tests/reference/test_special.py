"""The reference's float64 special functions (toolchain/reference/special.py) against
mpmath at 40 digits: they are the oracle the compiled functions' ulp errors are measured
against (tests/codegen/test_codegen_mathlib_special.py), so their own error must be far
below an f32 ulp. Each is checked on a few hundred points spread over its domain (both
signs, near poles, roots and the series' switch points) to a relative 1e-13 (digamma
and lgamma next to their zeros, and erfc deep in its tail, to the float64 input's own
conditioning: see each test), and at the special values CHLO's decompositions define.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.reference import special

mpmath = pytest.importorskip("mpmath", reason="mpmath (the dev extra) is the oracle here")
mp = mpmath.mp
mp.dps = 40

RNG = np.random.default_rng(31)
WIDE = np.concatenate([RNG.uniform(-30, 30, 200), np.exp(RNG.uniform(-20, 6, 100)),
                       -np.exp(RNG.uniform(-20, 6, 100))])


def _close(got: np.ndarray, want: list, rtol: float, what: str) -> None:
    want = np.array([float(w) for w in want])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=what)


def _mp_map(f, *xs: np.ndarray) -> list:
    return [f(*(mp.mpf(float(v)) for v in vals)) for vals in zip(*xs)]


def test_erf_and_erfc() -> None:
    x = np.concatenate([WIDE, RNG.uniform(0, 26, 100)])
    _close(special.erf(x), _mp_map(mp.erf, x), 1e-15, "erf")
    _close(special.erfc(x), _mp_map(mp.erfc, x), 1e-13, "erfc")


def test_erf_inv() -> None:
    u = np.concatenate([RNG.uniform(-1, 1, 300), 1 - np.exp(RNG.uniform(-36, -1, 50)),
                        [0.0, -0.0, 0.5, -0.5]])
    _close(special.erf_inv(u), _mp_map(mp.erfinv, u), 1e-13, "erf_inv")
    got = special.erf_inv(np.array([1.0, -1.0, 1.5, -2.0, np.nan]))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2:]).all()


def test_lgamma() -> None:
    x = WIDE[np.abs(WIDE - np.round(WIDE)) > 1e-6]  # off the poles
    want = _mp_map(lambda v: mp.log(abs(mp.gamma(v))), x)
    # Next to lgamma's zeros on the negative axis a float64 x is itself off by a
    # relative 1e-16, which the result's condition number x psi(x) / lgamma(x) scales:
    # compare in absolute terms there (1e-14 of the largest term, lgamma(1 - x)).
    scale = np.maximum(np.abs(np.array([float(w) for w in want])), 1.0)
    err = np.abs(special.lgamma(x) - np.array([float(w) for w in want])) / scale
    assert err.max() < 1e-13, x[np.argmax(err)]
    got = special.lgamma(np.array([0.0, -0.0, -1.0, -7.0, np.inf, -np.inf, np.nan]))
    assert (got[:6] == np.inf).all() and np.isnan(got[6])


def test_digamma() -> None:
    x = np.concatenate([WIDE[np.abs(WIDE - np.round(WIDE)) > 1e-6],
                        special.DIGAMMA_ROOT + RNG.uniform(-1e-3, 1e-3, 50)])
    want = np.array([float(w) for w in _mp_map(mp.digamma, x)])
    # Relative to the larger of the result and the reflection's cancelled term.
    scale = np.maximum(np.abs(want), np.where(x < 0, np.abs(special.digamma(1 - x)), 0))
    err = np.abs(special.digamma(x) - want) / scale
    assert err.max() < 1e-13, x[np.argmax(err)]
    # Relative accuracy where digamma crosses 0 on the positive axis (the root's series).
    near = x > 1.4
    rel = np.abs(special.digamma(x[near]) - want[near]) / np.abs(want[near])
    assert rel.max() < 1e-12
    got = special.digamma(np.array([0.0, -1.0, -3.0, -np.inf, np.inf, np.nan]))
    assert np.isnan(got[[0, 1, 2, 3, 5]]).all() and got[4] == np.inf


def test_bessel_i1e() -> None:
    x = np.concatenate([WIDE, RNG.uniform(25, 400, 50), -RNG.uniform(25, 400, 50)])
    want = _mp_map(lambda v: mp.besseli(1, v) * mp.exp(-abs(v)), x)
    _close(special.bessel_i1e(x), want, 1e-13, "bessel_i1e")
    got = special.bessel_i1e(np.array([np.inf, -np.inf, -0.0, np.nan]))
    assert got[0] == 0 and got[1] == 0 and np.signbit(got[2]) and np.isnan(got[3])


def _mp_zeta(s, q):
    """Hurwitz zeta in mpmath by its definition: N = 100 + s terms summed, then
    Euler-Maclaurin with 20 Bernoulli terms (each below 1e-30 of the sum there).
    mpmath's own zeta(s, q) is not used: for q in the hundreds it loses up to 10 of its
    40 digits (zeta(20.46, 267.9) comes out 1e-9 off against 20,000 terms summed)."""
    n = int(100 + s)
    total = mp.fsum((q + k) ** -s for k in range(n))
    a = q + n
    tail = a ** (1 - s) / (s - 1) + a**-s / 2
    rising = s
    for j in range(1, 21):
        tail += mp.bernoulli(2 * j) / mp.factorial(2 * j) * rising * a ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total + tail


def test_zeta() -> None:
    s = np.concatenate([RNG.uniform(1.01, 40, 200), RNG.integers(2, 60, 100)])
    q = np.concatenate([np.exp(RNG.uniform(-6, 9, 200)), np.exp(RNG.uniform(-3, 3, 100))])
    _close(special.zeta(s, q), _mp_map(_mp_zeta, s, q), 1e-13, "zeta")
    # q < 0 with an integer s: the finite sum up to 0, then the rest.
    sn = RNG.integers(2, 9, 50).astype(float)
    qn = -RNG.uniform(0.1, 6, 50)
    qn = qn[np.abs(qn - np.round(qn)) > 0.05]
    sn = sn[:len(qn)]
    _close(special.zeta(sn, qn), _mp_map(_mp_zeta, sn, qn), 1e-12, "zeta, q < 0")
    # CHLO's domain: s < 1 NaN, s = 1 inf, poles: inf for even s, NaN for odd.
    got = special.zeta(np.array([0.5, 1.0, 2.0, 3.0, 2.5, np.inf, np.inf, np.inf]),
                       np.array([1.0, 2.0, -3.0, 0.0, -1.5, 2.0, 1.0, 0.5]))
    np.testing.assert_array_equal(got, [np.nan, np.inf, np.inf, np.nan, np.nan, 0.0, 1.0,
                                        np.inf])


def test_polygamma() -> None:
    n = RNG.integers(1, 12, 200).astype(float)
    x = np.exp(RNG.uniform(-4, 6, 200))
    _close(special.polygamma(n, x), _mp_map(lambda a, b: mp.polygamma(int(a), b), n, x),
           1e-13, "polygamma")
    got = special.polygamma(np.array([0.0, 1.5, -1.0, 40.0, 3.0]),
                            np.array([2.0, 2.0, 2.0, 2.0, np.inf]))
    assert got[0] == pytest.approx(1 - np.euler_gamma, rel=1e-15)
    assert np.isnan(got[1]) and np.isnan(got[2])
    assert got[3] == -np.inf  # 40! overflows f32, as JAX's n!: the firmware's answer
    assert got[4] == 0


def test_next_after() -> None:
    x = np.array([0.0, -0.0, 1.0, 1.0, np.inf, 3.0], np.float32)
    y = np.array([1.0, -1.0, 2.0, 1.0, 0.0, np.nan], np.float32)
    got = special.next_after(x, y)
    assert got[0] == np.float32(2.0**-149) and got[1] == -np.float32(2.0**-149)
    assert got[2] == np.nextafter(np.float32(1), np.float32(2)) and got[3] == 1.0
    assert got[4] == np.finfo(np.float32).max and np.isnan(got[5])
    # bf16 (held in float32): one step of 2**-7 at 1, the smallest bf16 subnormal at 0.
    b = special.next_after(np.array([1.0, 0.0, -1.0], np.float32),
                           np.array([2.0, 1.0, -2.0], np.float32), bf16=True)
    np.testing.assert_array_equal(b, [1 + 2.0**-7, 2.0**-133, -(1 + 2.0**-7)])
