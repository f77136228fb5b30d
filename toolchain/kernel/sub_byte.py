"""The bit-packed layout of a sub-byte integer operand (`Kernel.bit_packed`).

minirt holds i2 / i4 / ui2 / ui4 values one a byte (sign- or zero-extended) in RAM and
on the host, which keeps every store a byte store. A constant is only ever read, so the
module may store it packed: `8 // bits` elements to a byte, in row-major order, the
first in the low bits (element f sits in byte f // per_byte, bits
(f % per_byte) * bits and up). That is ONNX's layout for INT4 / INT2 tensors and the
one GGML and the int4 literature use: it halves an int4 weight's flash against int8.
A reader loads the byte and shifts its element down; the compute type (codegen's
i4 / i2) then sign- or zero-extends it wherever the value is widened.

The packed array is a flat uint8 array of `packed_size` bytes; the unused high bits of
the last byte are 0.
"""

from __future__ import annotations

import numpy as np

from toolchain.types import DType, wrap_sub_byte

__all__ = ["is_sub_byte", "pack_bits", "packed_size", "per_byte", "unpack_bits"]


def is_sub_byte(dt: DType) -> bool:
    """Whether dt is an integer narrower than a byte (i2, i4, ui2, ui4): one the module
    may store bit-packed."""
    return dt.is_integer and dt.bits < 8


def per_byte(dt: DType) -> int:
    """Elements of the sub-byte type dt stored in one byte."""
    if not is_sub_byte(dt) or 8 % dt.bits:
        raise ValueError(f"{dt} is not a sub-byte integer type that packs into bytes")
    return 8 // dt.bits


def packed_size(count: int, dt: DType) -> int:
    """Bytes `count` elements of dt take bit-packed (the last byte partly used)."""
    n = per_byte(dt)
    return (count + n - 1) // n


def pack_bits(values: np.ndarray, dt: DType) -> np.ndarray:
    """`values` (dt's host array, one element a byte, any shape) bit-packed, row-major,
    the first element of each byte in its low bits: a flat uint8 array. Raises
    ValueError for a value outside dt's range, which would not survive the round trip."""
    values = np.asarray(values)
    n = per_byte(dt)
    flat = values.reshape(-1).astype(np.int64)
    if flat.size and not np.array_equal(wrap_sub_byte(flat, dt).astype(np.int64), flat):
        raise ValueError(f"values outside {dt}'s range cannot be stored bit-packed")
    mask = (1 << dt.bits) - 1
    padded = np.zeros(packed_size(flat.size, dt) * n, np.int64)
    padded[:flat.size] = flat & mask
    lanes = padded.reshape(-1, n) << (np.arange(n, dtype=np.int64) * dt.bits)
    return np.bitwise_or.reduce(lanes, axis=1).astype(np.uint8)


def unpack_bits(packed: np.ndarray, dt: DType, shape: tuple[int, ...]) -> np.ndarray:
    """The array of type dt and `shape` that `packed` holds (pack_bits' inverse): one
    element a byte, sign-extended for i2 / i4."""
    packed = np.asarray(packed)
    n = per_byte(dt)
    count = int(np.prod(shape, dtype=np.int64))
    if packed.dtype != np.uint8 or packed.size != packed_size(count, dt):
        raise ValueError(f"a bit-packed {dt} array of {count} elements is "
                         f"{packed_size(count, dt)} uint8 bytes, not {packed.dtype} "
                         f"{packed.shape}")
    lanes = (packed.astype(np.int64)[:, None] >> (np.arange(n, dtype=np.int64) * dt.bits))
    flat = lanes.reshape(-1)[:count] & ((1 << dt.bits) - 1)
    return wrap_sub_byte(flat, dt).reshape(shape)
