"""Accuracy of mathlib's functions over the whole f32 range, against float64 numpy.

Each function runs as a 1-D elementwise kernel (JIT on the host, optimised as shipped).
Every unary function is swept over `full_range`: every exponent field of f32 (the
subnormals' included), FULL_PER_BINADE significands in each (the binade's first, second,
middle and last among them), both signs, plus ±0, ±inf, NaN, the smallest and largest
subnormal and normal, and the function's own edges (poles, thresholds, saturation
points). A dense linear sweep of the interval where the function varies fastest is added
on top. Binary functions get full-range pairs and every pair of special values.

Errors are in ulps of the true result, measured against the float64 numpy value of the
same f32 input: ulp = 2**(e - 23) for a true result in [2**e, 2**(e+1)), and 2**-149 in
the subnormal range. An f32 result of ±inf counts as ±2**128 (the value FLT_MAX rounds
up to), so a result next to the overflow threshold is measured rather than rejected; a
true result of ±inf or NaN must be returned exactly, and a true zero must come back
with its sign.

The bounds (column `ulp`) are the ones documented in toolchain/codegen/mathlib.py, each
with the reason it holds; `worst` is the largest error measured by this test over all its
inputs (seeded, so reproducible), on x86-64 with hardware sqrt. A one-off exhaustive run
over all 2**32 inputs (too slow for the suite: 3-8 minutes a function) found: sine 1.59
ulp, cosine 1.59, tan 3.74, log 1.97, exponential_minus_one 1.45, log_plus_one 2.47.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from test_codegen_targets import _HELPER, _LIBM, undefined_symbols

from toolchain.codegen import TargetFeatures, TargetInfo, emit_kernel, mathlib
from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.target.descriptors import list_targets, load_target
from toolchain.types import TensorType, dtype

F32 = dtype("f32")
FULL_PER_BINADE = 2048  # significands per exponent field and sign: 1M inputs a function
DENSE = 1 << 18  # points of the extra linear sweep
TINY = float(np.float32(2.0**-149))
FLT_MAX = float(np.finfo(np.float32).max)
SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 2.0**-126, -(2.0**-126),
     2.0**-126 - 2.0**-149, -(2.0**-126 - 2.0**-149), FLT_MAX, -FLT_MAX, 1.0, -1.0],
    dtype=np.float32,
)  # fmt: skip


def _kernel(op: str, nargs: int, n: int, dt=F32) -> Kernel:
    t = TensorType((n,), dt)
    loads = tuple(Load(i, (Index(0),)) for i in range(nargs))
    return Kernel(f"k_{op}_{dt.name}", (n,), 1, (t,) * nargs, t, Apply(op, loads, dt))


class Runner:
    """Runs a function on arrays of any length: the JIT kernels have a fixed length, so
    inputs are padded to a multiple of it and run in chunks."""

    CHUNK = 1 << 16

    def __init__(self, jit, ops: list[tuple[str, int]], features: TargetFeatures | None = None):
        ks = [_kernel(op, nargs, self.CHUNK) for op, nargs in ops]
        self.j = jit(ks, features=features)

    def __call__(self, op: str, *args: np.ndarray) -> np.ndarray:
        n = len(args[0])
        pad = -n % self.CHUNK
        padded = [np.concatenate([a.astype(np.float32), np.zeros(pad, np.float32)]) for a in args]
        out = [
            self.j.run(f"k_{op}_f32", *(a[i : i + self.CHUNK] for a in padded))
            for i in range(0, n + pad, self.CHUNK)
        ]
        return np.concatenate(out)[:n]


def ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in f32 ulps of the float64 true result `want` (see the module doc)."""
    got64 = got.astype(np.float64)
    got64 = np.where(np.isinf(got64), np.copysign(2.0**128, got64), got64)
    _, e = np.frexp(np.abs(want))  # |want| in [2**(e-1), 2**e)
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    with np.errstate(invalid="ignore"):
        err = np.abs(got64 - want) / ulp
    # Past 2**128 the only right answer is inf (below it, FLT_MAX vs inf is measured).
    exact = ~np.isfinite(want) | (np.abs(want) >= 2.0**128)
    want32 = np.where(exact, want.astype(np.float32), 0)
    same = (np.isnan(got) & np.isnan(want32)) | (got == want32)
    err = np.where(exact, np.where(same, 0.0, np.inf), err)
    err = np.where(np.isnan(got) & ~np.isnan(want), np.inf, err)
    # A true zero keeps its sign (sin(-0) = -0, log1p(-0) = -0, ...).
    wrong_zero_sign = (want == 0) & (got == 0) & (np.signbit(got) != np.signbit(want))
    return np.where(wrong_zero_sign, np.inf, err)


