"""TOSA's integer scaling, exactly as the specification's pseudo-code computes it, out of
plain 64-bit integer graph ops (every board has i64 multiply, add and shift: natively or
through the compiler helpers of its libgcc).

    apply_scale_32(value, multiplier, shift, double_round):
        round = 1 << (shift - 1)
        if double_round and shift > 31: round += value >= 0 ? 1 << 30 : -(1 << 30)
        return (value * multiplier + round) >> shift          // arithmetic shift
    apply_scale_16(value, multiplier, shift) = the same without double rounding

RESCALE adds zero points and unsigned inputs / outputs around it; AVG_POOL2D divides by
its window count through `reciprocal_scale` and the same function. TOSA's INEXACT_ROUND
allows any result within its error bound; the exact single rounding meets it, so minirt
computes that.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.frontend.tosa.context import I64, TosaError, TosaOp
from toolchain.graph.ir import Tensor
from toolchain.types import DType

__all__ = ["apply_scale", "reciprocal_scale", "rescale"]

ROUNDING_MODES = ("SINGLE_ROUND", "INEXACT_ROUND", "DOUBLE_ROUND")


def apply_scale(t: TosaOp, value: Tensor, multiplier: np.ndarray, shift: np.ndarray,
                double_round: bool, place: Callable[[np.ndarray], Tensor]) -> Tensor:
    """apply_scale_32 / _16 on an i64 `value`; `place` turns an array of per-channel (or
    per-position) parameters into an i64 tensor of value's shape."""
    shift = np.asarray(shift, np.int64)
    multiplier = np.asarray(multiplier, np.int64)
    if np.any(shift < 0) or np.any(shift > 62):
        raise TosaError(f"shift {shift.tolist()} is outside 0..62")
    if np.any(multiplier < 0):
        raise TosaError(f"multiplier {multiplier.tolist()} is negative")
    # The spec requires shift >= 2; a shift of 0 or 1 is given its natural meaning
    # (no rounding term, or 1/2).
    rounding = np.where(shift > 0, np.left_shift(np.int64(1), np.maximum(shift - 1, 0)), 0)
    product = t.node("multiply", [value, place(multiplier)])
    if double_round and np.any(shift > 31):
        extra = np.where(shift > 31, np.int64(1 << 30), np.int64(0))
        positive = t.node("compare", [value, t.splat(0, I64, value.type.shape)],
                          direction="GE")
        term = t.node("select", [positive, place(rounding + extra), place(rounding - extra)])
    else:
        term = place(rounding)
    total = t.node("add", [product, term])
    return t.node("shift_right_arithmetic", [total, place(shift)])


def reciprocal_scale(count: int) -> tuple[int, int]:
    """TOSA's reciprocal_scale: (multiplier, shift) with multiplier / 2**shift ~ 1 /
    count, for AVG_POOL2D's integer division."""
    k = (count - 1).bit_length()  # 32 - clz(count - 1): (1 << k) / 2 < count <= 1 << k
    numerator = ((1 << 30) + 1) << k
    return numerator // count, 30 + k


def _extend(t: TosaOp, x: Tensor, unsigned: bool) -> Tensor:
    """x widened to i64, zero-extended when its bits are an unsigned value."""
    wide = t.convert(x, I64)
    if unsigned and x.type.dtype.kind == "i":
        mask = (1 << x.type.dtype.bits) - 1
        wide = t.node("and", [wide, t.splat(mask, I64, x.type.shape)])
    return wide


def _bits(value: int, dt: DType, unsigned: bool) -> int:
    """A zero point as the value its bits mean: zero-extended when unsigned."""
    return int(value) & ((1 << dt.bits) - 1) if unsigned else int(value)


def _zero_point(t: TosaOp, index: int, attr: str, dt: DType, unsigned: bool,
                what: str) -> int:
    return _bits(int(t.zero_point(index, attr, what)), dt, unsigned)


