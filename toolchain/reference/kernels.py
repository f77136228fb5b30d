"""Reference semantics of every graph op, written for clarity over speed.

Floats are computed in the tensor's own precision, except that contractions,
reductions and the FFT compute in float64 and round once: that is the most accurate f32
answer, so a compiled kernel's error can be judged against it. bf16, which the host
holds in float32, is computed in float32 (or float64) and every result is rounded once
to bf16 (`_result`), as the compiled kernels do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.graph.ir import Node
from toolchain.reference import (
    custom_call,  # noqa: F401  (fills KERNELS["custom_call"])
    special,
)
from toolchain.reference.linalg import KERNELS as _LINALG_KERNELS
from toolchain.reference.regions import KERNELS as _REGION_KERNELS
from toolchain.reference.table import KERNELS, Kernel
from toolchain.types import from_storage_bits, held_in_f32, storage_bits, to_dtype


def _out_dtype(node: Node, i: int = 0) -> np.dtype:
    return node.outputs[i].type.dtype.np_dtype


def _result(node: Node, x: Any, i: int = 0) -> np.ndarray:
    """x, computed in a type at least as wide as output i's, as that output: rounded once
    (bf16 included) or wrapped."""
    dt = node.outputs[i].type.dtype
    if not hasattr(dt, "name"):
        # The kernel interpreter's stand-in node carries only a numpy dtype.
        return np.asarray(x).astype(dt.np_dtype)
    return to_dtype(np.asarray(x), dt)


def _acc_dtype(dt: np.dtype) -> np.dtype:
    if dt.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.int64) if dt.kind in "iu" else dt


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # StableHLO integer division truncates toward zero (like C), numpy floors: round the
    # floored quotient up when it was inexact and negative. (No abs(): abs(INT_MIN)
    # overflows.)
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    with np.errstate(all="ignore"):
        q = a // safe
        inexact_negative = ((a % safe) != 0) & ((a < 0) != (safe < 0))
    return (q + inexact_negative.astype(a.dtype)).astype(a.dtype)


def _int_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a - _int_div(a, b) * b).astype(a.dtype)


def _round_afz(x: np.ndarray) -> np.ndarray:
    # copysign keeps -0.0 (and the sign of a negative value rounding to zero), which
    # sign(x) * ... turned into +0.0 (found by the random graph fuzzer: atan2 of it).
    return np.copysign(np.floor(np.abs(x) + 0.5), x).astype(x.dtype)


def _real_sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1, and the spec's -0.0 for -0.0 (numpy's sign gives +0.0), NaN for NaN."""
    return np.where(x == 0, x, np.sign(x)).astype(x.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        # float64 (complex128), rounded once to the result type by _unary.
        return 1.0 / (1.0 + np.exp(-x.astype(np.complex128 if x.dtype.kind == "c"
                                               else np.float64)))


def _cbrt(x: np.ndarray) -> np.ndarray:
    """The real cube root, or a complex value's principal one, exp(log z / 3)."""
    if x.dtype.kind != "c":
        return np.cbrt(x)
    return np.exp(np.log(x.astype(np.complex128)) / 3)


def _atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """numpy's arctan2; for complex operands the interpreter's definition,
    -i log((x + i y) / sqrt(x**2 + y**2)), in complex128."""
    if x.dtype.kind != "c":
        return np.arctan2(y, x)
    y, x = y.astype(np.complex128), x.astype(np.complex128)
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _log1p(x: np.ndarray) -> np.ndarray:
    """numpy's log1p; for complex z with |z| < 1/2 the modulus' log as
    log1p(2a + a**2 + b**2) / 2 (numpy's takes log |1 + z|, losing what 1 + z rounds
    off), in complex128."""
    if x.dtype.kind != "c":
        return np.log1p(x)
    z = x.astype(np.complex128)
    a, b = z.real, z.imag
    near = 0.5 * np.log1p(a * (2 + a) + b * b) + 1j * np.arctan2(b, 1 + a)
    return np.where(np.abs(z) < 0.5, near, np.log1p(z))


def _bits(x: np.ndarray) -> tuple[np.ndarray, int]:
    """The two's-complement bit pattern of x zero-extended to uint64, and the width."""
    width = x.dtype.itemsize * 8
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64), width


