"""The f32 values a small float conversion is tested on (tests/codegen/
test_codegen_small_floats.py on the host, tests/e2e/test_small_floats.py on boards).

Every value of the format, every tie between two neighbours and the f32 values either
side of it, the same at the overflow threshold and below the smallest subnormal, zeros,
infinities, NaNs of both signs and with payloads, f32 subnormals, and seeded random f32
bit patterns: where a rounding or a special case can go wrong.
"""

from __future__ import annotations

import numpy as np

from toolchain.small_floats import SmallFloat, from_bits

NANS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF],
                np.uint32).view(np.float32)
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 2.0**-127, 1.5 * 2.0**-127,
                     1.25 * 2.0**-127, 2.0**-126, 3.4028235e38, -3.4028235e38, 1e30, 1.0, -1.0],
                    np.float32)


def _around(x: np.ndarray) -> np.ndarray:
    """x and its f32 neighbours either side."""
    x = x.astype(np.float32)
    return np.concatenate([x, np.nextafter(x, np.float32(np.inf)),
                           np.nextafter(x, np.float32(-np.inf))])


def codes(fmt: SmallFloat) -> np.ndarray:
    """Every code of the format, as uint8."""
    return np.arange(1 << fmt.bits, dtype=np.uint8)


def sweep(fmt: SmallFloat, random: int, seed: int = 0) -> np.ndarray:
    """The f32 values above for `fmt`, with `random` random bit patterns."""
    values = from_bits(codes(fmt), fmt).astype(np.float64)
    finite = np.unique(np.abs(values[np.isfinite(values)]))
    ties = (finite[:-1] + finite[1:]) / 2  # exact in f32: one bit more than the format
    step = finite[-1] - finite[-2]
    edges = np.array([finite[-1] + step / 2, finite[-1] + step, finite[1] / 2])
    magnitudes = np.concatenate([finite, ties, edges])
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, random, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([_around(magnitudes), -_around(magnitudes), SPECIALS, NANS,
                           bits.view(np.float32)]).astype(np.float32)
