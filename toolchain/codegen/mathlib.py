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
log, sqrt, sin, cos and pow (mathlib_f64.py) and tan, rsqrt, cbrt, expm1, log1p, tanh,
logistic, sinh, cosh, atan, atan2 and the inverse trigonometric and hyperbolic
functions (mathlib_f64_more.py), which have f64 versions. Rounding
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
polygamma, the inverse trigonometric and hyperbolic functions, next_after) are listed in
mathlib_special.py; docs/mathlib.md has their measured errors.

This file is the library's entry: `call_math` and `sqrt_value`, which the rest of
codegen calls, and the names it imports from here. The functions live one family a file
above the shared blocks and below this one, so that the imports run one way:

    mathlib.py             call_math (f32 / f64 / generic dispatch), sqrt_value
    mathlib_f64_more.py    tan, rsqrt, cbrt, expm1, log1p, tanh, ..., atan2 at f64 accuracy,
    mathlib_f64.py         on exp, log, sqrt, sin, cos, pow at f64 accuracy
    mathlib_erf, _gamma, _bessel, _zeta, _hyperbolic: the special functions, on
    mathlib_special_ir.py  their shared helpers (double-f32 sums and logarithms)
    mathlib_exp, _roots, _trig, _pow, _rounding: the f32 (and exact generic) functions
    mathlib_f16.py         f16 / bf16 <-> f32 conversions
    mathlib_table.py       the table of functions (name -> body) and their emission
    mathlib_ir.py          types, TargetFeatures, constants, Horner, bit casts, tables

Each family registers its functions into mathlib_table when imported; the imports below
fill the table before anything calls through it (nothing depends on the table's order).
"""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen import (  # noqa: F401  (each registers its functions)
    mathlib_bessel,
    mathlib_erf,
    mathlib_exp,
    mathlib_f64_more,
    mathlib_gamma,
    mathlib_hyperbolic,
    mathlib_pow,
    mathlib_roots,
    mathlib_rounding,
    mathlib_trig,
    mathlib_zeta,
)
from toolchain.codegen.mathlib_f16 import (
    bf16_bits_to_f32,
    f16_bits_to_f32,
    f32_to_bf16_bits,
    f32_to_f16_bits,
)
from toolchain.codegen.mathlib_f64 import BODIES as F64_BODIES
from toolchain.codegen.mathlib_f64 import call_f64
from toolchain.codegen.mathlib_ir import (
    F16,
    F32,
    F64,
    I1,
    I16,
    I32,
    I64,
    PREFIX,
    SECTION_PREFIX,
    TargetFeatures,
    _intrinsic,
    fabs,
    set_target_features,
    target_features,
)
from toolchain.codegen.mathlib_roots import sqrt_f32
from toolchain.codegen.mathlib_special import SPECIAL_BINARY, SPECIAL_UNARY, next_after
from toolchain.codegen.mathlib_table import MATH_FUNCTIONS, math_function
from toolchain.codegen.mathlib_trig import PIO2_Q31, PIO4_BITS, TWO_OVER_PI_WORDS

__all__ = [
    "F16", "F32", "F64", "I1", "I16", "I32", "I64", "MATH_FUNCTIONS", "PIO2_Q31", "PIO4_BITS",
    "PREFIX", "SECTION_PREFIX", "SPECIAL_BINARY", "SPECIAL_UNARY", "TWO_OVER_PI_WORDS",
    "TargetFeatures", "_intrinsic", "bf16_bits_to_f32", "call_math", "f16_bits_to_f32",
    "f32_to_bf16_bits", "f32_to_f16_bits", "fabs", "math_function", "next_after",
    "set_target_features", "sqrt_value", "target_features",
]  # fmt: skip


def call_math(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Calls math function `name` on f32 or f64 values (f64 goes through f32 unless the
    function is exact for both widths)."""
    t = args[0].type
    _, generic, _ = MATH_FUNCTIONS[name]
    if t == F64 and name in F64_BODIES:  # at f64 accuracy: mathlib_f64.py, _f64_more.py
        return call_f64(b, name, *args)
    if t == F32 or generic:
        return b.call(math_function(b.module, name, t), list(args))
    narrowed = [b.fptrunc(a, F32) for a in args]
    return b.fpext(b.call(math_function(b.module, name, F32), narrowed), t)


def sqrt_value(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """sqrt inline: llvm.sqrt on FPU targets, else a call to the Newton function."""
    if x.type == F32:
        return sqrt_f32(b, x)
    if x.type == F64 and target_features(b.module).hardware_f64:
        return b.call(_intrinsic(b.module, "llvm.sqrt.f64", F64, [F64]), [x])
    return call_math(b, "sqrt", x)