def _from_bits(u: np.ndarray, like: np.dtype) -> np.ndarray:
    """The low bits of u as an array of dtype `like` (wrapping, like C)."""
    return u.astype(np.dtype(f"u{like.itemsize}")).view(like)


def _clz(x: np.ndarray) -> np.ndarray:
    u, width = _bits(x)
    n = np.full(x.shape, width, dtype=np.int64)
    for i in range(width):
        n = np.where((u >> np.uint64(i)) != 0, width - 1 - i, n)
    return n.astype(x.dtype)


def _popcnt(x: np.ndarray) -> np.ndarray:
    u, width = _bits(x)
    n = np.zeros(x.shape, dtype=np.int64)
    for i in range(width):
        n += ((u >> np.uint64(i)) & np.uint64(1)).astype(np.int64)
    return n.astype(x.dtype)


def _int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """StableHLO integer power: by squaring, wrapping like the type. A negative exponent
    (signed types) gives 1 / a**-b truncated: 1 for a base of 1, -1 or 1 by the
    exponent's parity for -1, else 0 (0 included: no division by zero). This is what
    the StableHLO interpreter does; numpy refuses negative exponents instead."""
    a, b = np.broadcast_arrays(a, b)
    base, width = _bits(a)
    exp, _ = _bits(b)
    result = np.ones(a.shape, dtype=np.uint64)
    one = np.uint64(1)
    for _ in range(width):  # every exponent bit; products wrap modulo 2**64, then width
        result = np.where(exp & one, result * base, result)
        base = base * base
        exp = exp >> one
    if a.dtype.kind == "i":
        odd = (b & 1) != 0
        by_negative = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        result = np.where(b < 0, by_negative.astype(np.int64).view(np.uint64), result)
    return _from_bits(result, a.dtype)


def _float_or_int(f: Callable, i: Callable) -> Kernel:
    return lambda a, b: (f if a.dtype.kind in "fc" else i)(a, b)


