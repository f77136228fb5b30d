"""Arithmetic beyond Add/Sub/Mul/Div, and the activations PyTorch exports spell out:
variadic Max/Min/Sum/Mean, Pow, Mod, Reciprocal, bitwise ops and shifts, the float
functions the graph has one op for, Elu/Selu/Celu, Softplus/Softsign, Gelu, Mish, Swish,
ThresholdedRelu, Shrink, PRelu, IsNaN/IsInf.

Each is written with graph ops the compiler already lowers (compare, select, exponential,
log_plus_one, erf, tanh, ...); formulas follow ONNX's operator definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from toolchain.frontend.onnx import elementwise as ew
from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.frontend.onnx.logic import broadcast_all
from toolchain.graph.ir import Tensor

Converter = Callable[[OpContext], Tensor]

# Float functions with one graph op each (ONNX op -> graph op).
FLOAT_UNARY = {
    "Ceil": "ceil", "Floor": "floor", "Round": "round_nearest_even", "Erf": "erf",
    "Sin": "sine", "Cos": "cosine", "Tan": "tan", "Asin": "asin", "Acos": "acos",
    "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
    "Atanh": "atanh",
}
# Integer (and float) ops with one graph op each.
INT_UNARY = {"Sign": "sign", "BitwiseNot": "not"}
BITWISE = {"BitwiseAnd": "and", "BitwiseOr": "or", "BitwiseXor": "xor"}
# Variadic ops: the graph op folding the inputs together.
VARIADIC = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}


def _float(ctx: OpContext, x: Tensor) -> Tensor:
    if not x.type.dtype.is_float:
        raise Unsupported(f"{ctx.info.op_type} of element type {x.type.dtype} (a float "
                          "tensor is expected)")
    return x


def _c(ctx: OpContext, value: float, like: Tensor) -> Tensor:
    return ctx.filled(value, like)


def _op(ctx: OpContext, op: str, *xs: Tensor, **attrs) -> Tensor:
    return ctx.node(op, list(xs), **attrs)


def variadic(ctx: OpContext) -> Tensor:
    """Max / Min / Sum / Mean of one or more inputs, all broadcast to one shape."""
    xs = [ctx.input(i) for i in range(len(ctx.info.inputs)) if ctx.has_input(i)]
    if any(x.type.dtype != xs[0].type.dtype for x in xs):
        raise Unsupported("inputs of different element types")
    op = ctx.info.op_type
    if op == "Mean":
        _float(ctx, xs[0])
    xs = broadcast_all(ctx, xs)
    y = xs[0]
    for x in xs[1:]:
        y = _op(ctx, VARIADIC[op], y, x)
    if op == "Mean":
        y = _op(ctx, "divide", y, _c(ctx, len(xs), y))
    return y


def pow_(ctx: OpContext) -> Tensor:
    """Pow(X, Y) in X's type. Y of another type: a float exponent of an integer base is
    computed in that float type and converted back (truncating, as ONNX's reference);
    an integer exponent of a float base is converted to the base's type (exact for the
    integers a float holds)."""
    x, y = ctx.input(0), ctx.input(1)
    out = x.type.dtype.name
    if x.type.dtype != y.type.dtype:
        if not x.type.dtype.is_float and y.type.dtype.is_float:
            x = _op(ctx, "convert", x, dtype=y.type.dtype.name)
        else:
            y = _op(ctx, "convert", y, dtype=out)
    x, y = ctx.broadcast_pair(x, y)
    r = _op(ctx, "power", x, y)
    return r if r.type.dtype.name == out else _op(ctx, "convert", r, dtype=out)


def mod(ctx: OpContext) -> Tensor:
    """Mod: fmod=1 is C's fmod (the sign of the dividend: the graph's remainder); fmod=0
    takes the divisor's sign (A - floor(A / B) * B, numpy's mod; floats allowed since
    opset 28): the remainder plus the divisor where the two signs differ and the
    remainder is not 0. That also gives opset 28's special cases: NaN from an infinite
    dividend or a zero divisor, and an infinite divisor of the other sign (x + y = y)."""
    a, b = ctx.broadcast_pair(ctx.input(0), ctx.input(1))
    fmod = ctx.attr("fmod", 0)
    if fmod not in (0, 1):
        raise Unsupported(f"fmod={fmod} must be 0 or 1")
    r = _op(ctx, "remainder", a, b)
    if fmod:
        return r
    zero = _c(ctx, 0, r)
    differ = _op(ctx, "xor", _op(ctx, "compare", r, zero, direction="LT"),
                 _op(ctx, "compare", b, zero, direction="LT"))
    fix = _op(ctx, "and", differ, _op(ctx, "compare", r, zero, direction="NE"))
    return _op(ctx, "select", fix, _op(ctx, "add", r, b), r)


def reciprocal(ctx: OpContext) -> Tensor:
    """1 / x."""
    x = _float(ctx, ctx.input(0))
    return _op(ctx, "divide", _c(ctx, 1, x), x)


def int_unary(ctx: OpContext) -> Tensor:
    """Sign, BitwiseNot: one graph op."""
    return _op(ctx, INT_UNARY[ctx.info.op_type], ctx.input(0))


def bitwise(ctx: OpContext) -> Tensor:
    """BitwiseAnd / Or / Xor of two integer tensors, broadcast."""
    a, b = ctx.broadcast_pair(ctx.input(0), ctx.input(1))
    if a.type.dtype.is_float or a.type.dtype.name == "i1":
        raise Unsupported(f"{ctx.info.op_type} of element type {a.type.dtype}")
    return _op(ctx, BITWISE[ctx.info.op_type], a, b)


def bit_shift(ctx: OpContext) -> Tensor:
    """BitShift (LEFT or RIGHT) of integers: RIGHT is logical for unsigned and arithmetic
    for signed types (signed ones since opset 28). A shift amount below 0 or of the
    type's width or more gives what the sign fill alone gives (opset 28's rule, which
    the graph's shifts do not promise): 0, or -1 for a right shift of a negative value."""
    a, b = ctx.broadcast_pair(ctx.input(0), ctx.input(1))
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise Unsupported(f"direction {direction!r} must be LEFT or RIGHT")
    dt = a.type.dtype
    if dt.is_float or dt.name == "i1":
        raise Unsupported(f"BitShift of element type {dt}")
    bits = dt.np_dtype.itemsize * 8
    valid = _op(ctx, "and", _op(ctx, "compare", b, _c(ctx, 0, b), direction="GE"),
                _op(ctx, "compare", b, _c(ctx, bits, b), direction="LT"))
    if direction == "RIGHT" and not dt.name.startswith("ui"):
        # x >> (width - 1) is the sign fill: 0 or -1.
        amount = _op(ctx, "select", valid, b, _c(ctx, bits - 1, b))
        return _op(ctx, "shift_right_arithmetic", a, amount)
    op = "shift_left" if direction == "LEFT" else "shift_right_logical"
    return _op(ctx, "select", valid, _op(ctx, op, a, b), _c(ctx, 0, a))


