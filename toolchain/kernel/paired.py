"""The paired layout of an int8 operand (`Kernel.paired`).

An int8 dot product on Arm's DSP extension (codegen/dot.py) loads 4 elements as one
word and sign-extends them with SXTB16 into two words of 16-bit pairs: elements 0 and 2,
then (the word rotated by 8) elements 1 and 3. When the operand is a build-time constant
(a convolution's or dense layer's weights) those pairs can be made at build time: each
aligned group of 4 elements of the row-major array is stored as the i16 values of
elements 0, 2, 1, 3, so one LDRD reads both words ready for SMLAD and no SXTB16 runs.
The products SMLAD adds are the same integers either way.

The element at row-major offset f sits at `paired_position(f)`: bits 0 and 1 of f
swapped, a permutation that is its own inverse. The stored array keeps the operand's
logical shape (dtype i16), so loads index it as before and only the address of an
element differs. It takes twice the int8 bytes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PAIRED_ORDER", "from_paired", "paired_position", "to_paired"]

PAIRED_ORDER = (0, 2, 1, 3)  # the element of each group stored at positions 0..3


def paired_position(f: int) -> int:
    """Where the element at row-major offset `f` sits in the paired layout."""
    return (f & ~3) | ((f & 1) << 1) | ((f >> 1) & 1)


def to_paired(a: np.ndarray) -> np.ndarray:
    """An int8 array in the paired layout: i16, same shape, each aligned group of 4
    row-major elements reordered 0, 2, 1, 3. Its size must be a multiple of 4."""
    a = np.asarray(a)
    if a.dtype != np.int8 or a.size % 4:
        raise ValueError(f"the paired layout takes int8 arrays of 4k elements, not "
                         f"{a.dtype} {a.shape}")
    groups = a.astype(np.int16).reshape(-1, 4)
    return np.ascontiguousarray(groups[:, PAIRED_ORDER]).reshape(a.shape)


def from_paired(p: np.ndarray) -> np.ndarray:
    """The int8 array `p` holds in the paired layout (to_paired's inverse)."""
    p = np.asarray(p)
    if p.dtype != np.int16 or p.size % 4:
        raise ValueError(f"a paired array is int16 of 4k elements, not {p.dtype} {p.shape}")
    if p.size and (p.min() < -128 or p.max() > 127):
        raise ValueError("a paired array holds int8 values only")
    groups = p.reshape(-1, 4)[:, PAIRED_ORDER]  # the order is its own inverse
    return np.ascontiguousarray(groups).astype(np.int8).reshape(p.shape)
