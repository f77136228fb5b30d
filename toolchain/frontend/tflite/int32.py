"""Unquantized int32 arithmetic (ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM) and CAST.

TFLite Micro computes int32 tensors without quantization in plain C int32 arithmetic:
broadcast, the op, then the fused activation as a clamp to its integer bounds (RELU:
[0, INT32_MAX], RELU6: [0, 6], RELU_N1_TO_1: [-1, 1]); DIV truncates toward zero.
TFLite Micro's int32 ADD skips its fused activation (it clamps to the whole int32
range), so an ADD with one is refused: the model and TFLite Micro disagree.
micro_speech's audio preprocessor scales its log filterbank this way. CAST converts as C
does: integers wrap, floats truncate toward zero.
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.frontend.tflite.activations import activation_name
from toolchain.frontend.tflite.context import DTYPES, OpContext
from toolchain.frontend.tflite.elementwise import broadcast_shape
from toolchain.frontend.tflite.errors import Unsupported
from toolchain.graph.ir import Tensor

Converter = Callable[[OpContext], Tensor]

INT32_MAX = (1 << 31) - 1
# A fused activation's integer clamp bounds (None: that side is open).
_CLAMPS: dict[str, tuple[int | None, int | None]] = {
    "NONE": (None, None), "RELU": (0, None), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}


def _int32_input(ctx: OpContext, i: int) -> Tensor:
    x = ctx.input(i)
    if x.type.dtype.name != "i32" or x.type.quant is not None:
        raise Unsupported(f"input {i} is {x.type}; unquantized int32 is expected")
    return x


def _activation(ctx: OpContext, y: Tensor, honoured: bool) -> Tensor:
    name = activation_name(ctx.options.get("fused_activation_function", 0))
    if name != "NONE" and not honoured:
        raise Unsupported(f"fused activation {name} is not supported on int32: TFLite "
                          "Micro's kernel skips it, so the result would differ from either "
                          "the model or TFLite Micro")
    if name not in _CLAMPS:
        raise Unsupported(f"fused activation {name} on int32 is not supported")
    low, high = _CLAMPS[name]
    if low is None:
        return y
    return ctx.node("clamp", [ctx.filled(low, y), y, ctx.filled(
        INT32_MAX if high is None else high, y)])


def _binary(graph_op: str, honours_activation: bool = True) -> Converter:
    def convert(ctx: OpContext) -> Tensor:
        a, b = _int32_input(ctx, 0), _int32_input(ctx, 1)
        shape = broadcast_shape(a.type.shape, b.type.shape)
        y = ctx.node(graph_op, [ctx.broadcast(a, shape), ctx.broadcast(b, shape)])
        return _activation(ctx, y, honours_activation)

    convert.__doc__ = f"int32 `{graph_op}` of two broadcast inputs, then the activation."
    return convert


add = _binary("add", honours_activation=False)
sub = _binary("subtract")
mul = _binary("multiply")
div = _binary("divide")  # integer divide truncates toward zero, like C
minimum = _binary("minimum")
maximum = _binary("maximum")


def cast(ctx: OpContext) -> Tensor:
    """CAST to the output's element type, as C converts."""
    x = ctx.input(0)
    out = ctx.output_type()
    if x.type.quant is not None or out.quant is not None:
        raise Unsupported("CAST of quantized tensors is not supported")
    if out.dtype.name not in DTYPES.values() or out.dtype.name in ("f16", "f64", "i1"):
        raise Unsupported(f"CAST to {out.dtype} is not supported")
    if x.type.dtype == out.dtype:
        return x
    return ctx.node("convert", [x], dtype=out.dtype.name)


__all__ = ["add", "cast", "div", "maximum", "minimum", "mul", "sub"]