def full_range(rng: np.random.Generator, per_binade: int = FULL_PER_BINADE) -> np.ndarray:
    """`per_binade` f32 values from every exponent field 0..254, both signs, + SPECIALS."""
    mant = rng.integers(0, 1 << 23, (255, per_binade), dtype=np.int64).astype(np.uint32)
    mant[:, :4] = [0, 1, 1 << 22, (1 << 23) - 1]
    bits = (np.arange(255, dtype=np.uint32)[:, None] << np.uint32(23)) | mant
    bits = bits.ravel()
    both = np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)
    return np.concatenate([both, SPECIALS])


def around(points: list[float], k: int = 64) -> np.ndarray:
    """The k f32 neighbours on each side of each point (both signs), the point included."""
    out = [np.zeros(0, np.uint32)]
    for p in points:
        c = np.float32(p).view(np.int32).astype(np.int64)
        bits = np.clip(np.arange(c - k, c + k + 1), 0, 0x7F7FFFFF).astype(np.uint32)
        out += [bits, bits | np.uint32(0x80000000)]
    return np.concatenate(out).view(np.float32)


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly in x's own precision (|x| - floor|x| is exact;
    floor(|x| + 0.5) is not: 0.49999997f + 0.5 rounds up to 1)."""
    ax = np.abs(x)
    fl = np.floor(ax)
    return np.copysign(fl + (ax - fl >= 0.5), x)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


# f32 values closest to a multiple of pi/2 (found by an exhaustive search over every f32
# with the integer reduction's own arithmetic): x * 2/pi is within 2**-29.9, 2**-29.5,
# 2**-28.5, ... of an integer. They need the most bits of 2/pi.
TRIG_HARD = [7.729179e28, 2.1999385e10, 1.5458358e29, 4.399877e10, 252.89821, 4.6381834e25,
             1.522789e12, 3.0916716e29]  # fmt: skip


def _near_pi_halves() -> np.ndarray:
    """The f32 values next to k*pi/2 for k < 2**15 and to 2**e * pi/2: where the reduced
    argument cancels most."""
    k = np.arange(1, 1 << 15, dtype=np.float64) * (np.pi / 2)
    k = np.concatenate([k, np.pi / 2 * 2.0 ** np.arange(0, 126)])
    x = k.astype(np.float32)
    return np.concatenate([x, np.nextafter(x, np.float32(0)), np.nextafter(x, np.float32(np.inf))])


@dataclass(frozen=True)
class Case:
    """One function's sweep: its float64 reference, the bound asserted and why it holds."""

    op: str
    ref: Callable[[np.ndarray], np.ndarray]
    ulp: float
    worst: float  # largest error this test measures (documentation; the bound is `ulp`)
    dense: tuple[float, float]  # interval swept linearly on top of the full range
    edges: tuple[float, ...] = ()  # neighbourhoods of these points are swept too


