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

Rows interleaved (`Kernel.interleaved`, for the 2x4 microkernel of runtime_c's DSP
ukernels): the weights of PAIRED_ROWS output channels (rows: the first dim; a row is
the rest, K elements) are stored step by step, for each group of 4 elements the four
rows' first words, then their second words. One LDRD then reads two rows' words of the
same half of a step, which the 2x4 tile multiplies with two pixels' words: 2 LDRDs per
16 MACs where row by row it takes 4. A group of rows starts where its first row does in
the paired layout, so an address of a group's first element is the same in both.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PAIRED_ORDER", "PAIRED_ROWS", "from_paired", "from_paired_rows", "paired_position",
           "to_paired", "to_paired_rows"]

PAIRED_ORDER = (0, 2, 1, 3)  # the element of each group stored at positions 0..3
PAIRED_ROWS = 4  # rows interleaved together


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


def _row_groups(a: np.ndarray, want: type, what: str) -> tuple[int, int]:
    """(groups of PAIRED_ROWS rows, steps of 4 a row) of `a`, an array of dtype `want`
    with its rows interleaved or to be; ValueError naming `what` it takes otherwise."""
    rows = a.shape[0] if a.shape else 0
    length = int(np.prod(a.shape[1:])) if a.ndim > 1 else 0
    if a.dtype != want or rows == 0 or rows % PAIRED_ROWS or length == 0 or length % 4:
        raise ValueError(f"{what} of {PAIRED_ROWS}k rows of 4k elements, not "
                         f"{a.dtype} {a.shape}")
    return rows // PAIRED_ROWS, length // 4


def to_paired_rows(a: np.ndarray) -> np.ndarray:
    """An int8 array in the paired layout with its rows interleaved PAIRED_ROWS by
    PAIRED_ROWS (module docstring): i16, same shape. Its rows (first dim) must be a
    multiple of PAIRED_ROWS and each row a multiple of 4 elements."""
    a = np.asarray(a)
    groups, steps = _row_groups(a, np.int8, "rows interleaved take int8 arrays")
    p = to_paired(a).reshape(groups, PAIRED_ROWS, steps, 2, 2)  # g, row, step, word, half
    return np.ascontiguousarray(p.transpose(0, 2, 3, 1, 4)).reshape(a.shape)


def from_paired_rows(p: np.ndarray) -> np.ndarray:
    """The int8 array `p` holds with its rows interleaved (to_paired_rows' inverse)."""
    p = np.asarray(p)
    groups, steps = _row_groups(p, np.int16, "an array with rows interleaved is int16")
    q = p.reshape(groups, steps, 2, PAIRED_ROWS, 2).transpose(0, 3, 1, 2, 4)
    return from_paired(np.ascontiguousarray(q).reshape(p.shape))
