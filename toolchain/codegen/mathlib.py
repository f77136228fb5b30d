"""Our own math functions, emitted as LLVM IR so that no libm call ever reaches the link.

Each function is an `internal` IR function in its own `.text.mrt_math_*` section, emitted
once per module the first time a kernel needs it (`call_math`). Names never match a C
library name (`expf`, ...), so LLVM's library-call simplifications cannot recognise them
and turn them back into libcalls. Only integer ops (with `llvm.fshl` / `llvm.ctlz`, and
32x32->64 multiplies), basic float arithmetic (`fadd`, `fmul`, `fdiv`, compares,
int <-> float conversions) and `llvm.fabs` (a sign-bit clear on every target) are used;
targets without the instructions get those from libgcc (`__aeabi_fadd`, `__addsf3`,
`__aeabi_lmul`, ...). `llvm.sqrt.f32` is used only when the target has an FPU
(`TargetFeatures.hardware_sqrt`), where it is one instruction. Two small tables live
in `.rodata`: 32 bytes of 2/pi bits for the trigonometric reduction
(`mrt_math_two_over_pi`) and 40 bytes of log2 constants for pow (`mrt_math_log2_centres`).

The polynomials are truncated Taylor series on arguments reduced far enough that the
first omitted term is below 0.1 ulp (bounds given next to each function), so no fitted
coefficients are needed and each bound can be checked by hand. Transcendental functions
work in f32; f64 operands are rounded to f32 and back (f32 accuracy), except for exp,
log, sqrt, sin, cos and pow, which have f64 versions (mathlib_f64.py). Rounding
functions, `fmod` and the f16 conversions are exact and exist for f32 and f64.

Every function is right over the whole f32 domain, special values included: NaN in,
NaN out; +-0 keeps its sign where the function is odd at 0; overflow gives +-inf and
underflow +-0 or a subnormal; poles and domain edges give what C99 Annex F (and numpy)
give: log(+-0) = -inf, log(x < 0) = NaN, log1p(-1) = -inf, expm1(x < -17.5) = -1,
tanh(+-inf) = +-1, sin / cos / tan(+-inf) = NaN, pow's special pairs.

Accuracy: the bounds tests/codegen/test_codegen_mathlib.py asserts over sweeps of the
whole f32 range (every binade, both signs, subnormals, the function's edges) against
float64 numpy (ulp = f32 spacing at the true result), with the worst error seen in
brackets (sin, cos, tan, log, expm1 and log1p also checked once on all 2**32 inputs:
1.59, 1.59, 3.74, 1.97, 1.45 and 2.47 ulp at worst):

    exponential            <= 2 ulp   [0.92]     subnormal results and overflow included
    exponential_minus_one  <= 3 ulp   [1.40]
    log                    <= 2 ulp   [1.94]     every positive f32, subnormals included
    log_plus_one           <= 3 ulp   [2.25]
    tanh                   <= 4 ulp   [2.17]
    logistic               <= 3 ulp   [2.28]
    sqrt                   0.5 ulp (hardware, correctly rounded) / <= 1 ulp [0.75] (Newton)
    rsqrt                  <= 2 ulp   [1.48 hardware sqrt, 1.96 Newton]
    cbrt                   <= 2 ulp   [1.72]
    sine, cosine           <= 2 ulp   [1.54]     every finite f32: Payne-Hanek reduction
    tan                    <= 4 ulp   [3.38]
    atan2                  <= 3 ulp   [2.47]
    power                  <= 2 ulp   [1.05]     y * log2|x| in double-f32, so the error
                           does not grow with |y ln x| (it reached 119 ulp in plain f32)
    floor, ceil, round_nearest_even, round_nearest_afz, remainder (fmod): exact, f32 and
    f64; f16 <-> f32 conversions: exact / correctly rounded (tested exhaustively)

CHLO's special functions (erf, erfc, erf_inv, lgamma, digamma, bessel_i1e, zeta,
polygamma, the inverse trigonometric and hyperbolic functions, next_after) live in
mathlib_special.py; docs/mathlib.md has their measured errors.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

SECTION_PREFIX = ".text."
PREFIX = "mrt_math_"


@dataclass(frozen=True)
class TargetFeatures:
    """What the IR emitters may assume about the target's floating-point hardware."""

    hardware_sqrt: bool = False  # llvm.sqrt.f32 is one instruction, never a sqrtf call
    hardware_f16: bool = False  # fpext/fptrunc half <-> float are instructions
    hardware_f64: bool = False  # double-precision FPU (llvm.sqrt.f64 is an instruction)


_FEATURES: weakref.WeakKeyDictionary[ir.Module, TargetFeatures] = weakref.WeakKeyDictionary()


def set_target_features(module: ir.Module, features: TargetFeatures) -> None:
    """Records what the module's target can do; emitters consult it per module."""
    _FEATURES[module] = features


def target_features(module: ir.Module) -> TargetFeatures:
    """The module's features; the conservative default (no FPU tricks) if never set."""
    return _FEATURES.get(module, TargetFeatures())


# --------------------------------------------------------------------------- helpers


def _fconst(t: ir.Type, v: float) -> ir.Constant:
    return ir.Constant(t, v)


def _iconst(bits: int, v: int) -> ir.Constant:
    return ir.Constant(ir.IntType(bits), v & ((1 << bits) - 1))


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


def fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """|x| (llvm.fabs: a sign-bit clear on every target, never a call)."""
    return b.call(_intrinsic(b.module, f"llvm.fabs.{_suffix(x.type)}", x.type, [x.type]), [x])


def _negate_if(b: ir.IRBuilder, cond: ir.Value, v: ir.Value) -> ir.Value:
    return b.select(cond, b.fneg(v), v)


def _signbit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """x's sign bit is set (true for -0.0 too)."""
    return b.icmp_signed("<", _bits(b, x), _iconst(_fmt(x.type)[0], 0))


def _zero_like(b: ir.IRBuilder, r: ir.Value, x: ir.Value) -> ir.Value:
    """r, except that a zero r takes the sign of x (x * 0.0 is a zero with x's sign for
    finite x; LLVM cannot fold it without fast-math flags).

    We deliberately avoid llvm.copysign: with the sign operand an f16 value widened by
    fpext (f16 kernels on Cortex-M55, +fullfp16), LLVM 22's Arm backend asserts in
    SelectionDAG ("Cannot BITCAST between types of different sizes"), and InstCombine
    turns integer sign-bit manipulation back into llvm.copysign.
    """
    zero = _fconst(r.type, 0.0)
    return b.select(b.fcmp_ordered("==", r, zero), b.fmul(x, zero), r)


def _suffix(t: ir.Type) -> str:
    return {F32: "f32", F64: "f64", F16: "f16"}[t]


