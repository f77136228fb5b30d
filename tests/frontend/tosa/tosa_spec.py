"""The TOSA 1.0 specification's pseudo-code for the ops whose integer arithmetic minirt
must match bit for bit, transcribed into plain Python: element by element, with Python
integers (unbounded, so every intermediate is exact) and the spec's own helper names.

It shares nothing with toolchain/frontend/tosa, which builds graph ops instead; the
tests compare the two. Shapes here are small, so loops are fine.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# ---------------------------------------------------------------------- helpers


def bits_range(bits: int, unsigned: bool = False) -> tuple[int, int]:
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def clip(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def wrap(v: int, bits: int) -> int:
    """static_cast to a signed `bits`-wide type: the low bits, as two's complement."""
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def zero_extend(v: int, bits: int) -> int:
    return int(v) & ((1 << bits) - 1)


def apply_scale_32(value: int, multiplier: int, shift: int, double_round: bool = False) -> int:
    assert multiplier >= 0 and 2 <= shift <= 62
    assert -(1 << (shift - 1)) <= value < (1 << (shift - 1))
    round_ = 1 << (shift - 1)
    if double_round:
        if shift > 31 and value >= 0:
            round_ += 1 << 30
        if shift > 31 and value < 0:
            round_ -= 1 << 30
    result = (value * multiplier + round_) >> shift  # Python >> floors: arithmetic
    assert -(1 << 31) <= result < (1 << 31)
    return result


def apply_scale_16(value: int, multiplier: int, shift: int) -> int:
    assert multiplier >= 0 and 2 <= shift <= 62
    result = (value * multiplier + (1 << (shift - 1))) >> shift
    assert -(1 << 31) <= result < (1 << 31)
    return result


def count_leading_zeros(a: int) -> int:
    a = zero_extend(a, 32)
    return 32 - a.bit_length()


def reciprocal_scale(value: int) -> tuple[int, int]:
    assert value > 0
    k = 32 - count_leading_zeros(value - 1)
    numerator = ((1 << 30) + 1) << k
    return numerator // value, 30 + k


