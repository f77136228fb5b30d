"""The paired layout of int8 weights (toolchain/kernel/paired.py).

The layout is only right if each stored word is, bit for bit, what SXTB16 makes of the
int8 word the packed step would have loaded (and of that word rotated by 8), so that
SMLAD adds the same products: checked against a bitwise model of SXTB16 on every int8
value in every byte position. Then the position map, the inverse, the refusals, and
the kernel interpreter reading a paired operand; and the rows-interleaved variant the
2x4 microkernel reads (two rows' words of a half step in one LDRD).
"""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.kernel.form import Apply, Const, Index, Kernel, Load
from toolchain.kernel.interpret import run_kernel
from toolchain.kernel.paired import (
    PAIRED_ORDER,
    PAIRED_ROWS,
    from_paired,
    from_paired_rows,
    paired_position,
    to_paired,
    to_paired_rows,
)
from toolchain.types import TensorType, dtype


def _sxtb16(word: np.ndarray, rotate: int) -> np.ndarray:
    """Arm's SXTB16 of uint32 words rotated right by `rotate`: bytes 0 and 2 sign-
    extended into the low and high halfword, as a uint32."""
    w = ((word >> np.uint32(rotate)) | (word << np.uint32(32 - rotate))) if rotate else word
    lo = (w & np.uint32(0xFF)).astype(np.uint8).view(np.int8).astype(np.int16).view(np.uint16)
    hi = ((w >> np.uint32(16)) & np.uint32(0xFF)).astype(np.uint8).view(np.int8) \
        .astype(np.int16).view(np.uint16)
    return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))


def test_each_stored_word_is_what_sxtb16_makes() -> None:
    # Every int8 value in every byte position of a word, plus random words.
    v = np.arange(-128, 128, dtype=np.int8)
    rng = np.random.default_rng(1)
    every = np.stack([np.roll(v, 37 * i) for i in range(4)], axis=1)  # 256 words
    a = np.concatenate([every, rng.integers(-128, 128, (1000, 4)).astype(np.int8)]).reshape(-1)
    words = a.view("<u4")  # the int8 words the packed step loads (little-endian)
    stored = to_paired(a).astype("<i2").view("<u4").reshape(-1, 2)
    np.testing.assert_array_equal(stored[:, 0], _sxtb16(words, 0))
    np.testing.assert_array_equal(stored[:, 1], _sxtb16(words, 8))


def test_smlad_sums_are_the_dot_products() -> None:
    """Pairing activations as SXTB16 does and weights as stored, both halves' products
    add up to the int8 dot product."""
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, 4096).astype(np.int8)
    w = rng.integers(-128, 128, 4096).astype(np.int8)
    xs = x.astype(np.int32).reshape(-1, 4)[:, PAIRED_ORDER]
    ws = to_paired(w).astype(np.int32).reshape(-1, 4)
    np.testing.assert_array_equal((xs * ws).sum(axis=1),
                                  (x.astype(np.int32) * w).reshape(-1, 4).sum(axis=1))


def test_positions_and_inverse() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (3, 5, 8)).astype(np.int8)
    p = to_paired(a)
    assert p.dtype == np.int16 and p.shape == a.shape
    flat, stored = a.reshape(-1), p.reshape(-1)
    for f in range(a.size):
        assert stored[paired_position(f)] == flat[f]
        assert paired_position(paired_position(f)) == f
    assert [paired_position(f) for f in range(8)] == [0, 2, 1, 3, 4, 6, 5, 7]
    np.testing.assert_array_equal(from_paired(p), a)


@pytest.mark.parametrize("bad", [np.zeros(6, np.int8), np.zeros(8, np.int16),
                                 np.zeros(8, np.uint8)])
def test_to_paired_refuses_what_it_cannot_pair(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="paired layout takes int8 arrays of 4k elements"):
        to_paired(bad)


def test_from_paired_refuses_values_outside_int8() -> None:
    with pytest.raises(ValueError, match="int8 values only"):
        from_paired(np.array([0, 200, 0, 0], np.int16))


def test_the_interpreter_reads_a_paired_operand() -> None:
    """A dense layer y[0, j] = sum_k x[0, k] * w[j, k] gives the same result with w
    stored paired (kernel operand i16, listed in Kernel.paired)."""
    i8, i16, i32 = dtype("i8"), dtype("i16"), dtype("i32")
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 12)).astype(np.int8)
    w = rng.integers(-128, 128, (5, 12)).astype(np.int8)
    body = Apply("multiply", (Apply("convert", (Load(0, (Index(0), Index(2))),), i32),
                              Apply("convert", (Load(1, (Index(1), Index(2))),), i32)), i32)
    plain = Kernel("dense", (1, 5, 12), 2, (TensorType((1, 12), i8), TensorType((5, 12), i8)),
                   TensorType((1, 5), i32), body, combine="add", init=Const(0, i32))
    paired = Kernel("dense", (1, 5, 12), 2,
                    (TensorType((1, 12), i8), TensorType((5, 12), i16)),
                    TensorType((1, 5), i32), body, combine="add", init=Const(0, i32),
                    paired=(1,))
    want = x.astype(np.int32) @ w.astype(np.int32).T
    np.testing.assert_array_equal(run_kernel(plain, [x, w]), want)
    np.testing.assert_array_equal(run_kernel(paired, [x, to_paired(w)]), want)


def test_rows_interleaved_for_the_2x4_tile() -> None:
    """Per group of 4 rows and step of 4 elements: the rows' first paired words (0 and
    2), then their second ones (1 and 3), so the 2x4 microkernel's LDRD at offset 0 and
    8 of each half step reads rows 0, 1 and rows 2, 3; a group starts where its first
    row does in the paired layout."""
    rng = np.random.default_rng(6)
    a = rng.integers(-128, 128, (8, 3, 4)).astype(np.int8)  # 8 rows of 12: 3 steps
    p = to_paired_rows(a)
    assert p.dtype == np.int16 and p.shape == a.shape
    words = p.astype("<i2").view("<u4").reshape(2, 3, 2, PAIRED_ROWS)  # g, step, half, row
    rows = to_paired(a).astype("<i2").view("<u4").reshape(8, 3, 2)  # row, step, half
    for g, step, half, r in np.ndindex(words.shape):
        assert words[g, step, half, r] == rows[g * PAIRED_ROWS + r, step, half]
    np.testing.assert_array_equal(p.reshape(2, -1)[:, :2], to_paired(a).reshape(2, -1)[:, :2])
    np.testing.assert_array_equal(from_paired_rows(p), a)


@pytest.mark.parametrize("bad", [np.zeros((6, 4), np.int8), np.zeros((4, 6), np.int8),
                                 np.zeros((4, 4), np.int16)])
def test_rows_interleaved_refuses_what_it_cannot_group(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="rows interleaved take int8 arrays"):
        to_paired_rows(bad)


def test_the_interpreter_reads_interleaved_rows() -> None:
    i8, i16, i32 = dtype("i8"), dtype("i16"), dtype("i32")
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (3, 8)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    body = Apply("multiply", (Apply("convert", (Load(0, (Index(0), Index(2))),), i32),
                              Apply("convert", (Load(1, (Index(1), Index(2))),), i32)), i32)
    k = Kernel("pointwise", (3, 4, 8), 2, (TensorType((3, 8), i8), TensorType((4, 8), i16)),
               TensorType((3, 4), i32), body, combine="add", init=Const(0, i32),
               paired=(1,), interleaved=(1,))
    np.testing.assert_array_equal(run_kernel(k, [x, to_paired_rows(w)]),
                                  x.astype(np.int32) @ w.astype(np.int32).T)