UNARY: list[Case] = [
    # 2**n * (1 + expm1(r)): Taylor error < 0.1 ulp, three roundings in the polynomial.
    Case("exponential", np.exp, 2, 0.92, (-104, 89),
         (88.72283, -87.33654, -103.27893, -103.97208)),
    # 2**n * q + (2**n - 1): one rounding after an exact 2**n - 1 (see mathlib).
    Case("exponential_minus_one", np.expm1, 3, 1.4, (-20, 89),
         (-17.5, -17.32868, -180.0, -1e4, 88.72283, 0.34657359, 1e-10)),
    # e*ln2 + log(m): log(m) <= 1.5 ulp, e*LN2_HI exact.
    Case("log", np.log, 2, 1.94, (0.5, 2), (1.0, 2.0**-126)),
    # log(u) + (x - (u - 1))/u: log's error plus the correction's two roundings.
    Case("log_plus_one", np.log1p, 3, 2.25, (-1, 10), (-1.0, -0.5, 1e-10)),
    # e/(e + 2), e = expm1(2|x|): expm1's error plus two roundings.
    Case("tanh", np.tanh, 4, 2.17, (-10, 10), (9.1, 2.0**-12)),
    # 1/(1 + e) or e/(1 + e), e = exp(-|x|) <= 1: exp's error plus two roundings.
    Case("logistic", _logistic, 3, 2.28, (-105, 105), (-87.33654, -103.97208)),
    Case("sqrt", np.sqrt, 0.5, 0.5, (0, 4)),  # the FPU instruction (x86-64 here)
    Case("rsqrt", _rsqrt, 2, 1.48, (0, 4)),  # 1/sqrt: two correctly rounded steps
    # Four Newton steps from a bit-pattern guess; each squares the relative error.
    Case("cbrt", np.cbrt, 2, 1.72, (-8, 8)),
    # r = |x| - q*pi/2 exact to 2**-30 before its one rounding (0.5 ulp), then the
    # polynomial's roundings (< 1 ulp); the quadrant only swaps sin / cos and signs.
    Case("sine", np.sin, 2, 1.54, (-10, 10), tuple(TRIG_HARD)),
    Case("cosine", np.cos, 2, 1.54, (-10, 10), tuple(TRIG_HARD)),
    # sin r / cos r (or -cos / sin): two results within 1.5 ulp and a division.
    Case("tan", np.tan, 4, 3.38, (-10, 10), tuple(TRIG_HARD)),
    Case("floor", np.floor, 0, 0.0, (-1e3, 1e3), (2.0**23, 0.5)),  # exact
    Case("ceil", np.ceil, 0, 0.0, (-1e3, 1e3), (2.0**23, 0.5)),
    Case("round_nearest_even", np.rint, 0, 0.0, (-1e3, 1e3), (2.0**23, 0.5, 1.5, 2.5)),
    Case("round_nearest_afz", _afz, 0, 0.0, (-1e3, 1e3), (2.0**23, 0.5, 1.5, 2.5)),
]  # fmt: skip


def unary_inputs(case: Case, rng: np.random.Generator) -> np.ndarray:
    """full_range + the case's dense sweep (with its half-integers) + its edges."""
    lo, hi = case.dense
    dense = np.linspace(lo, hi, DENSE).astype(np.float32)
    halves = (np.round(dense * 2) / 2).astype(np.float32)  # exact ties for the roundings
    parts = [full_range(rng), dense, halves, around(list(case.edges))]
    if case.op in ("sine", "cosine", "tan"):
        parts.append(_near_pi_halves())
    return np.concatenate(parts)


@pytest.fixture(scope="module")
def run(jit) -> Runner:
    ops = [(c.op, 1) for c in UNARY] + [("power", 2), ("atan2", 2)]
    return Runner(jit, ops)


def _worst(op: str, x: np.ndarray, got: np.ndarray, err: np.ndarray) -> str:
    i = int(np.argmax(err))
    return f"{op}: {err[i]} ulp at x={x[i]!r} ({x[i].view(np.uint32):#x}): got {got[i]!r}"


@pytest.mark.parametrize("case", UNARY, ids=lambda c: c.op)
def test_unary_accuracy_over_the_whole_range(run: Runner, case: Case) -> None:
    x = unary_inputs(case, np.random.default_rng(7))
    got = run(case.op, x)
    with np.errstate(all="ignore"):
        err = ulp_error(got, case.ref(x.astype(np.float64)))
    assert err.max() <= case.ulp, _worst(case.op, x, got, err)


def test_reported_edges(run: Runner) -> None:
    """Issue 11's reproductions: garbage expm1 below -111, sin(1e8) in the wrong quadrant,
    inf / NaN from sin and tan past 2e9, log1p(-1) = NaN."""
    x = np.array([-180, -1e4, -np.inf, -17.6, -112], np.float32)
    assert (run("exponential_minus_one", x) == -1).all()
    assert run("log_plus_one", np.array([-1.0], np.float32))[0] == -np.inf
    big = np.array([1e8, 2e9, 2.1e9, 4e9, 1e20, 1e38, -1e38, FLT_MAX], np.float32)
    for op, fref in (("sine", np.sin), ("cosine", np.cos), ("tan", np.tan)):
        got = run(op, big)
        want = fref(big.astype(np.float64))
        assert np.isfinite(got).all(), op
        np.testing.assert_allclose(got, want, rtol=3e-7, err_msg=op)  # 2.5 ulp at most
    assert abs(run("sine", np.array([1e8], np.float32))[0] - 0.9316) < 1e-4