def _fmt(t: ir.Type) -> tuple[int, int, int]:
    """(total bits, mantissa bits, exponent bias) of an IEEE format."""
    return (32, 23, 127) if t == F32 else (64, 52, 1023)


def _bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.bitcast(x, ir.IntType(_fmt(x.type)[0]))


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2**n as f32 for an i32 n in [-126, 127], built from its exponent field."""
    e = b.shl(b.add(n, _iconst(32, 127)), _iconst(32, 23))
    return b.bitcast(e, F32)


def _horner(b: ir.IRBuilder, z: ir.Value, coeffs: list[float]) -> ir.Value:
    """c0 + z*(c1 + z*(c2 + ...)) in f32."""
    acc = _fconst(F32, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, z), _fconst(F32, c))
    return acc


def _round_to_i32(b: ir.IRBuilder, t: ir.Value, limit: float) -> ir.Value:
    """Nearest integer (ties away from zero) of t clamped to +-limit; NaN gives 0.

    The clamp comes first because fptosi of an out-of-range value is poison.
    """
    lim = _fconst(F32, limit)
    t = b.select(b.fcmp_ordered(">", t, lim), lim, t)
    t = b.select(b.fcmp_ordered("<", t, b.fneg(lim)), b.fneg(lim), t)
    t = b.select(b.fcmp_unordered("uno", t, t), _fconst(F32, 0.0), t)
    half = _fconst(F32, 0.5)
    t = b.fadd(t, b.select(b.fcmp_ordered("<", t, _fconst(F32, 0.0)), b.fneg(half), half))
    return b.fptosi(t, I32)


# --------------------------------------------------------------------------- registry

# name -> (argument count, generic over f32/f64?, body builder)
_Body = Callable[..., ir.Value]
_DEFS: dict[str, tuple[int, bool, _Body]] = {}


def _define(name: str, nargs: int = 1, generic: bool = False) -> Callable[[_Body], _Body]:
    def register(fn: _Body) -> _Body:
        _DEFS[name] = (nargs, generic, fn)
        return fn

    return register


MATH_FUNCTIONS = _DEFS  # exported for tests and documentation


def math_function(module: ir.Module, name: str, t: ir.Type = F32) -> ir.Function:
    """The module's definition of math function `name` for float type t, emitted on demand."""
    nargs, generic, body = _DEFS[name]
    if not generic:
        t = F32
    fname = f"{PREFIX}{name}_{_suffix(t)}"
    existing = module.globals.get(fname)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(t, [t] * nargs), fname)
    fn.linkage = "internal"
    fn.section = SECTION_PREFIX + fname
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(body(b, *fn.args))
    return fn