def _expm1(ctx: OpContext, x: Tensor) -> Tensor:
    return _op(ctx, "exponential_minus_one", x)


def _negative_part(ctx: OpContext, x: Tensor, then: Tensor) -> Tensor:
    """`then` where x < 0, else x."""
    neg = _op(ctx, "compare", x, _c(ctx, 0, x), direction="LT")
    return _op(ctx, "select", neg, then, x)


def elu(ctx: OpContext) -> Tensor:
    """alpha * (exp(x) - 1) below 0, x from 0 (alpha 1)."""
    x = _float(ctx, ctx.input(0))
    alpha = ctx.attr("alpha", 1.0)
    return _negative_part(ctx, x, _op(ctx, "multiply", _c(ctx, alpha, x), _expm1(ctx, x)))


# Selu's defaults: the constants of Klambauer et al. as ONNX writes them (float32).
_SELU_ALPHA, _SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875


def selu(ctx: OpContext) -> Tensor:
    """gamma * (alpha * (exp(x) - 1)) for x <= 0, gamma * x above."""
    x = _float(ctx, ctx.input(0))
    alpha, gamma = ctx.attr("alpha", _SELU_ALPHA), ctx.attr("gamma", _SELU_GAMMA)
    inner = _negative_part(ctx, x, _op(ctx, "multiply", _c(ctx, alpha, x), _expm1(ctx, x)))
    return _op(ctx, "multiply", _c(ctx, gamma, x), inner)


def celu(ctx: OpContext) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (alpha 1)."""
    x = _float(ctx, ctx.input(0))
    alpha = ctx.attr("alpha", 1.0)
    if alpha == 0:
        raise Unsupported("alpha=0 (Celu divides by it)")
    e = _expm1(ctx, _op(ctx, "divide", x, _c(ctx, alpha, x)))
    return _negative_part(ctx, x, _op(ctx, "multiply", _c(ctx, alpha, x), e))


def _softplus(ctx: OpContext, x: Tensor) -> Tensor:
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): equal in real arithmetic, and
    no overflow of exp for large x (which would give inf where x is the answer)."""
    tail = _op(ctx, "log_plus_one", _op(ctx, "exponential", _op(ctx, "negate",
                                                                 _op(ctx, "abs", x))))
    return _op(ctx, "add", _op(ctx, "maximum", x, _c(ctx, 0, x)), tail)


def softplus(ctx: OpContext) -> Tensor:
    """log(exp(x) + 1)."""
    return _softplus(ctx, _float(ctx, ctx.input(0)))


