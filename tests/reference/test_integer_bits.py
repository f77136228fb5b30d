"""Bit operations of the reference at every integer width, 64-bit included."""

from __future__ import annotations

import numpy as np
import pytest

from toolchain.reference.kernels import _clz, _popcnt, _shift


class _Node:
    attrs: dict = {}


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_bits_match_python_integers(dt: str) -> None:
    width = np.dtype(dt).itemsize * 8
    rng = np.random.default_rng(width)
    info = np.iinfo(dt)
    x = np.concatenate([np.array([0, 1, info.max, info.min], dt),
                        rng.integers(info.min, info.max, 20, dtype=dt, endpoint=True)])
    pattern = [int(v) & ((1 << width) - 1) for v in x.tolist()]
    assert _popcnt(x).tolist() == [bin(p).count("1") for p in pattern]
    assert _clz(x).tolist() == [width - p.bit_length() for p in pattern]
    counts = np.array([(i * 7) % (width + 3) for i in range(x.size)], dt)
    to_signed = lambda p: p - (1 << width) if p >> (width - 1) else p  # noqa: E731
    as_dtype = lambda p: to_signed(p) if info.min < 0 else p  # noqa: E731
    for kind, rule in (
        ("left", lambda p, c: (p << c) & ((1 << width) - 1) if c < width else 0),
        ("logical", lambda p, c: p >> c if c < width else 0),
        ("arith", lambda p, c: (to_signed(p) >> min(c, width - 1)) & ((1 << width) - 1)),
    ):
        got = _shift(kind)(_Node, x, counts).tolist()
        want = [as_dtype(rule(p, int(c))) for p, c in zip(pattern, counts.tolist())]
        assert got == want, kind
