"""The firmware's small float conversions (codegen/mathlib_small_float.py), JIT-compiled on
the host and compared bit for bit with ml_dtypes, the host's conversions: every code of
each format widened to f32, and a sweep of f32 values (tests/small_float_values.py: every
value, every tie and its neighbours, overflow, underflow, NaN, 2**16 random patterns)
narrowed to it; f64 and i32 sources, which go through f32 rounded to odd; and an add,
computed in f32 and rounded once, against the reference executor.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest
from small_float_values import codes, sweep

from toolchain.kernel.form import Apply, Index, Kernel, Load
from toolchain.small_floats import FORMATS, from_bits, to_bits
from toolchain.types import TensorType, dtype, to_dtype

F32, F64, I32 = dtype("f32"), dtype("f64"), dtype("i32")


def _kernel(name: str, n: int, op: str, ins: list, out) -> Kernel:
    loads = tuple(Load(i, (Index(0),)) for i in range(len(ins)))
    return Kernel(name, (n,), 1, tuple(TensorType((n,), d) for d in ins),
                  TensorType((n,), out), Apply(op, loads, out))


def _run(j, name: str, out: np.ndarray, *buffers: np.ndarray) -> np.ndarray:
    """Calls kernel `name` on buffers in their memory layout (small floats as codes)."""
    bufs = [np.ascontiguousarray(b) for b in buffers]
    ptrs = (ctypes.c_void_p * (len(bufs) + 1))(*[b.ctypes.data for b in bufs], out.ctypes.data)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(j.engine.get_function_address(name))(
        ctypes.cast(ptrs, ctypes.c_void_p))
    return out


def _same_f32(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal float32 values, NaN equal to a NaN of the same sign (the formats' NaN codes
    widen to the quiet NaN of their sign)."""
    g, w = got.view(np.uint32), want.view(np.uint32)
    nan = np.isnan(got) & np.isnan(want) & (np.signbit(got) == np.signbit(want))
    bad = (g != w) & ~nan
    assert not bad.any(), (f"{what}: {bad.sum()} differ, first code {np.flatnonzero(bad)[0]}: "
                           f"got {got[bad][0]!r}, want {want[bad][0]!r}")


def _same_codes(x: np.ndarray, got: np.ndarray, want: np.ndarray, what: str,
                fmt=None) -> None:
    """Equal codes; with `fmt`, any two NaN codes equal too (the sign of an arithmetic
    result's NaN is the FPU's choice: IEEE leaves it open)."""
    bad = got != want
    if fmt is not None:
        bad &= ~(np.isnan(from_bits(got, fmt)) & np.isnan(from_bits(want, fmt)))
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} differ; at {x[bad][0]!r} "
                           f"(bits {x[bad][:1].view(np.uint32)[0]:#010x}) got "
                           f"{got[bad][0]:#04x}, want {want[bad][0]:#04x}")


@pytest.mark.parametrize("name", list(FORMATS))
def test_small_float_conversions_match_ml_dtypes(jit, name: str) -> None:
    fmt, dt = FORMATS[name], dtype(name)
    x = sweep(fmt, random=1 << 16)
    c = codes(fmt)
    # f64 values just off the f32 grid near each tie: rounding them to f32 first (to
    # nearest) would land on the tie; the one rounding must see which side they are on.
    wide = x[np.isfinite(x)].astype(np.float64)
    x64 = np.concatenate([wide * (1 + 2.0**-40), wide * (1 - 2.0**-40)])
    ints = np.concatenate([np.arange(-600, 600), [2**24 + 1, -(2**24) - 1, 2**31 - 1,
                                                  -(2**31), 1 << 30, 3 << 29]]).astype(np.int32)
    pair = from_bits(c, fmt)
    a, b = np.repeat(pair, c.size), np.tile(pair, c.size)  # every sum of two values
    j = jit([_kernel("narrow", x.size, "convert", [F32], dt),
             _kernel("widen", c.size, "convert", [dt], F32),
             _kernel("narrow64", x64.size, "convert", [F64], dt),
             _kernel("from_int", ints.size, "convert", [I32], dt),
             _kernel("add", a.size, "add", [dt, dt], dt)])
    _same_codes(x, _run(j, "narrow", np.zeros(x.size, np.uint8), x), to_bits(x, fmt),
                f"{name} from f32")
    want = c.view(fmt.ml_dtype).astype(np.float32) if fmt.bits == 8 else from_bits(c, fmt)
    _same_f32(_run(j, "widen", np.zeros(c.size, np.float32), c), want, f"{name} to f32")
    want64 = x64.astype(fmt.ml_dtype).view(np.uint8)  # ml_dtypes rounds f64 once
    _same_codes(x64.astype(np.float32), _run(j, "narrow64", np.zeros(x64.size, np.uint8), x64),
                want64, f"{name} from f64")
    want_i = to_bits(to_dtype(ints, dt), fmt)
    _same_codes(ints.astype(np.float32), _run(j, "from_int", np.zeros(ints.size, np.uint8),
                                              ints), want_i, f"{name} from i32")
    got_add = _run(j, "add", np.zeros(a.size, np.uint8), to_bits(a, fmt), to_bits(b, fmt))
    with np.errstate(all="ignore"):
        want_add = to_bits(to_dtype(a + b, dt), fmt)
    _same_codes(a, got_add, want_add, f"{name} add", fmt)


def test_small_float_formats_are_ml_dtypes() -> None:
    """The format table agrees with ml_dtypes' own description of each type."""
    for fmt in FORMATS.values():
        info = ml_dtypes.finfo(fmt.ml_dtype)
        assert fmt.max_value == float(info.max), fmt.name
        assert fmt.mantissa_bits == info.nmant, fmt.name
        assert fmt.bits == info.bits, fmt.name