def _params(t: TosaOp, index: int, attr: str, what: str) -> np.ndarray:
    """Multipliers or shifts: operand `index` in TOSA 1.0, attribute `attr` before."""
    if t.has_input(index):
        return t.constant(index, what).astype(np.int64).reshape(-1)
    return np.asarray(t.ints(attr), np.int64)


def rescale(t: TosaOp) -> Tensor:
    """RESCALE: (x - input_zp) scaled by multiplier / 2**shift (per tensor or per
    channel along the last axis), + output_zp, saturated to the output type."""
    x = t.input(0, "input")
    out = t.result()
    in_dt, out_dt = x.type.dtype, out.dtype
    if not (in_dt.is_integer and out_dt.is_integer):
        raise TosaError(f"rescales integers, not {in_dt} to {out_dt}")
    scale32 = t.flag("scale32", True)
    if t.attr("rounding_mode") is not None:
        mode = t.enum("rounding_mode", ROUNDING_MODES)
    else:  # before TOSA 1.0: a double_round flag
        mode = "DOUBLE_ROUND" if t.flag("double_round") else "SINGLE_ROUND"
    if not scale32 and mode == "DOUBLE_ROUND":
        raise TosaError("DOUBLE_ROUND needs scale32 = true")
    in_unsigned = t.flag("input_unsigned") or in_dt.kind == "u"
    out_unsigned = t.flag("output_unsigned") or out_dt.kind == "u"
    if in_unsigned and out_unsigned:
        raise TosaError("input_unsigned and output_unsigned cannot both be true")
    multiplier = _params(t, 1, "multiplier", "multiplier")
    shift = _params(t, 2, "shift", "shift")
    in_zp = _zero_point(t, 3, "input_zp", in_dt, in_unsigned, "input_zp")
    out_zp = _zero_point(t, 4, "output_zp", out_dt, out_unsigned, "output_zp")
    _check_zero_point(in_dt, in_zp, in_unsigned, "input_zp")
    _check_zero_point(out_dt, out_zp, out_unsigned, "output_zp")
    shape = tuple(x.type.shape)
    per_channel = t.flag("per_channel")
    channels = shape[-1] if per_channel and shape else 1
    if per_channel and not shape:
        raise TosaError("per_channel needs an input of rank 1 or more")
    for name, values in (("multiplier", multiplier), ("shift", shift)):
        if values.size != channels:
            raise TosaError(f"has {values.size} {name} values for {channels} "
                            f"channel{'s' if channels != 1 else ''}")
    limit = (1 << 31) if scale32 else (1 << 15)
    if np.any(multiplier >= limit):
        raise TosaError(f"multiplier {multiplier.tolist()} does not fit "
                        f"{'32' if scale32 else '16'} signed bits")

    def place(values: np.ndarray) -> Tensor:
        if per_channel:
            return t.b.along(values, I64, shape, len(shape) - 1)
        return t.splat(int(np.asarray(values).reshape(-1)[0]), I64, shape)

    value = _extend(t, x, in_unsigned)
    if in_zp:
        value = t.node("subtract", [value, t.splat(in_zp, I64, shape)])
    scaled = apply_scale(t, value, multiplier, shift, mode == "DOUBLE_ROUND", place)
    if out_zp:
        scaled = t.node("add", [scaled, t.splat(out_zp, I64, shape)])
    bits = out_dt.bits
    lo, hi = (0, (1 << bits) - 1) if out_unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    clamped = t.node("clamp", [t.b.const(lo, I64), scaled, t.b.const(hi, I64)])
    return t.convert(clamped, out_dt)  # wraps: an unsigned result keeps its bits


def _check_zero_point(dt: DType, zp: int, unsigned: bool, what: str) -> None:
    """RESCALE's zero point rules: any value for 8-bit types, 0 or 32768 for unsigned
    16-bit ones, 0 otherwise."""
    if dt.bits == 8 or zp == 0:
        return
    if dt.bits == 16 and unsigned and zp == 32768:
        return
    raise TosaError(f"{what} {zp} is not allowed for {'unsigned ' if unsigned else ''}{dt}")
