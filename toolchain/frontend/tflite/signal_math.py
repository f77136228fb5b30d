"""Integer building blocks of the Signal library's kernels, built from graph ops.

TFLite Micro's Signal ops (signal/src in its sources) compute in C integers: wrapping
int16 stores, uint32 / uint64 shifts, a most-significant-bit count, a bit-by-bit square
root and a table-interpolated log. `IntBuilder` writes those as elementwise graph ops on
whole vectors, so every board's code generator and the numpy reference compute them
without a Signal-specific kernel. Scalars given as Python ints become constants of the
other operand's type.
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite.context import OpContext
from toolchain.graph.ir import Tensor

Operand = Tensor | int


class IntBuilder:
    """Elementwise integer expressions over the tensors of one operator's conversion."""

    def __init__(self, ctx: OpContext):
        self.ctx = ctx
        # One node per (value, shape, type): constant folding turns a small broadcast
        # into a full array, and the FFT's stages reuse a few constants hundreds of times.
        self._filled: dict[tuple[int, tuple[int, ...], str], Tensor] = {}

    def _pair(self, a: Tensor, b: Operand) -> Tensor:
        return self.filled(b, a) if isinstance(b, int) else b

    def op(self, name: str, a: Tensor, b: Operand) -> Tensor:
        """Graph op `name` of `a` and `b` (an int becomes a constant like `a`)."""
        return self.ctx.node(name, [a, self._pair(a, b)])

    def add(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("add", a, b)

    def sub(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("subtract", a, b)

    def mul(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("multiply", a, b)

    def shl(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("shift_left", a, b)

    def shr(self, a: Tensor, b: Operand) -> Tensor:
        """`a >> b` as C shifts `a`'s type: arithmetic when signed, logical when not."""
        kind = "shift_right_logical" if a.type.dtype.kind == "u" else "shift_right_arithmetic"
        return self.op(kind, a, b)

    def min(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("minimum", a, b)

    def max(self, a: Tensor, b: Operand) -> Tensor:
        return self.op("maximum", a, b)

    def mask(self, a: Tensor, bits: int) -> Tensor:
        """a & bits elementwise (a C store into a narrower unsigned type, kept wide)."""
        return self.ctx.node("and", [a, self.filled(bits, a)])

    def cmp(self, a: Tensor, direction: str, b: Operand) -> Tensor:
        return self.ctx.node("compare", [a, self._pair(a, b)], direction=direction)

    def where(self, cond: Tensor, a: Operand, b: Operand) -> Tensor:
        like = a if isinstance(a, Tensor) else b
        assert isinstance(like, Tensor)
        return self.ctx.node("select", [cond, self._pair(like, a), self._pair(like, b)])

    def cast(self, a: Tensor, dt: str) -> Tensor:
        """C's conversion to integer type `dt`: wraps modulo 2**bits when narrowing."""
        if a.type.dtype.name == dt:
            return a
        return self.ctx.node("convert", [a], dtype=dt)

    def wrap(self, a: Tensor, dt: str) -> Tensor:
        """A store into a C variable of integer type `dt`, read back at `a`'s type."""
        return self.cast(self.cast(a, dt), a.type.dtype.name)

    def wrap16(self, a: Tensor) -> Tensor:
        """A store into an int16 variable, read back at `a`'s type (kiss_fft's scalars)."""
        return self.wrap(a, "i16")

    def saturate(self, a: Tensor, dt: str) -> Tensor:
        """`a` clamped to integer type `dt`'s range, then converted to it."""
        info = np.iinfo(np.dtype(_NUMPY[dt]))
        return self.cast(self.min(self.max(a, int(info.min)), int(info.max)), dt)

    def lookup(self, table: np.ndarray, index: Tensor, dt: str) -> Tensor:
        """table[index] elementwise, for a constant 1-D table and an in-range index."""
        return self.take(self.ctx.const(np.asarray(table), dt), index)

    def take(self, values: Tensor, index: Tensor) -> Tensor:
        """values[index] elementwise, for a 1-D `values` and an in-range index."""
        ctx = self.ctx
        return ctx.node("gather", [values, self.cast(index, "i32")], offset_dims=(),
                        collapsed_slice_dims=(0,), operand_batching_dims=(),
                        start_indices_batching_dims=(), start_index_map=(0,),
                        index_vector_dim=index.type.rank, slice_sizes=(1,))

    def msb(self, x: Tensor) -> Tensor:
        """MostSignificantBit of an unsigned x: its count of significant bits (x's type).
        0 gives the type's width, as the library's __builtin_clz path does."""
        bits = x.type.dtype.bits
        clz = self.ctx.node("count_leading_zeros", [x])
        return self.where(self.cmp(x, "EQ", 0), bits, self.sub(self.filled(bits, x), clz))

    def filled(self, value: int, like: Tensor) -> Tensor:
        """`value` broadcast to `like`'s shape and element type (shared)."""
        key = (value, like.type.shape, like.type.dtype.name)
        if key not in self._filled:
            self._filled[key] = self.ctx.filled(value, like)
        return self._filled[key]


_NUMPY = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "ui8": "uint8",
          "ui16": "uint16", "ui32": "uint32", "ui64": "uint64"}


def _root_steps(b: IntBuilder, res: Tensor, rest: Tensor, exponents: range
                ) -> tuple[Tensor, Tensor]:
    """The bit-by-bit square root's steps for bit = 4**k, k in `exponents`: where
    rest >= res + bit, rest -= res + bit and res = res / 2 + bit, else res /= 2."""
    for k in exponents:
        bit = 1 << (2 * k)
        trial = b.add(res, bit)
        take = b.cmp(rest, "GE", trial)
        rest = b.where(take, b.sub(rest, trial), rest)
        half = b.shr(res, 1)
        res = b.where(take, b.add(half, bit), half)
    return res, rest


def sqrt64(b: IntBuilder, num: Tensor) -> Tensor:
    """The library's Sqrt64 of a ui64 vector, as ui64: the bit-by-bit square root,
    rounded up once when the remainder exceeds the root (not past 0xFFFF for inputs
    under 2**32, which its Sqrt32 takes, nor past 0xFFFFFFFF).

    The library starts at the highest even bit under num's top bit; starting at bit 62
    for every element only adds leading steps where bit > num, which change nothing, so
    the 32 steps unroll into the same ops for every element. The 16 steps of bits 2**62
    .. 2**32 only ever add multiples of 2**32 (res's bits stay at or above the step's
    bit), so they run on num's high word in 32-bit arithmetic, where every value they
    reach fits (cheaper on 32-bit cores); the low word joins for the last 16."""
    small = b.cmp(num, "LT", 1 << 32)
    high = b.cast(b.shr(num, 32), "ui32")
    res, rest = _root_steps(b, b.filled(0, high), high, range(15, -1, -1))
    res = b.shl(b.cast(res, "ui64"), 32)
    rest = b.ctx.node("or", [b.shl(b.cast(rest, "ui64"), 32), b.mask(num, 0xFFFFFFFF)])
    res, rest = _root_steps(b, res, rest, range(15, -1, -1))
    limit = b.where(small, b.filled(0xFFFF, num), 0xFFFFFFFF)
    bump = b.ctx.node("and", [b.cmp(rest, "GT", res), b.cmp(res, "NE", limit)])
    return b.where(bump, b.add(res, 1), res)


# signal/src/log.cc's table: log2(1 + x) - x over 128 segments of [0, 1), scaled 2**16.
LOG_LUT = np.array([
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646,
    2797, 2944, 3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368,
    4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326,
    5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640,
    5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470, 5439, 5406,
    5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697,
    4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575,
    3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090,
    1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142,
    0, 0], dtype=np.int64)
LOG_SCALE_BITS = 16
LOG_SEGMENT_BITS = 7
LOG_COEFF = 45426  # ln(2) * 2**16


def log32(b: IntBuilder, x: Tensor, out_scale: int) -> Tensor:
    """The library's Log32(x, out_scale) for an i64 x in (1, 2**32): round(ln(x) *
    out_scale) from log2's integer part and a table-interpolated fraction, as i64."""
    integer = b.sub(b.msb(x), 1)
    frac = b.sub(x, b.shl(b.filled(1, x), integer))
    up = b.sub(b.filled(LOG_SCALE_BITS, x), integer)
    frac = b.where(b.cmp(integer, "LT", LOG_SCALE_BITS), b.shl(frac, b.max(up, 0)),
                   b.shr(frac, b.max(b.sub(integer, LOG_SCALE_BITS), 0)))
    base_seg = b.shr(frac, LOG_SCALE_BITS - LOG_SEGMENT_BITS)
    c0 = b.lookup(LOG_LUT, base_seg, "i64")
    c1 = b.lookup(LOG_LUT, b.add(base_seg, 1), "i64")
    seg_base = b.shl(base_seg, LOG_SCALE_BITS - LOG_SEGMENT_BITS)
    rel_pos = b.shr(b.mul(b.sub(c1, c0), b.sub(frac, seg_base)), LOG_SCALE_BITS)
    # The fraction is a uint32 in C: int32 frac + c0 + rel_pos wraps there.
    fraction = b.mask(b.add(b.add(frac, c0), rel_pos), 0xFFFFFFFF)
    log2 = b.mask(b.add(b.shl(integer, LOG_SCALE_BITS), fraction), 0xFFFFFFFF)
    half = 1 << (LOG_SCALE_BITS - 1)
    loge = b.mask(b.shr(b.add(b.mul(log2, LOG_COEFF), half), LOG_SCALE_BITS), 0xFFFFFFFF)
    scaled = b.mask(b.add(b.mul(loge, out_scale), half), 0xFFFFFFFF)
    return b.shr(scaled, LOG_SCALE_BITS)


__all__ = ["LOG_LUT", "IntBuilder", "log32", "sqrt64"]
