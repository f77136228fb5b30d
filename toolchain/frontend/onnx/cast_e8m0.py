"""Cast to FLOAT8E8M0 (opset 24): a power of two chosen from the f32 bit pattern, as
graph integer ops on that pattern (exact on the reference and in firmware alike).

ONNX defines it on the f32 exponent field E and fraction F (the sign is ignored; the spec
leaves negatives undefined): inf and NaN (E = 255) become NaN (0xFF); otherwise the code
is E, plus one when `round_mode` says so: `up` (the default) when F is not 0, `down`
never, `nearest` when F's top bit is set and the value is not a tie, or is a tie above
exponent 0. With `saturate` (the default) the largest exponent 254 is never rounded past;
without it 254 + 1 is 255, NaN. So 0 and everything below 2**-127 become 2**-127 (code 0).
"""

from __future__ import annotations

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor


def cast_to_e8m0(ctx: OpContext, x: Tensor) -> Tensor:
    """x (any real type) cast to f8E8M0FNU as ONNX's Cast defines it."""
    mode = ctx.attr("round_mode", b"up")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("up", "down", "nearest"):
        raise Unsupported(f"round_mode '{mode}' (up, down and nearest are defined)")
    if x.type.dtype.name != "f32":
        x = ctx.node("convert", [x], dtype="f32")
    shape = tuple(x.type.shape)
    bits = ctx.node("bitcast_convert", [x], dtype="ui32", shape=shape)

    def const(v: int) -> Tensor:
        return ctx.filled(v, bits)

    def op(name: str, *args: Tensor, **attrs) -> Tensor:
        return ctx.node(name, list(args), **attrs)

    exponent = op("and", op("shift_right_logical", bits, const(23)), const(0xFF))
    special = op("compare", exponent, const(0xFF), direction="EQ")
    if mode == "up":
        up = op("compare", op("and", bits, const(0x7FFFFF)), const(0),
                direction="NE")
    elif mode == "nearest":
        guard = op("compare", op("and", bits, const(0x400000)), const(0),
                   direction="NE")
        rest = op("compare", op("and", bits, const(0x3FFFFF)), const(0),
                  direction="NE")
        above_zero = op("compare", exponent, const(0), direction="NE")
        up = op("and", guard, op("or", rest, above_zero))
    else:
        up = None
    code = exponent
    if up is not None:
        if ctx.attr("saturate", 1):
            below_max = op("compare", exponent, const(0xFE), direction="NE")
            up = op("and", up, below_max)
        code = op("add", exponent, op("convert", up, dtype="ui32"))
    code = op("select", special, const(0xFF), code)
    byte = op("convert", code, dtype="ui8")
    return op("bitcast_convert", byte, dtype="f8E8M0FNU", shape=shape)
