"""The random generator's builders for minirt's own ops, which have no StableHLO
spelling: the fixed-point primitives of quantized kernels and dequantize (their rows
say mlir=False, so a graph holding one skips the MLIR round trip).
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.testing.gen_context import Gen, source
from toolchain.testing.input_values import InputSpec
from toolchain.types import TensorType

__all__ = ["fixed_point", "dequantize"]


def fixed_point(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        a = source(g, ("i32",))
        spec = InputSpec("index", -3, 34) if op == "rounding_divide_by_pot" else None
        b = g.operand(a.type, spec=spec)
        g.op(op, [a, b])
        return True

    return build


def dequantize(g: Gen) -> bool:
    q = source(g, ("i8", "ui8", "i16"))
    dt = g.dtype(names=("f32", "f32", "f16", "bf16"))
    if q.type.rank and g.chance(0.5):
        axis = g.rng.randrange(q.type.rank)
        scale = g.operand(TensorType((q.type.shape[axis],), dt))
    else:
        axis = None
        scale = g.operand(TensorType((), dt))
    g.op("dequantize", [q, scale], axis=axis)
    return True
