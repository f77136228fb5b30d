"""Hand-built kernels in the generic form, JIT-compiled on the host, against numpy and the
reference executor's own op implementations."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from toolchain.codegen import EmitError
from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.reference.kernels import KERNELS
from toolchain.types import TensorType, dtype

F32, F16, I1, I8, I32, I64, U8 = (dtype(n) for n in ("f32", "f16", "i1", "i8", "i32", "i64", "ui8"))
IDX = I32
RNG = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _fresh_rng() -> None:
    """Same inputs whichever worker runs a test and in whatever order."""
    global RNG
    RNG = np.random.default_rng(1234)


def T(shape: tuple[int, ...], dt=F32) -> TensorType:  # noqa: N802 - reads like a type
    return TensorType(shape, dt)


def add(a, b, dt=IDX):
    return Apply("add", (a, b), dt)


def ref(op: str, out: TensorType, *args: np.ndarray, **attrs) -> np.ndarray:
    """The reference executor's kernel for op, called with a stand-in node."""
    node = SimpleNamespace(outputs=[SimpleNamespace(type=out)], attrs=attrs)
    return KERNELS[op](node, *args)


# ------------------------------------------------------------------- structured kernels


def test_broadcast_add_matmul_conv_max_concat(jit) -> None:
    m, k, n = 5, 7, 3
    h, w = 6, 5
    kernels = [
        # a[4,3] + b[3] (broadcast along dim 0)
        Kernel(
            "bcast_add",
            (4, 3),
            2,
            (T((4, 3)), T((3,))),
            T((4, 3)),
            Apply("add", (Load(0, (Index(0), Index(1))), Load(1, (Index(1),))), F32),
        ),
        # C[m,n] = sum_k A[m,k] * B[k,n]
        Kernel(
            "matmul",
            (m, n, k),
            2,
            (T((m, k)), T((k, n))),
            T((m, n)),
            Apply("multiply", (Load(0, (Index(0), Index(2))), Load(1, (Index(2), Index(1)))), F32),
            combine="add",
            init=Const(0.0, F32),
        ),
        # 3x3 "same" correlation with zero padding
        Kernel(
            "conv",
            (h, w, 3, 3),
            2,
            (T((h, w)), T((3, 3))),
            T((h, w)),
            Apply(
                "multiply",
                (
                    Load(
                        0,
                        (
                            add(Index(0), add(Index(2), Const(-1, IDX))),
                            add(Index(1), add(Index(3), Const(-1, IDX))),
                        ),
                        pad=Const(0.0, F32),
                    ),
                    Load(1, (Index(2), Index(3))),
                ),
                F32,
            ),
            combine="add",
            init=Const(0.0, F32),
        ),
        # row max
        Kernel(
            "rowmax",
            (5, 7),
            1,
            (T((5, 7)),),
            T((5,)),
            Load(0, (Index(0), Index(1))),
            combine="maximum",
            init=Const(-np.inf, F32),
        ),
        # concatenate([a (2,3), b (2,4)], axis 1) as a select of two padded loads
        Kernel(
            "concat",
            (2, 7),
            2,
            (T((2, 3)), T((2, 4))),
            T((2, 7)),
            Apply(
                "select",
                (
                    Apply("compare.LT", (Index(1), Const(3, IDX)), I1),
                    Load(0, (Index(0), Index(1)), pad=Const(0.0, F32)),
                    Load(1, (Index(0), add(Index(1), Const(-3, IDX))), pad=Const(0.0, F32)),
                ),
                F32,
            ),
        ),
        # interior padding: out[i] = x[i/2] at even i, else -1 (pad with `valid`)
        Kernel(
            "interior",
            (9,),
            1,
            (T((5,)),),
            T((9,)),
            Load(
                0,
                (Apply("divide", (Index(0), Const(2, IDX)), IDX),),
                pad=Const(-1.0, F32),
                valid=Apply(
                    "compare.EQ",
                    (Apply("remainder", (Index(0), Const(2, IDX)), IDX), Const(0, IDX)),
                    I1,
                ),
            ),
        ),
        # gather with i64 indices: out[i] = x[idx[i]]
        Kernel(
            "gather", (4,), 1, (T((6,)), T((4,), I64)), T((4,)), Load(0, (Load(1, (Index(0),)),))
        ),
        # scalar result (full reduction) and an f16 sum accumulated in f32
        Kernel(
            "total",
            (3, 4),
            0,
            (T((3, 4)),),
            T(()),
            Load(0, (Index(0), Index(1))),
            combine="add",
            init=Const(1.0, F32),
        ),
        Kernel(
            "sum_f16",
            (64,),
            0,
            (T((64,), F16),),
            T((), F16),
            Load(0, (Index(0),)),
            combine="add",
            init=Const(0.0, F16),
        ),
        # the loop index as data: iota
        Kernel("iota", (3, 4), 2, (), T((3, 4), I32), Index(1)),
    ]
    j = jit(kernels)
    a43 = RNG.standard_normal((4, 3)).astype(np.float32)
    b3 = RNG.standard_normal(3).astype(np.float32)
    np.testing.assert_array_equal(j.run("bcast_add", a43, b3), a43 + b3)
    a, b = RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n))
    np.testing.assert_allclose(
        j.run("matmul", a, b), a @ b.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    x, f = RNG.standard_normal((h, w)).astype(np.float32), RNG.standard_normal((3, 3))
    f = f.astype(np.float32)
    xp = np.pad(x, 1)
    want = np.array([[(xp[i : i + 3, jj : jj + 3] * f).sum() for jj in range(w)] for i in range(h)])
    np.testing.assert_allclose(j.run("conv", x, f), want, rtol=1e-5, atol=1e-6)
    r = RNG.standard_normal((5, 7))
    r[2, 3] = np.nan
    got = j.run("rowmax", r)
    np.testing.assert_array_equal(got, r.astype(np.float32).max(axis=1))  # NaN propagates
    c0, c1 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4))
    np.testing.assert_array_equal(
        j.run("concat", c0, c1), np.concatenate([c0, c1], axis=1).astype(np.float32)
    )
    v = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(j.run("interior", v), [1, -1, 2, -1, 3, -1, 4, -1, 5])
    src = np.arange(10, 16, dtype=np.float32)
    np.testing.assert_array_equal(j.run("gather", src, [5, 0, 3, 3]), [15, 10, 13, 13])
    t = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(j.run("total", t), t.sum() + 1, rtol=1e-6)
    hx = (RNG.standard_normal(64) * 10).astype(np.float16)
    np.testing.assert_allclose(
        j.run("sum_f16", hx), np.float16(hx.astype(np.float64).sum()), rtol=1e-3
    )
    np.testing.assert_array_equal(j.run("iota"), np.broadcast_to(np.arange(4), (3, 4)))


