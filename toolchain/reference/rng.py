"""rng_bit_generator's bits, bit for bit as XLA computes them (xla/hlo/builder/lib/prng.cc,
xla/service/rng_bit_generator_expander.cc), in numpy.

THREE_FRY: state [key, counter]; Threefry-2x32 with 20 rounds keyed by the two 32-bit
halves of `key`, on the 64-bit counters counter + i (i the row-major position). 64-bit
results are the two output words (first word low); 32-bit results take one word each:
the shape is split in halves along its first even dimension (else its largest), and
element 2h + w of that dimension is word w of the pair at half position h; 8- and
16-bit results are the low bits of the 32-bit ones.

PHILOX (and DEFAULT, which XLA's CPU and GPU backends run as PHILOX): Philox-4x32 with
10 rounds keyed by `key`'s halves, on the 128-bit counters c + i for i < ceil(n / 4)
(32-bit results: word j of block i is element 4i + j) or ceil(n / 2) (64-bit: words
0-1 and 2-3 make elements 2i and 2i + 1). The counter's low half is state[1]; its high
half is state[2] for a state of 3 values, and, for a state of 2, state[0] itself (XLA
reverses the 2-value state to read it). Results of other types are the bits of the
unsigned ones.

The new state is the key and the counter advanced by the number of blocks used (for a
2-value PHILOX state, only the low half is kept).
"""

from __future__ import annotations

import math

import numpy as np

U32 = np.uint32
MASK32 = np.uint64(0xFFFFFFFF)

THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
THREEFRY_PARITY = 0x1BD11BDA
PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10


def halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 32-bit words of uint64 values."""
    x = np.asarray(x, np.uint64)
    return (x & MASK32).astype(U32), (x >> np.uint64(32)).astype(U32)


def join(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << U32(r)) | (x >> U32(32 - r))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, k0: int, k1: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32, 20 rounds, key injection after every 4."""
    ks = [U32(k0), U32(k1), U32(THREEFRY_PARITY ^ k0 ^ k1)]
    with np.errstate(over="ignore"):
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for block in range(5):
            for r in THREEFRY_ROTATIONS[4 * (block % 2):4 * (block % 2) + 4]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(block + 1) % 3]
            x1 = x1 + ks[(block + 2) % 3] + U32(block + 1)
    return x0, x1


def philox4x32(x: list[np.ndarray], k0: int, k1: int) -> list[np.ndarray]:
    """Philox-4x32, 10 rounds."""
    key = [U32(k0), U32(k1)]
    with np.errstate(over="ignore"):
        for _ in range(PHILOX_ROUNDS):
            p0 = x[0].astype(np.uint64) * np.uint64(PHILOX_MULTIPLIERS[0])
            p1 = x[2].astype(np.uint64) * np.uint64(PHILOX_MULTIPLIERS[1])
            lo0, hi0 = halves(p0)
            lo1, hi1 = halves(p1)
            x = [hi1 ^ x[1] ^ key[0], lo1, hi0 ^ x[3] ^ key[1], lo0]
            key = [key[0] + U32(PHILOX_KEY_STEPS[0]), key[1] + U32(PHILOX_KEY_STEPS[1])]
    return x


def split_dim(shape: tuple[int, ...]) -> int:
    """The dimension a 32-bit THREE_FRY result is split in halves along: the first even
    one, else the largest (the first of equals); -1 for a scalar."""
    if not shape:
        return -1
    for d, n in enumerate(shape):
        if n % 2 == 0:
            return d
    return max(range(len(shape)), key=lambda d: (shape[d], -d))


def philox_counter(state: np.ndarray) -> tuple[int, int]:
    """The 128-bit counter's (low, high) halves."""
    s = [int(v) for v in state]
    return s[1], (s[2] if len(s) == 3 else s[0])


def rng_bits(state: np.ndarray, algorithm: str, bits: int, shape: tuple[int, ...]
             ) -> np.ndarray:
    """The unsigned result (uint8 .. uint64) of rng_bit_generator."""
    state = np.asarray(state).astype(np.uint64)
    n = math.prod(shape)
    k0, k1 = (int(v) for v in halves(state[0]))
    if algorithm == "THREE_FRY":
        counter = int(state[1])
        if bits == 64:
            c = (np.arange(n, dtype=np.uint64) + np.uint64(counter))
            y0, y1 = threefry2x32(*halves(c), k0, k1)
            return join(y0, y1).reshape(shape)
        d = split_dim(shape)
        half = list(shape) or [1]
        half[max(d, 0)] = (half[max(d, 0)] + 1) // 2
        c = np.arange(math.prod(half), dtype=np.uint64) + np.uint64(counter)
        y0, y1 = (y.reshape(half) for y in threefry2x32(*halves(c), k0, k1))
        if not shape:  # a scalar takes the first word
            return y0.reshape(()).astype(np.dtype(f"u{bits // 8}"))
        both = np.stack([y0, y1], axis=max(d, 0) + 1)  # [.., h, 2, ..]
        full = list(half)
        full[max(d, 0)] *= 2
        out = both.reshape(full)
        out = out[tuple(slice(0, s) for s in shape)]
        return out.astype(np.dtype(f"u{bits // 8}"))
    lo, hi = philox_counter(state)
    words = 4 if bits <= 32 else 2
    blocks = -(-n // words)
    i = np.arange(blocks, dtype=np.uint64)
    with np.errstate(over="ignore"):
        low = i + np.uint64(lo)
    high = np.where(low < np.uint64(lo), np.uint64((hi + 1) % 2**64), np.uint64(hi))
    x = philox4x32([*halves(low), *halves(high)], k0, k1)
    if bits <= 32:
        flat = np.stack(x, axis=1).reshape(-1)[:n]
        return flat.astype(np.dtype(f"u{bits // 8}")).reshape(shape)
    pairs = np.stack([join(x[0], x[1]), join(x[2], x[3])], axis=1)
    return pairs.reshape(-1)[:n].reshape(shape)


def blocks_used(algorithm: str, bits: int, shape: tuple[int, ...]) -> int:
    """How far the counter advances."""
    n = math.prod(shape)
    if algorithm == "THREE_FRY":
        if bits == 64:
            return n
        d = split_dim(shape)
        half = list(shape) or [1]
        half[max(d, 0)] = (half[max(d, 0)] + 1) // 2
        return math.prod(half)
    return -(-n // (4 if bits <= 32 else 2))


def new_state(state: np.ndarray, algorithm: str, bits: int, shape: tuple[int, ...]
              ) -> np.ndarray:
    state = np.asarray(state).astype(np.uint64)
    used = blocks_used(algorithm, bits, shape)
    out = state.copy()
    with np.errstate(over="ignore"):
        out[1] = state[1] + np.uint64(used)
        if algorithm != "THREE_FRY" and len(state) == 3 and out[1] < state[1]:
            out[2] = state[2] + np.uint64(1)
    return out


__all__ = ["blocks_used", "new_state", "philox4x32", "rng_bits", "split_dim",
           "threefry2x32"]