def _pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Full-range pairs (each value's partner drawn from another binade) plus every pair
    of special values."""
    a = full_range(rng, FULL_PER_BINADE // 2)
    b = rng.permutation(full_range(rng, FULL_PER_BINADE // 2))
    sa, sb = np.meshgrid(SPECIALS, SPECIALS)
    return np.concatenate([a, sa.ravel()]), np.concatenate([b, sb.ravel()])


def test_atan2_over_the_whole_range(run: Runner) -> None:
    """<= 3 ulp: atan of a <= tan(pi/8) (Taylor < 0.1 ulp) plus the octant's constant.
    Worst measured: 2.47 ulp."""
    y, x = _pairs(np.random.default_rng(9))
    got = run("atan2", y, x)
    err = ulp_error(got, np.arctan2(y.astype(np.float64), x.astype(np.float64)))
    i = int(np.argmax(err))
    assert err.max() <= 3, f"atan2: {err[i]} ulp at y={y[i]!r}, x={x[i]!r}: {got[i]!r}"


def test_pow_over_the_whole_range(run: Runner) -> None:
    """<= 2 ulp [1.05 measured, also where |y ln x| is near 100]: y * log2|x| is carried
    in double-f32 (~2**-36 relative), so only exp2's last roundings remain (f, f * ln2,
    the polynomial, 1 + q). Special values (C99 Annex F, as numpy) exactly: (-inf)**y
    was NaN for non-integer y. Before double-f32 the error grew with |y ln x| (119 ulp
    at 74), and beat numpy.isclose's rtol=1e-5 for results near overflow."""
    rng = np.random.default_rng(10)
    x, y = _pairs(rng)
    n = 1 << 16
    xm = np.exp(rng.uniform(-20, 20, n)).astype(np.float32)  # finite, non-trivial results
    ym = rng.uniform(-4, 4, n).astype(np.float32)
    xb = np.exp(rng.uniform(-80, 80, n)).astype(np.float32)  # results near over/underflow
    with np.errstate(divide="ignore", over="ignore"):
        yb = (rng.uniform(-104, 89, n) / np.log(xb.astype(np.float64))).astype(np.float32)
    x1 = (1 + rng.uniform(-1e-3, 1e-3, n)).astype(np.float32)  # x near 1, y large
    y1 = rng.uniform(-8e4, 8e4, n).astype(np.float32)
    xi = -rng.uniform(0, 10, n).astype(np.float32)  # negative bases, integer exponents
    yi = rng.integers(-20, 20, n).astype(np.float32)
    x = np.concatenate([x, xm, xb, x1, xi])
    y = np.concatenate([y, ym, yb, y1, yi])
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
        got = run("power", x, y)
        err = ulp_error(got, want)
    i = int(np.argmax(err))
    assert err.max() <= 2, f"pow: {err[i]} ulp at x={x[i]!r}, y={y[i]!r}: {got[i]!r}"


def f64_full_range(rng: np.random.Generator, per_binade: int = 64) -> np.ndarray:
    """`per_binade` f64 values from every exponent field 0..2046, both signs, + specials."""
    mant = rng.integers(0, 1 << 52, (2047, per_binade), dtype=np.int64).astype(np.uint64)
    mant[:, :3] = [0, 1, (1 << 52) - 1]
    bits = ((np.arange(2047, dtype=np.uint64)[:, None] << np.uint64(52)) | mant).ravel()
    both = np.concatenate([bits, bits | np.uint64(1 << 63)]).view(np.float64)
    return np.concatenate([both, SPECIALS.astype(np.float64), [5e-324, 1.7976931348623157e308]])


@pytest.mark.parametrize("name", ["f32", "f64"])
def test_fmod_and_rounding_are_exact(jit, name) -> None:
    """fmod (long division of the significands) and the roundings are exact over the
    whole range of both widths, signs of zeros included."""
    rng = np.random.default_rng(11)
    dt = np.float32 if name == "f32" else np.float64
    a = full_range(rng) if name == "f32" else f64_full_range(rng)
    b = rng.permutation(a)
    sa, sb = np.meshgrid(SPECIALS, SPECIALS)
    a = np.concatenate([a, sa.ravel(), [5e-324 if name == "f64" else TINY, 3.0, 7.5]]).astype(dt)
    b = np.concatenate([b, sb.ravel(), [3e-320 if name == "f64" else 3 * TINY, TINY, 2.5]])
    b = b.astype(dt)
    n = len(a)
    fdt = dtype(name)
    ops = ("floor", "ceil", "round_nearest_even", "round_nearest_afz")
    j = jit([_kernel("remainder", 2, n, fdt)] + [_kernel(op, 1, n, fdt) for op in ops])
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    got = j.run(f"k_remainder_{name}", a, b)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
    a[: n // 4] = np.round(a[: n // 4] * 2) / 2  # many exact ties
    for op, fref in zip(ops, (np.floor, np.ceil, np.rint, _afz), strict=True):
        got = j.run(f"k_{op}_{name}", a)
        with np.errstate(all="ignore"):
            want = fref(a)
        np.testing.assert_array_equal(got, want, err_msg=op)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), op


