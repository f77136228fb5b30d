"""Lowers one generic Kernel (toolchain/kernel/form.py) to one LLVM IR function.

The function is `void NAME(ptr bindings)`: bindings holds one buffer pointer per operand
and then the result's, exactly what `mrt_dispatch_fn_t` receives. Its body is a loop nest
over the kernel's domain, parallel dimensions outermost, with the result stored
row-major over the parallel dimensions. Reductions keep an accumulator in the result's
compute type (f32 for f16/bf16) that starts from `init` and is folded with `combine`
over the remaining dimensions.

Values are computed in a *compute type* per element type: f16 and bf16 are storage
formats widened to f32 on load and rounded on store (and by `convert`), i1 is stored as a
byte, unsigned types use LLVM's unsigned instructions. Index arithmetic is i32.

Loads with `pad` never touch memory out of bounds: the address is clamped to element 0
when any index is out of range or `valid` is false, and the loaded value is replaced by
`pad` (branch-free, so the loop stays vectorisable).

Nothing here may become a libm call: math goes through mathlib, floating max/min are
compare + select, float remainder is mathlib's exact fmod. LLVM may still turn a copy or
fill loop into `memcpy` / `memset`; runtime_c provides those (and memmove/memcmp).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen import mathlib
from toolchain.codegen.element_types import (
    compute_type,
    const_value,
    is_unsigned,
    storage_type,
    zero_of,
)
from toolchain.codegen.errors import EmitError
from toolchain.codegen.kinds import emit_other_kind
from toolchain.codegen.mathlib import F16, F32, F64, I1, I16, I32, TargetFeatures
from toolchain.codegen.mathlib_small_float import f32_to_small_float_bits, small_float_bits_to_f32
from toolchain.codegen.nest import NestEmitter
from toolchain.codegen.pad_rows import PAD_ROWS_SIMD, emit_pad_rows, pad_rows_shape
from toolchain.kernel.form import (
    Acc,
    Apply,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    expr_dtype,
    postorder,
)
from toolchain.loops.rules import plain_schedule
from toolchain.loops.schedule import LoopSchedule
from toolchain.types import SMALL_FLOATS, DType, TensorType

__all__ = ["EmitError", "compute_type", "emit_kernel", "storage_type"]

PTR = ir.PointerType()
INF = float("inf")


# --------------------------------------------------------------------------- scalar ops


def _fmax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    # numpy.maximum: NaN in either operand wins. compare + select, never llvm.maxnum,
    # which soft-float targets lower to a call to fmaxf.
    r = b.select(b.fcmp_ordered(">", x, y), x, y)
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def _fmin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    r = b.select(b.fcmp_ordered("<", x, y), x, y)
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def _imax(b: ir.IRBuilder, x: ir.Value, y: ir.Value, unsigned: bool) -> ir.Value:
    cmp = b.icmp_unsigned if unsigned else b.icmp_signed
    return b.select(cmp(">", x, y), x, y)


def _imin(b: ir.IRBuilder, x: ir.Value, y: ir.Value, unsigned: bool) -> ir.Value:
    cmp = b.icmp_unsigned if unsigned else b.icmp_signed
    return b.select(cmp("<", x, y), x, y)


def _idiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value, unsigned: bool) -> ir.Value:
    """Integer division truncating toward zero, defined everywhere like the reference:
    x/0 = x, and MIN/-1 wraps to MIN (LLVM's sdiv would be UB / trap on both)."""
    t = x.type
    zero, one = ir.Constant(t, 0), ir.Constant(t, 1)
    if unsigned:
        return b.udiv(x, b.select(b.icmp_unsigned("==", y, zero), one, y))
    minus1 = ir.Constant(t, (1 << t.width) - 1)
    is_m1 = b.icmp_unsigned("==", y, minus1)
    safe = b.select(b.or_(b.icmp_unsigned("==", y, zero), is_m1), one, y)
    return b.select(is_m1, b.sub(zero, x), b.sdiv(x, safe))


def _irem(b: ir.IRBuilder, x: ir.Value, y: ir.Value, unsigned: bool) -> ir.Value:
    return b.sub(x, b.mul(_idiv(b, x, y, unsigned), y))


def _shift(kind: str) -> Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]:
    """Shifts by >= width (or negative amounts) give 0, or the sign fill for arithmetic
    shifts, as in the reference (LLVM's shifts would be poison)."""

    def emit(b: ir.IRBuilder, x: ir.Value, n: ir.Value) -> ir.Value:
        t = x.type
        big = b.icmp_unsigned(">=", n, ir.Constant(t, t.width))
        safe = b.select(big, ir.Constant(t, 0), n)
        if kind == "left":
            return b.select(big, ir.Constant(t, 0), b.shl(x, safe))
        if kind == "logical":
            return b.select(big, ir.Constant(t, 0), b.lshr(x, safe))
        return b.ashr(x, b.select(big, ir.Constant(t, t.width - 1), n))

    return emit


