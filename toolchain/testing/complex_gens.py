"""The random generator's builders for complex numbers: complex, real, imag and fft.

Complex tensors come from the pool, from complex(re, im) of two float operands, or
new; real and imag also take a float operand, as the spec allows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.graph.ir import Tensor
from toolchain.graph.ops import FFT_TYPES
from toolchain.testing.gen_context import Gen, source
from toolchain.types import DTYPES, TensorType, complex_of, complex_part

__all__ = ["make_complex", "part", "fft"]


# The part types of complex<f32> and complex<f64>.
PARTS = ("f32", "f64")


def complex_operand(g: Gen, ty: TensorType) -> Tensor:
    """A complex tensor of exactly `ty`: from the pool, complex(re, im) of two float
    operands, or a new input."""
    if g.chance(0.6):
        x = g.pick(lambda t: t.type == ty, complex_ok=True)
        if x is not None:
            return x
    if g.chance(0.5):
        part = TensorType(ty.shape, complex_part(ty.dtype))
        return g.op("complex", [g.operand(part), g.operand(part)])
    return g.fresh(ty)


def make_complex(g: Gen) -> bool:
    a = source(g, PARTS)
    g.op("complex", [a, g.operand(a.type)])
    return True


def part(op: str) -> Callable[[Gen], bool]:
    """real / imag of a complex tensor (or, as the spec allows, of a float one: itself
    and zeros)."""

    def build(g: Gen) -> bool:
        x = g.pick(lambda t: t.type.dtype.is_complex, complex_ok=True)
        if g.chance(0.15):
            x = source(g, PARTS)
        elif x is None or g.chance(0.3):
            ty = TensorType(g.shape(), complex_of(g.dtype(names=PARTS)))
            x = complex_operand(g, ty)
        g.op(op, [x])
        return True

    return build


def fft(g: Gen) -> bool:
    """FFT / IFFT / RFFT / IRFFT over the last 1 to 3 dims, lengths 1 to 9 (radix 2,
    mixed radix, small primes; every path of passes/fft.py but Bluestein's, whose primes
    above its DFT limit make a bigger graph than these tensors call for)."""
    r = g.rng
    kind = r.choice(FFT_TYPES)
    lengths = [r.randint(1, 9) for _ in range(r.choice([1, 1, 1, 2, 3]))]
    batch = [r.randint(1, 3) for _ in range(r.choice([0, 1, 1]))]
    if int(np.prod(batch + lengths)) > 48:
        return False
    part_t = DTYPES[r.choice(["f32", "f32", "f64"])]
    if kind == "RFFT":
        x = g.operand(TensorType(tuple(batch + lengths), part_t))
    else:
        last = lengths[-1] // 2 + 1 if kind == "IRFFT" else lengths[-1]
        x = complex_operand(g, TensorType(tuple(batch + lengths[:-1] + [last]),
                                          complex_of(part_t)))
    g.op("fft", [x], fft_type=kind, fft_length=tuple(lengths))
    return True