def test_newton_sqrt_without_fpu(jit) -> None:
    """The soft-float targets' sqrt (three Newton steps) is within 1 ulp [0.75 measured],
    rsqrt within 2 [1.96], over the whole range; sqrt(-0) = -0, negatives give NaN."""
    run = Runner(jit, [("sqrt", 1), ("rsqrt", 1)], features=TargetFeatures())
    assert "llvm.sqrt" not in run.j.ir_text
    x = full_range(np.random.default_rng(12))
    for op, fref, bound in (("sqrt", np.sqrt, 1), ("rsqrt", _rsqrt, 2)):
        got = run(op, x)
        with np.errstate(all="ignore"):
            err = ulp_error(got, fref(x.astype(np.float64)))
        assert err.max() <= bound, _worst(op, x, got, err)


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
    x = full_range(rng, 129)[:n]
    x[: n // 2] = (rng.standard_normal(n // 2) * 1000).astype(np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, 65519.99, 65520.0, 2.0**-25]
    got = j.run("f2h", x)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16)[3:], want.view(np.uint16)[3:])
    assert np.isnan(got[2]) and got[0] == np.inf and got[1] == -np.inf


def _arctan_inv(n: int, bits: int) -> int:
    """arctan(1/n) * 2**bits, from its Taylor series in integers (error < 2**-bits * n)."""
    total, power, k = 0, (1 << bits) // n, 0
    while power:
        total += (-1) ** k * (power // (2 * k + 1))
        power //= n * n
        k += 1
    return total


def test_two_over_pi_table_holds_the_bits_of_two_over_pi() -> None:
    """The reduction's table is 0, then the first 224 fraction bits of 2/pi; PIO2_Q31 is
    pi/2 * 2**31 rounded. Checked against Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)
    evaluated with 64 guard bits."""
    bits = 320
    pi = (16 * _arctan_inv(5, bits + 64) - 4 * _arctan_inv(239, bits + 64)) >> 64  # pi*2**bits
    two_over_pi = (1 << (2 * bits + 1)) // pi  # 2/pi * 2**bits
    words = [(two_over_pi >> (bits - 32 * i)) & 0xFFFFFFFF for i in range(1, 8)]
    assert (0, *words) == mathlib.TWO_OVER_PI_WORDS
    assert (pi + (1 << (bits - 31))) >> (bits - 30) == mathlib.PIO2_Q31
    assert np.float32(np.pi / 4).view(np.uint32) == mathlib.PIO4_BITS


NO_FPU = [t for t in list_targets() if load_target(t).capabilities.fpu == "none"]
_F64_HELPER = ("__aeabi_d", "df3", "df2", "dfsi", "dfdi", "sidf", "disf", "sfdf")


@pytest.mark.parametrize("name", NO_FPU)
def test_edge_functions_compile_for_soft_float_targets(name: str) -> None:
    """On targets without an FPU the fixed functions compile to an object that calls only
    libgcc helpers (no libm: the link would fail), no double-precision helper at all (the
    trig reduction is integer arithmetic), and carries the 32-byte 2/pi table. The numbers
    are the same IEEE operations as on the host, checked above and on QEMU in
    test_codegen_mathlib_boards.py."""
    info = TargetInfo.load(name)
    module = info.new_module()
    for op in ("sine", "cosine", "tan", "exponential_minus_one", "log_plus_one", "power"):
        emit_kernel(module, _kernel(op, 2 if op == "power" else 1, 16))
    elf_bytes = info.emit_object(module)
    undefined = undefined_symbols(elf_bytes)
    assert not [s for s in undefined if _LIBM.match(s)], undefined
    assert all(_HELPER.match(s) for s in undefined), undefined
    assert not [s for s in undefined if any(h in s for h in _F64_HELPER)], undefined
    table = ELFFile(io.BytesIO(elf_bytes)).get_section_by_name(".rodata.mrt_math_two_over_pi")
    assert table is not None and table.data_size == 32