def _srdhm(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """saturating_rounding_doubling_high_mul on i32: the 64-bit product ab (one SMULL on
    Armv7-M), nudged by 2**30 (1 - 2**30 below zero) and divided by 2**31 toward zero,
    and INT32_MAX for INT32_MIN * INT32_MIN, the one product that overflows.

    The nudge and the truncation fold into one floor: for ab >= 0 the sum is >= 0 and
    truncation is floor; for ab < 0 the sum is negative and truncating it equals
    flooring it plus 2**31 - 1, which with the nudge is floor((ab + 2**30) / 2**31)
    again. So the whole is (ab + 2**30) >> 31: an add with carry and two shifts, no
    sign test.

    The overflow is told from the result, not the operands: every other product gives
    (ab + 2**30) >> 31 in [-2**31 + 1, 2**31 - 2], so a truncated result of INT32_MIN
    (2**31 wrapped) means INT32_MIN * INT32_MIN. One compare instead of two (3
    instructions per requantized output on Armv7-M instead of 5)."""
    i64 = ir.IntType(64)
    ab = b.mul(b.sext(x, i64), b.sext(y, i64))
    high = b.trunc(b.ashr(b.add(ab, ir.Constant(i64, 1 << 30)), ir.Constant(i64, 31)), I32)
    overflow = b.icmp_signed("==", high, ir.Constant(I32, -(1 << 31)))
    return b.select(overflow, ir.Constant(I32, (1 << 31) - 1), high)


def _rdbpot(b: ir.IRBuilder, x: ir.Value, e: ir.Value) -> ir.Value:
    """rounding_divide_by_pot on i32: an arithmetic shift by e (clamped to [0, 31]), plus
    one when the bits shifted out are above half (at half too below zero): ties go away
    from zero."""
    zero, top = ir.Constant(I32, 0), ir.Constant(I32, 31)
    e = b.select(b.icmp_signed("<", e, zero), zero, b.select(b.icmp_signed(">", e, top), top, e))
    mask = b.sub(b.shl(ir.Constant(I32, 1), e), ir.Constant(I32, 1))
    threshold = b.add(b.lshr(mask, ir.Constant(I32, 1)),
                      b.zext(b.icmp_signed("<", x, zero), I32))
    up = b.zext(b.icmp_signed(">", b.and_(x, mask), threshold), I32)
    return b.add(b.ashr(x, e), up)


# Armv7-M and Armv8-M Mainline have SSAT (saturate to a signed bit width); Armv6-M and
# Armv8-M Baseline do not.
_SSAT_ARCHS = ("thumbv7m-", "thumbv7em-", "thumbv8m.main-", "thumbv8.1m.main-")


def _saturate_then_clamp(b: ir.IRBuilder, module: ir.Module, lo: ir.Value, x: ir.Value,
                         hi: ir.Value) -> ir.Value | None:
    """clamp(lo, x, hi) on i32 with constant bounds narrower than a signed k-bit range
    on one side only (an int8 output with a fused ReLU whose zero point is not -128:
    [zp, 127]), on a target with SSAT: SSAT to k bits, then one max / min for the
    narrower bound. LLVM finds SSAT itself only when the bounds are a whole range
    ([-128, 127]); otherwise it emits two compares and two selects.
    None where this does not apply (the caller emits max and min)."""
    if x.type != I32 or not module.triple.startswith(_SSAT_ARCHS):
        return None
    if not (isinstance(lo, ir.Constant) and isinstance(hi, ir.Constant)):
        return None
    low, high = _signed(lo.constant, 32), _signed(hi.constant, 32)
    if low > high:
        return None
    bits = next(k for k in range(1, 33) if -(1 << (k - 1)) <= low and high < 1 << (k - 1))
    full_low, full_high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if bits == 32 or (low > full_low) == (high < full_high) or \
            (low == 0 and high & (high + 1) == 0):
        # Nothing to saturate; a whole range (LLVM's own SSAT); or both bounds narrower,
        # where SSAT would only add to the two compares ([0, 2**k - 1] is LLVM's USAT).
        return None
    fn = mathlib._intrinsic(module, "llvm.arm.ssat", I32, [I32, I32])
    r = b.call(fn, [x, ir.Constant(I32, bits)])
    if low > full_low:
        r = _imax(b, r, lo, False)
    if high < full_high:
        r = _imin(b, r, hi, False)
    return r


def _signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _ipow(b: ir.IRBuilder, x: ir.Value, y: ir.Value, unsigned: bool) -> ir.Value:
    """Integer power by squaring, in a helper function per width (it needs a loop).
    Negative exponents give 1/x**-y truncated: 1, +-1 for x = -1, else 0."""
    t = x.type
    name = f"mrt_ipow_{'u' if unsigned else 'i'}{t.width}"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(t, [t, t]), name)
        fn.linkage = "internal"
        fn.section = ".text." + name
        fn.attributes.add("nounwind")
        base, exp = fn.args
        entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
        h = ir.IRBuilder(entry)
        one, zero = ir.Constant(t, 1), ir.Constant(t, 0)
        if unsigned:
            neg = ir.Constant(I1, 0)
            early = one  # only exp == 0 leaves early
        else:
            neg = h.icmp_signed("<", exp, zero)
            minus1 = ir.Constant(t, (1 << t.width) - 1)
            odd = h.trunc(exp, I1)
            by_neg = h.select(
                h.icmp_unsigned("==", base, one),
                one,
                h.select(h.icmp_unsigned("==", base, minus1), h.select(odd, minus1, one), zero),
            )
            early = h.select(neg, by_neg, one)
        h.cbranch(h.or_(neg, h.icmp_unsigned("==", exp, zero)), done, loop)
        h.position_at_end(loop)
        r, bs, e = h.phi(t), h.phi(t), h.phi(t)
        r.add_incoming(one, entry)
        bs.add_incoming(base, entry)
        e.add_incoming(exp, entry)
        r2 = h.select(h.trunc(e, I1), h.mul(r, bs), r)
        e2 = h.lshr(e, one)
        r.add_incoming(r2, loop)
        bs.add_incoming(h.mul(bs, bs), loop)
        e.add_incoming(e2, loop)
        h.cbranch(h.icmp_unsigned("==", e2, zero), done, loop)
        h.position_at_end(done)
        out = h.phi(t)
        out.add_incoming(r2, loop)
        out.add_incoming(early, entry)
        h.ret(out)
    return b.call(fn, [x, y])


