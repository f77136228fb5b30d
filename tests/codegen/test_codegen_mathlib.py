"""Accuracy of mathlib's functions over dense sweeps, against float64 numpy.

Each function runs as a 1-D elementwise kernel (JIT on the host). Errors are measured in
ulps of the f32 result (np.spacing of the float64 reference rounded to f32), so the bounds
here are the ones documented in toolchain/codegen/mathlib.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.codegen import TargetFeatures
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
N = 1 << 17


def _kernel(op: str, nargs: int, n: int = N, dt=F32) -> Kernel:
    t = TensorType((n,), dt)
    loads = tuple(Load(i, (Index(0),)) for i in range(nargs))
    return Kernel(f"k_{op}_{dt.name}", (n,), 1, (t,) * nargs, t, Apply(op, loads, dt))


UNARY = [
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "tanh",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sine",
    "cosine",
    "tan",
    "floor",
    "ceil",
    "round_nearest_even",
    "round_nearest_afz",
]


def ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the f32 spacing at want; special values must match."""
    want32 = want.astype(np.float32)
    special = ~np.isfinite(want32) | ~np.isfinite(got)
    same_special = (np.isnan(got) & np.isnan(want32)) | (got == want32)
    err = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want32)).astype(np.float64)
    return np.where(special, np.where(same_special, 0.0, np.inf), err)


def all_finite_floats(n: int, rng: np.random.Generator, positive: bool = False) -> np.ndarray:
    """Random f32 bit patterns: every binade equally likely, subnormals included."""
    bits = rng.integers(0, 0x7F800000, n, dtype=np.int64).astype(np.uint32)
    if not positive:
        bits |= (rng.random(n) < 0.5).astype(np.uint32) << 31
    return bits.view(np.float32)


def sweep(lo: float, hi: float, rng: np.random.Generator, n: int = N) -> np.ndarray:
    """A dense linear sweep plus uniform random points in [lo, hi]."""
    half = n // 2
    x = np.concatenate([np.linspace(lo, hi, half), rng.uniform(lo, hi, n - half)])
    return x.astype(np.float32)


def log_sweep(
    lo: float, hi: float, rng: np.random.Generator, n: int = N, dt: type = np.float32
) -> np.ndarray:
    """Magnitudes spread evenly over [lo, hi] in log scale, both signs."""
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    return (mag * np.where(rng.random(n) < 0.5, -1, 1)).astype(dt)


# (op, inputs, float64 reference, max ulp)
def _cases(rng: np.random.Generator) -> list[tuple[str, np.ndarray, object, float]]:
    f64 = np.float64
    return [
        ("exponential", sweep(-104, 89, rng), lambda x: np.exp(x.astype(f64)), 2),
        ("exponential_minus_one", sweep(-20, 88.7, rng), lambda x: np.expm1(x.astype(f64)), 3),
        ("exponential_minus_one", log_sweep(1e-10, 1, rng), lambda x: np.expm1(x.astype(f64)), 3),
        ("log", all_finite_floats(N, rng, positive=True), lambda x: np.log(x.astype(f64)), 2),
        ("log", sweep(0.5, 2, rng), lambda x: np.log(x.astype(f64)), 2),
        ("log_plus_one", sweep(-0.999, 10, rng), lambda x: np.log1p(x.astype(f64)), 3),
        ("log_plus_one", log_sweep(1e-10, 0.5, rng), lambda x: np.log1p(x.astype(f64)), 3),
        ("tanh", sweep(-10, 10, rng), lambda x: np.tanh(x.astype(f64)), 4),
        ("tanh", log_sweep(1e-10, 1, rng), lambda x: np.tanh(x.astype(f64)), 4),
        ("logistic", sweep(-100, 100, rng), lambda x: 1 / (1 + np.exp(-x.astype(f64))), 3),
        ("sqrt", all_finite_floats(N, rng, True), lambda x: np.sqrt(x.astype(f64)), 0.5),
        ("rsqrt", all_finite_floats(N, rng, True), lambda x: 1 / np.sqrt(x.astype(f64)), 2),
        ("cbrt", all_finite_floats(N, rng), lambda x: np.cbrt(x.astype(f64)), 2),
        ("floor", log_sweep(1e-3, 1e8, rng), lambda x: np.floor(x.astype(f64)), 0),
        ("ceil", log_sweep(1e-3, 1e8, rng), lambda x: np.ceil(x.astype(f64)), 0),
        ("round_nearest_even", _halves(rng), lambda x: np.rint(x.astype(f64)), 0),
        ("round_nearest_afz", _halves(rng), lambda x: _afz(x.astype(f64)), 0),
    ]


