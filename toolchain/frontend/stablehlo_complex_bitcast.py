"""`bitcast_convert` to or from complex types, as graph ops on real tensors.

A complex value's bits are its real part's then its imaginary part's (the interpreter's
and XLA's layout), so a complex tensor of shape S has the bits of a real tensor of
shape S + (2,) of its part type. The bitcast is then: the operand, if complex, as that
interleaved real tensor (real and imag stacked on a new last dim); a real bitcast_convert
to the result's part type (graph/type_rules.py's shape rule adds or consumes the
trailing dim when the widths differ); and, for a complex result, its last dim of 2
split back into the real and imaginary parts. E.g. complex<f64> -> 2 x complex<f32>:
[re, im] as f64 -> [[re_lo, re_hi], [im_lo, im_hi]] as f32 -> (re_lo, re_hi),
(im_lo, im_hi).
"""

from __future__ import annotations

from toolchain.graph.builder import GraphBuilder
from toolchain.graph.ir import Tensor
from toolchain.types import complex_part, dtype

__all__ = ["expand_complex_bitcast"]


def _interleaved(b: GraphBuilder, x: Tensor) -> Tensor:
    """A complex tensor of shape S as the real tensor S + (2,): [..., 0] real parts."""
    shape = tuple(x.type.shape)
    parts = [b.op("reshape", [b.op(p, [x])], shape=shape + (1,)) for p in ("real", "imag")]
    return b.op("concatenate", parts, dimension=len(shape))


def _complex_of_last(b: GraphBuilder, x: Tensor) -> Tensor:
    """A real tensor T + (2,) as the complex tensor T of (x[..., 0], x[..., 1])."""
    shape = tuple(x.type.shape)
    rank = len(shape)

    def part(k: int) -> Tensor:
        s = b.op("slice", [x], start=(0,) * (rank - 1) + (k,), limit=shape[:-1] + (k + 1,),
                 strides=(1,) * rank)
        return b.op("reshape", [s], shape=shape[:-1])

    return b.op("complex", [part(0), part(1)])


def expand_complex_bitcast(b: GraphBuilder, inputs: list[Tensor], attrs: dict,
                           _key: int = 0) -> list[Tensor]:
    """The nodes computing bitcast_convert(x) to attrs' dtype and shape when the operand
    or the result is complex."""
    (x,) = inputs
    out = dtype(attrs["dtype"])
    shape = tuple(attrs["shape"])
    real = _interleaved(b, x) if x.type.dtype.is_complex else x
    part = complex_part(out)
    bits_shape = shape + (2,) if out.is_complex else shape
    bits = b.op("bitcast_convert", [real], dtype=part.name, shape=bits_shape)
    return [_complex_of_last(b, bits) if out.is_complex else bits]