def _total_order_key(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """An integer ordered like IEEE 754 totalOrder of float x (-NaN < -inf < ... < -0 <
    +0 < ... < +NaN): its bits, with a negative float's magnitude bits flipped."""
    t = ir.IntType(64 if x.type == F64 else 32)
    bits = b.bitcast(x, t)
    sign = b.ashr(bits, ir.Constant(t, t.width - 1))
    return b.xor(bits, b.and_(sign, ir.Constant(t, (1 << (t.width - 1)) - 1)))


def _sign(b: ir.IRBuilder, x: ir.Value, dt: DType) -> ir.Value:
    t = x.type
    if dt.is_float:
        one = ir.Constant(t, 1.0)
        r = b.select(b.fcmp_ordered(">", x, zero_of(t)), one, x)
        return b.select(b.fcmp_ordered("<", x, zero_of(t)), ir.Constant(t, -1.0), r)
    if is_unsigned(dt):
        return b.zext(b.icmp_unsigned("!=", x, zero_of(t)), t)
    pos = b.zext(b.icmp_signed(">", x, zero_of(t)), t)
    neg = b.zext(b.icmp_signed("<", x, zero_of(t)), t)
    return b.sub(pos, neg)


# Storage formats computed in f32.
_NARROW_FLOATS = ("f16", "bf16", *SMALL_FLOATS)
_FCMP = {"EQ": "==", "GE": ">=", "GT": ">", "LE": "<=", "LT": "<"}
_MATH_OPS = {
    "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "rsqrt",
    "cbrt", "tanh", "sine", "cosine", "tan", "floor", "ceil", "round_nearest_afz",
    "round_nearest_even", "power", "atan2",
}  # fmt: skip
_MATH_OPS |= mathlib.SPECIAL_UNARY  # CHLO's functions (codegen/mathlib_special.py)


# --------------------------------------------------------------------------- the emitter


class _KernelEmitter(NestEmitter):
    def __init__(self, module: ir.Module, kernel: Kernel, schedule: LoopSchedule) -> None:
        self.module = module
        self.k = kernel
        self.schedule = schedule
        self.features: TargetFeatures = mathlib.target_features(module)
        self._check()
        fnty = ir.FunctionType(ir.VoidType(), [PTR])
        if kernel.name in module.globals:
            raise EmitError(f"kernel {kernel.name!r}: a symbol of that name already exists")
        self.fn = ir.Function(module, fnty, kernel.name)
        # `hidden` (hence dso_local): callable from the image's dispatch table without a
        # GOT, and dropped by --gc-sections like any unreferenced section.
        self.fn.linkage = "hidden"
        self.fn.section = f".text.{kernel.name}"
        self.fn.attributes.add("nounwind")
        self.fn.attributes.add("norecurse")
        arg = self.fn.args[0]
        arg.name = "bindings"
        for attr in ("noalias", "nonnull", "noundef"):
            arg.add_attribute(attr)
        entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self.acc: ir.Value | None = None  # the folded value, while emitting an epilogue
        self.buffers = [self._binding(i) for i in range(len(kernel.operands) + 1)]

    # ----------------------------------------------------------- structure

    def _check(self) -> None:
        k = self.k
        if not 0 <= k.n_parallel <= len(k.domain):
            raise EmitError(f"kernel {k.name!r}: n_parallel {k.n_parallel} outside the domain")
        if k.combine is None and k.n_parallel != len(k.domain):
            raise EmitError(f"kernel {k.name!r}: reduced dimensions but no combine op")
        if k.combine is not None and k.init is None:
            raise EmitError(f"kernel {k.name!r}: a reduction needs an init value")
        if k.epilogue is not None and k.combine is None:
            raise EmitError(f"kernel {k.name!r}: an epilogue without a reduction")
        if k.epilogue is not None and any(isinstance(e, Index) and e.dim >= k.n_parallel
                                          for e in postorder(k.epilogue)):
            raise EmitError(f"kernel {k.name!r}: its epilogue reads a reduced index")
        n = 1
        for d in k.domain[: k.n_parallel]:
            n *= d
        for t in (*k.operands, k.result):
            if not t.is_static:
                raise EmitError(f"kernel {k.name!r}: dynamic shape {t}")
        if k.result.num_elements != n:
            raise EmitError(
                f"kernel {k.name!r}: result {k.result} does not hold the "
                f"{n} elements of the parallel domain {k.domain[: k.n_parallel]}"
            )

    def _binding(self, i: int) -> ir.Value:
        slot = self.b.gep(self.fn.args[0], [ir.Constant(I32, i)], inbounds=True, source_etype=PTR)
        return self.b.load(slot, typ=PTR, name=f"buf{i}")

    def emit(self) -> ir.Function:
        k = self.k
        if 0 not in k.domain[: k.n_parallel]:
            self.emit_schedule(k, self.schedule)
        self.b.ret_void()
        return self.fn

    # ----------------------------------------------------------- memory

    def _element_ptr(self, buf: int, offset: ir.Value) -> ir.Value:
        return self._gep(buf, offset)

    def _gep(self, buf: int, offset: ir.Value) -> ir.Value:
        return self._gep_from(buf, self.buffers[buf], offset)

    def _gep_from(self, buf: int, ptr: ir.Value, offset: ir.Value) -> ir.Value:
        t = storage_type(self._tensor(buf).dtype)
        return self.b.gep(ptr, [offset], inbounds=True, source_etype=t)

    def _tensor(self, buf: int) -> TensorType:
        return self.k.operands[buf] if buf < len(self.k.operands) else self.k.result

    def _load(self, buf: int, offset: ir.Value) -> ir.Value:
        return self._load_at(buf, self._element_ptr(buf, offset))

    def _load_at(self, buf: int, ptr: ir.Value) -> ir.Value:
        """Element of buffer `buf` at `ptr`, in its compute type."""
        dt = self._tensor(buf).dtype
        return self._from_storage(self.b.load(ptr, typ=storage_type(dt)), dt)

    def _from_storage(self, raw: ir.Value, dt: DType) -> ir.Value:
        """An element as memory holds it (storage_type) in its compute type."""
        b = self.b
        if dt.kind == "b":
            return b.icmp_unsigned("!=", raw, ir.Constant(raw.type, 0))
        if dt.name == "f16":
            if self.features.hardware_f16:
                return b.fpext(b.bitcast(raw, F16), F32)
            return mathlib.f16_bits_to_f32(b, raw)
        if dt.name == "bf16":
            return mathlib.bf16_bits_to_f32(b, raw)
        if dt.name in SMALL_FLOATS:
            return small_float_bits_to_f32(b, raw, SMALL_FLOATS[dt.name])
        if dt.is_integer and dt.bits < raw.type.width:  # a sub-byte integer's byte
            return b.trunc(raw, ir.IntType(dt.bits))
        return raw

    def _to_storage(self, v: ir.Value, dt: DType) -> ir.Value:
        b = self.b
        if dt.kind == "b":
            return b.zext(v, ir.IntType(8))
        if dt.name == "f16":
            if self.features.hardware_f16:
                return b.bitcast(b.fptrunc(v, F16), I16)
            return mathlib.f32_to_f16_bits(b, v)
        if dt.name == "bf16":
            return mathlib.f32_to_bf16_bits(b, v)
        if dt.name in SMALL_FLOATS:
            return f32_to_small_float_bits(b, v, SMALL_FLOATS[dt.name])
        if dt.is_integer and dt.bits < 8:  # held extended to a byte, as on the host
            return b.sext(v, ir.IntType(8)) if dt.kind == "i" else b.zext(v, ir.IntType(8))
        return v

    def _round_narrow_float(self, v: ir.Value, dt: DType) -> ir.Value:
        """A value of compute type f32 rounded to f16 / bf16 / a small float (still f32)."""
        b = self.b
        if dt.name == "f16":
            if self.features.hardware_f16:
                return b.fpext(b.fptrunc(v, F16), F32)
            return mathlib.f16_bits_to_f32(b, mathlib.f32_to_f16_bits(b, v))
        if dt.name == "bf16":
            return mathlib.bf16_bits_to_f32(b, mathlib.f32_to_bf16_bits(b, v))
        if dt.name in SMALL_FLOATS:
            fmt = SMALL_FLOATS[dt.name]
            return small_float_bits_to_f32(b, f32_to_small_float_bits(b, v, fmt), fmt)
        return v

    # Converting f64 or a wide integer to f16 / bf16 goes through f32. Rounding to
    # nearest twice can be wrong (a value just above a bf16 tie may land exactly on it),
    # so the f32 step rounds to odd: an inexact f32 result is the neighbour whose last bit
    # is 1. f32 keeps more than 2 bits beyond bf16's and f16's precision, so the final
    # rounding to nearest is then the correct rounding of the original value, as in the
    # reference (toolchain.types.f32_round_to_odd).

    def _to_odd(self, r: ir.Value, inexact: ir.Value, away: ir.Value) -> ir.Value:
        """The f32 `r`, rounded to nearest, made round-to-odd: when inexact and even, one
        step towards zero if `r` rounded away from zero (inf included), else away."""
        b = self.b
        bits = b.bitcast(r, I32)
        even = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I32, 1)), ir.Constant(I32, 0))
        step = b.select(away, ir.Constant(I32, (1 << 32) - 1), ir.Constant(I32, 1))
        bits = b.select(b.and_(inexact, even), b.add(bits, step), bits)
        return b.bitcast(bits, F32)

    def _f64_to_f32_odd(self, v: ir.Value) -> ir.Value:
        b = self.b
        r = b.fptrunc(v, F32)
        back = b.fpext(r, F64)
        inexact = b.fcmp_ordered("!=", back, v)  # false for NaN
        away = b.xor(b.fcmp_ordered(">", back, v), b.fcmp_ordered("<", v, zero_of(F64)))
        return self._to_odd(r, inexact, away)

    def _int_to_f32_odd(self, v: ir.Value, src: DType) -> ir.Value:
        b = self.b
        t = v.type
        unsigned = is_unsigned(src)
        r = b.uitofp(v, F32) if unsigned else b.sitofp(v, F32)
        # Back to the integer type, saturating: only the top power of two saturates, and
        # taking it for exact there is harmless, as no bf16 tie is near it.
        sat = f"llvm.{'fptoui' if unsigned else 'fptosi'}.sat.i{t.width}.f32"
        back = b.call(mathlib._intrinsic(self.module, sat, t, [F32]), [r])
        inexact = b.icmp_unsigned("!=", back, v)
        if unsigned:
            away = b.icmp_unsigned(">", back, v)
        else:
            away = b.xor(b.icmp_signed(">", back, v), b.icmp_signed("<", v, zero_of(t)))
        return self._to_odd(r, inexact, away)

    # ----------------------------------------------------------- expressions

    def _value(self, e: Expr) -> ir.Value:
        if isinstance(e, Acc):
            return self.acc
        if isinstance(e, Index):
            if not 0 <= e.dim < len(self.k.domain):
                raise EmitError(f"kernel {self.k.name!r}: Index({e.dim}) outside the domain")
            return self.index_value(e.dim)
        if isinstance(e, Const):
            return const_value(self.b, e.value, e.dtype)
        if isinstance(e, Load):
            self._check_load(e)
            return self.load_expr(e)
        if isinstance(e, Apply):
            return self._apply(e)
        raise EmitError(f"kernel {self.k.name!r}: not an expression: {e!r}")

    def _as_index(self, e: Expr) -> ir.Value:
        """An index expression as i32 (gathers may index with other integer types)."""
        v = self.value(e)
        dt = expr_dtype(e, self.k.operands)
        if v.type == I32:
            return v
        if not isinstance(v.type, ir.IntType):
            raise EmitError(f"kernel {self.k.name!r}: index of type {dt} is not an integer")
        if v.type.width > 32:
            return self.b.trunc(v, I32)
        return self.b.zext(v, I32) if is_unsigned(dt) else self.b.sext(v, I32)

    def _check_load(self, e: Load) -> None:
        if not 0 <= e.operand < len(self.k.operands):
            raise EmitError(f"kernel {self.k.name!r}: load of operand {e.operand}")
        t = self.k.operands[e.operand]
        if len(e.index) != len(t.shape or ()):
            raise EmitError(
                f"kernel {self.k.name!r}: load of operand {e.operand} ({t}) with "
                f"{len(e.index)} indices"
            )

    def _apply(self, e: Apply) -> ir.Value:
        args = [self.value(a) for a in e.args]
        dts = [expr_dtype(a, self.k.operands) for a in e.args]
        op = e.op
        name = self.k.name
        if op.startswith("compare."):
            return self._compare(op.split(".", 1)[1], args, dts)
        if op == "select":
            p, x, y = args
            return self.b.select(p, self._cast(x, dts[1], e.dtype), self._cast(y, dts[2], e.dtype))
        if op == "clamp":
            lo, x, hi = (self._cast(v, d, e.dtype) for v, d in zip(args, dts, strict=True))
            narrow = _saturate_then_clamp(self.b, self.module, lo, x, hi)
            if narrow is not None:
                return narrow
            return self._binary(
                "minimum", self._binary("maximum", x, lo, e.dtype, e.dtype), hi, e.dtype, e.dtype
            )
        if op == "convert":
            return self._cast(args[0], dts[0], e.dtype)
        if op == "bitcast_convert":  # same width (kernel/lower.py does the rest)
            bits = self._to_storage(args[0], dts[0])
            raw = self.b.bitcast(bits, ir.IntType(dts[0].bits)) if dts[0].is_float and \
                dts[0].bits >= 32 else bits
            st = storage_type(e.dtype)
            return self._from_storage(raw if raw.type == st else self.b.bitcast(raw, st),
                                      e.dtype)
        if op == "is_finite":
            x = args[0]
            return self.b.fcmp_ordered("<", mathlib.fabs(self.b, x), ir.Constant(x.type, INF))
        if len(args) == 1:
            return self._unary(op, self._cast(args[0], dts[0], e.dtype), e.dtype, dts[0])
        if len(args) == 2:
            x = self._cast(args[0], dts[0], e.dtype)
            y = self._cast(args[1], dts[1], e.dtype)
            return self._binary(op, x, y, e.dtype, e.dtype)
        raise EmitError(f"kernel {name!r}: op {op!r} with {len(args)} operands")

    def _compare(self, direction: str, args: list[ir.Value], dts: list[DType]) -> ir.Value:
        x, y = args
        dt = dts[0]
        if dts[1] != dt:
            y = self._cast(y, dts[1], dt)
        if direction.endswith(".total"):  # IEEE totalOrder on floats (kernel/form.py)
            direction = direction[:-len(".total")]
            if dt.is_float:
                x, y = _total_order_key(self.b, x), _total_order_key(self.b, y)
                return self.b.icmp_signed({"EQ": "==", "NE": "!=", **_FCMP}[direction], x, y)
        if dt.is_float:
            if direction == "NE":
                return self.b.fcmp_unordered("!=", x, y)  # NaN != anything, like numpy
            if direction not in _FCMP:
                raise EmitError(f"kernel {self.k.name!r}: compare direction {direction!r}")
            return self.b.fcmp_ordered(_FCMP[direction], x, y)
        cmp = {"EQ": "==", "NE": "!=", **_FCMP}.get(direction)
        if cmp is None:
            raise EmitError(f"kernel {self.k.name!r}: compare direction {direction!r}")
        if is_unsigned(dt):
            return self.b.icmp_unsigned(cmp, x, y)
        return self.b.icmp_signed(cmp, x, y)

    def _unary(self, op: str, x: ir.Value, dt: DType, src: DType) -> ir.Value:
        b = self.b
        if dt.is_float:
            if op == "abs":
                r = mathlib.fabs(b, x)
            elif op == "negate":
                r = b.fneg(x)
            elif op == "sign":
                r = _sign(b, x, dt)
            elif op == "sqrt":
                r = mathlib.sqrt_value(b, x)
            elif op in _MATH_OPS:
                r = mathlib.call_math(b, op, x)
            else:
                raise EmitError(f"kernel {self.k.name!r}: op {op!r} on {dt}")
            return self._round_narrow_float(r, dt)
        t = x.type
        if op == "not":
            return b.not_(x)
        if op == "negate":
            return b.sub(zero_of(t), x)
        if op == "abs":
            return (
                x
                if is_unsigned(dt)
                else b.select(b.icmp_signed("<", x, zero_of(t)), b.sub(zero_of(t), x), x)
            )
        if op == "sign":
            return _sign(b, x, dt)
        if op == "popcnt":
            fn = mathlib._intrinsic(self.module, f"llvm.ctpop.i{t.width}", t, [t])
            return b.call(fn, [x])
        if op == "count_leading_zeros":
            fn = mathlib._intrinsic(self.module, f"llvm.ctlz.i{t.width}", t, [t, I1])
            return b.call(fn, [x, ir.Constant(I1, 0)])
        raise EmitError(f"kernel {self.k.name!r}: op {op!r} on {dt}")

    def _binary(self, op: str, x: ir.Value, y: ir.Value, dt: DType, _res: DType) -> ir.Value:
        b = self.b
        if dt.is_float:
            if op == "add":
                r = b.fadd(x, y)
            elif op == "subtract":
                r = b.fsub(x, y)
            elif op == "multiply":
                r = b.fmul(x, y)
            elif op == "divide":
                r = b.fdiv(x, y)
            elif op == "maximum":
                r = _fmax(b, x, y)
            elif op == "minimum":
                r = _fmin(b, x, y)
            elif op in ("remainder", "power", "atan2") or op in mathlib.SPECIAL_BINARY:
                r = mathlib.call_math(b, op, x, y)
            elif op == "next_after":  # steps on the storage format's own grid
                r = mathlib.next_after(b, x, y, dt.name)
            else:
                raise EmitError(f"kernel {self.k.name!r}: op {op!r} on {dt}")
            # maximum / minimum pick an operand and need no rounding.
            return r if op in ("maximum", "minimum") else self._round_narrow_float(r, dt)
        u = is_unsigned(dt)
        if dt.kind == "b":
            table = {
                "add": b.or_,
                "multiply": b.and_,
                "maximum": b.or_,
                "minimum": b.and_,
                "and": b.and_,
                "or": b.or_,
                "xor": b.xor,
            }
            if op in table:
                return table[op](x, y)
            raise EmitError(f"kernel {self.k.name!r}: op {op!r} on {dt}")
        simple = {
            "add": b.add,
            "subtract": b.sub,
            "multiply": b.mul,
            "and": b.and_,
            "or": b.or_,
            "xor": b.xor,
        }
        if op in simple:
            return simple[op](x, y)
        if op == "divide":
            return _idiv(b, x, y, u)
        if op == "remainder":
            return _irem(b, x, y, u)
        if op == "maximum":
            return _imax(b, x, y, u)
        if op == "minimum":
            return _imin(b, x, y, u)
        if op == "power":
            return _ipow(b, x, y, u)
        if op == "saturating_rounding_doubling_high_mul":
            return _srdhm(b, x, y)
        if op == "rounding_divide_by_pot":
            return _rdbpot(b, x, y)
        if op == "shift_left":
            return _shift("left")(b, x, y)
        if op == "shift_right_arithmetic":
            # On the bit pattern, unsigned types included: the top bit is replicated,
            # as the StableHLO interpreter (APInt::ashr) and XLA (AShr) do.
            return _shift("arith")(b, x, y)
        if op == "shift_right_logical":
            return _shift("logical")(b, x, y)
        raise EmitError(f"kernel {self.k.name!r}: op {op!r} on {dt}")

    # ----------------------------------------------------------- conversions

    def _cast(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """convert semantics: float -> int truncates toward zero and saturates (NaN -> 0);
        -> i1 tests != 0; ints widen by their own signedness; narrow floats round."""
        if src == dst:
            return v
        b = self.b
        st, tt = compute_type(src), compute_type(dst)
        if dst.kind == "b":
            if src.is_float:
                return b.fcmp_unordered("!=", v, zero_of(st))  # NaN is true, like numpy
            return b.icmp_unsigned("!=", v, zero_of(st))
        if src.is_float and dst.is_float:
            if st == F64 and dst.name in _NARROW_FLOATS:
                v = self._f64_to_f32_odd(v)
            elif st != tt:
                v = b.fpext(v, tt) if tt == F64 else b.fptrunc(v, tt)
            return self._round_narrow_float(v, dst) if tt == F32 else v
        if src.is_float:
            sat = "fptoui" if is_unsigned(dst) else "fptosi"
            name = f"llvm.{sat}.sat.i{tt.width}.{'f64' if st == F64 else 'f32'}"
            return b.call(mathlib._intrinsic(self.module, name, tt, [st]), [v])
        if dst.is_float:
            if (dst.name == "bf16" or dst.name in SMALL_FLOATS) and st.width > 24:
                # Integers past 2**24 can be inexact in f32. (f16 needs no care: those
                # are beyond its range and become inf either way; of the small floats
                # only e8m0 reaches so far, but rounding to odd is right for all.)
                return self._round_narrow_float(self._int_to_f32_odd(v, src), dst)
            r = b.uitofp(v, tt) if is_unsigned(src) else b.sitofp(v, tt)
            return self._round_narrow_float(r, dst) if tt == F32 else r
        if st.width == tt.width:
            return v
        if st.width > tt.width:
            return b.trunc(v, tt)
        return b.zext(v, tt) if is_unsigned(src) else b.sext(v, tt)


def emit_kernel(module: ir.Module, kernel: Kernel,
                schedule: LoopSchedule | None = None) -> ir.Function:
    """Adds `void NAME(ptr bindings)` computing `kernel` to module and returns it.

    The function is hidden (dso_local), in section `.text.NAME`, nounwind. Target
    features recorded on the module (mathlib.set_target_features, done by
    TargetInfo.new_module) decide hardware sqrt and f16 conversions.
    Other dispatch kinds (branches, sorts, ...) have their own emitters: codegen/kinds.py.
    The loops follow `schedule` (toolchain/loops), by default the plain one: the
    domain's loops in order, one output at a time.
    """
    if not isinstance(kernel, Kernel):
        return emit_other_kind(module, kernel)
    # A channel pad to whole words: a runtime call where the target's runtime has it.
    if mathlib.target_features(module).simd in PAD_ROWS_SIMD:
        rows = pad_rows_shape(kernel, schedule)
        if rows is not None:
            return emit_pad_rows(module, kernel, rows)
    return _KernelEmitter(module, kernel, schedule or plain_schedule(kernel)).emit()
