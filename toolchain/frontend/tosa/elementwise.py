"""TOSA's element-wise ops: unary, binary (with TOSA's broadcasting of size-1
dimensions), comparisons, logical and bitwise ops, shifts, CLAMP, SELECT, CAST, MUL with
its shift, NEGATE with zero points, TABLE.

Most are one graph op; the rest follow the specification's pseudo-code with plain
integer graph ops, so the numpy reference computes the spec's arithmetic op by op:
MUL's rounding shift in 64 bits, ARITHMETIC_RIGHT_SHIFT's rounding bit, NEGATE's
widening and saturation, TABLE's 513-entry interpolation, and the IGNORE NaN mode of
MAXIMUM, MINIMUM and CLAMP (a NaN operand loses instead of winning).
"""

from __future__ import annotations

from collections.abc import Callable

from toolchain.frontend.tosa.context import I32, I64, TosaError, TosaOp, int_range
from toolchain.graph.ir import Tensor

__all__ = ["CONVERTERS", "is_nan"]

Converter = Callable[[TosaOp], Tensor]


def _operand(t: TosaOp, i: int) -> Tensor:
    """Operand i broadcast to the result's shape."""
    return t.broadcast(t.input(i), t.result().shape)


def _unary(name: str) -> Converter:
    return lambda t: t.node(name, [t.input(0)])


def _binary(name: str) -> Converter:
    return lambda t: t.node(name, [_operand(t, 0), _operand(t, 1)])


def _compare(direction: str) -> Converter:
    return lambda t: t.node("compare", [_operand(t, 0), _operand(t, 1)], direction=direction)


def is_nan(t: TosaOp, x: Tensor) -> Tensor:
    """x != x: true exactly at NaNs."""
    return t.node("compare", [x, x], direction="NE")


def _min_max(name: str) -> Converter:
    """MAXIMUM / MINIMUM: with nan_mode IGNORE a NaN operand yields the other one."""

    def convert(t: TosaOp) -> Tensor:
        a, b = _operand(t, 0), _operand(t, 1)
        result = t.node(name, [a, b])
        if t.nan_mode() == "IGNORE" and a.type.dtype.is_float:
            result = t.node("select", [is_nan(t, b), a, result])
            result = t.node("select", [is_nan(t, a), b, result])
        return result

    return convert


def _reciprocal(t: TosaOp) -> Tensor:
    x = t.input(0)
    return t.node("divide", [t.splat(1.0, x.type.dtype, x.type.shape), x])


def _abs(t: TosaOp) -> Tensor:
    return t.node("abs", [t.input(0)])


def _mul(t: TosaOp) -> Tensor:
    """MUL: floats multiply; integers multiply in the result type (the low bits), or for
    i32 with shift > 0, (a * b + (1 << (shift - 1))) >> shift in 64 bits."""
    out = t.result()
    # TOSA 1.0 takes the shift as an operand; before, it was an attribute.
    shift = int(t.scalar(2, "shift")) if t.has_input(2) else t.int("shift", 0)
    a, b = _operand(t, 0), _operand(t, 1)
    if out.dtype.is_float or a.type.dtype.is_float:
        if shift:
            raise TosaError("a float MUL takes shift 0")
        return t.node("multiply", [a, b])
    if not 0 <= shift <= 63:
        raise TosaError(f"shift {shift} is outside 0..63")
    if shift == 0:
        return t.node("multiply", [t.convert(a, out.dtype), t.convert(b, out.dtype)])
    if a.type.dtype.name != "i32":
        raise TosaError(f"shift {shift} is only allowed for i32 operands, not {a.type.dtype}")
    shape = out.shape
    product = t.node("multiply", [t.convert(a, I64), t.convert(b, I64)])
    product = t.node("add", [product, t.splat(1 << (shift - 1), I64, shape)])
    product = t.node("shift_right_arithmetic", [product, t.splat(shift, I64, shape)])
    return t.convert(product, out.dtype)


def _arithmetic_right_shift(t: TosaOp) -> Tensor:
    """a >> b; with round, + 1 when the last bit shifted out, (a >> (b - 1)) & 1, is set
    (and b > 0)."""
    a, b = _operand(t, 0), _operand(t, 1)
    result = t.node("shift_right_arithmetic", [a, b])
    if not t.flag("round"):
        return result
    dt, shape = a.type.dtype, a.type.shape
    one = t.splat(1, dt, shape)
    last = t.node("and", [t.node("shift_right_arithmetic",
                                 [a, t.node("subtract", [b, one])]), one])
    positive = t.node("compare", [b, t.splat(0, dt, shape)], direction="GT")
    return t.node("select", [positive, t.node("add", [result, last]), result])


def _negate(t: TosaOp) -> Tensor:
    """NEGATE: floats negate; integers compute (output_zp - (x - input_zp)) in 32 bits
    (64 for i64) and saturate to their type, so -(-128) is 127 for i8."""
    x = t.input(0)
    dt, shape = x.type.dtype, x.type.shape
    in_zp = t.zero_point(1, "input1_zp", "input1_zp")
    out_zp = t.zero_point(2, "output_zp", "output_zp")
    if dt.is_float:
        if in_zp or out_zp:
            raise TosaError("float NEGATE takes zero points 0")
        return t.node("negate", [x])
    if (in_zp or out_zp) and dt.bits != 8:
        raise TosaError(f"zero points are only allowed for i8, not {dt}")
    acc = I64 if dt.bits > 32 else I32
    v = t.convert(x, acc)
    if in_zp:
        v = t.node("subtract", [v, t.splat(int(in_zp), acc, shape)])
    v = t.node("negate", [v])
    if out_zp:
        v = t.node("add", [v, t.splat(int(out_zp), acc, shape)])
    if dt.bits < acc.bits:
        lo, hi = int_range(dt)
        v = t.node("clamp", [t.b.const(lo, acc), v, t.b.const(hi, acc)])
    return t.convert(v, dt)