def softsign(ctx: OpContext) -> Tensor:
    """x / (1 + |x|)."""
    x = _float(ctx, ctx.input(0))
    return _op(ctx, "divide", x, _op(ctx, "add", _c(ctx, 1, x), _op(ctx, "abs", x)))


def mish(ctx: OpContext) -> Tensor:
    """x * tanh(softplus(x))."""
    x = _float(ctx, ctx.input(0))
    return _op(ctx, "multiply", x, _op(ctx, "tanh", _softplus(ctx, x)))


def swish(ctx: OpContext) -> Tensor:
    """x * sigmoid(alpha * x) (alpha 1)."""
    x = _float(ctx, ctx.input(0))
    ax = _op(ctx, "multiply", _c(ctx, ctx.attr("alpha", 1.0), x), x)
    return _op(ctx, "multiply", x, _op(ctx, "logistic", ax))


def gelu(ctx: OpContext) -> Tensor:
    """0.5 * x * (1 + erf(x / sqrt(2))); approximate="tanh":
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))."""
    x = _float(ctx, ctx.input(0))
    approximate = ctx.attr("approximate", "none")
    if approximate == "none":
        inner = _op(ctx, "erf", _op(ctx, "multiply", x, _c(ctx, 1 / math.sqrt(2), x)))
    elif approximate == "tanh":
        cube = _op(ctx, "multiply", x, _op(ctx, "multiply", x, x))
        t = _op(ctx, "add", x, _op(ctx, "multiply", _c(ctx, 0.044715, x), cube))
        inner = _op(ctx, "tanh", _op(ctx, "multiply", _c(ctx, math.sqrt(2 / math.pi), x), t))
    else:
        raise Unsupported(f"approximate={approximate!r} must be 'none' or 'tanh'")
    half_x = _op(ctx, "multiply", _c(ctx, 0.5, x), x)
    return _op(ctx, "multiply", half_x, _op(ctx, "add", _c(ctx, 1, x), inner))


def thresholded_relu(ctx: OpContext) -> Tensor:
    """x where x > alpha, else 0 (alpha 1)."""
    x = _float(ctx, ctx.input(0))
    above = _op(ctx, "compare", x, _c(ctx, ctx.attr("alpha", 1.0), x), direction="GT")
    return _op(ctx, "select", above, x, _c(ctx, 0, x))


def shrink(ctx: OpContext) -> Tensor:
    """x + bias below -lambd, x - bias above lambd, 0 between (lambd 0.5, bias 0)."""
    x = ctx.input(0)
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    below = _op(ctx, "compare", x, _c(ctx, -lambd, x), direction="LT")
    above = _op(ctx, "compare", x, _c(ctx, lambd, x), direction="GT")
    middle = _op(ctx, "select", above, _op(ctx, "subtract", x, _c(ctx, bias, x)),
                 _c(ctx, 0, x))
    return _op(ctx, "select", below, _op(ctx, "add", x, _c(ctx, bias, x)), middle)


def prelu(ctx: OpContext) -> Tensor:
    """slope * x below 0, x from 0; the slope broadcast to x (unidirectionally)."""
    x, slope = ctx.input(0), ctx.input(1)
    x2, slope = ctx.broadcast_pair(x, slope)
    if x2.type.shape != x.type.shape:
        raise Unsupported(f"slope of shape {list(slope.type.shape)} does not broadcast to "
                          f"the input's {list(x.type.shape)}")
    return _negative_part(ctx, x, _op(ctx, "multiply", slope, x))


def is_nan(ctx: OpContext) -> Tensor:
    """x != x: true exactly for NaN."""
    x = _float(ctx, ctx.input(0))
    return _op(ctx, "compare", x, x, direction="NE")


def is_inf(ctx: OpContext) -> Tensor:
    """x == +inf (detect_positive, 1) or x == -inf (detect_negative, 1)."""
    x = _float(ctx, ctx.input(0))
    hits = [_op(ctx, "compare", x, _c(ctx, sign * math.inf, x), direction="EQ")
            for sign, attr in ((1, "detect_positive"), (-1, "detect_negative"))
            if ctx.attr(attr, 1)]
    if not hits:  # both detections off: nothing is reported
        return ctx.broadcast(ctx.constant(False, "i1"), tuple(x.type.shape), ())
    return hits[0] if len(hits) == 1 else _op(ctx, "or", *hits)


FLOAT_UNARY_CONVERTERS = {op: ew.unary(graph_op) for op, graph_op in FLOAT_UNARY.items()}

__all__ = ["BITWISE", "FLOAT_UNARY", "FLOAT_UNARY_CONVERTERS", "INT_UNARY", "VARIADIC",
           "bit_shift", "bitwise", "celu", "elu", "gelu", "int_unary", "is_inf", "is_nan",
           "mish", "mod", "pow_", "prelu", "reciprocal", "selu", "shrink", "softplus",
           "softsign", "swish", "thresholded_relu", "variadic"]