def _shift(kind: str) -> Kernel:
    """StableHLO shifts: a count outside [0, width) gives 0, or the sign for arithmetic."""

    def k(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        u, width = _bits(a)
        big = (b < 0) | (b >= width)
        count = np.where(big, 0, b).astype(np.uint64)
        if kind == "left":
            r = np.where(big, np.uint64(0), u << count)
        elif kind == "logical":
            r = np.where(big, np.uint64(0), u >> count)
        else:
            # The bit pattern's top bit is the sign, unsigned types included (like LLVM's
            # ashr); numpy's >> on signed integers is arithmetic.
            signed = a.view(np.dtype(f"i{a.dtype.itemsize}")).astype(np.int64)
            r = np.where(big, signed >> np.int64(63), signed >> count.astype(np.int64))
            r = r.view(np.uint64)
        return _from_bits(r, a.dtype)

    return k


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _srdhm(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """saturating_rounding_doubling_high_mul: a * b / 2**31 rounded to nearest, ties
    toward +infinity (a nudge of 2**30, or 1 - 2**30 below zero, then division toward
    zero), and INT32_MAX for the one product that overflows, INT32_MIN * INT32_MIN."""
    ab = a.astype(np.int64) * b.astype(np.int64)
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    high = _int_div(ab + nudge, np.full(ab.shape, 1 << 31, dtype=np.int64))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, high).astype(np.int32)


def _rdbpot(node: Node, x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """rounding_divide_by_pot: x / 2**e rounded to nearest, ties away from zero, by an
    arithmetic shift and a correction; e is clamped to [0, 31]."""
    x = x.astype(np.int64)
    e = np.clip(e.astype(np.int64), 0, 31)
    mask = (np.int64(1) << e) - 1
    threshold = (mask >> 1) + (x < 0)
    return ((x >> e) + ((x & mask) > threshold)).astype(np.int32)


def _unary(f: Callable) -> Kernel:
    def k(node: Node, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _result(node, f(x))

    return k


def _binary(f: Callable) -> Kernel:
    def k(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _result(node, f(a, b))

    return k


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
            "GT": np.greater, "LE": np.less_equal, "LT": np.less}
# and / or are bitwise on integers (StableHLO's `and` / `or`), logical on i1.
_REDUCE = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or}


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered like IEEE 754 totalOrder of the floats x: -NaN < -inf <
    ... < -0 < +0 < ... < +inf < +NaN (negative floats' magnitude bits flipped)."""
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    width = x.dtype.itemsize * 8
    return bits ^ ((bits >> (width - 1)) & ((1 << (width - 1)) - 1))


def _compare(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if node.attrs.get("total_order"):
        a, b = total_order_key(np.asarray(a)), total_order_key(np.asarray(b))
    return _COMPARE[node.attrs["direction"]](a, b)


def _select(node: Node, p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(p, a, b)


def _clamp(node: Node, lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)


def _convert(node: Node, x: np.ndarray) -> np.ndarray:
    dt = _out_dtype(node)
    if x.dtype.kind == "c" and dt.kind != "c":
        x = x.real  # complex -> other types: the imaginary part is ignored (the spec)
    if dt.kind == "b":
        return x != 0
    if x.dtype.kind == "f" and dt.kind in "iu":
        return _saturate(x, dt)
    return _result(node, x)


def _saturate(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Float -> int truncates toward zero and saturates (NaN -> 0), like C + clamp. The
    bounds are compared as powers of two, which float64 holds exactly: int64's max as a
    float is 2**63 and would overflow the cast."""
    info = np.iinfo(dt)
    t = np.trunc(x.astype(np.float64))
    high = t >= 2.0 ** (info.bits - (1 if info.min < 0 else 0))
    low = t <= float(info.min)  # 0 or -2**(bits-1): exact
    inside = np.where(high | low | np.isnan(t), 0.0, t).astype(dt)
    return np.where(high, info.max, np.where(low, info.min, inside)).astype(dt)


def _broadcast(node: Node, x: np.ndarray) -> np.ndarray:
    shape = node.attrs["shape"]
    dims = node.attrs["dims"]
    # The spec lets broadcast dims come in any order: operand dims are first put in the
    # order of the result dims they go to.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = x.transpose(order)
    expanded = [1] * len(shape)
    for i, d in enumerate(sorted(dims)):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape).copy()


def _slice(node: Node, x: np.ndarray) -> np.ndarray:
    at = node.attrs
    return x[tuple(slice(s, e, st) for s, e, st in zip(at["start"], at["limit"], at["strides"]))]


def _pad(node: Node, x: np.ndarray, value: np.ndarray) -> np.ndarray:
    at = node.attrs
    # Interior padding first, then edge padding; negative edges crop.
    shape = [d + max(d - 1, 0) * it for d, it in zip(x.shape, at["interior"])]
    inner = np.full(shape, value, dtype=x.dtype)
    inner[tuple(slice(None, None, it + 1) for it in at["interior"])] = x
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(at["low"], at["high"])]
    out = np.pad(inner, grow, constant_values=value)
    crop = tuple(slice(-min(lo, 0), out.shape[i] + min(hi, 0))
                 for i, (lo, hi) in enumerate(zip(at["low"], at["high"])))
    return out[crop]


def _iota(node: Node) -> np.ndarray:
    shape = node.attrs["shape"]
    d = node.attrs["dimension"]
    ramp = np.arange(shape[d]).reshape([-1 if i == d else 1 for i in range(len(shape))])
    return _result(node, np.broadcast_to(ramp, shape))


def _dot_general(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    at = node.attrs
    lb, rb, lc, rc = at["lhs_batch"], at["rhs_batch"], at["lhs_contract"], at["rhs_contract"]
    lf = [i for i in range(a.ndim) if i not in lb + lc]
    rf = [i for i in range(b.ndim) if i not in rb + rc]
    acc = _acc_dtype(_out_dtype(node))
    a2 = a.transpose(list(lb) + lf + list(lc)).astype(acc)
    b2 = b.transpose(list(rb) + list(rc) + rf).astype(acc)
    nb = int(np.prod([a.shape[i] for i in lb], dtype=np.int64))
    m = int(np.prod([a.shape[i] for i in lf], dtype=np.int64))
    k = int(np.prod([a.shape[i] for i in lc], dtype=np.int64))
    n = int(np.prod([b.shape[i] for i in rf], dtype=np.int64))
    out = np.matmul(a2.reshape(nb, m, k), b2.reshape(nb, k, n))
    shape = [a.shape[i] for i in lb] + [a.shape[i] for i in lf] + [b.shape[i] for i in rf]
    return _result(node, out.reshape(shape))


def _convolution(node: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Direct convolution over canonical layouts: x -> [N, C, *S], w -> [O, I, *K]."""
    at = node.attrs
    nsp = len(at["input_spatial"])
    acc = _acc_dtype(_out_dtype(node))
    xc = x.transpose([at["input_batch"], at["input_feature"], *at["input_spatial"]]).astype(acc)
    wc = w.transpose([at["kernel_output"], at["kernel_input"], *at["kernel_spatial"]]).astype(acc)
    # lhs dilation = zeros between input elements; then edge padding (may be negative).
    if any(d != 1 for d in at["lhs_dilation"]):
        shape = list(xc.shape[:2]) + [(s - 1) * d + 1 for s, d in
                                      zip(xc.shape[2:], at["lhs_dilation"])]
        dil = np.zeros(shape, dtype=acc)
        dil[(slice(None), slice(None)) + tuple(slice(None, None, d)
                                               for d in at["lhs_dilation"])] = xc
        xc = dil
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in at["padding"]]
    xc = np.pad(xc, grow)
    xc = xc[(slice(None), slice(None)) + tuple(
        slice(-min(lo, 0), xc.shape[2 + i] + min(hi, 0)) for i, (lo, hi) in
        enumerate(at["padding"]))]
    fg, bg = at["feature_group_count"], at["batch_group_count"]
    n, c = xc.shape[:2]
    o, ci = wc.shape[:2]
    ksz = wc.shape[2:]
    rd = at["rhs_dilation"]
    strides = at["strides"]
    out_sp = [0 if xc.shape[2 + i] < (ksz[i] - 1) * rd[i] + 1 else
              (xc.shape[2 + i] - (ksz[i] - 1) * rd[i] - 1) // strides[i] + 1 for i in range(nsp)]
    out = np.zeros([n // bg, o] + out_sp, dtype=acc)
    for kidx in np.ndindex(*ksz):
        # The input window element each output position sees for this kernel tap.
        sl = tuple(slice(kidx[i] * rd[i], kidx[i] * rd[i] + (out_sp[i] - 1) * strides[i] + 1,
                         strides[i]) for i in range(nsp))
        patch = xc[(slice(None), slice(None)) + sl]  # [N, C, *out_sp]
        tap = wc[(slice(None), slice(None)) + kidx]  # [O, I]
        if bg > 1:
            pb = patch.reshape(bg, n // bg, c, *out_sp)
            tb = tap.reshape(bg, o // bg, ci)
            out += np.einsum("gnc...,goc->gno...", pb, tb).transpose(
                1, 0, 2, *range(3, 3 + nsp)).reshape(out.shape)
        else:
            pg = patch.reshape(n, fg, c // fg, *out_sp)
            tg = tap.reshape(fg, o // fg, ci)
            out += np.einsum("ngc...,goc->ngo...", pg, tg).reshape(out.shape)
    perm = [0] * (nsp + 2)
    perm[at["output_batch"]] = 0
    perm[at["output_feature"]] = 1
    for i, d in enumerate(at["output_spatial"]):
        perm[d] = 2 + i
    return _result(node, out.transpose(perm))


def _reduce(node: Node, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    kind, dims = node.attrs["kind"], tuple(node.attrs["dims"])
    ufunc = _REDUCE[kind]
    wide = x.astype(_acc_dtype(x.dtype)) if kind in ("add", "multiply") else x
    r = ufunc.reduce(wide, axis=dims) if dims else wide
    # The init in the accumulator's type: numpy takes int64 + uint64 to float64, which
    # rounded a ui64 sum to 53 bits (found by the random graph fuzzer).
    return _result(node, ufunc(r, np.asarray(init).astype(r.dtype)))


def _reduce_window(node: Node, x: np.ndarray, init: np.ndarray) -> np.ndarray:
    at = node.attrs
    kind = at["kind"]
    ufunc = _REDUCE[kind]
    wide = x.astype(_acc_dtype(x.dtype)) if kind in ("add", "multiply") else x
    if any(d != 1 for d in at["base_dilations"]):
        shape = [(s - 1) * d + 1 for s, d in zip(x.shape, at["base_dilations"])]
        dil = np.full(shape, init, dtype=wide.dtype)
        dil[tuple(slice(None, None, d) for d in at["base_dilations"])] = wide
        wide = dil
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in at["padding"]]
    wide = np.pad(wide, grow, constant_values=init)
    wide = wide[tuple(slice(-min(lo, 0), wide.shape[i] + min(hi, 0))
                      for i, (lo, hi) in enumerate(at["padding"]))]
    out_shape = node.outputs[0].type.shape
    out = np.full(out_shape, init, dtype=wide.dtype)
    for widx in np.ndindex(*at["window"]):
        sl = tuple(slice(widx[i] * at["window_dilations"][i],
                         widx[i] * at["window_dilations"][i]
                         + (out_shape[i] - 1) * at["strides"][i] + 1, at["strides"][i])
                   for i in range(x.ndim))
        out = ufunc(out, wide[sl])
    return _result(node, out)


def _gather(node: Node, operand: np.ndarray, indices: np.ndarray) -> np.ndarray:
    at = node.attrs
    ivd = at["index_vector_dim"]
    idx = indices if ivd < indices.ndim else indices[..., None]
    idx = np.moveaxis(idx, ivd if ivd < indices.ndim else -1, -1)
    batch_shape = idx.shape[:-1]
    sizes = at["slice_sizes"]
    collapsed = set(at["collapsed_slice_dims"]) | set(at["operand_batching_dims"])
    out_shape = node.outputs[0].type.shape
    offset_dims = at["offset_dims"]
    batch_dims = [d for d in range(len(out_shape)) if d not in offset_dims]
    out = np.empty(out_shape, dtype=operand.dtype)
    for bidx in np.ndindex(*batch_shape):
        start = [0] * operand.ndim
        for k, od in enumerate(at["start_index_map"]):
            start[od] = int(idx[bidx + (k,)])
        for ob, ib in zip(at["operand_batching_dims"], at["start_indices_batching_dims"]):
            pos = ib if ib < ivd or ivd >= indices.ndim else ib - 1
            start[ob] = bidx[pos]
        # Starts are clamped so the slice stays inside the operand (StableHLO semantics).
        start = [min(max(s, 0), operand.shape[d] - sizes[d]) for d, s in enumerate(start)]
        piece = operand[tuple(slice(s, s + z) for s, z in zip(start, sizes))]
        piece = piece.reshape([z for d, z in enumerate(sizes) if d not in collapsed])
        target: list[Any] = [slice(None)] * len(out_shape)
        for d, b in zip(batch_dims, bidx):
            target[d] = b
        out[tuple(target)] = piece
    return out


def _clamped_starts(shape: tuple[int, ...], sizes: tuple[int, ...],
                    starts: tuple[np.ndarray, ...]) -> list[int]:
    """Start indices clamped so that the window stays inside (the spec's rule)."""
    return [min(max(int(s), 0), d - z) for s, d, z in zip(starts, shape, sizes)]


def _dynamic_slice(node: Node, x: np.ndarray, *starts: np.ndarray) -> np.ndarray:
    sizes = tuple(node.attrs["slice_sizes"])
    at = _clamped_starts(x.shape, sizes, starts)
    return x[tuple(slice(s, s + z) for s, z in zip(at, sizes))].copy()


def _dynamic_update_slice(node: Node, x: np.ndarray, update: np.ndarray,
                          *starts: np.ndarray) -> np.ndarray:
    at = _clamped_starts(x.shape, update.shape, starts)
    out = x.copy()
    out[tuple(slice(s, s + z) for s, z in zip(at, update.shape))] = update
    return out


def _batch_norm(node: Node, x, scale, offset, mean, var) -> np.ndarray:
    fi = node.attrs["feature_index"]
    shape = [-1 if i == fi else 1 for i in range(x.ndim)]
    r = lambda v: v.reshape(shape).astype(np.float64)  # noqa: E731
    y = (x - r(mean)) / np.sqrt(r(var) + node.attrs["epsilon"]) * r(scale) + r(offset)
    return _result(node, y)


def _dequantize(node: Node, q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    # One f32 multiply per element, exactly what the compiled kernel does.
    axis = node.attrs["axis"]
    s = scale if axis is None else scale.reshape([-1 if i == axis else 1 for i in range(q.ndim)])
    return _result(node, q.astype(scale.dtype) * s)


# ------------------------------------------------------------------ complex, fft, bits


def _complex_wide(f: Callable) -> Callable:
    """f of complex operands in complex128 (rounded once by _result), numpy's own
    ufunc otherwise."""
    return lambda *xs: f(*(x.astype(np.complex128) if x.dtype.kind == "c" else x for x in xs))


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return _real_sign(x)
    # The spec's complex sign: NaN parts give (NaN, NaN), zero gives 0, else z / |z|.
    z = x.astype(np.complex128)
    m = np.abs(z)
    out = np.where(m == 0, 0, z / np.where(m == 0, 1, m))
    return np.where(np.isnan(z.real) | np.isnan(z.imag), complex(np.nan, np.nan), out)


def _make_complex(node: Node, re: np.ndarray, im: np.ndarray) -> np.ndarray:
    z = np.empty(re.shape, _out_dtype(node))
    z.real, z.imag = re, im  # not re + 1j * im: inf * 1j would put a NaN in the real part
    return z


def _real(node: Node, x: np.ndarray) -> np.ndarray:
    return x.real.copy()


def _imag(node: Node, x: np.ndarray) -> np.ndarray:
    return x.imag.copy() if x.dtype.kind == "c" else np.zeros_like(x)


def _fft(node: Node, x: np.ndarray) -> np.ndarray:
    """numpy's FFT in complex128 (float64 for RFFT's operand), rounded once to the result
    type: nearly exact, and independent of the decomposition the firmware computes
    (passes/fft.py), so --check can catch an error in it. Over the last len(fft_length)
    dims; IFFT and IRFFT scale by 1 / n per dim (numpy's default "backward" norm, the
    spec's); IRFFT reads the first n // 2 + 1 bins of its last dim and returns n reals,
    the imaginary parts of bin 0 and (even n) bin n / 2 ignored."""
    lengths = tuple(node.attrs["fft_length"])
    axes = tuple(range(-len(lengths), 0))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    kind = node.attrs["fft_type"]
    if kind == "FFT":
        y = np.fft.fftn(wide, lengths, axes)
    elif kind == "IFFT":
        y = np.fft.ifftn(wide, lengths, axes)
    elif kind == "RFFT":
        y = np.fft.rfftn(wide, lengths, axes)
    else:
        y = np.fft.irfftn(wide, lengths, axes)
    return _result(node, y)


def _bitcast_convert(node: Node, x: np.ndarray) -> np.ndarray:
    """The operand's bytes (little-endian, as every minirt target stores them) read as
    the result type; bf16 and the 8-bit floats, held in float32 on the host, as their
    bit patterns."""
    src, dst = node.inputs[0].type.dtype, node.outputs[0].type.dtype
    if src.kind == "b" or dst.kind == "b":  # i1 is one bit: element k is bit k
        return _bitcast_i1(node, x, src, dst)
    y = _raw_bytes(x, src).view(_stored_dtype(dst)).reshape(node.outputs[0].type.shape)
    return _from_stored(y, dst)


def _raw_bytes(x: np.ndarray, dt: Any) -> np.ndarray:
    """The bytes memory holds for host values x of type dt."""
    if held_in_f32(dt):
        return np.ascontiguousarray(storage_bits(x, dt)).view(np.uint8)
    return np.ascontiguousarray(x, x.dtype.newbyteorder("<")).view(np.uint8)


def _stored_dtype(dt: Any) -> np.dtype:
    """The little-endian numpy dtype of one element of dt in memory."""
    if held_in_f32(dt):
        return np.dtype("<u2") if dt.bits == 16 else np.dtype(np.uint8)
    return dt.np_dtype.newbyteorder("<")


def _from_stored(y: np.ndarray, dt: Any) -> np.ndarray:
    """Host values of type dt from its elements as memory holds them."""
    return from_storage_bits(y, dt) if held_in_f32(dt) else y.astype(dt.np_dtype)


def _bitcast_i1(node: Node, x: np.ndarray, src: Any, dst: Any) -> np.ndarray:
    """bitcast_convert to or from i1, whose elements are single bits (little-endian: the
    last dim's element k is bit k of the wider value)."""
    shape = node.outputs[0].type.shape
    if src.kind == "b" and dst.kind == "b":
        return x.astype(bool).reshape(shape)
    if dst.kind == "b":
        return np.unpackbits(_raw_bytes(x, src), bitorder="little").astype(bool).reshape(shape)
    packed = np.packbits(np.asarray(x, bool).reshape(-1), bitorder="little")
    return _from_stored(packed.view(_stored_dtype(dst)).reshape(shape), dst)


def _rng_bit_generator(node: Node, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """XLA's algorithms in numpy (reference/rng.py); DEFAULT is PHILOX, as in XLA."""
    from toolchain.reference import rng

    algo = node.attrs["algorithm"]
    algo = "PHILOX" if algo == "DEFAULT" else algo
    out = node.outputs[1].type
    bits = rng.rng_bits(state, algo, out.dtype.bits, tuple(out.shape))
    new = rng.new_state(state, algo, out.dtype.bits, tuple(out.shape))
    if held_in_f32(out.dtype):
        value = from_storage_bits(bits, out.dtype)
    elif out.dtype.is_float:
        value = bits.view(out.dtype.np_dtype)
    else:
        value = bits.view(out.dtype.np_dtype)
    return new.astype(state.dtype), value


KERNELS.update({
    "abs": _unary(np.abs), "negate": _unary(np.negative), "sign": _unary(_sign),
    "exponential": _unary(_complex_wide(np.exp)), "exponential_minus_one": _unary(np.expm1),
    "log": _unary(_complex_wide(np.log)), "log_plus_one": _unary(_log1p),
    "logistic": _unary(_logistic), "sqrt": _unary(_complex_wide(np.sqrt)),
    "rsqrt": _unary(lambda x: 1 / np.sqrt(x)), "cbrt": _unary(_cbrt),
    "tanh": _unary(np.tanh), "sine": _unary(np.sin), "cosine": _unary(np.cos),
    "tan": _unary(np.tan), "floor": _unary(np.floor), "ceil": _unary(np.ceil),
    "round_nearest_afz": _unary(_round_afz), "round_nearest_even": _unary(np.rint),
    "not": _unary(lambda x: np.logical_not(x) if x.dtype == bool else np.invert(x)),
    "popcnt": _unary(_popcnt), "count_leading_zeros": _unary(_clz),
    "is_finite": _unary(np.isfinite),
    "add": _binary(np.add), "subtract": _binary(np.subtract), "multiply": _binary(np.multiply),
    "divide": _binary(_float_or_int(np.divide, _int_div)),
    "remainder": _binary(_float_or_int(np.fmod, _int_rem)),
    "maximum": _binary(np.maximum), "minimum": _binary(np.minimum),
    "power": _binary(_float_or_int(np.power, _int_power)), "atan2": _binary(_atan2),
    "and": _binary(lambda a, b: a & b), "or": _binary(lambda a, b: a | b),
    "xor": _binary(lambda a, b: a ^ b),
    "shift_left": _shift("left"), "shift_right_arithmetic": _shift("arith"),
    "shift_right_logical": _shift("logical"),
    "compare": _compare, "select": _select, "clamp": _clamp, "convert": _convert,
    "broadcast_in_dim": _broadcast,
    "reshape": lambda node, x: x.reshape(node.attrs["shape"]),
    "transpose": lambda node, x: x.transpose(node.attrs["permutation"]).copy(),
    "reverse": lambda node, x: np.flip(x, axis=tuple(node.attrs["dims"])).copy(),
    "concatenate": lambda node, *xs: np.concatenate(xs, axis=node.attrs["dimension"]),
    "slice": _slice, "pad": _pad, "iota": _iota, "gather": _gather,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    # Importers round bf16 literals already; a constant a pass builds may not be.
    "constant": lambda node: _result(node, node.attrs["value"]),
    "dot_general": _dot_general, "convolution": _convolution,
    "reduce": _reduce, "reduce_window": _reduce_window, "batch_norm_inference": _batch_norm,
    "dequantize": _dequantize,
    "complex": _make_complex, "real": _real, "imag": _imag, "fft": _fft,
    "bitcast_convert": _bitcast_convert, "rng_bit_generator": _rng_bit_generator,
    "saturating_rounding_doubling_high_mul": _srdhm, "rounding_divide_by_pot": _rdbpot,
})

# Ops with regions run their sub-graphs with the executor (toolchain/reference/regions.py).
KERNELS.update(_REGION_KERNELS)


# CHLO's math functions (toolchain/frontend/chlo.py): computed in float64 and rounded
# once to the result type (toolchain/reference/special.py).
def _float64(f: Callable) -> Kernel:
    def k(node: Node, *xs: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _result(node, f(*(x.astype(np.float64) for x in xs)))

    return k


def _next_after(node: Node, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Steps of the result type's own grid (bf16, held in float32, its own)."""
    bf16 = getattr(node.outputs[0].type.dtype, "name", "") == "bf16"
    return special.next_after(x, y, bf16=bf16)


KERNELS.update({
    "erf": _float64(special.erf), "erfc": _float64(special.erfc),
    "erf_inv": _float64(special.erf_inv), "lgamma": _float64(special.lgamma),
    "digamma": _float64(special.digamma), "bessel_i1e": _float64(special.bessel_i1e),
    "zeta": _float64(special.zeta), "polygamma": _float64(special.polygamma),
    "asin": _float64(np.arcsin), "acos": _float64(np.arccos), "atan": _float64(np.arctan),
    "sinh": _float64(np.sinh), "cosh": _float64(np.cosh), "asinh": _float64(np.arcsinh),
    "acosh": _float64(np.arccosh), "atanh": _float64(np.arctanh),
    "next_after": _next_after,
})

# batch_norm_training / _grad, cholesky, triangular_solve: numpy in float64, written
# independently of the loops passes/linalg.py compiles (toolchain/reference/linalg.py).
KERNELS.update(_LINALG_KERNELS)