def idiv_trunc(a: int, b: int) -> int:
    """C's integer division: toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# ---------------------------------------------------------------------- operators


def rescale(x: np.ndarray, multiplier, shift, input_zp: int, output_zp: int, *,
            scale32: bool, double_round: bool, per_channel: bool, input_unsigned: bool,
            output_unsigned: bool, in_bits: int, out_bits: int) -> np.ndarray:
    """RESCALE on the bit patterns in `x` (signed storage); returns the output's bit
    patterns as signed `out_bits` integers."""
    multiplier = np.atleast_1d(multiplier)
    shift = np.atleast_1d(shift)
    out = np.zeros(x.shape, np.int64)
    for index in np.ndindex(*x.shape):
        in_value = int(x[index])
        if input_unsigned:
            value = zero_extend(in_value, in_bits)
            zp = zero_extend(input_zp, in_bits)
        else:
            value, zp = in_value, input_zp
        value = value - zp
        c = index[-1] if per_channel else 0
        if scale32:
            result = apply_scale_32(value, int(multiplier[c]), int(shift[c]), double_round)
        else:
            result = apply_scale_16(value, int(multiplier[c]), int(shift[c]))
        if output_unsigned:
            result = result + zero_extend(output_zp, out_bits)
            result = clip(result, *bits_range(out_bits, True))
        else:
            result = result + output_zp
            result = clip(result, *bits_range(out_bits))
        out[index] = wrap(result, out_bits)
    return out


def avg_pool2d_int(x: np.ndarray, kernel, stride, pad, input_zp: int, output_zp: int,
                   bits: int = 8) -> np.ndarray:
    n_, ih, iw, c_ = x.shape
    (ky_, kx_), (sy, sx), (pt, pb, pl, pr) = kernel, stride, pad
    oh = (ih + pt + pb - ky_) // sy + 1
    ow = (iw + pl + pr - kx_) // sx + 1
    out = np.zeros((n_, oh, ow, c_), np.int64)
    for n, oy, ox, c in itertools.product(range(n_), range(oh), range(ow), range(c_)):
        acc = count = 0
        for ky, kx in itertools.product(range(ky_), range(kx_)):
            y, xx = oy * sy - pt + ky, ox * sx - pl + kx
            if 0 <= y < ih and 0 <= xx < iw:
                count += 1
                acc += int(x[n, y, xx, c]) - input_zp
        mult, sh = reciprocal_scale(count)
        acc = apply_scale_32(acc, mult, sh, False) + output_zp
        out[n, oy, ox, c] = clip(acc, *bits_range(bits))
    return out


def avg_pool2d_float(x: np.ndarray, kernel, stride, pad) -> np.ndarray:
    n_, ih, iw, c_ = x.shape
    (ky_, kx_), (sy, sx), (pt, pb, pl, pr) = kernel, stride, pad
    oh = (ih + pt + pb - ky_) // sy + 1
    ow = (iw + pl + pr - kx_) // sx + 1
    out = np.zeros((n_, oh, ow, c_), np.float64)
    for n, oy, ox, c in itertools.product(range(n_), range(oh), range(ow), range(c_)):
        vals = [float(x[n, oy * sy - pt + ky, ox * sx - pl + kx, c])
                for ky, kx in itertools.product(range(ky_), range(kx_))
                if 0 <= oy * sy - pt + ky < ih and 0 <= ox * sx - pl + kx < iw]
        out[n, oy, ox, c] = sum(vals) / len(vals)
    return out


def apply_max(a: float, b: float, nan_mode: str = "PROPAGATE") -> float:
    if math.isnan(a) or math.isnan(b):
        if nan_mode == "PROPAGATE":
            return math.nan
        return b if math.isnan(a) else a
    return a if a >= b else b


def apply_min(a: float, b: float, nan_mode: str = "PROPAGATE") -> float:
    if math.isnan(a) or math.isnan(b):
        if nan_mode == "PROPAGATE":
            return math.nan
        return b if math.isnan(a) else a
    return a if a < b else b


def max_pool2d(x: np.ndarray, kernel, stride, pad, nan_mode: str = "PROPAGATE") -> np.ndarray:
    n_, ih, iw, c_ = x.shape
    (ky_, kx_), (sy, sx), (pt, pb, pl, pr) = kernel, stride, pad
    oh = (ih + pt + pb - ky_) // sy + 1
    ow = (iw + pl + pr - kx_) // sx + 1
    out = np.zeros((n_, oh, ow, c_), x.dtype)
    for n, oy, ox, c in itertools.product(range(n_), range(oh), range(ow), range(c_)):
        acc = math.nan if nan_mode == "IGNORE" else -math.inf
        for ky, kx in itertools.product(range(ky_), range(kx_)):
            y, xx = oy * sy - pt + ky, ox * sx - pl + kx
            if 0 <= y < ih and 0 <= xx < iw:
                acc = apply_max(acc, float(x[n, y, xx, c]), nan_mode)
        out[n, oy, ox, c] = acc
    return out


def apply_lookup_s(table: np.ndarray, value: int) -> int:
    clipped = clip(value, -32768, 32767)
    index = (clipped + 32768) >> 7
    fraction = clipped & 0x7F
    base, following = int(table[index]), int(table[index + 1])
    slope = following - base
    assert -32768 <= slope <= 32767
    return (base << 7) + slope * fraction


def table(x: np.ndarray, tab: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.int64)
    for index in np.ndindex(*x.shape):
        v = int(x[index])
        out[index] = int(tab[v + 128]) if x.dtype == np.int8 else apply_lookup_s(tab, v)
    return out


def mul(a: np.ndarray, b: np.ndarray, shift: int, bits: int = 32) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, np.int64)
    for index in np.ndindex(*a.shape):
        v1, v2 = int(a[index]), int(b[index])
        if bits == 32 and shift > 0:
            product = (v1 * v2 + (1 << (shift - 1))) >> shift
            assert -(1 << 31) <= product < (1 << 31)
            out[index] = product
        else:
            out[index] = wrap(v1 * v2, bits)
    return out


def intdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    return np.array([idiv_trunc(int(p), int(q)) for p, q in zip(a.reshape(-1), b.reshape(-1))],
                    np.int64).reshape(a.shape)


def arithmetic_right_shift(a: np.ndarray, b: np.ndarray, round_: bool, bits: int
                           ) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    out = np.zeros(a.shape, np.int64)
    for index in np.ndindex(*a.shape):
        v1, v2 = int(a[index]), int(b[index])
        assert 0 <= v2 < bits
        result = v1 >> v2
        if round_ and v2 > 0 and (v1 >> (v2 - 1)) & 1:
            result += 1
        out[index] = wrap(result, bits)
    return out


def logical_right_shift(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    return np.array([wrap(zero_extend(int(p), bits) >> int(q), bits)
                     for p, q in zip(a.reshape(-1), b.reshape(-1))], np.int64).reshape(a.shape)


def round_half_even(f: float) -> int:
    """round_to_nearest_int: ties to even (Python's round)."""
    return int(round(f))


def cast_float_to_int(x: np.ndarray, bits: int) -> np.ndarray:
    lo, hi = bits_range(bits)
    return np.array([clip(round_half_even(float(v)), lo, hi) for v in x.reshape(-1)],
                    np.int64).reshape(x.shape)


def cast_int_to_int(x: np.ndarray, bits: int) -> np.ndarray:
    return np.array([wrap(int(v), bits) for v in x.reshape(-1)], np.int64).reshape(x.shape)


def negate(x: np.ndarray, input_zp: int, output_zp: int, bits: int) -> np.ndarray:
    lo, hi = bits_range(bits)
    return np.array([clip(output_zp - (int(v) - input_zp), lo, hi) for v in x.reshape(-1)],
                    np.int64).reshape(x.shape)


def clamp(x: np.ndarray, lo: float, hi: float, nan_mode: str = "PROPAGATE") -> np.ndarray:
    return np.array([apply_min(apply_max(float(v), lo, nan_mode), hi, nan_mode)
                     for v in x.reshape(-1)], np.float64).reshape(x.shape)


def argmax(x: np.ndarray, axis: int, nan_mode: str = "PROPAGATE") -> np.ndarray:
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape[:-1], np.int64)
    floating = x.dtype.kind == "f"
    for index in np.ndindex(*moved.shape[:-1]):
        if floating:
            max_value = math.nan if nan_mode == "IGNORE" else -math.inf
        else:
            max_value = float(np.iinfo(x.dtype).min)
        max_index = 0
        for i, v in enumerate(moved[index]):
            result = apply_max(float(v), max_value, nan_mode)
            same = result == max_value or (math.isnan(result) and math.isnan(max_value))
            if not same:
                max_value, max_index = result, i
        out[index] = max_index
    return out


