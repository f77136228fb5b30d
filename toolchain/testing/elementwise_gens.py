"""The random generator's builders for elementwise ops: the math functions (CHLO's
included), arithmetic, bitwise ops and shifts, compare, select, clamp and convert.

Each op's element types come from its own type rule (`accepts`), so the generator
follows graph/ops.py as it changes. What jumps under the smallest change of a float
(floor, sign, remainder, ...) reads exact values only; what has a domain edge at 0
(log, sqrt, a divisor) reads an inexact value through |x| + c; f64 operands of the math
library's f32 functions are bounded first.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from toolchain.graph.ir import Node, Tensor
from toolchain.graph.ops import OPS, ShapeError
from toolchain.testing.gen_context import DTYPE_WEIGHTS, FLOATS, Gen, source
from toolchain.testing.input_values import InputSpec
from toolchain.types import DTYPES, TensorType

__all__ = ["DISCONTINUOUS", "MATH_OPS", "CHLO_UNARY", "unary", "binary", "compare",
           "select", "clamp", "convert", "next_after", "zeta_polygamma"]


@cache
def accepts(op: str, name: str) -> bool:
    """Whether the op table takes element type `name` for elementwise `op` (asked of
    the type rule itself, so the generator follows ops.py as it changes)."""
    spec = OPS[op]
    t = Tensor(TensorType((2,), DTYPES[name]))
    try:
        spec.infer(Node(op, [t] * (spec.arity or 1), [], {"direction": "EQ"}))
    except ShapeError:
        return False
    return True


def _types(op: str) -> tuple[str, ...]:
    return tuple(n for n in DTYPE_WEIGHTS if accepts(op, n))


# Float functions whose result jumps under the smallest change of the operand: they only
# read exact values (exactness.py).
DISCONTINUOUS = frozenset({"floor", "ceil", "round_nearest_afz", "round_nearest_even", "sign",
                           "is_finite", "remainder"})
# Domain edges at 0: an inexact operand is read through |x| + c.
GUARDED = frozenset({"log", "sqrt", "rsqrt", "log_plus_one"})
# Our math library computes these in f32 (f64 operands rounded to f32 and back,
# codegen/mathlib.py), so an f64 operand is first bounded to where f32 holds it well.
MATH_OPS = frozenset({"exponential", "exponential_minus_one", "log", "log_plus_one",
                      "logistic", "sqrt", "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan",
                      "power", "atan2",
                      # CHLO's functions (codegen/mathlib_special.py)
                      "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin",
                      "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "zeta",
                      "polygamma"})
# CHLO functions whose domain ends, or whose poles lie, where random values fall (asin
# and acos outside [-1, 1], acosh below 1, atanh and erf_inv at +-1, lgamma and digamma
# at the non-positive integers): they read exact values only, so a last-bit difference
# of an inexact operand cannot cross an edge; on exact operands out of the domain both
# sides give NaN.
DOMAIN_EXACT = frozenset({"asin", "acos", "acosh", "atanh", "erf_inv", "lgamma", "digamma"})
# The CHLO functions of one operand; their budgets are in tolerance.py.
CHLO_UNARY = ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e", "asin", "acos",
              "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
# The bound for f64 operands of MATH_OPS: exp(20) and 20**3 stay well inside f32.
F64_MATH_BOUND = 20.0


def _math_operand(g: Gen, op: str, x: Tensor) -> Tensor:
    if x.type.dtype.name == "f64" and op in MATH_OPS:
        x = g.bounded(x, F64_MATH_BOUND)
    if op in GUARDED and x.type.dtype.is_float and not g.is_exact(x):
        x = g.positive(x)
    return x


def unary(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        x = source(g, _types(op), exact=op in DISCONTINUOUS or op in DOMAIN_EXACT)
        g.op(op, [_math_operand(g, op, x)])
        return True

    return build


def binary(op: str) -> Callable[[Gen], bool]:
    def build(g: Gen) -> bool:
        exact = op in DISCONTINUOUS
        a = source(g, _types(op), exact=exact)
        spec = InputSpec("shift") if op.startswith("shift") and g.chance(0.7) else None
        b = g.operand(a.type, exact=exact, spec=spec)
        if op not in ("shift_left", "shift_right_arithmetic", "shift_right_logical") and \
                g.chance(0.5):
            a, b = b, a
        if a.type.dtype.is_float:
            inexact = not (g.is_exact(a) and g.is_exact(b))
            if op == "divide" and not g.is_exact(b):
                b = g.positive(b)
            elif op == "power" and inexact:
                # pow of a negative base is NaN off the integers: keep the base positive.
                a = g.positive(_math_operand(g, op, a))
                b = _math_operand(g, op, b)
            elif op == "atan2" and inexact:
                # atan2 jumps by 2 pi across y = 0 for x < 0: keep x positive.
                a, b = _math_operand(g, op, a), g.positive(_math_operand(g, op, b))
            elif op in MATH_OPS:
                a, b = _math_operand(g, op, a), _math_operand(g, op, b)
        g.op(op, [a, b])
        return True

    return build


COMPARE_DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")


def compare(g: Gen) -> bool:
    a = source(g, tuple(DTYPE_WEIGHTS), exact=True)
    b = g.operand(a.type, exact=True)
    attrs = {"direction": g.rng.choice(COMPARE_DIRECTIONS)}
    if a.type.dtype.is_float and g.is_signed(a) and g.is_signed(b) and g.chance(0.3):
        attrs["total_order"] = True  # (exactness.NAN_SIGN_OPS)
    g.node("compare", [a, b], attrs)
    return True


def predicate(g: Gen, shape: tuple[int, ...]) -> Tensor:
    """An i1 tensor of `shape`: a compare of exact pool values, or an i1 operand."""
    x = g.pick(lambda t: t.type.shape == shape and t.type.dtype.name != "i1", exact=True)
    if x is not None and g.chance(0.6):
        y = g.operand(x.type, exact=True)
        attrs = {"direction": g.rng.choice(COMPARE_DIRECTIONS)}
        return g.node("compare", [x, y], attrs)[0]
    return g.operand(TensorType(shape, DTYPES["i1"]))


def select(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS))
    pred = predicate(g, x.type.shape if g.chance(0.75) else ())
    y = g.operand(x.type)
    g.op("select", [pred, x, y])
    return True


def clamp(g: Gen) -> bool:
    x = source(g, tuple(n for n in DTYPE_WEIGHTS if n != "i1"))
    scalar = TensorType((), x.type.dtype)
    lo = g.operand(scalar if g.chance(0.6) else x.type)
    hi = g.operand(scalar if g.chance(0.6) else x.type)
    g.op("clamp", [lo, x, hi])
    return True


def convert(g: Gen) -> bool:
    x = source(g, tuple(DTYPE_WEIGHTS))
    to = g.dtype()
    if to == x.type.dtype or not g.convertible(x, to):
        to = g.dtype("f")
        if to == x.type.dtype:
            return False
    g.op("convert", [x], dtype=to.name)
    return True


def next_after(g: Gen) -> bool:
    """next_after(x, y): one step of x's own grid towards y; exact, but it jumps where
    y passes x, so both operands are exact."""
    x = source(g, FLOATS, exact=True)
    y = g.operand(x.type, exact=True)
    if g.chance(0.3):
        y = x  # x == y gives y
    g.op("next_after", [x, y])
    return True


def zeta_polygamma(op: str) -> Callable[[Gen], bool]:
    """zeta(s, q) with s in (1, 6], q in (0, 5]; polygamma(n, x) with n = 0 to 3 (an
    integer held as a float) and x in (0, 6]: where both are defined and finite. The
    operands are new inputs (constants in regions) of those ranges."""

    def build(g: Gen) -> bool:
        ty = TensorType(g.shape(), g.dtype(names=FLOATS))
        if op == "zeta":
            a = g.fresh(ty, InputSpec("positive", 1.25, 6.0))
            b = g.fresh(ty, InputSpec("positive", 0.25, 5.0))
        else:
            a = g.const(ty, float(g.rng.randint(0, 3)))
            b = g.fresh(ty, InputSpec("positive", 0.25, 6.0))
        g.op(op, [a, b])
        return True

    return build