def test_padded_loads_never_read_out_of_bounds(jit) -> None:
    # A window far outside its operand: every load is padding, and with the address
    # clamped nothing outside the 1-element buffer is touched.
    k = Kernel(
        "far",
        (8,),
        1,
        (T((1,)),),
        T((8,)),
        Load(0, (add(Index(0), Const(1_000_000, IDX)),), pad=Const(7.0, F32)),
    )
    np.testing.assert_array_equal(jit([k]).run("far", [1.0]), np.full(8, 7.0, np.float32))


# ------------------------------------------------------------------- elementwise ops

_FLOAT_UNARY = [
    "abs",
    "negate",
    "sign",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
    "tanh",
    "sine",
    "cosine",
    "tan",
    "floor",
    "ceil",
    "round_nearest_afz",
    "round_nearest_even",
]
_FLOAT_BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "power",
    "atan2",
]
_INT_UNARY = ["abs", "negate", "sign", "not", "popcnt", "count_leading_zeros"]
_INT_BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "power",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
]
N = 256


def _elementwise(name: str, op: str, in_dts, out_dt) -> Kernel:
    loads = tuple(Load(i, (Index(0),)) for i in range(len(in_dts)))
    return Kernel(
        name, (N,), 1, tuple(T((N,), d) for d in in_dts), T((N,), out_dt), Apply(op, loads, out_dt)
    )


def _float_inputs(op: str, dt) -> list[np.ndarray]:
    a = RNG.standard_normal(N) * 3
    b = RNG.standard_normal(N) * 3
    a[:8] = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, np.inf, np.nan]
    b[:8] = [1.0, 2.0, -0.0, 3.0, 0.0, np.inf, -1.0, 2.0]
    if op == "power":
        a, b = np.abs(a), np.clip(b, -4, 4)
        a[20:24], b[20:24] = [-2, -3, -0.5, -2], [2, 3, -3, 0.5]
    return [a.astype(dt.np_dtype), b.astype(dt.np_dtype)]