def reduce_max(x: np.ndarray, axis: int, nan_mode: str = "PROPAGATE") -> np.ndarray:
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape[:-1], np.float64)
    for index in np.ndindex(*moved.shape[:-1]):
        acc = math.nan if nan_mode == "IGNORE" else -math.inf
        for v in moved[index]:
            acc = apply_max(acc, float(v), nan_mode)
        out[index] = acc
    return np.expand_dims(out, axis)


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray, input_zp: int, weight_zp: int,
           stride, pad, dilation) -> np.ndarray:
    """CONV2D with an exact accumulator (Python ints, or float64 for floats)."""
    n_, ih, iw, ic_ = x.shape
    oc_, kh, kw, _ = w.shape
    (sy, sx), (pt, pb, pl, pr), (dy, dx) = stride, pad, dilation
    oh = (ih - 1 + pt + pb - (kh - 1) * dy) // sy + 1
    ow = (iw - 1 + pl + pr - (kw - 1) * dx) // sx + 1
    floating = x.dtype.kind == "f"
    out = np.zeros((n_, oh, ow, oc_), np.float64 if floating else np.int64)
    for n, oy, ox, oc in itertools.product(range(n_), range(oh), range(ow), range(oc_)):
        acc = 0.0 if floating else 0
        for ky, kx, ic in itertools.product(range(kh), range(kw), range(ic_)):
            y, xx = oy * sy - pt + ky * dy, ox * sx - pl + kx * dx
            if 0 <= y < ih and 0 <= xx < iw:
                v = x[n, y, xx, ic].item() - input_zp
                acc += v * (w[oc, ky, kx, ic].item() - weight_zp)
        out[n, oy, ox, oc] = acc + bias[0 if bias.size == 1 else oc].item()
    return out


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray, input_zp: int,
                     weight_zp: int, stride, pad, dilation) -> np.ndarray:
    n_, ih, iw, c_ = x.shape
    kh, kw, _, m_ = w.shape
    (sy, sx), (pt, pb, pl, pr), (dy, dx) = stride, pad, dilation
    oh = (ih - 1 + pt + pb - (kh - 1) * dy) // sy + 1
    ow = (iw - 1 + pl + pr - (kw - 1) * dx) // sx + 1
    floating = x.dtype.kind == "f"
    out = np.zeros((n_, oh, ow, c_ * m_), np.float64 if floating else np.int64)
    for n, oy, ox, c, m in itertools.product(range(n_), range(oh), range(ow), range(c_),
                                             range(m_)):
        acc = 0.0 if floating else 0
        for ky, kx in itertools.product(range(kh), range(kw)):
            y, xx = oy * sy - pt + ky * dy, ox * sx - pl + kx * dx
            if 0 <= y < ih and 0 <= xx < iw:
                acc += (x[n, y, xx, c].item() - input_zp) * (w[ky, kx, c, m].item() - weight_zp)
        out[n, oy, ox, c * m_ + m] = acc + bias[0 if bias.size == 1 else c * m_ + m].item()
    return out