def _halves(rng: np.random.Generator) -> np.ndarray:
    x = log_sweep(1e-3, 1e8, rng)
    x[: N // 4] = np.round(x[: N // 4] * 2) / 2  # many exact ties
    return x


def _afz(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


@pytest.fixture(scope="module")
def mathlib_jit(jit):
    ks = [_kernel(op, 1) for op in UNARY]
    ks += [_kernel(op, 2) for op in ("power", "atan2", "remainder")]
    ks += [_kernel(op, 2, dt=dtype("f64")) for op in ("remainder",)]
    ks += [_kernel(op, 1, dt=dtype("f64")) for op in ("floor", "ceil", "round_nearest_even")]
    return jit(ks)


def test_unary_accuracy(mathlib_jit) -> None:
    rng = np.random.default_rng(7)
    for op, x, fref, bound in _cases(rng):
        got = mathlib_jit.run(f"k_{op}_f32", x)
        with np.errstate(all="ignore"):
            err = ulp_error(got, fref(x))
        worst = float(err.max())
        assert worst <= bound, f"{op}: max error {worst} ulp > {bound} at x={x[err.argmax()]!r}"


def test_trig_accuracy(mathlib_jit) -> None:
    rng = np.random.default_rng(8)
    x = sweep(-1e4, 1e4, rng)
    x[:1000] = sweep(-4, 4, rng, 1000)
    for op, fref in (("sine", np.sin), ("cosine", np.cos)):
        got = mathlib_jit.run(f"k_{op}_f32", x).astype(np.float64)
        err = np.abs(got - fref(x.astype(np.float64)))
        assert err.max() <= 2e-7, f"{op}: abs error {err.max()} at {x[err.argmax()]!r}"
    # tan: relative error near 1 ulp plus the reduction's absolute error times tan' = 1+tan^2.
    want = np.tan(x.astype(np.float64))
    got = mathlib_jit.run("k_tan_f32", x).astype(np.float64)
    allowed = 4 * np.spacing(np.abs(want).astype(np.float32)) + 2e-7 * (1 + want * want)
    bad = np.abs(got - want) > allowed
    assert not bad.any(), f"tan at {x[bad][:5]!r}: {got[bad][:5]} vs {want[bad][:5]}"


def test_atan2_accuracy(mathlib_jit) -> None:
    rng = np.random.default_rng(9)
    y, x = log_sweep(1e-20, 1e20, rng), log_sweep(1e-20, 1e20, rng)
    y[:8] = [0, -0.0, 0, -0.0, np.inf, -np.inf, np.inf, 1]
    x[:8] = [0, 0, -0.0, -0.0, np.inf, -np.inf, 1, np.nan]
    got = mathlib_jit.run("k_atan2_f32", y, x)
    err = ulp_error(got, np.arctan2(y.astype(np.float64), x.astype(np.float64)))
    assert err.max() <= 3, f"atan2: {err.max()} ulp at y={y[err.argmax()]}, x={x[err.argmax()]}"
    assert np.signbit(got[[1, 3]]).all() and not np.signbit(got[[0, 2]]).any()


def test_pow_accuracy(mathlib_jit) -> None:
    rng = np.random.default_rng(10)
    x = np.exp(rng.uniform(-20, 20, N)).astype(np.float32)
    y = rng.uniform(-4, 4, N).astype(np.float32)
    x[:12] = [-2, -2, -0.5, -3, 0, -0.0, -0.0, 1, np.nan, -1, 2, np.inf]
    y[:12] = [3, 2, -3, 0.5, -1, 3, -1, np.nan, 0, np.inf, 0.5, -1]
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    got = mathlib_jit.run("k_power_f32", x, y)
    with np.errstate(all="ignore"):
        err = ulp_error(got, want)
        bound = 4 + 2 * np.abs(y * np.log(np.abs(x.astype(np.float64)))) + 0.5
    bound = np.nan_to_num(bound, nan=4, posinf=4)
    bad = err > np.where(np.isfinite(want), bound, 0)
    assert not bad.any(), (
        f"pow at x={x[bad][:5]}, y={y[bad][:5]}: {got[bad][:5]} vs {want[bad][:5]}"
    )


@pytest.mark.parametrize("name", ["f32", "f64"])
def test_fmod_and_rounding_are_exact(mathlib_jit, name) -> None:
    rng = np.random.default_rng(11)
    dt = np.float32 if name == "f32" else np.float64
    if name == "f32":
        a, b = all_finite_floats(N, rng), all_finite_floats(N, rng)
    else:
        a = log_sweep(1e-300, 1e300, rng, dt=dt)
        b = log_sweep(1e-300, 1e300, rng, dt=dt)
        a[:4] = [5e-324, 1e-310, 3.0, 7.5]  # subnormals both ways
        b[:4] = [3e-320, 7e-315, 5e-324, 2.5]
    b[4:8] = [0, np.inf, np.nan, -1.5]
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    got = mathlib_jit.run(f"k_remainder_{name}", a, b)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[np.isfinite(want)].all()
    if name == "f64":
        x = log_sweep(1e-3, 1e17, rng, dt=dt)
        x[: N // 4] = np.round(x[: N // 4] * 2) / 2
        for op, fref in (("floor", np.floor), ("ceil", np.ceil), ("round_nearest_even", np.rint)):
            got = mathlib_jit.run(f"k_{op}_f64", x)
            np.testing.assert_array_equal(got, fref(x), err_msg=op)
            assert (np.signbit(got) == np.signbit(fref(x))).all()


def test_newton_sqrt_without_fpu(jit) -> None:
    """The soft-float targets' sqrt (three Newton steps) is within 1 ulp."""
    rng = np.random.default_rng(12)
    j = jit([_kernel("sqrt", 1), _kernel("rsqrt", 1)], features=TargetFeatures())
    assert "llvm.sqrt" not in j.ir_text
    x = all_finite_floats(N, rng, positive=True)
    x[:4] = [0, -0.0, np.inf, 1e-45]
    with np.errstate(all="ignore"):
        err = ulp_error(j.run("k_sqrt_f32", x), np.sqrt(x.astype(np.float64)))
    assert err.max() <= 1, f"sqrt: {err.max()} ulp at {x[err.argmax()]!r}"
    with np.errstate(all="ignore"):
        err = ulp_error(j.run("k_rsqrt_f32", x), 1 / np.sqrt(x.astype(np.float64)))
    assert err.max() <= 2, f"rsqrt: {err.max()} ulp at {x[err.argmax()]!r}"
    assert np.isnan(j.run("k_sqrt_f32", np.full(N, -1.0, np.float32))).all()


def test_f16_conversions_exhaustive(jit) -> None:
    """Every half bit pattern widens exactly; f32 -> f16 rounds to nearest even."""
    f16, f32 = dtype("f16"), dtype("f32")
    n = 1 << 16
    t16, t32 = TensorType((n,), f16), TensorType((n,), f32)
    up = Kernel("h2f", (n,), 1, (t16,), t32, Apply("convert", (Load(0, (Index(0),)),), f32))
    down = Kernel("f2h", (n,), 1, (t32,), t16, Apply("convert", (Load(0, (Index(0),)),), f16))
    j = jit([up, down])
    h = np.arange(n, dtype=np.uint16).view(np.float16)
    got = j.run("h2f", h)
    np.testing.assert_array_equal(got, h.astype(np.float32))
    rng = np.random.default_rng(13)
    x = all_finite_floats(n, rng)
    x[: n // 2] = (rng.standard_normal(n // 2) * 1000).astype(np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, 65519.99, 65520.0, 2.0**-25]
    got = j.run("f2h", x)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16)[3:], want.view(np.uint16)[3:])
    assert np.isnan(got[2]) and got[0] == np.inf and got[1] == -np.inf