@pytest.mark.parametrize("dt", [F32, F16, dtype("f64")], ids=lambda d: d.name)
def test_float_elementwise_matches_reference(jit, dt) -> None:
    ks = [_elementwise(f"u_{op}", op, [dt], dt) for op in _FLOAT_UNARY]
    ks += [_elementwise(f"b_{op}", op, [dt, dt], dt) for op in _FLOAT_BINARY]
    ks += [
        _elementwise(f"c_{d}", f"compare.{d}", [dt, dt], I1)
        for d in ("EQ", "NE", "GE", "GT", "LE", "LT")
    ]
    ks += [
        _elementwise("isfin", "is_finite", [dt], I1),
        Kernel(
            "sel",
            (N,),
            1,
            (T((N,), I1), T((N,), dt), T((N,), dt)),
            T((N,), dt),
            Apply("select", tuple(Load(i, (Index(0),)) for i in range(3)), dt),
        ),
        Kernel(
            "clamp",
            (N,),
            1,
            (T((N,), dt),),
            T((N,), dt),
            Apply("clamp", (Const(-1.0, dt), Load(0, (Index(0),)), Const(2.0, dt)), dt),
        ),
    ]
    j = jit(ks)
    out = T((N,), dt)
    tol = {"f16": (2e-3, 1e-3), "f32": (3e-6, 1e-6), "f64": (3e-6, 1e-6)}[dt.name]
    for op in _FLOAT_UNARY:
        x = _float_inputs(op, dt)[0]
        if op in ("sine", "cosine", "tan", "log", "log_plus_one", "sqrt", "rsqrt"):
            x = np.abs(x) if op not in ("sine", "cosine", "tan") else x
        if op == "tan":
            x = np.clip(x, -1.4, 1.4)  # near a pole any input rounding is amplified
        got, want = j.run(f"u_{op}", x), ref(op, out, x)
        np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1], equal_nan=True, err_msg=op)
    for op in _FLOAT_BINARY:
        a, b = _float_inputs(op, dt)
        got, want = j.run(f"b_{op}", a, b), ref(op, out, a, b)
        rtol = tol[0] * (30 if op == "power" else 1)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=tol[1], equal_nan=True, err_msg=op)
    a, b = _float_inputs("compare", dt)
    a[100:110] = b[100:110]
    for d in ("EQ", "NE", "GE", "GT", "LE", "LT"):
        np.testing.assert_array_equal(
            j.run(f"c_{d}", a, b), ref("compare", T((N,), I1), a, b, direction=d), err_msg=d
        )
    np.testing.assert_array_equal(j.run("isfin", a), np.isfinite(a))
    p = RNG.random(N) < 0.5
    np.testing.assert_array_equal(j.run("sel", p, a, b), np.where(p, a, b))
    np.testing.assert_array_equal(
        j.run("clamp", a), ref("clamp", out, np.array(-1, dt.np_dtype), a, np.array(2, dt.np_dtype))
    )