def transpose_conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray, input_zp: int,
                     weight_zp: int, out_pad, stride) -> np.ndarray:
    n_, ih, iw, ic_ = x.shape
    oc_, kh, kw, _ = w.shape
    (pt, pb, pl, pr), (sy, sx) = out_pad, stride
    oh = (ih - 1) * sy + pt + pb + kh
    ow = (iw - 1) * sx + pl + pr + kw
    floating = x.dtype.kind == "f"
    out = np.zeros((n_, oh, ow, oc_), np.float64 if floating else np.int64)
    for n, oy, ox, oc in itertools.product(range(n_), range(oh), range(ow), range(oc_)):
        acc = 0.0 if floating else 0
        for ky, kx, ic in itertools.product(range(kh), range(kw), range(ic_)):
            y, xx = oy - pt - ky, ox - pl - kx
            if 0 <= y < ih * sy and 0 <= xx < iw * sx and y % sy == 0 and xx % sx == 0:
                v = x[n, y // sy, xx // sx, ic].item() - input_zp
                acc += v * (w[oc, ky, kx, ic].item() - weight_zp)
        out[n, oy, ox, oc] = acc + bias[0 if bias.size == 1 else oc].item()
    return out


def matmul(a: np.ndarray, b: np.ndarray, a_zp: int, b_zp: int) -> np.ndarray:
    floating = a.dtype.kind == "f"
    n_, h_, c_ = a.shape
    w_ = b.shape[2]
    out = np.zeros((n_, h_, w_), np.float64 if floating else np.int64)
    for n, h, w in itertools.product(range(n_), range(h_), range(w_)):
        out[n, h, w] = sum((a[n, h, c].item() - a_zp) * (b[n, c, w].item() - b_zp)
                           for c in range(c_))
    return out


def resize(x: np.ndarray, scale, offset, border, mode: str, out_hw) -> np.ndarray:
    n_, ih, iw, c_ = x.shape
    sy_n, sy_d, sx_n, sx_d = scale
    oy_, ox_ = offset
    oh, ow = out_hw
    floating = x.dtype.kind == "f"
    out = np.zeros((n_, oh, ow, c_), np.float64 if floating else np.int64)
    for n, oy, ox, c in itertools.product(range(n_), range(oh), range(ow), range(c_)):
        y, xx = oy * sy_d + oy_, ox * sx_d + ox_
        iy, ix = math.floor(y / sy_n), math.floor(xx / sx_n)
        ry, rx = y - iy * sy_n, xx - ix * sx_n
        dy, dx = (ry / sy_n, rx / sx_n) if floating else (ry, rx)
        uy, ux = (1.0, 1.0) if floating else (sy_n, sx_n)
        iy0, iy1 = max(iy, 0), min(iy + 1, ih - 1)
        ix0, ix1 = max(ix, 0), min(ix + 1, iw - 1)
        if mode == "BILINEAR":
            v00, v01 = x[n, iy0, ix0, c].item(), x[n, iy0, ix1, c].item()
            v10, v11 = x[n, iy1, ix0, c].item(), x[n, iy1, ix1, c].item()
            out[n, oy, ox, c] = (v00 * (uy - dy) * (ux - dx) + v01 * (uy - dy) * dx
                                 + v10 * dy * (ux - dx) + v11 * dy * dx)
        else:
            if floating:
                ty, tx = (iy1 if dy >= 0.5 else iy0), (ix1 if dx >= 0.5 else ix0)
            else:
                ty, tx = (iy1 if 2 * dy >= sy_n else iy0), (ix1 if 2 * dx >= sx_n else ix0)
            out[n, oy, ox, c] = x[n, ty, tx, c].item()
    return out


# ---------------------------------------------------------------------- scatter, control flow


def scatter(values_in: np.ndarray, indices: np.ndarray, input_: np.ndarray) -> np.ndarray:
    """SCATTER. The spec REQUIREs 0 <= k < K and no output element written twice (the
    result is undefined otherwise); minirt's documented choice replaces the two REQUIREs:
    an index out of range writes nothing, and a repeated index takes the last write in
    (n, w) order (docs/tosa.md)."""
    n_, k_, c_ = values_in.shape
    _, w_ = indices.shape
    output = values_in.copy()
    for n, w, c in itertools.product(range(n_), range(w_), range(c_)):
        k = int(indices[n, w])
        if not 0 <= k < k_:  # REQUIRE(0 <= k && k < K)
            continue
        output[n, k, c] = input_[n, w, c]  # REQUIRE(output_modified[n, k, c] == false)
    return output


def cond_if(condition: np.ndarray, then_graph, else_graph, *input_list):
    """COND_IF: the then graph on the input list when condition[0], else the else graph
    (the condition is a one-element bool tensor)."""
    assert condition.size == 1
    return (then_graph if bool(condition.reshape(-1)[0]) else else_graph)(*input_list)


def while_loop(cond_graph, body_graph, *input_list):
    """WHILE_LOOP: the body graph on the values while the cond graph gives true."""
    values = list(input_list)
    while bool(np.asarray(cond_graph(*values)).reshape(-1)[0]):
        values = list(body_graph(*values))
    return values