def call_math(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Calls math function `name` on f32 or f64 values (f64 goes through f32 unless the
    function is exact for both widths)."""
    t = args[0].type
    _, generic, _ = _DEFS[name]
    if t == F64:  # exp, log, sqrt, sin, cos, pow at f64 accuracy (mathlib_f64.py)
        from toolchain.codegen.mathlib_f64 import BODIES, call_f64

        if name in BODIES:
            return call_f64(b, name, *args)
    if t == F32 or generic:
        return b.call(math_function(b.module, name, t), list(args))
    narrowed = [b.fptrunc(a, F32) for a in args]
    return b.fpext(b.call(math_function(b.module, name, F32), narrowed), t)


# --------------------------------------------------------------------------- exp / log

LOG2E = 1.4426950408889634
LN2_HI = 0.693145751953125  # 15 significant bits: n * LN2_HI is exact for |n| < 512
LN2_LO = 1.428606765330187e-06
INF = math.inf
NAN = math.nan


def _reduce_ln2(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = n*ln2 + r with |r| <= ln2/2 (n clamped to +-160): returns (n as i32, r)."""
    n = _round_to_i32(b, b.fmul(x, _fconst(F32, LOG2E)), 160.0)
    nf = b.sitofp(n, F32)
    r = b.fsub(x, b.fmul(nf, _fconst(F32, LN2_HI)))  # exact: n*LN2_HI is exact, Sterbenz
    r = b.fsub(r, b.fmul(nf, _fconst(F32, LN2_LO)))
    return n, r


# e**r - 1 for |r| <= ln2/2: Taylor to r**8/8!; the omitted r**9/9! is < 1e-9 * |r|.
_EXPM1_TAYLOR = [1.0 / math.factorial(k) for k in range(2, 9)]


def _expm1_poly(b: ir.IRBuilder, r: ir.Value) -> ir.Value:
    # r + r*r*(1/2 + r/6 + ...): the leading r is added last so tiny r stays exact.
    return b.fadd(r, b.fmul(b.fmul(r, r), _horner(b, r, _EXPM1_TAYLOR)))


def _ldexp(b: ir.IRBuilder, p: ir.Value, n: ir.Value) -> ir.Value:
    """p * 2**n for n in [-252, 254]: two exact power-of-two factors, one final rounding."""
    n1 = b.ashr(n, _iconst(32, 1))
    n2 = b.sub(n, n1)
    return b.fmul(b.fmul(p, _pow2(b, n1)), _pow2(b, n2))


@_define("exponential")
def _exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # exp(x) = 2**n * e**r; e**r = 1 + expm1(r) (Taylor, error < 0.1 ulp), <= 2 ulp overall.
    n, r = _reduce_ln2(b, x)
    y = _ldexp(b, b.fadd(_fconst(F32, 1.0), _expm1_poly(b, r)), n)
    y = b.select(b.fcmp_ordered(">", x, _fconst(F32, 88.72284)), _fconst(F32, INF), y)
    y = b.select(b.fcmp_ordered("<", x, _fconst(F32, -103.97208)), _fconst(F32, 0.0), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


@_define("exponential_minus_one")
def _expm1(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # |x| <= ln2/2: the series directly. Else 2**n*(1+q) - 1 = 2**n*q + (2**n - 1), where
    # 2**n - 1 is exact for n in [-24, 24] and one rounding remains: <= 3 ulp.
    # For n > 64 the -1 is below half an ulp and 2**n may not be a normal f32: use exp's
    # two-step scaling instead.
    n, r = _reduce_ln2(b, x)
    q = _expm1_poly(b, r)
    ns = b.select(b.icmp_signed("<", n, _iconst(32, -30)), _iconst(32, -30), n)
    ns = b.select(b.icmp_signed(">", ns, _iconst(32, 64)), _iconst(32, 64), ns)
    s = _pow2(b, ns)
    big = b.fadd(b.fmul(s, q), b.fsub(s, _fconst(F32, 1.0)))
    huge = _ldexp(b, b.fadd(_fconst(F32, 1.0), q), n)
    big = b.select(b.icmp_signed(">", n, _iconst(32, 64)), huge, big)
    small = b.fcmp_ordered("<=", fabs(b, x), _fconst(F32, 0.34657359))
    y = b.select(small, _expm1_poly(b, x), big)
    y = b.select(b.fcmp_ordered(">", x, _fconst(F32, 88.72284)), _fconst(F32, INF), y)
    # Below -17.5, e**x < 2**-25 is under half an ulp of 1: the result rounds to -1 (the
    # reduction above clamps n at -160 and is meaningless from x < -111 on).
    y = b.select(b.fcmp_ordered("<", x, _fconst(F32, -17.5)), _fconst(F32, -1.0), y)
    # NaN, and +-0 with its sign (the polynomial's -0 + +0 would give +0).
    return b.select(b.fcmp_unordered("ueq", x, _fconst(F32, 0.0)), x, y)


# 2*atanh(s) = 2s + s*z*(2/3 + 2z/5 + ...), z = s*s <= 0.0295 for m in [sqrt(1/2), sqrt(2));
# the omitted 2 s**11/11 is < 2e-9 * 2|s|.
_LOG_TAYLOR = [2.0 / (2 * k + 1) for k in range(1, 5)]


def _log_parts(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = 2**e * m with m in [sqrt(1/2), sqrt(2)) for finite x > 0: returns (e as f32,
    log(m))."""
    sub = b.fcmp_ordered("<", x, _fconst(F32, 2.0**-126))
    x = b.select(sub, b.fmul(x, _fconst(F32, 2.0**23)), x)  # subnormals: normalise first
    bits = b.bitcast(x, I32)
    e = b.sub(b.lshr(bits, _iconst(32, 23)), _iconst(32, 127))
    e = b.select(sub, b.sub(e, _iconst(32, 23)), e)
    mbits = b.or_(b.and_(bits, _iconst(32, 0x7FFFFF)), _iconst(32, 0x3F800000))
    high = b.icmp_unsigned(">", mbits, _iconst(32, 0x3FB504F3))  # m > sqrt(2)
    mbits = b.select(high, b.sub(mbits, _iconst(32, 0x00800000)), mbits)
    e = b.select(high, b.add(e, _iconst(32, 1)), e)
    m = b.bitcast(mbits, F32)
    f = b.fsub(m, _fconst(F32, 1.0))  # exact (Sterbenz)
    s = b.fdiv(f, b.fadd(m, _fconst(F32, 1.0)))
    z = b.fmul(s, s)
    logm = b.fadd(b.fadd(s, s), b.fmul(b.fmul(s, z), _horner(b, z, _LOG_TAYLOR)))
    return b.sitofp(e, F32), logm


def _log_special(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, 0.0)), _fconst(F32, -INF), y)
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, INF)), x, y)
    return b.select(b.fcmp_unordered("ult", x, _fconst(F32, 0.0)), _fconst(F32, NAN), y)


@_define("log")
def _log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # e*ln2 + log(m): e*LN2_HI is exact, log(m) <= 1.5 ulp and |log m| <= ln2/2: <= 2 ulp.
    e, logm = _log_parts(b, x)
    y = b.fadd(b.fmul(e, _fconst(F32, LN2_HI)), b.fadd(b.fmul(e, _fconst(F32, LN2_LO)), logm))
    return _log_special(b, x, y)


@_define("log_plus_one")
def _log1p(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # log(u) with u = fl(1+x), plus the first-order correction (x - (u-1))/u for the
    # rounding of u: <= 3 ulp. Tiny x (u == 1) returns x itself.
    u = b.fadd(_fconst(F32, 1.0), x)
    log_u = _log(b, u)
    corr = b.fdiv(b.fsub(x, b.fsub(u, _fconst(F32, 1.0))), u)
    y = b.fadd(log_u, corr)
    y = b.select(b.fcmp_ordered("==", u, _fconst(F32, 1.0)), x, y)
    y = b.select(b.fcmp_ordered("==", x, _fconst(F32, INF)), x, y)
    # x = -1 is the pole (u = 0; the correction would be 0/0).
    return b.select(b.fcmp_ordered("==", u, _fconst(F32, 0.0)), _fconst(F32, -INF), y)


@_define("tanh")
def _tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # tanh|x| = e/(e+2) with e = expm1(2|x|): no cancellation anywhere, <= 4 ulp.
    ax = fabs(b, x)
    e = b.call(math_function(b.module, "exponential_minus_one"), [b.fadd(ax, ax)])
    t = b.fdiv(e, b.fadd(e, _fconst(F32, 2.0)))
    t = b.select(b.fcmp_ordered(">", ax, _fconst(F32, 9.1)), _fconst(F32, 1.0), t)
    t = _negate_if(b, b.fcmp_ordered("<", x, _fconst(F32, 0.0)), t)
    # |x| < 2**-12: tanh x = x within 2**-25 relative; this also keeps -0.0 and NaN.
    return b.select(b.fcmp_unordered(">=", ax, _fconst(F32, 2.0**-12)), t, x)


@_define("logistic")
def _logistic(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # With e = exp(-|x|) <= 1: 1/(1+e) for x >= 0 and e/(1+e) for x < 0, so the small
    # side keeps its relative accuracy: <= 3 ulp.
    e = b.call(math_function(b.module, "exponential"), [b.fneg(fabs(b, x))])
    p = b.fdiv(_fconst(F32, 1.0), b.fadd(_fconst(F32, 1.0), e))
    return b.select(b.fcmp_ordered(">=", x, _fconst(F32, 0.0)), p, b.fmul(e, p))


# --------------------------------------------------------------------------- roots


def _sqrt_newton(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt for targets without an FPU: first guess halves the exponent field (<= 6 % off),
    three Newton steps y = (y + x/y)/2 (errors 6e-2 -> 2e-3 -> 2e-6 -> rounding): <= 1 ulp."""
    tiny = b.fcmp_ordered("<", x, _fconst(F32, 2.0**-100))
    xs = b.select(tiny, b.fmul(x, _fconst(F32, 2.0**100)), x)  # keep the guess normal
    guess = b.add(b.lshr(b.bitcast(xs, I32), _iconst(32, 1)), _iconst(32, 0x1FC00000))
    y = b.bitcast(guess, F32)
    for _ in range(3):
        y = b.fmul(_fconst(F32, 0.5), b.fadd(y, b.fdiv(xs, y)))
    y = b.select(tiny, b.fmul(y, _fconst(F32, 2.0**-50)), y)
    # 0, inf and NaN return themselves; negatives are NaN.
    keep = b.or_(
        b.fcmp_unordered("ueq", x, _fconst(F32, 0.0)),
        b.fcmp_ordered("==", x, _fconst(F32, INF)),
    )
    y = b.select(keep, x, y)
    return b.select(b.fcmp_ordered("<", x, _fconst(F32, 0.0)), _fconst(F32, NAN), y)


def sqrt_value(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt inline: llvm.sqrt on FPU targets, else a call to the Newton function."""
    feats = target_features(b.module)
    if x.type == F64 and feats.hardware_f64 or x.type == F32 and feats.hardware_sqrt:
        fn = _intrinsic(b.module, f"llvm.sqrt.{_suffix(x.type)}", x.type, [x.type])
        return b.call(fn, [x])
    return call_math(b, "sqrt", x)


@_define("sqrt")
def _sqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    if target_features(b.module).hardware_sqrt:
        return b.call(_intrinsic(b.module, "llvm.sqrt.f32", F32, [F32]), [x])
    return _sqrt_newton(b, x)


@_define("rsqrt")
def _rsqrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # 1/sqrt(x): two roundings after a <= 1 ulp sqrt, <= 2 ulp.
    return b.fdiv(_fconst(F32, 1.0), _sqrt(b, x))


@_define("cbrt")
def _cbrt(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # Guess: the bit pattern divided by 3 and rebiased (<= 10 % off); four Newton steps
    # y -= (y^3 - a)/(3y^2) square the error each time (1e-1 -> 1e-2 -> 1e-4 -> 1e-8): <= 2 ulp.
    ax = fabs(b, x)
    tiny = b.fcmp_ordered("<", ax, _fconst(F32, 2.0**-100))
    a = b.select(tiny, b.fmul(ax, _fconst(F32, 2.0**102)), ax)
    guess = b.add(b.udiv(b.bitcast(a, I32), _iconst(32, 3)), _iconst(32, 0x2A555555))
    y = b.bitcast(guess, F32)
    third = _fconst(F32, 1.0 / 3.0)
    for _ in range(4):
        y = b.fmul(b.fadd(b.fadd(y, y), b.fdiv(a, b.fmul(y, y))), third)
    y = b.select(tiny, b.fmul(y, _fconst(F32, 2.0**-34)), y)
    keep = b.or_(
        b.fcmp_unordered("ueq", ax, _fconst(F32, 0.0)),
        b.fcmp_ordered("==", ax, _fconst(F32, INF)),
    )
    y = _negate_if(b, b.fcmp_ordered("<", x, _fconst(F32, 0.0)), y)
    return b.select(keep, x, y)


# --------------------------------------------------------------------------- trigonometry

# Argument reduction for sin, cos and tan: Payne-Hanek in 32-bit integer arithmetic.
#
# A finite |x| >= pi/4 is m * 2**E with a 24-bit integer m. x * 2/pi mod 4 (the quadrant
# and the fraction of a quadrant) only needs the bits of 2/pi from weight 2**(1-E) on:
# earlier ones multiply m into a multiple of 4. We take 96 of them, P, from the table
# below (one leading zero word covers the small exponents) and keep the low 96 bits of
# the exact product m * P: a fixed-point number whose top 2 bits are the quadrant and
# whose other 94 the fraction. The 2/pi bits left out weigh less than 2**-70 quadrant.
# An exhaustive search over every f32 (the test module names the worst cases) finds the
# fraction never closer to an integer than 2**-29.9 quadrant, so at least 34 of its 64
# bits we use are significant; with the truncations of the normalised fraction, of
# pi/2 and of their product, the reduced argument is within 2**-29 relative before its
# one rounding to f32. Why this rather than a longer Cody-Waite split: the work is four
# 32x32->64 integer multiplies (one instruction each on Armv7-M, two on RV32IM, a libgcc
# helper on Armv6-M) and a few shifts whatever the target's float hardware, while a
# Cody-Waite split of pi/2 reaching 2**128 needs a dozen exact f32 pieces, as many
# multiply-subtracts (soft-float calls on half our targets) and a quadrant number too
# large for any integer type; in f64 it would be software on most of our targets.
#
# 2/pi = 0.A2F9836E 4E441529 ... in hex; 224 bits reach the last one a finite f32 needs.
TWO_OVER_PI_WORDS = (0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599,
                     0x3C439041, 0xFE5163AB)  # fmt: skip
PIO2_Q31 = 0xC90FDAA2  # pi/2 * 2**31, rounded (2**-34 relative)
PIO4_BITS = 0x3F490FDB  # f32 pi/4 (rounded up): below it the argument is its own reduction
_TRIG_TABLE = PREFIX + "two_over_pi"

# sin r = r + r*z*(-1/6 + z/120 - ...), z = r*r <= (pi/4)**2; omitted r**11/11! < 3e-9 |r|.
_SIN_TAYLOR = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 5)]
# cos r = 1 - z/2 + z*z*(1/24 - z/720 + ...); the omitted z**6/12! is < 2e-10.
_COS_TAYLOR = [(-1.0) ** k / math.factorial(2 * k) for k in range(2, 6)]


def _rodata_table(module: ir.Module, name: str, t: ir.Type, values: list) -> ir.GlobalVariable:
    """An internal constant array in its own `.rodata.<name>` section, emitted once."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    ty = ir.ArrayType(t, len(values))
    g = ir.GlobalVariable(module, ty, name)
    g.initializer = ir.Constant(ty, [ir.Constant(t, v) for v in values])
    g.global_constant = True
    g.linkage = "internal"
    g.section = ".rodata." + name
    g.align = 4
    return g


def _load_entry(b: ir.IRBuilder, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
    ptr = b.gep(table, [_iconst(32, 0), index], inbounds=True, source_etype=table.value_type)
    return b.load(ptr, typ=table.value_type.element)


def _fshl(b: ir.IRBuilder, hi: ir.Value, lo: ir.Value, s: ir.Value) -> ir.Value:
    """The top 32 bits of (hi:lo) << s for s in [0, 31] (llvm.fshl: no shift by 32)."""
    fn = _intrinsic(b.module, "llvm.fshl.i32", I32, [I32, I32, I32])
    return b.call(fn, [hi, lo, s])


def _mul_wide(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The exact 64-bit product of two unsigned i32."""
    return b.mul(b.zext(x, I64), b.zext(y, I64))


def _hi32(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.trunc(b.lshr(v, _iconst(64, 32)), I32)


def _trig_reduce(b: ir.IRBuilder, abits: ir.Value) -> tuple[ir.Value, ir.Value]:
    """|x| = q*pi/2 + r with |r| <= pi/4 for |x| given by its bits (sign clear): returns
    (q as i32, only its low 2 bits meaningful; r as f32). See the comment above.

    Arguments up to pi/4 are their own reduction and branch around it: on an FPU target
    the reduction costs about as much again as the polynomials."""
    small = b.icmp_unsigned("<=", abits, _iconst(32, PIO4_BITS))
    r_small = b.bitcast(abits, F32)
    entry = b.block
    reduce = b.function.append_basic_block("trig_reduce")
    join = b.function.append_basic_block("trig_reduced")
    b.cbranch(small, join, reduce)
    b.position_at_end(reduce)
    ef = b.lshr(abits, _iconst(32, 23))  # >= 126 here (|x| > pi/4); 255 for inf / NaN
    m = b.or_(b.and_(abits, _iconst(32, 0x7FFFFF)), _iconst(32, 0x800000))
    j = b.sub(ef, _iconst(32, 120))  # first 2/pi bit needed, counted in the table
    w, s = b.lshr(j, _iconst(32, 5)), b.and_(j, _iconst(32, 31))
    table = _rodata_table(b.module, _TRIG_TABLE, I32, list(TWO_OVER_PI_WORDS))
    words = [_load_entry(b, table, b.add(w, _iconst(32, i))) for i in range(4)]
    p2, p1, p0 = (_fshl(b, words[i], words[i + 1], s) for i in range(3))
    # Low 96 bits of m * (p2:p1:p0) as three words r2:r1:r0.
    a0, a1 = _mul_wide(b, m, p0), _mul_wide(b, m, p1)
    t = b.add(b.lshr(a0, _iconst(64, 32)), b.and_(a1, _iconst(64, 0xFFFFFFFF)))
    r0, r1 = b.trunc(a0, I32), b.trunc(t, I32)
    r2 = b.add(b.add(_hi32(b, a1), b.mul(m, p2)), _hi32(b, t))
    # The fraction as a signed 64-bit value f * 2**64, f in [-1/2, 1/2): rounding the
    # quadrant to nearest. Then |f| normalised to 32 bits (its top word is never 0).
    s_hi, s_lo = _fshl(b, r2, r1, _iconst(32, 2)), _fshl(b, r1, r0, _iconst(32, 2))
    neg = b.icmp_signed("<", s_hi, _iconst(32, 0))
    q = b.add(b.lshr(r2, _iconst(32, 30)), b.zext(neg, I32))
    s64 = b.or_(b.shl(b.zext(s_hi, I64), _iconst(64, 32)), b.zext(s_lo, I64))
    s64 = b.select(neg, b.sub(_iconst(64, 0), s64), s64)
    hi, lo = _hi32(b, s64), b.trunc(s64, I32)
    ctlz = _intrinsic(b.module, "llvm.ctlz.i32", I32, [I32, I1])
    c = b.call(ctlz, [hi, ir.Constant(I1, 0)])
    norm = _fshl(b, hi, lo, c)  # |f| = norm * 2**(-32 - c), norm in [2**31, 2**32)
    # r = |f| * pi/2 = (norm * PIO2_Q31 >> 32) * 2**(-31 - c): the integer product keeps
    # 31 bits, uitofp rounds it once, and the power of two goes into the exponent field.
    prod = _hi32(b, _mul_wide(b, norm, _iconst(32, PIO2_Q31)))
    rbits = b.bitcast(b.uitofp(prod, F32), I32)
    rbits = b.sub(rbits, b.shl(b.add(c, _iconst(32, 31)), _iconst(32, 23)))
    rbits = b.or_(rbits, b.shl(b.zext(neg, I32), _iconst(32, 31)))
    r_big, reduce_end = b.bitcast(rbits, F32), b.block
    b.branch(join)
    b.position_at_end(join)
    q_phi, r_phi = b.phi(I32), b.phi(F32)
    q_phi.add_incoming(_iconst(32, 0), entry)
    q_phi.add_incoming(q, reduce_end)
    r_phi.add_incoming(r_small, entry)
    r_phi.add_incoming(r_big, reduce_end)
    return q_phi, r_phi


def _sin_cos_poly(b: ir.IRBuilder, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    z = b.fmul(r, r)
    s = b.fadd(r, b.fmul(b.fmul(r, z), _horner(b, z, _SIN_TAYLOR)))
    c = b.fadd(
        b.fsub(_fconst(F32, 1.0), b.fmul(z, _fconst(F32, 0.5))),
        b.fmul(b.fmul(z, z), _horner(b, z, _COS_TAYLOR)),
    )
    return s, c


def _trig(b: ir.IRBuilder, x: ir.Value, odd: bool, body: Callable[..., ir.Value]) -> ir.Value:
    """body(q, r) evaluated on |x| = q*pi/2 + r; an odd function's result takes x's sign
    (so sin(-0) = -0). inf and NaN give NaN."""
    bits = b.bitcast(x, I32)
    abits = b.and_(bits, _iconst(32, 0x7FFFFFFF))
    q, r = _trig_reduce(b, abits)
    y = body(q, r)
    if odd:
        y = _negate_if(b, b.icmp_signed("<", bits, _iconst(32, 0)), y)
    nonfinite = b.icmp_unsigned(">=", abits, _iconst(32, 0x7F800000))
    return b.select(nonfinite, _fconst(F32, NAN), y)


def _sin_quadrant(b: ir.IRBuilder, q: ir.Value, r: ir.Value) -> ir.Value:
    s, c = _sin_cos_poly(b, r)
    odd = b.trunc(q, I1)
    y = b.select(odd, c, s)
    neg = b.icmp_unsigned("!=", b.and_(q, _iconst(32, 2)), _iconst(32, 0))
    return b.select(neg, b.fneg(y), y)


@_define("sine")
def _sin(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig(b, x, True, lambda q, r: _sin_quadrant(b, q, r))


@_define("cosine")
def _cos(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    # cos x = cos |x| = sin(|x| + pi/2): the same polynomials one quadrant on.
    return _trig(b, x, False, lambda q, r: _sin_quadrant(b, b.add(q, _iconst(32, 1)), r))


def _tan_quadrant(b: ir.IRBuilder, q: ir.Value, r: ir.Value) -> ir.Value:
    s, c = _sin_cos_poly(b, r)
    return b.select(b.trunc(q, I1), b.fdiv(b.fneg(c), s), b.fdiv(s, c))


@_define("tan")
def _tan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _trig(b, x, True, lambda q, r: _tan_quadrant(b, q, r))


# atan t = t - t*z*(1/3 - z/5 + ...) for |t| <= tan(pi/8), z <= 0.1716; the omitted
# z**9/19 is < 7e-9.
_ATAN_TAYLOR = [(-1.0) ** k / (2 * k + 1) for k in range(1, 9)]
TAN_PI_8 = 0.41421356237309503


@_define("atan2", nargs=2)
def _atan2(b: ir.IRBuilder, y: ir.Value, x: ir.Value) -> ir.Value:
    # a = min/max of |y|, |x| in [0, 1]; a > tan(pi/8) uses atan a = pi/4 + atan((a-1)/(a+1));
    # then the octant is restored from |y| > |x|, the sign bit of x and the sign of y.
    ax, ay = fabs(b, x), fabs(b, y)
    swap = b.fcmp_ordered(">", ay, ax)
    mx = b.select(swap, ay, ax)
    mn = b.select(swap, ax, ay)
    a = b.fdiv(mn, mx)
    both_inf = b.and_(
        b.fcmp_ordered("==", ax, _fconst(F32, INF)), b.fcmp_ordered("==", ay, _fconst(F32, INF))
    )
    a = b.select(both_inf, _fconst(F32, 1.0), a)
    a = b.select(b.fcmp_ordered("==", mx, _fconst(F32, 0.0)), _fconst(F32, 0.0), a)
    hi = b.fcmp_ordered(">", a, _fconst(F32, TAN_PI_8))
    t = b.select(hi, b.fdiv(b.fsub(a, _fconst(F32, 1.0)), b.fadd(a, _fconst(F32, 1.0))), a)
    z = b.fmul(t, t)
    at = b.fadd(t, b.fmul(b.fmul(t, z), _horner(b, z, _ATAN_TAYLOR)))
    at = b.select(hi, b.fadd(_fconst(F32, math.pi / 4), at), at)
    at = b.select(swap, b.fsub(_fconst(F32, math.pi / 2), at), at)
    x_neg = b.icmp_signed("<", b.bitcast(x, I32), _iconst(32, 0))
    at = b.select(x_neg, b.fsub(_fconst(F32, math.pi), at), at)
    at = _negate_if(b, _signbit(b, y), at)
    nan = b.or_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
    return b.select(nan, b.fadd(x, y), at)


# --------------------------------------------------------------------------- power


def _is_odd_integer(b: ir.IRBuilder, y: ir.Value, is_int: ir.Value) -> ir.Value:
    """y is an odd integer (integers >= 2**24 are all even in f32)."""
    ay = fabs(b, y)
    small = b.fcmp_ordered("<", ay, _fconst(F32, 2.0**24))
    yi = b.fptosi(b.select(small, ay, _fconst(F32, 0.0)), I32)
    return b.and_(b.and_(small, is_int), b.trunc(yi, I1))


# pow(x, y) = 2**(y * log2|x|). The product t = y * log2|x| reaches +-150 before the
# result overflows or underflows, and an absolute error d in t is a relative error
# d * ln2 in the result: t must be good to ~2**-27, i.e. log2|x| to ~2**-34 relative.
# f32 alone gives 2**-24 (the error grows with |t| to >100 ulp), so log2|x| and t are
# carried as unevaluated sums hi + lo of two f32 ("double-f32"), with exact products
# (Dekker: operands split into 12-bit halves by masking bits, no FMA needed) and exact
# sums (Knuth's two-sum). Everything stays f32: no f64 helper on any target.
#
# |x| = 2**E * m with m in [1, 2), and c = 1 + k/4 (k = 0..4) the centre nearest m; k = 4
# (c = 2) moves into E + 1 with log2 c = 0, so that x just below 1 cancels nothing.
# log2 m = log2 c + (2/ln2) * atanh(s), s = (m-c)/(m+c), |s| <= 1/17, and
# atanh(s) = s * (1 + z/3 + z**2/5 + z**3/7), z = s*s; the omitted z**4/9 is < 2**-35
# relative. s and s * 2/ln2 are double-f32; the series tail (< 2**-9.7 of the sum) is
# plain f32.
_POW_K = (2.885390043258667, 3.851926067000022e-08)  # 2/ln2 as f32 hi + lo
_POW_LOG2C = (0.0, 0.0, 0.32192808389663696, 1.0990725662907153e-08, 0.5849624872207642,
              1.3500391915499677e-08, 0.8073549270629883, -5.005384107192867e-09, 0.0,
              0.0)  # fmt: skip  (log2(1 + k/4) as hi, lo for k = 0..3; k = 4 folds into E)
_POW_TABLE = PREFIX + "log2_centres"
LN2_F32 = 0.6931471824645996


def _split(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a = hi + lo exactly, hi keeping the top 12 significand bits (a bit mask, not
    Veltkamp's a * 4097, so it never overflows): products of halves are exact."""
    hi = b.bitcast(b.and_(b.bitcast(a, I32), _iconst(32, 0xFFFFF000)), F32)
    return hi, b.fsub(a, hi)


def _two_prod(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """p + e = a * c exactly (Dekker), for products far from overflow and underflow."""
    p = b.fmul(a, c)
    ah, al = _split(b, a)
    ch, cl = _split(b, c)
    e = b.fadd(b.fadd(b.fsub(b.fmul(ah, ch), p), b.fmul(ah, cl)), b.fmul(al, ch))
    return p, b.fadd(e, b.fmul(al, cl))


def _two_sum(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
    """s + e = a + c exactly (Knuth), whatever the magnitudes."""
    s = b.fadd(a, c)
    cc = b.fsub(s, a)
    e = b.fadd(b.fsub(a, b.fsub(s, cc)), b.fsub(c, cc))
    return s, e


def _log2_double(b: ir.IRBuilder, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log2(ax) as hi + lo, ~2**-40 relative, for finite ax > 0 (see above)."""
    sub = b.fcmp_ordered("<", ax, _fconst(F32, 2.0**-126))
    bits = b.bitcast(b.select(sub, b.fmul(ax, _fconst(F32, 2.0**23)), ax), I32)
    e = b.sub(b.lshr(bits, _iconst(32, 23)), _iconst(32, 127))
    e = b.select(sub, b.sub(e, _iconst(32, 23)), e)
    frac = b.and_(bits, _iconst(32, 0x7FFFFF))
    k = b.lshr(b.add(b.lshr(frac, _iconst(32, 20)), _iconst(32, 1)), _iconst(32, 1))
    e = b.add(e, b.zext(b.icmp_unsigned("==", k, _iconst(32, 4)), I32))
    m = b.bitcast(b.or_(frac, _iconst(32, 0x3F800000)), F32)
    c = b.fadd(b.fmul(b.sitofp(k, F32), _fconst(F32, 0.25)), _fconst(F32, 1.0))
    num = b.fsub(m, c)  # exact (Sterbenz)
    dh, dl = _two_sum(b, m, c)
    sh = b.fdiv(num, dh)
    p, pe = _two_prod(b, sh, dh)
    sl = b.fdiv(b.fsub(b.fsub(b.fsub(num, p), pe), b.fmul(sh, dl)), dh)
    z = b.fmul(sh, sh)
    tail = _horner(b, z, [1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0])
    k_hi, k_lo = _fconst(F32, _POW_K[0]), _fconst(F32, _POW_K[1])
    mp, me = _two_prod(b, k_hi, sh)
    lo = b.fadd(b.fadd(me, b.fadd(b.fmul(k_hi, sl), b.fmul(k_lo, sh))), b.fmul(b.fmul(mp, z), tail))
    table = _rodata_table(b.module, _POW_TABLE, F32, list(_POW_LOG2C))
    k2 = b.shl(k, _iconst(32, 1))
    c_hi, c_lo = _load_entry(b, table, k2), _load_entry(b, table, b.add(k2, _iconst(32, 1)))
    lh, ll = _two_sum(b, c_hi, mp)
    ll = b.fadd(ll, b.fadd(lo, c_lo))
    # E + lh is exact as hi + lo: E = 0 or |E| >= 1 > |lh| (Fast2Sum's condition).
    ef = b.sitofp(e, F32)
    hh = b.fadd(ef, lh)
    hl = b.fsub(lh, b.fsub(hh, ef))
    return hh, b.fadd(hl, ll)


@_define("power", nargs=2)
def _pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    # t = y * log2|x| as th + tl (error ~2**-36 * |t|), then 2**t = 2**n * e**(f ln2)
    # with n = round(th), f = (th - n) + tl: <= 3 ulp. Signs and special cases follow
    # C99 Annex F / numpy.
    ax = fabs(b, x)
    hh, hl = _log2_double(b, ax)
    th, tl = _two_prod(b, y, hh)
    tl = b.fadd(tl, b.fmul(y, hl))
    n = _round_to_i32(b, th, 160.0)
    f = b.fadd(b.fsub(th, b.sitofp(n, F32)), tl)
    r = _ldexp(b, b.fadd(_fconst(F32, 1.0), _expm1_poly(b, b.fmul(f, _fconst(F32, LN2_F32)))), n)
    zero, inf = _fconst(F32, 0.0), _fconst(F32, INF)
    # |t| > 160 (y huge, or the product overflowed): inf or 0 by its sign.
    r = b.select(b.fcmp_ordered(">", fabs(b, th), _fconst(F32, 160.0)),
                 b.select(b.fcmp_ordered(">", th, zero), inf, zero), r)  # fmt: skip
    y_neg = b.fcmp_ordered("<", y, zero)
    r = b.select(b.fcmp_ordered("==", ax, zero), b.select(y_neg, inf, zero), r)
    r = b.select(b.fcmp_ordered("==", ax, inf), b.select(y_neg, zero, inf), r)
    is_int = b.fcmp_ordered("==", call_math(b, "floor", y), y)
    odd = _is_odd_integer(b, y, is_int)
    x_neg = b.icmp_signed("<", b.bitcast(x, I32), _iconst(32, 0))
    r = b.select(b.and_(x_neg, odd), b.fneg(r), r)
    # A finite negative base needs an integer exponent; (-inf)**y is +-0 or +-inf.
    neg_base = b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered(">", x, b.fneg(inf)))
    nan = b.or_(b.and_(neg_base, b.not_(is_int)), b.fcmp_unordered("uno", x, y))
    r = b.select(nan, _fconst(F32, NAN), r)
    one = _fconst(F32, 1.0)
    r = b.select(b.fcmp_ordered("==", x, one), one, r)  # even 1**NaN
    y_inf = b.fcmp_ordered("==", fabs(b, y), inf)
    r = b.select(b.and_(y_inf, b.fcmp_ordered("==", ax, one)), one, r)  # (-1)**inf = 1
    return b.select(b.fcmp_ordered("==", y, zero), one, r)  # even NaN**0


# --------------------------------------------------------------------------- rounding


def _rint(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round half to even with plain float adds: (|x| + 2**M) - 2**M rounds |x| < 2**M to
    an integer in the current (nearest-even) mode. Larger values, inf and NaN are already
    integral or pass through."""
    big = _fconst(x.type, 2.0 ** _fmt(x.type)[1])
    ax = fabs(b, x)
    r = _negate_if(b, b.fcmp_ordered("<", x, _fconst(x.type, 0.0)), b.fsub(b.fadd(ax, big), big))
    return b.select(b.fcmp_ordered("<", ax, big), _zero_like(b, r, x), x)


@_define("round_nearest_even", generic=True)
def _round_even(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _rint(b, x)


@_define("floor", generic=True)
def _floor(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r = _rint(b, x)
    r = b.select(b.fcmp_ordered(">", r, x), b.fsub(r, _fconst(x.type, 1.0)), r)
    return _zero_like(b, r, x)  # floor(-0.0) = -0.0


@_define("ceil", generic=True)
def _ceil(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    r = _rint(b, x)
    r = b.select(b.fcmp_ordered("<", r, x), b.fadd(r, _fconst(x.type, 1.0)), r)
    return _zero_like(b, r, x)  # ceil(-0.5) = -0.0


@_define("round_nearest_afz", generic=True)
def _round_afz(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    ax = fabs(b, x)
    fl = _floor(b, ax)
    frac = b.fsub(ax, fl)  # exact
    up = b.fcmp_ordered(">=", frac, _fconst(x.type, 0.5))
    r = b.select(up, b.fadd(fl, _fconst(x.type, 1.0)), fl)
    r = _negate_if(b, b.fcmp_ordered("<", x, _fconst(x.type, 0.0)), r)
    return b.select(
        b.fcmp_ordered("<", ax, _fconst(x.type, 2.0 ** _fmt(x.type)[1])), _zero_like(b, r, x), x
    )


@_define("remainder", nargs=2, generic=True)
def _fmod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """C fmod, exact: long division of the integer significands (frem would call fmodf).

    With |x| = mx * 2**ex and |y| = my * 2**ey (significands as integers, subnormals with
    exponent 1 and no implicit bit), reduce mx modulo my one exponent step at a time; mx
    stays below 2*my < 2**(M+2), which fits the float's integer width.
    """
    total, mbits, _ = _fmt(x.type)
    it = ir.IntType(total)
    fn = b.function
    absmask = _iconst(total, (1 << (total - 1)) - 1)
    expmask = _iconst(total, ((1 << (total - 1 - mbits)) - 1) << mbits)
    implicit = _iconst(total, 1 << mbits)
    mantmask = _iconst(total, (1 << mbits) - 1)
    one, zero = _iconst(total, 1), _iconst(total, 0)

    bx, by = _bits(b, x), _bits(b, y)
    ux, uy = b.and_(bx, absmask), b.and_(by, absmask)
    sign = b.and_(bx, b.not_(absmask))
    invalid = b.or_(
        b.or_(b.icmp_unsigned(">=", ux, expmask), b.icmp_unsigned(">", uy, expmask)),
        b.icmp_unsigned("==", uy, zero),
    )
    nan = _fconst(x.type, NAN)
    signed_zero = b.bitcast(sign, x.type)

    early_val = b.select(invalid, nan, b.select(b.icmp_unsigned("==", ux, uy), signed_zero, x))
    entry = b.block
    done = fn.append_basic_block("done")
    work = fn.append_basic_block("work")
    early = b.or_(invalid, b.icmp_unsigned("<=", ux, uy))
    b.cbranch(early, done, work)

    b.position_at_end(work)

    def split(u: ir.Value) -> tuple[ir.Value, ir.Value]:
        e = b.lshr(u, _iconst(total, mbits))
        m = b.and_(u, mantmask)
        normal = b.icmp_unsigned("!=", e, zero)
        return b.select(normal, e, one), b.select(normal, b.or_(m, implicit), m)

    ctlz = _intrinsic(b.module, f"llvm.ctlz.i{total}", it, [it, I1])
    top = _iconst(total, total - 1 - mbits)  # ctlz of a significand with its top bit at M

    def normalise_shift(m: ir.Value) -> ir.Value:
        return b.sub(b.call(ctlz, [m, ir.Constant(I1, 1)]), top)

    ex, mx = split(ux)
    ey, my = split(uy)
    # A subnormal y is normalised (its exponent may go below 1, hence signed compares)
    # so that mx < 2*my holds from the start.
    ny = normalise_shift(my)
    my = b.shl(my, ny)
    ey = b.sub(ey, ny)
    loop = fn.append_basic_block("loop")
    tail = fn.append_basic_block("tail")
    b.branch(loop)
    b.position_at_end(loop)
    e_phi = b.phi(it)
    m_phi = b.phi(it)
    e_phi.add_incoming(ex, work)
    m_phi.add_incoming(mx, work)
    more = b.icmp_signed(">", e_phi, ey)
    m_red = b.select(b.icmp_unsigned(">=", m_phi, my), b.sub(m_phi, my), m_phi)
    e_phi.add_incoming(b.sub(e_phi, one), loop)
    m_phi.add_incoming(b.shl(m_red, one), loop)
    b.cbranch(more, loop, tail)

    b.position_at_end(tail)
    # Here e == ey: one last reduction, then renormalise the (exact) remainder m * 2**ey.
    m = b.select(b.icmp_unsigned(">=", m_phi, my), b.sub(m_phi, my), m_phi)
    s = normalise_shift(b.select(b.icmp_unsigned("==", m, zero), one, m))
    en = b.sub(ey, s)
    normal_bits = b.or_(b.shl(en, _iconst(total, mbits)), b.and_(b.shl(m, s), mantmask))
    # Subnormal results have exponent field 0 and scale 2**1: shift m from 2**ey to 2**1.
    k = b.sub(ey, one)
    k_neg = b.icmp_signed("<", k, zero)
    sub_bits = b.select(
        k_neg, b.lshr(m, b.select(k_neg, b.neg(k), zero)), b.shl(m, b.select(k_neg, zero, k))
    )
    rbits = b.select(b.icmp_signed(">=", en, one), normal_bits, sub_bits)
    rbits = b.select(b.icmp_unsigned("==", m, zero), zero, rbits)
    res_tail = b.bitcast(b.or_(rbits, sign), x.type)
    tail_end = b.block
    b.branch(done)

    b.position_at_end(done)
    out = b.phi(x.type)
    out.add_incoming(early_val, entry)
    out.add_incoming(res_tail, tail_end)
    return out


# --------------------------------------------------------------------------- f16 / bf16


def f16_bits_to_f32(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """IEEE half bits (i16) -> f32, exact, with integer operations only."""
    u = b.zext(h, I32)
    sign = b.shl(b.and_(u, _iconst(32, 0x8000)), _iconst(32, 16))
    exp = b.and_(b.lshr(u, _iconst(32, 10)), _iconst(32, 0x1F))
    mant = b.and_(u, _iconst(32, 0x3FF))
    normal = b.or_(
        b.shl(b.add(exp, _iconst(32, 112)), _iconst(32, 23)), b.shl(mant, _iconst(32, 13))
    )
    special = b.or_(_iconst(32, 0x7F800000), b.shl(mant, _iconst(32, 13)))
    # Subnormal: mant * 2**-24 = (1.mant * 2**-14) - 2**-14 with the implicit bit forced,
    # an exact float subtraction.
    sub_f = b.fsub(
        b.bitcast(b.or_(_iconst(32, 113 << 23), b.shl(mant, _iconst(32, 13))), F32),
        _fconst(F32, 2.0**-14),
    )
    bits = b.select(b.icmp_unsigned("==", exp, _iconst(32, 31)), special, normal)
    bits = b.select(b.icmp_unsigned("==", exp, _iconst(32, 0)), b.bitcast(sub_f, I32), bits)
    return b.bitcast(b.or_(bits, sign), F32)


def f32_to_f16_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """f32 -> IEEE half bits (i16), rounding to nearest even, with integer operations
    (plus one float add for results that are half subnormals)."""
    u = b.bitcast(x, I32)
    sign = b.trunc(b.lshr(b.and_(u, _iconst(32, 0x80000000)), _iconst(32, 16)), I16)
    a = b.and_(u, _iconst(32, 0x7FFFFFFF))
    # Normal halves: rebias the exponent and round at bit 13 (ties to even).
    odd = b.and_(b.lshr(a, _iconst(32, 13)), _iconst(32, 1))
    rounded = b.add(b.add(a, _iconst(32, 0xFFF - (112 << 23))), odd)
    normal = b.lshr(rounded, _iconst(32, 13))
    # Half subnormals: adding 0.5 makes the f32 ulp 2**-24, the half subnormal step, so
    # the float add rounds to nearest even and the low bits are the half significand.
    sub = b.sub(
        b.bitcast(b.fadd(b.bitcast(a, F32), _fconst(F32, 0.5)), I32), _iconst(32, 0x3F000000)
    )
    r = b.select(b.icmp_unsigned("<", a, _iconst(32, 0x38800000)), sub, normal)
    r = b.select(b.icmp_unsigned(">=", a, _iconst(32, 0x477FF000)), _iconst(32, 0x7C00), r)
    nan = b.or_(_iconst(32, 0x7E00), b.lshr(b.and_(a, _iconst(32, 0x7FFFFF)), _iconst(32, 13)))
    r = b.select(b.icmp_unsigned(">", a, _iconst(32, 0x7F800000)), nan, r)
    return b.or_(b.trunc(r, I16), sign)


def bf16_bits_to_f32(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """bfloat16 bits -> f32: the top half of the f32 pattern, exact."""
    return b.bitcast(b.shl(b.zext(h, I32), _iconst(32, 16)), F32)


def f32_to_bf16_bits(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """f32 -> bfloat16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    u = b.bitcast(x, I32)
    odd = b.and_(b.lshr(u, _iconst(32, 16)), _iconst(32, 1))
    r = b.lshr(b.add(b.add(u, _iconst(32, 0x7FFF)), odd), _iconst(32, 16))
    qnan = b.or_(b.lshr(u, _iconst(32, 16)), _iconst(32, 0x40))
    r = b.select(b.fcmp_unordered("uno", x, x), qnan, r)
    return b.trunc(r, I16)


# CHLO's special functions (erf, lgamma, digamma, zeta, ...) register themselves in the
# table above; they live in their own file for size. Re-exported for emit.py.
from toolchain.codegen.mathlib_special import (  # noqa: E402, F401
    SPECIAL_BINARY,
    SPECIAL_UNARY,
    next_after,
)