def _int_inputs(dt) -> list[np.ndarray]:
    info = np.iinfo(dt.np_dtype)
    a = RNG.integers(info.min, info.max, N, dtype=np.int64)
    b = RNG.integers(info.min, info.max, N, dtype=np.int64)
    small = RNG.integers(-9 if info.min < 0 else 0, 9, N)
    b[N // 2 :] = small[N // 2 :]  # small divisors, shift amounts and exponents
    a[:6] = [info.min, info.min, 7, -7 if info.min < 0 else 7, 0, info.max]
    b[:6] = [-1 if info.min < 0 else 1, 0, 0, 2, 5, -3 if info.min < 0 else 3]
    return [a.astype(dt.np_dtype), b.astype(dt.np_dtype)]


@pytest.mark.parametrize("dt", [I8, dtype("i16"), I32, I64, U8], ids=lambda d: d.name)
def test_integer_elementwise_matches_reference(jit, dt) -> None:
    ks = [_elementwise(f"u_{op}", op, [dt], dt) for op in _INT_UNARY]
    ks += [_elementwise(f"b_{op}", op, [dt, dt], dt) for op in _INT_BINARY]
    ks += [
        _elementwise(f"c_{d}", f"compare.{d}", [dt, dt], I1)
        for d in ("EQ", "NE", "GE", "GT", "LE", "LT")
    ]
    j = jit(ks)
    out = T((N,), dt)
    a, b = _int_inputs(dt)
    for op in _INT_UNARY:
        np.testing.assert_array_equal(j.run(f"u_{op}", a), ref(op, out, a), err_msg=op)
    for op in _INT_BINARY:
        bb = b
        if op == "power":
            bb = np.abs(b % 8).astype(dt.np_dtype)  # numpy refuses negative int powers
        with np.errstate(all="ignore"):
            want = ref(op, out, a, bb)
        np.testing.assert_array_equal(j.run(f"b_{op}", a, bb), want, err_msg=op)
    for d in ("EQ", "NE", "GE", "GT", "LE", "LT"):
        np.testing.assert_array_equal(
            j.run(f"c_{d}", a, b), ref("compare", T((N,), I1), a, b, direction=d)
        )


def test_bool_ops(jit) -> None:
    ks = [
        _elementwise(f"b_{op}", op, [I1, I1], I1)
        for op in ("add", "multiply", "maximum", "minimum", "and", "or", "xor")
    ]
    ks.append(_elementwise("not", "not", [I1], I1))
    j = jit(ks)
    a, b = RNG.random(N) < 0.5, RNG.random(N) < 0.5
    for op in ("add", "multiply", "maximum", "minimum", "and", "or", "xor"):
        np.testing.assert_array_equal(j.run(f"b_{op}", a, b), ref(op, T((N,), I1), a, b))
    np.testing.assert_array_equal(j.run("not", a), ~a)


_CONVERTS = [
    ("f32", "i8"),
    ("f32", "ui8"),
    ("f32", "i32"),
    ("f32", "i64"),
    ("f32", "i1"),
    ("f32", "f16"),
    ("f16", "f32"),
    ("f32", "f64"),
    ("f64", "f32"),
    ("f16", "i8"),
    ("i32", "f32"),
    ("ui8", "f32"),
    ("i8", "i32"),
    ("ui8", "i32"),
    ("i32", "i8"),
    ("i64", "i16"),
    ("i32", "ui8"),
    ("i8", "ui8"),
    ("i32", "i1"),
    ("i1", "f32"),
    ("i1", "i32"),
    ("i64", "f32"),
    ("f64", "i32"),
    ("i8", "f16"),
]


def _saturate(x: np.ndarray, dt) -> np.ndarray:
    """Float -> int as the reference means it: truncate, saturate, NaN -> 0. (The reference
    clips in the float's own precision, where e.g. f32(2**31 - 1) rounds up to 2**31, so
    its +inf -> i32 wraps to INT_MIN; exact Python ints avoid that.)"""
    info = np.iinfo(dt.np_dtype)
    t = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0, posinf=1e300, neginf=-1e300)
    return np.array([min(max(int(v), info.min), info.max) for v in t], dtype=dt.np_dtype)


def test_convert_matches_reference(jit) -> None:
    ks = [_elementwise(f"cv_{s}_{d}", "convert", [dtype(s)], dtype(d)) for s, d in _CONVERTS]
    j = jit(ks)
    for s, d in _CONVERTS:
        sd, dd = dtype(s), dtype(d)
        if sd.is_float:
            x = RNG.standard_normal(N) * 200
            x[:10] = [np.nan, np.inf, -np.inf, 1e10, -1e10, 127.9, -128.9, 255.5, -0.7, 0.0]
            x[10:14] = [3e9, -3e9, 2.5, -2.5]
        elif sd.kind == "b":
            x = RNG.random(N) < 0.5
        else:
            info = np.iinfo(sd.np_dtype)
            x = RNG.integers(info.min, info.max, N)
        with np.errstate(over="ignore"):
            x = np.asarray(x).astype(sd.np_dtype)
        with np.errstate(all="ignore"):
            want = ref("convert", T((N,), dd), x)
        if sd.is_float and dd.is_integer:
            want = _saturate(x, dd)
        got = j.run(f"cv_{s}_{d}", x)
        if dd.is_float:
            np.testing.assert_array_equal(got, want, err_msg=f"{s}->{d}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{s}->{d}")


def test_bad_kernels_are_rejected(jit) -> None:
    with pytest.raises(EmitError, match="does not hold"):
        jit([Kernel("bad", (4,), 1, (), T((5,)), Const(0.0, F32))])
    with pytest.raises(EmitError, match="unknown_op|'unknown_op'"):
        jit([_elementwise("bad2", "unknown_op", [F32], F32)])
    with pytest.raises(EmitError, match="init"):
        jit([Kernel("bad3", (4, 2), 1, (), T((4,)), Const(0.0, F32), combine="add")])