def _clamp(t: TosaOp) -> Tensor:
    """CLAMP to [min_val, max_val]; nan_mode IGNORE turns a NaN into min_val (PROPAGATE
    keeps it)."""
    x = t.input(0)
    dt = x.type.dtype
    if t.attr("min_val") is not None:
        lo, hi = t.number("min_val"), t.number("max_val")
    elif dt.is_float:  # before TOSA 1.0
        lo, hi = t.number("min_fp"), t.number("max_fp")
    else:
        lo, hi = t.number("min_int"), t.number("max_int")
    if dt.is_integer:
        rlo, rhi = int_range(dt)
        lo, hi = max(int(lo), rlo), min(int(hi), rhi)
    if lo > hi:
        raise TosaError(f"min_val {lo} is greater than max_val {hi}")
    lo_t, hi_t = t.b.const(lo, dt), t.b.const(hi, dt)
    result = t.node("clamp", [lo_t, x, hi_t])
    if dt.is_float and t.nan_mode() == "IGNORE":
        result = t.node("select", [is_nan(t, x), t.splat(lo, dt, x.type.shape), result])
    return result


def _select(t: TosaOp) -> Tensor:
    shape = t.result().shape
    pred = t.broadcast(t.input(0), shape)
    return t.node("select", [pred, _operand(t, 1), _operand(t, 2)])


def _cast(t: TosaOp) -> Tensor:
    """CAST: to bool x != 0; float -> integer rounds to nearest, ties to even, and
    saturates; integers sign-extend or keep their low bits; the rest converts to nearest."""
    x = t.input(0)
    src, dst = x.type.dtype, t.result().dtype
    if dst.kind == "b":
        if src.kind == "b":
            return x
        return t.node("compare", [x, t.splat(0, src, x.type.shape)], direction="NE")
    if src.is_float and dst.is_integer:
        x = t.node("round_nearest_even", [x])
    return t.convert(x, dst)


def _table(t: TosaOp) -> Tensor:
    """TABLE: i8 -> table[x + 128] (256 entries); i16 -> i32 by the spec's
    apply_lookup_s: 513 entries, index (x + 32768) >> 7, interpolated by the low 7 bits:
    (base << 7) + (next - base) * fraction."""
    x, table = t.input(0, "input"), t.input(1, "table")
    dt, shape = x.type.dtype, tuple(x.type.shape)
    size = table.type.num_elements
    table = t.node("reshape", [table], shape=(size,))
    if dt.bits == 8:
        if size != 256:
            raise TosaError(f"an i8 table has 256 entries, not {size}")
        return _gather(t, table, t.node("add", [t.convert(x, I32), t.splat(128, I32, shape)]))
    if dt.name != "i16" or size != 513:
        raise TosaError(f"TABLE takes i8 with 256 entries or i16 with 513, not {dt} with "
                        f"{size}")
    v = t.convert(x, I32)
    index = t.node("shift_right_arithmetic",
                   [t.node("add", [v, t.splat(32768, I32, shape)]), t.splat(7, I32, shape)])
    fraction = t.node("and", [v, t.splat(0x7F, I32, shape)])
    wide = t.convert(table, I32)
    base = _gather(t, wide, index)
    following = _gather(t, wide, t.node("add", [index, t.splat(1, I32, shape)]))
    slope = t.node("subtract", [following, base])
    scaled = t.node("shift_left", [base, t.splat(7, I32, shape)])
    return t.convert(t.node("add", [scaled, t.node("multiply", [slope, fraction])]),
                     t.result().dtype)


def _gather(t: TosaOp, table: Tensor, index: Tensor) -> Tensor:
    """table[index] element-wise (a 1-D table, any index shape)."""
    return t.node("gather", [table, index], offset_dims=(), collapsed_slice_dims=(0,),
                  operand_batching_dims=(), start_indices_batching_dims=(),
                  start_index_map=(0,), index_vector_dim=index.type.rank, slice_sizes=(1,))


_UNARY = {"ceil": "ceil", "floor": "floor", "exp": "exponential", "log": "log",
          "sin": "sine", "cos": "cosine", "sigmoid": "logistic", "tanh": "tanh",
          "rsqrt": "rsqrt", "clz": "count_leading_zeros", "bitwise_not": "not",
          "logical_not": "not", "erf": "erf"}
_BINARY = {"add": "add", "sub": "subtract", "intdiv": "divide", "int_div": "divide",
           "pow": "power", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
           "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
           "logical_left_shift": "shift_left", "logical_right_shift": "shift_right_logical"}

CONVERTERS: dict[str, Converter] = {
    **{f"tosa.{k}": _unary(v) for k, v in _UNARY.items()},
    **{f"tosa.{k}": _binary(v) for k, v in _BINARY.items()},
    "tosa.abs": _abs,
    "tosa.reciprocal": _reciprocal,
    "tosa.maximum": _min_max("maximum"),
    "tosa.minimum": _min_max("minimum"),
    "tosa.mul": _mul,
    "tosa.arithmetic_right_shift": _arithmetic_right_shift,
    "tosa.negate": _negate,
    "tosa.equal": _compare("EQ"),
    "tosa.greater": _compare("GT"),
    "tosa.greater_equal": _compare("GE"),
    "tosa.clamp": _clamp,
    "tosa.select": _select,
    "tosa.cast": _cast,
    "tosa.table": _table,
    "tosa.identity": lambda t: t.input(0),
}
