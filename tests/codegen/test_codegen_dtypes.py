"""Generated code for unsigned 16/32/64-bit integers, integer power and bf16, JIT-compiled
on the host and compared with the reference executor bit for bit."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.reference.kernels import KERNELS
from toolchain.types import TensorType, bf16_bits, bf16_from_bits, dtype, round_to_bf16

N = 256
I1, F32, BF16 = dtype("i1"), dtype("f32"), dtype("bf16")


def ref(op: str, out, *args: np.ndarray, **attrs) -> np.ndarray:
    node = SimpleNamespace(outputs=[SimpleNamespace(type=TensorType((N,), out))], attrs=attrs)
    with np.errstate(all="ignore"):
        return KERNELS[op](node, *args)


def elementwise(name: str, op: str, ins, out) -> Kernel:
    loads = tuple(Load(i, (Index(0),)) for i in range(len(ins)))
    return Kernel(name, (N,), 1, tuple(TensorType((N,), d) for d in ins), TensorType((N,), out),
                  Apply(op, loads, out))


def run_raw(j, name: str, out_dtype: str, *buffers: np.ndarray) -> np.ndarray:
    """Calls a kernel on buffers in their memory layout (bf16 as uint16 patterns), which
    the shared jit.run cannot build for bf16."""
    bufs = [np.ascontiguousarray(b) for b in buffers]
    out = np.zeros(N, dtype=out_dtype)
    ptrs = (ctypes.c_void_p * (len(bufs) + 1))(*[b.ctypes.data for b in bufs],
                                                 out.ctypes.data)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(j.engine.get_function_address(name))(
        ctypes.cast(ptrs, ctypes.c_void_p))
    return out


def unsigned_values(t, rng) -> np.ndarray:
    info = np.iinfo(t.np_dtype)
    x = rng.integers(0, info.max, N, dtype=t.np_dtype, endpoint=True)
    x[:4] = [0, 1, info.max, info.max // 2 + 1]
    return x


_UNSIGNED_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum",
                    "minimum", "power", "and", "or", "xor", "shift_left",
                    "shift_right_logical", "shift_right_arithmetic"]


@pytest.mark.parametrize("t", ["ui16", "ui32", "ui64"])
def test_unsigned_ops_match_reference(jit, t: str) -> None:
    dt = dtype(t)
    ks = [elementwise(f"b_{op}", op, [dt, dt], dt) for op in _UNSIGNED_BINARY]
    ks += [elementwise(f"c_{d}", f"compare.{d}", [dt, dt], I1) for d in ("LT", "GE", "EQ")]
    ks += [elementwise(f"u_{op}", op, [dt], dt)
           for op in ("abs", "negate", "sign", "not", "popcnt", "count_leading_zeros")]
    ks += [elementwise("to_f32", "convert", [dt], F32), elementwise("from_f32", "convert",
                                                                   [F32], dt),
           elementwise("to_i64", "convert", [dt], dtype("i64")),
           elementwise("from_i8", "convert", [dtype("i8")], dt)]
    j = jit(ks)
    rng = np.random.default_rng(dt.bits)
    a, b = unsigned_values(dt, rng), unsigned_values(dt, rng)
    b[N // 2:] = rng.integers(0, dt.bits + 2, N // 2)  # small divisors, shifts, exponents
    b[4:6] = 0
    for op in _UNSIGNED_BINARY:
        np.testing.assert_array_equal(j.run(f"b_{op}", a, b), ref(op, dt, a, b), err_msg=op)
    for d in ("LT", "GE", "EQ"):
        np.testing.assert_array_equal(j.run(f"c_{d}", a, b),
                                      ref("compare", I1, a, b, direction=d), err_msg=d)
    for op in ("abs", "negate", "sign", "not", "popcnt", "count_leading_zeros"):
        np.testing.assert_array_equal(j.run(f"u_{op}", a), ref(op, dt, a), err_msg=op)
    np.testing.assert_array_equal(j.run("to_f32", a), ref("convert", F32, a))
    f = (rng.standard_normal(N) * 2.0 ** (dt.bits - 2)).astype(np.float32)
    f[:6] = [-1.0, np.nan, np.inf, -np.inf, 2.0 ** dt.bits, 0.99]
    np.testing.assert_array_equal(j.run("from_f32", f), ref("convert", dt, f))
    np.testing.assert_array_equal(j.run("to_i64", a), ref("convert", dtype("i64"), a))
    i8 = rng.integers(-128, 128, N).astype(np.int8)
    np.testing.assert_array_equal(j.run("from_i8", i8), ref("convert", dt, i8))


@pytest.mark.parametrize("t", ["i8", "i32", "i64"])
def test_signed_power_by_negative_exponents_matches_reference(jit, t: str) -> None:
    dt = dtype(t)
    j = jit([elementwise("pow", "power", [dt, dt], dt)])
    info = np.iinfo(dt.np_dtype)
    bases = np.array([1, -1, 2, -2, 0, 3, info.min, info.max], dt.np_dtype)
    exps = np.array([-1, -2, -3, 0, 1, 2, 7, info.min], dt.np_dtype)
    a, b = np.resize(np.repeat(bases, exps.size), N), np.resize(np.tile(exps, bases.size), N)
    np.testing.assert_array_equal(j.run("pow", a, b), ref("power", dt, a, b))


def _via_bf16(name: str, src) -> Kernel:
    """src -> bf16 -> f32: the result buffer holds the bf16 value as float32."""
    narrowed = Apply("convert", (Load(0, (Index(0),)),), BF16)
    return Kernel(name, (N,), 1, (TensorType((N,), src),), TensorType((N,), F32),
                  Apply("convert", (narrowed,), F32))


def test_bf16_conversions_round_once(jit) -> None:
    srcs = ["f32", "f64", "i32", "ui32", "i64", "ui64", "i16"]
    j = jit([_via_bf16(f"cv_{s}", dtype(s)) for s in srcs])
    rng = np.random.default_rng(5)
    for s in srcs:
        dt = dtype(s)
        if dt.is_float:
            x = (rng.standard_normal(N) * 100).astype(dt.np_dtype)
            # Just above / below bf16 ties (rounded to nearest twice these would break),
            # and values past the largest bf16.
            x[:8] = [1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-8 - 2**-30,
                     1 + 2**-8, np.nan, np.inf, 3.4e38, -1e-40]
        else:
            info = np.iinfo(dt.np_dtype)
            x = rng.integers(info.min, info.max, N, dtype=dt.np_dtype, endpoint=True)
            x[:3] = [info.max, info.min, info.max - 1]
            if dt.bits >= 32:
                x[3:6] = [2**24 + 2**16 + 1, 2**24 + 2**16, 2**30 + 2**22 + 2**6]
        want = ref("convert", F32, ref("convert", BF16, x))
        np.testing.assert_array_equal(j.run(f"cv_{s}", x), want, err_msg=s)


def test_bf16_arithmetic_and_reduction_match_reference(jit) -> None:
    ks = [elementwise(f"b_{op}", op, [BF16, BF16], BF16)
          for op in ("add", "multiply", "divide", "maximum")]
    ks.append(Kernel("sum", (N, 8), 1, (TensorType((N, 8), BF16),), TensorType((N,), BF16),
                     Load(0, (Index(0), Index(1))), combine="add", init=Const(0.5, BF16)))
    j = jit(ks)
    rng = np.random.default_rng(6)
    a = round_to_bf16(rng.standard_normal(N).astype(np.float32))
    b = round_to_bf16(rng.standard_normal(N).astype(np.float32))
    for op in ("add", "multiply", "divide", "maximum"):
        got = bf16_from_bits(run_raw(j, f"b_{op}", "uint16", bf16_bits(a), bf16_bits(b)))
        np.testing.assert_array_equal(got, ref(op, BF16, a, b), err_msg=op)
    # Magnitudes in [1, 2): the kernel's f32 accumulator is exact, so rounding its sum
    # once equals the reference's float64 sum rounded once.
    x = round_to_bf16(rng.uniform(1, 2, (N, 8)).astype(np.float32) * rng.choice([-1, 1],
                                                                               (N, 8)))
    got = bf16_from_bits(run_raw(j, "sum", "uint16", bf16_bits(x)))
    node = SimpleNamespace(outputs=[SimpleNamespace(type=TensorType((N,), BF16))],
                           attrs={"kind": "add", "dims": (1,)})
    np.testing.assert_array_equal(got, KERNELS["reduce"](node, x, np.float32(0.5)))
