"""Per-op TOSA programs with the values the specification gives for them.

Integer cases take their expected outputs from tosa_spec.py (the spec's pseudo-code in
plain Python) and compare exactly; their inputs include the corners: the type's ends,
INT32_MIN, saturating results, ties of every rounding, zero points, negative values in
unsigned interpretations. Float cases take numpy in float64 and compare with
numpy.isclose(rtol=1e-5, atol=1e-6), the bound minirt holds every float kernel to (our
math library is within a few ulp; float64 has no rounding of its own to speak of here).
"""

from __future__ import annotations

import math

import numpy as np
import tosa_spec as spec
from tosa_programs import Case, const, shape, ttype

RNG = np.random.default_rng(12)
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


class P:
    """A case being written: inputs, value types, body lines."""

    def __init__(self, name: str, **inputs: np.ndarray) -> None:
        self.name = name
        self.inputs = {k: np.asarray(v) for k, v in inputs.items()}
        self.types = {k: ttype(v.shape, v.dtype) for k, v in self.inputs.items()}
        self.body: list[str] = []

    def const(self, name: str, value, dt=None) -> str:
        line = const(name, value, dt)
        self.body.append(line)
        self.types[name] = line.rsplit("-> ", 1)[1]
        return name

    def shape(self, name: str, values) -> str:
        self.body.append(shape(name, values))
        self.types[name] = f"!tosa.shape<{len(values)}>"
        return name

    def op(self, out: str, opname: str, *args: str, result: str, attrs: str = "") -> str:
        operands = ", ".join(f"%{a}" for a in args)
        types = ", ".join(self.types[a] for a in args)
        attrs = f" {{{attrs}}}" if attrs else ""
        self.body.append(f"%{out} = tosa.{opname} {operands}{attrs} : ({types}) -> {result}")
        self.types[out] = result
        return out

    def case(self, outputs: list[str], expected: list, **kw) -> Case:
        return Case(self.name, self.inputs, self.body, [(o, self.types[o]) for o in outputs],
                    [np.asarray(e) for e in expected], **kw)


def _ints(dt, shape, corners=()) -> np.ndarray:
    info = np.iinfo(dt)
    a = RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dt)
    flat = a.reshape(-1)
    for i, c in enumerate(corners[:flat.size]):
        flat[i] = c
    return a


def _f16(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # 1e10 is inf in f16, as CAST requires
        return x.astype(np.float16)


def _floats(shape, lo=-3.0, hi=3.0) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


# ---------------------------------------------------------------------- float element-wise

F_UNARY = {  # op: (numpy in float64, input range)
    "abs": (np.abs, (-3, 3)), "ceil": (np.ceil, (-3, 3)), "floor": (np.floor, (-3, 3)),
    "exp": (np.exp, (-5, 5)), "log": (np.log, (0.01, 20)), "sin": (np.sin, (-7, 7)),
    "cos": (np.cos, (-7, 7)), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-9, 9)),
    "tanh": (np.tanh, (-4, 4)), "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 50)),
    "reciprocal": (lambda x: 1 / x, (0.1, 9)), "erf": (np.vectorize(math.erf), (-3, 3)),
}


def float_unary() -> list[Case]:
    cases = []
    for name, (f, (lo, hi)) in F_UNARY.items():
        x = _floats((2, 5), lo, hi)
        if name in ("abs", "ceil", "floor"):
            x.reshape(-1)[:4] = [-0.0, 2.5, -2.5, -1.0]
        p = P(f"float {name}", x=x)
        p.op("y", name, "x", result=p.types["x"])
        cases.append(p.case(["y"], [f(x.astype(np.float64))]))
    return cases


def float_binary() -> list[Case]:
    a, b = _floats((2, 3)), _floats((1, 3))
    cases = []
    for name, f in (("add", np.add), ("sub", np.subtract), ("maximum", np.maximum),
                    ("minimum", np.minimum)):
        p = P(f"float {name} broadcast", a=a, b=b)
        p.op("y", name, "a", "b", result=ttype((2, 3), "f32"))
        cases.append(p.case(["y"], [f(a.astype(np.float64), b)]))
    p = P("float mul", a=a, b=b)
    p.const("shift", [0], np.int8)
    p.op("y", "mul", "a", "b", "shift", result=ttype((2, 3), "f32"))
    cases.append(p.case(["y"], [a.astype(np.float64) * b]))
    base, expo = _floats((2, 3), 0.1, 4), _floats((2, 3), -2, 2)
    p = P("float pow", a=base, b=expo)
    p.op("y", "pow", "a", "b", result=ttype((2, 3), "f32"))
    cases.append(p.case(["y"], [np.power(base.astype(np.float64), expo)]))
    x = _floats((3, 4))
    p = P("float negate", x=x)
    p.const("zp", [0.0], np.float32)
    p.op("y", "negate", "x", "zp", "zp", result=p.types["x"])
    cases.append(p.case(["y"], [-x]))
    return cases


def nan_modes() -> list[Case]:
    """MAXIMUM / MINIMUM / CLAMP / comparisons with NaNs: PROPAGATE makes NaN, IGNORE
    takes the other operand (CLAMP: min_val); comparisons with NaN are false."""
    nan = np.nan
    a = np.array([[nan, 1.0, nan, -2.0], [3.0, nan, -0.5, 4.0]], np.float32)
    b = np.array([[0.5, nan, nan, 1.0], [-3.0, 2.0, nan, 4.0]], np.float32)
    cases = []
    for mode in ("PROPAGATE", "IGNORE"):
        p = P(f"maximum minimum nan_mode {mode}", a=a, b=b)
        p.op("mx", "maximum", "a", "b", result=p.types["a"], attrs=f"nan_mode = {mode}")
        p.op("mn", "minimum", "a", "b", result=p.types["a"], attrs=f"nan_mode = {mode}")
        p.op("cl", "clamp", "a", result=p.types["a"],
             attrs=f"min_val = -1.0 : f32, max_val = 2.0 : f32, nan_mode = {mode}")
        want = [np.vectorize(lambda u, v, m=mode: spec.apply_max(u, v, m))(a, b),
                np.vectorize(lambda u, v, m=mode: spec.apply_min(u, v, m))(a, b),
                spec.clamp(a, -1.0, 2.0, mode)]
        cases.append(p.case(["mx", "mn", "cl"], want))
    p = P("comparisons with NaN", a=a, b=b)
    for name in ("equal", "greater", "greater_equal"):
        p.op(name, name, "a", "b", result=ttype(a.shape, "i1"))
    with np.errstate(invalid="ignore"):
        cases.append(p.case(["equal", "greater", "greater_equal"],
                            [np.equal(a, b), np.greater(a, b), np.greater_equal(a, b)]))
    return cases


def select_logical() -> list[Case]:
    pred = np.array([[True], [False]])
    x, y = _floats((2, 3)), _floats((2, 3))
    p = P("select broadcast predicate", c=pred, x=x, y=y)
    p.op("s", "select", "c", "x", "y", result=p.types["x"])
    cases = [p.case(["s"], [np.where(pred, x, y)])]
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    p = P("logical ops", a=a, b=b)
    for name in ("logical_and", "logical_or", "logical_xor"):
        p.op(name, name, "a", "b", result=p.types["a"])
    p.op("not", "logical_not", "a", result=p.types["a"])
    cases.append(p.case(["logical_and", "logical_or", "logical_xor", "not"],
                        [a & b, a | b, a ^ b, ~a]))
    return cases


# ---------------------------------------------------------------------- integer element-wise


def integer_binary() -> list[Case]:
    cases = []
    a = _ints(np.int32, (3, 4), [I32_MIN, I32_MAX, -7, 7, 0, -1, 100])
    b = _ints(np.int32, (3, 4), [-1, 1, 2, -2, 5, -3, -7])
    b[b == 0] = 3
    p = P("i32 add sub bitwise", a=a, b=b)
    for name in ("add", "sub", "bitwise_and", "bitwise_or", "bitwise_xor", "maximum",
                 "minimum"):
        p.op(name, name, "a", "b", result=p.types["a"])
    p.op("not", "bitwise_not", "a", result=p.types["a"])
    p.op("clz", "clz", "a", result=p.types["a"])
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    cases.append(p.case(
        ["add", "sub", "bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum",
         "not", "clz"],
        [spec.cast_int_to_int(a64 + b64, 32), spec.cast_int_to_int(a64 - b64, 32), a & b,
         a | b, a ^ b, np.maximum(a, b), np.minimum(a, b), ~a,
         np.vectorize(spec.count_leading_zeros)(a)]))
    num = np.array([7, -7, 7, -7, I32_MAX, I32_MIN, 0, 100, -1, 5], np.int32)
    den = np.array([2, 2, -2, -2, 3, 7, 5, -3, 7, 1], np.int32)
    p = P("i32 intdiv truncates", a=num, b=den)
    p.op("q", "intdiv", "a", "b", result=p.types["a"])
    cases.append(p.case(["q"], [spec.intdiv(num, den)]))
    return cases


def mul_cases() -> list[Case]:
    cases = []
    a = _ints(np.int32, (2, 6), [I32_MIN, I32_MAX, 65536, -65536, 3])
    b = _ints(np.int32, (1, 6), [-1, 3, 65536, 65537, -5])
    p = P("i32 mul keeps the low 32 bits", a=a, b=b)
    p.const("shift", [0], np.int8)
    p.op("y", "mul", "a", "b", "shift", result=p.types["a"])
    cases.append(p.case(["y"], [spec.mul(a, b, 0)]))
    for shift in (1, 15, 31, 40):
        # Products whose rounded shift fits i32 (the spec requires it): |a*b| < 2**(30+s).
        lim = 1 << min(30, (30 + shift) // 2)
        x = RNG.integers(-lim, lim, (8,), endpoint=False).astype(np.int32)
        y = RNG.integers(-lim, lim, (8,), endpoint=False).astype(np.int32)
        x[:3] = [lim - 1, -lim, 3]
        y[:3] = [lim - 1, lim - 1, 1 << (shift - 1) if shift < 31 else 5]
        p = P(f"i32 mul shift {shift}", a=x, b=y)
        p.const("shift", [shift], np.int8)
        p.op("y", "mul", "a", "b", "shift", result=p.types["a"])
        cases.append(p.case(["y"], [spec.mul(x, y, shift)]))
    for dt in (np.int8, np.int16):
        x, y = _ints(dt, (6,), [np.iinfo(dt).min, np.iinfo(dt).min]), _ints(dt, (6,),
                                                                             [-1, np.iinfo(dt).min])
        p = P(f"{np.dtype(dt).name} mul widens to i32", a=x, b=y)
        p.const("shift", [0], np.int8)
        p.op("y", "mul", "a", "b", "shift", result=ttype((6,), "i32"))
        cases.append(p.case(["y"], [x.astype(np.int64) * y]))
    return cases


def shift_cases() -> list[Case]:
    cases = []
    for dt, bits in ((np.int8, 8), (np.int16, 16), (np.int32, 32)):
        info = np.iinfo(dt)
        a = _ints(dt, (2, bits), [info.min, info.max, -1, 1, -3, 5, info.min + 1])
        b = np.tile(np.arange(bits, dtype=dt), (2, 1))
        name = np.dtype(dt).name
        p = P(f"{name} shifts", a=a, b=b)
        p.op("ars", "arithmetic_right_shift", "a", "b", result=p.types["a"],
             attrs="round = false")
        p.op("arsr", "arithmetic_right_shift", "a", "b", result=p.types["a"],
             attrs="round = true")
        p.op("lrs", "logical_right_shift", "a", "b", result=p.types["a"])
        p.op("lls", "logical_left_shift", "a", "b", result=p.types["a"])
        lls = np.array([spec.wrap(int(x) << int(s), bits) for x, s in
                        zip(a.reshape(-1), b.reshape(-1))]).reshape(a.shape)
        cases.append(p.case(["ars", "arsr", "lrs", "lls"],
                            [spec.arithmetic_right_shift(a, b, False, bits),
                             spec.arithmetic_right_shift(a, b, True, bits),
                             spec.logical_right_shift(a, b, bits), lls]))
    return cases


def negate_clamp_cases() -> list[Case]:
    cases = []
    x = _ints(np.int8, (2, 8), [-128, 127, 0, -1, 1, 100, -100])
    for izp, ozp in ((0, 0), (-3, 5), (100, -100)):
        p = P(f"i8 negate zero points {izp} {ozp}", x=x)
        p.const("izp", [izp], np.int8)
        p.const("ozp", [ozp], np.int8)
        p.op("y", "negate", "x", "izp", "ozp", result=p.types["x"])
        cases.append(p.case(["y"], [spec.negate(x, izp, ozp, 8)]))
    x32 = _ints(np.int32, (6,), [I32_MAX, -5, 0])
    p = P("i32 negate and abs", x=x32)
    p.const("zp", [0], np.int32)
    p.op("y", "negate", "x", "zp", "zp", result=p.types["x"])
    p.op("a", "abs", "x", result=p.types["x"])
    cases.append(p.case(["y", "a"], [-x32.astype(np.int64), np.abs(x32.astype(np.int64))]))
    p = P("i8 clamp", x=x)
    p.op("y", "clamp", "x", result=p.types["x"], attrs="min_val = -20 : i8, max_val = 90 : i8")
    cases.append(p.case(["y"], [np.clip(x, -20, 90)]))
    return cases


def table_cases() -> list[Case]:
    cases = []
    tab8 = _ints(np.int8, (256,))
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    p = P("i8 table", x=x)
    p.const("t", tab8)
    p.op("y", "table", "x", "t", result=p.types["x"])
    cases.append(p.case(["y"], [spec.table(x, tab8)]))
    # 513 entries whose neighbours differ by at most 2**15 (the spec requires the slope
    # to fit i16): a random walk, ends included.
    steps = RNG.integers(-1000, 1000, 513)
    tab16 = np.clip(np.cumsum(steps) - 20000, -32768, 32767).astype(np.int16)
    x16 = _ints(np.int16, (4, 16), [-32768, 32767, 0, -1, 127, 128, -129, 32640, -32641])
    p = P("i16 table interpolates", x=x16)
    p.const("t", tab16)
    p.op("y", "table", "x", "t", result=ttype(x16.shape, "i32"))
    cases.append(p.case(["y"], [spec.table(x16, tab16)]))
    return cases


def cast_cases() -> list[Case]:
    cases = []
    f = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 126.5, 127.5, 300.0, -300.0,
                  1e10, -1e10, 3.7, -3.7, 0.0], np.float32)
    p = P("cast float to integers rounds half to even and saturates", x=f)
    for name in ("i8", "i16", "i32"):
        p.op(name, "cast", "x", result=ttype(f.shape, name))
    p.op("b", "cast", "x", result=ttype(f.shape, "i1"))
    p.op("h", "cast", "x", result=ttype(f.shape, "f16"))
    cases.append(p.case(["i8", "i16", "i32", "b", "h"],
                        [spec.cast_float_to_int(f, 8), spec.cast_float_to_int(f, 16),
                         spec.cast_float_to_int(f, 32), f != 0, _f16(f)],
                        rtol=0, atol=0))
    i = _ints(np.int32, (10,), [300, -300, 128, -129, 65535, I32_MIN, I32_MAX, 0, 1])
    p = P("cast integers keep low bits or sign-extend", x=i)
    for name in ("i8", "i16"):
        p.op(name, "cast", "x", result=ttype(i.shape, name))
    p.op("f", "cast", "x", result=ttype(i.shape, "f32"))
    p.op("b", "cast", "x", result=ttype(i.shape, "i1"))
    p.op("w", "cast", "i8", result=ttype(i.shape, "i32"))
    cases.append(p.case(["i8", "i16", "f", "b", "w"],
                        [spec.cast_int_to_int(i, 8), spec.cast_int_to_int(i, 16),
                         i.astype(np.float32), i != 0,
                         spec.cast_int_to_int(i, 8)], rtol=0, atol=0))
    bools = np.array([True, False, True])
    p = P("cast from bool", x=bools)
    p.op("i", "cast", "x", result=ttype((3,), "i32"))
    p.op("f", "cast", "x", result=ttype((3,), "f32"))
    cases.append(p.case(["i", "f"], [bools.astype(np.int32), bools.astype(np.float32)]))
    return cases


# ---------------------------------------------------------------------- rescale

RESCALES = [  # name, in dtype, out dtype, scale32, mode, per-channel, in/out unsigned,
    #           in_zp, out_zp, multipliers, shifts
    ("i8 to i8 single round", np.int8, np.int8, True, "SINGLE_ROUND", False, False, False,
     -3, 5, [1395864371], [31]),
    ("i8 to i8 double round", np.int8, np.int8, True, "DOUBLE_ROUND", False, False, False,
     7, -9, [1518500250], [36]),
    ("i32 to i8 per channel double round", np.int32, np.int8, True, "DOUBLE_ROUND", True,
     False, False, 0, 3, [1073741824, 2018389110, 1123631200, 1651343800], [33, 38, 40, 45]),
    ("i32 to i16 scale16", np.int32, np.int16, False, "SINGLE_ROUND", False, False, False,
     0, 0, [19689], [15]),
    ("i16 to i32 inexact round", np.int16, np.int32, True, "INEXACT_ROUND", False, False,
     False, 0, 0, [1431655765], [32]),
    ("unsigned i8 input", np.int8, np.int8, True, "SINGLE_ROUND", False, True, False,
     -128, 0, [1073741824], [31]),
    ("unsigned i8 output", np.int8, np.int8, True, "DOUBLE_ROUND", False, False, True,
     -1, -128, [1717986918], [33]),
    ("unsigned i16 input", np.int16, np.int8, True, "SINGLE_ROUND", False, True, False,
     -32768, 0, [1073741824], [38]),
    ("i8 to i32 unit scale", np.int8, np.int32, True, "SINGLE_ROUND", True, False, False,
     -128, 0, [1 << 30, 1 << 30], [30, 30]),
    ("ui8 to i8", np.uint8, np.int8, True, "SINGLE_ROUND", False, True, False,
     128, -4, [1073741824], [30]),
]


def rescale_cases() -> list[Case]:
    cases = []
    for (name, din, dout, scale32, mode, per_channel, in_u, out_u, izp, ozp, mults,
         shifts) in RESCALES:
        channels = len(mults)
        info = np.iinfo(din)
        x = _ints(din, (3, channels * 4 if channels == 1 else channels),
                  [info.min, info.max, 0, 1, info.min + 1, info.max - 1, 2, 3])
        p = P(f"rescale {name}", x=x)
        mdt = np.int32 if scale32 else np.int16
        p.const("m", np.array(mults, mdt))
        p.const("s", np.array(shifts, np.int8))
        p.const("izp", np.array([izp], din))
        p.const("ozp", np.array([ozp], dout))
        flags = (f"rounding_mode = {mode}, scale32 = {str(scale32).lower()}, "
                 f"per_channel = {str(per_channel).lower()}, "
                 f"input_unsigned = {str(in_u).lower()}, output_unsigned = {str(out_u).lower()}")
        p.op("y", "rescale", "x", "m", "s", "izp", "ozp", result=ttype(x.shape, dout),
             attrs=flags)
        in_bits, out_bits = np.dtype(din).itemsize * 8, np.dtype(dout).itemsize * 8
        xs = x.astype(np.int64)
        want = spec.rescale(xs, mults, shifts, izp, ozp, scale32=scale32,
                            double_round=mode == "DOUBLE_ROUND", per_channel=per_channel,
                            input_unsigned=in_u, output_unsigned=out_u, in_bits=in_bits,
                            out_bits=out_bits)
        cases.append(p.case(["y"], [want]))
    return cases


# ---------------------------------------------------------------------- tensor ops


def conv_cases() -> list[Case]:
    cases = []
    x = _floats((1, 5, 6, 3))
    w = _floats((4, 3, 2, 3), -1, 1)
    bias = _floats((4,), -1, 1)
    p = P("float conv2d stride pad dilation", x=x)
    p.const("w", w)
    p.const("b", bias)
    p.const("zp", [0.0], np.float32)
    p.op("y", "conv2d", "x", "w", "b", "zp", "zp", result=ttype((1, 3, 3, 4), "f32"),
         attrs="acc_type = f32, dilation = array<i64: 1, 2>, pad = array<i64: 1, 1, 0, 1>, "
               "stride = array<i64: 2, 2>")
    cases.append(p.case(["y"], [spec.conv2d(x, w, bias, 0, 0, (2, 2), (1, 1, 0, 1),
                                            (1, 2))]))
    xi = _ints(np.int8, (1, 4, 5, 3), [-128, 127])
    wi = _ints(np.int8, (2, 3, 3, 3), [-128, 127])
    bi = RNG.integers(-1000, 1000, (2,)).astype(np.int32)
    for izp, wzp, const_w in ((-128, 0, True), (5, -3, True), (9, 4, False)):
        inputs = {"x": xi} if const_w else {"x": xi, "w": wi}
        p = P(f"i8 conv2d zero points {izp} {wzp}{'' if const_w else ' run-time weights'}",
              **inputs)
        if const_w:
            p.const("w", wi)
        p.const("b", bi)
        p.const("izp", [izp], np.int8)
        p.const("wzp", [wzp], np.int8)
        p.op("y", "conv2d", "x", "w", "b", "izp", "wzp", result=ttype((1, 4, 3, 2), "i32"),
             attrs="acc_type = i32, dilation = array<i64: 1, 1>, "
                   "pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 1>")
        cases.append(p.case(["y"], [spec.conv2d(xi, wi, bi, izp, wzp, (1, 1), (1, 1, 0, 0),
                                                (1, 1))]))
    wd = _floats((3, 3, 3, 2), -1, 1)
    bd = _floats((6,), -1, 1)
    p = P("float depthwise_conv2d", x=x)
    p.const("w", wd)
    p.const("b", bd)
    p.const("zp", [0.0], np.float32)
    p.op("y", "depthwise_conv2d", "x", "w", "b", "zp", "zp",
         result=ttype((1, 3, 3, 6), "f32"),
         attrs="acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 0>, "
               "stride = array<i64: 2, 2>")
    cases.append(p.case(["y"], [spec.depthwise_conv2d(x, wd, bd, 0, 0, (2, 2), (1, 1, 1, 0),
                                                      (1, 1))]))
    wdi = _ints(np.int8, (2, 2, 3, 2))
    bdi = RNG.integers(-500, 500, (6,)).astype(np.int32)
    p = P("i8 depthwise_conv2d zero points", x=xi)
    p.const("w", wdi)
    p.const("b", bdi)
    p.const("izp", [-7], np.int8)
    p.const("wzp", [2], np.int8)
    p.op("y", "depthwise_conv2d", "x", "w", "b", "izp", "wzp",
         result=ttype((1, 5, 6, 6), "i32"),
         attrs="acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, "
               "stride = array<i64: 1, 1>")
    cases.append(p.case(["y"], [spec.depthwise_conv2d(xi, wdi, bdi, -7, 2, (1, 1),
                                                      (1, 1, 1, 1), (1, 1))]))
    xt = _floats((1, 3, 4, 2))
    wt = _floats((3, 3, 2, 2), -1, 1)
    bt = _floats((1,), -1, 1)
    p = P("float transpose_conv2d stride 2", x=xt)
    p.const("w", wt)
    p.const("b", bt)
    p.const("zp", [0.0], np.float32)
    p.op("y", "transpose_conv2d", "x", "w", "b", "zp", "zp",
         result=ttype((1, 6, 12, 3), "f32"),
         attrs="acc_type = f32, out_pad = array<i64: 0, -1, 1, 0>, stride = array<i64: 2, 3>")
    cases.append(p.case(["y"], [spec.transpose_conv2d(xt, wt, bt, 0, 0, (0, -1, 1, 0),
                                                      (2, 3))]))
    xti = _ints(np.int8, (1, 3, 3, 2), [-128, 127])
    wti = _ints(np.int8, (2, 2, 2, 2))
    bti = np.array([100, -100], np.int32)
    p = P("i8 transpose_conv2d zero points", x=xti)
    p.const("w", wti)
    p.const("b", bti)
    p.const("izp", [3], np.int8)
    p.const("wzp", [-2], np.int8)
    p.op("y", "transpose_conv2d", "x", "w", "b", "izp", "wzp",
         result=ttype((1, 6, 6, 2), "i32"),
         attrs="acc_type = i32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>")
    cases.append(p.case(["y"], [spec.transpose_conv2d(xti, wti, bti, 3, -2, (0, 0, 0, 0),
                                                      (2, 2))]))
    x3 = _floats((1, 3, 4, 4, 2))
    w3 = _floats((2, 2, 2, 3, 2), -1, 1)
    b3 = np.zeros(2, np.float32)
    p = P("float conv3d", x=x3)
    p.const("w", w3)
    p.const("b", b3)
    p.const("zp", [0.0], np.float32)
    p.op("y", "conv3d", "x", "w", "b", "zp", "zp", result=ttype((1, 2, 3, 2, 2), "f32"),
         attrs="acc_type = f32, dilation = array<i64: 1, 1, 1>, "
               "pad = array<i64: 0, 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1>")
    want = np.zeros((1, 2, 3, 2, 2))
    for od, oh, ow, oc in np.ndindex(2, 3, 2, 2):
        want[0, od, oh, ow, oc] = np.sum(x3[0, od:od + 2, oh:oh + 2, ow:ow + 3, :]
                                         .astype(np.float64) * w3[oc])
    cases.append(p.case(["y"], [want]))
    return cases


def matmul_cases() -> list[Case]:
    a, b = _floats((2, 3, 4)), _floats((2, 4, 5))
    p = P("float matmul", a=a, b=b)
    p.const("zp", [0.0], np.float32)
    p.op("y", "matmul", "a", "b", "zp", "zp", result=ttype((2, 3, 5), "f32"))
    cases = [p.case(["y"], [spec.matmul(a, b, 0, 0)])]
    ai, bi = _ints(np.int8, (1, 3, 6), [-128, 127]), _ints(np.int8, (1, 6, 2), [-128, -128])
    for azp, bzp in ((0, 0), (-128, 17)):
        p = P(f"i8 matmul zero points {azp} {bzp}", a=ai, b=bi)
        p.const("azp", [azp], np.int8)
        p.const("bzp", [bzp], np.int8)
        p.op("y", "matmul", "a", "b", "azp", "bzp", result=ttype((1, 3, 2), "i32"))
        cases.append(p.case(["y"], [spec.matmul(ai, bi, azp, bzp)]))
    bt = _floats((1, 5, 4))  # MATMUL_T (newer MLIR): b as [1 or N, W, C]
    p = P("float matmul_t broadcasts b", a=a, b=bt)
    p.const("zp", [0.0], np.float32)
    p.op("y", "matmul_t", "a", "b", "zp", "zp", result=ttype((2, 3, 5), "f32"))
    cases.append(p.case(["y"], [spec.matmul(a, np.broadcast_to(bt.transpose(0, 2, 1),
                                                               (2, 4, 5)), 0, 0)]))
    return cases


def pool_cases() -> list[Case]:
    cases = []
    x = _floats((1, 5, 6, 2))
    p = P("float avg_pool2d padding not counted", x=x)
    p.const("zp", [0.0], np.float32)
    p.op("y", "avg_pool2d", "x", "zp", "zp", result=ttype((1, 3, 3, 2), "f32"),
         attrs="acc_type = f32, kernel = array<i64: 3, 2>, pad = array<i64: 1, 1, 0, 0>, "
               "stride = array<i64: 2, 2>")
    cases.append(p.case(["y"], [spec.avg_pool2d_float(x, (3, 2), (2, 2), (1, 1, 0, 0))]))
    xh = x.astype(np.float16)
    p = P("f16 avg_pool2d accumulates in f32", x=xh)
    p.const("zp", [0.0], np.float16)
    p.op("y", "avg_pool2d", "x", "zp", "zp", result=ttype((1, 3, 3, 2), "f16"),
         attrs="acc_type = f32, kernel = array<i64: 3, 2>, pad = array<i64: 1, 1, 0, 0>, "
               "stride = array<i64: 2, 2>")
    # f16 result: within one f16 rounding (2**-11 relative) of the exact mean.
    cases.append(p.case(["y"], [spec.avg_pool2d_float(xh, (3, 2), (2, 2), (1, 1, 0, 0))],
                        rtol=2**-10, atol=1e-3))
    xi = _ints(np.int8, (1, 6, 7, 3), [-128, -128, -128, 127, 127, 127])
    for izp, ozp, kernel, stride, pad in ((0, 0, (2, 2), (2, 2), (0, 0, 0, 1)),
                                          (-5, 9, (3, 3), (1, 2), (1, 1, 2, 2)),
                                          (127, -128, (2, 3), (3, 1), (1, 1, 0, 2))):
        oh = (6 + pad[0] + pad[1] - kernel[0]) // stride[0] + 1
        ow = (7 + pad[2] + pad[3] - kernel[1]) // stride[1] + 1
        p = P(f"i8 avg_pool2d zp {izp} {ozp} kernel {kernel}", x=xi)
        p.const("izp", [izp], np.int8)
        p.const("ozp", [ozp], np.int8)
        p.op("y", "avg_pool2d", "x", "izp", "ozp", result=ttype((1, oh, ow, 3), "i8"),
             attrs=f"acc_type = i32, kernel = array<i64: {kernel[0]}, {kernel[1]}>, "
                   f"pad = array<i64: {', '.join(map(str, pad))}>, "
                   f"stride = array<i64: {stride[0]}, {stride[1]}>")
        cases.append(p.case(["y"], [spec.avg_pool2d_int(xi, kernel, stride, pad, izp, ozp)]))
    xn = x.copy()
    xn[0, 0, 0, 0] = np.nan
    xn[0, 2:4, 2:4, 1] = np.nan  # a whole window of NaNs
    for mode in ("PROPAGATE", "IGNORE"):
        p = P(f"float max_pool2d nan_mode {mode}", x=xn)
        p.op("y", "max_pool2d", "x", result=ttype((1, 3, 3, 2), "f32"),
             attrs=f"kernel = array<i64: 2, 2>, pad = array<i64: 0, 1, 0, 0>, "
                   f"stride = array<i64: 2, 2>, nan_mode = {mode}")
        cases.append(p.case(["y"], [spec.max_pool2d(xn, (2, 2), (2, 2), (0, 1, 0, 0),
                                                    mode)]))
    p = P("adaptive pools take their geometry as shapes", x=x, q=xi)
    p.shape("k", [3, 2])
    p.shape("st", [2, 2])
    p.shape("pd", [1, 1, 0, 0])
    p.const("zp", [0.0], np.float32)
    p.const("qzp", [-3], np.int8)
    p.shape("qpd", [1, 0, 0, 1])
    p.body.append("%mx = tosa.max_pool2d_adaptive %x, %k, %st, %pd : (tensor<1x5x6x2xf32>, "
                  "!tosa.shape<2>, !tosa.shape<2>, !tosa.shape<4>) -> tensor<1x3x3x2xf32>")
    p.body.append("%av = tosa.avg_pool2d_adaptive %q, %qzp, %qzp, %k, %st, %qpd {acc_type = "
                  "i32} : (tensor<1x6x7x3xi8>, tensor<1xi8>, tensor<1xi8>, !tosa.shape<2>, "
                  "!tosa.shape<2>, !tosa.shape<4>) -> tensor<1x3x4x3xi8>")
    p.types.update(mx=ttype((1, 3, 3, 2), "f32"), av=ttype((1, 3, 4, 3), "i8"))
    cases.append(p.case(["mx", "av"],
                        [spec.max_pool2d(x, (3, 2), (2, 2), (1, 1, 0, 0)),
                         spec.avg_pool2d_int(xi, (3, 2), (2, 2), (1, 0, 0, 1), -3, -3)]))
    p = P("i8 max_pool2d", x=xi)
    p.op("y", "max_pool2d", "x", result=ttype((1, 6, 7, 3), "i8"),
         attrs="kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, "
               "stride = array<i64: 1, 1>")
    cases.append(p.case(["y"], [spec.max_pool2d(xi.astype(np.float64), (3, 3), (1, 1),
                                                (1, 1, 1, 1))]))
    return cases


def reduce_cases() -> list[Case]:
    cases = []
    x = _floats((3, 4, 2))
    p = P("float reductions", x=x)
    outs, want = [], []
    for name, f, axis in (("reduce_sum", np.sum, 1), ("reduce_product", np.prod, 0),
                          ("reduce_max", np.max, 2), ("reduce_min", np.min, 1)):
        shp = list(x.shape)
        shp[axis] = 1
        p.op(name, name, "x", result=ttype(shp, "f32"), attrs=f"axis = {axis} : i32")
        outs.append(name)
        want.append(f(x.astype(np.float64), axis=axis, keepdims=True))
    cases.append(p.case(outs, want))
    xi = _ints(np.int32, (4, 5), [I32_MIN, I32_MAX])
    xi[1] = RNG.integers(-1000, 1000, 5)
    # Sums within i32 (the spec requires it): a quarter of the range per term.
    ys = RNG.integers(-(2**29), 2**29, (4, 5)).astype(np.int32)
    p = P("i32 reductions", x=xi, y=ys)
    p.op("mx", "reduce_max", "x", result=ttype((1, 5), "i32"), attrs="axis = 0 : i32")
    p.op("mn", "reduce_min", "x", result=ttype((4, 1), "i32"), attrs="axis = 1 : i32")
    p.op("s", "reduce_sum", "y", result=ttype((1, 5), "i32"), attrs="axis = 0 : i32")
    p.op("pr", "reduce_product", "y", result=ttype((4, 1), "i32"), attrs="axis = 1 : i32")
    prod = [spec.wrap(int(np.prod([int(v) for v in row], dtype=object)), 32) for row in ys]
    cases.append(p.case(["mx", "mn", "s", "pr"],
                        [xi.max(0, keepdims=True), xi.min(1, keepdims=True),
                         ys.astype(np.int64).sum(0, keepdims=True),
                         np.array(prod).reshape(4, 1)]))
    b = RNG.integers(0, 2, (3, 4)).astype(bool)
    b[0] = True
    b[1] = False
    p = P("bool reductions", x=b)
    p.op("all", "reduce_all", "x", result=ttype((3, 1), "i1"), attrs="axis = 1 : i32")
    p.op("any", "reduce_any", "x", result=ttype((3, 1), "i1"), attrs="axis = 1 : i32")
    cases.append(p.case(["all", "any"], [b.all(1, keepdims=True), b.any(1, keepdims=True)]))
    xn = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [-1.0, -5.0, -2.0]],
                  np.float32)
    for mode in ("PROPAGATE", "IGNORE"):
        p = P(f"reduce_max and argmax nan_mode {mode}", x=xn)
        p.op("m", "reduce_max", "x", result=ttype((3, 1), "f32"),
             attrs=f"axis = 1 : i32, nan_mode = {mode}")
        p.op("a", "argmax", "x", result=ttype((3,), "i32"),
             attrs=f"axis = 1 : i32, nan_mode = {mode}")
        cases.append(p.case(["m", "a"], [spec.reduce_max(xn, 1, mode),
                                         spec.argmax(xn, 1, mode)]))
    xa = np.array([[3, 7, 7, 1], [-128, -128, -128, -128], [5, 127, -3, 127]], np.int8)
    p = P("i8 argmax takes the first maximum", x=xa)
    p.op("a0", "argmax", "x", result=ttype((4,), "i32"), attrs="axis = 0 : i32")
    p.op("a1", "argmax", "x", result=ttype((3,), "i32"), attrs="axis = 1 : i32")
    cases.append(p.case(["a0", "a1"], [spec.argmax(xa, 0), spec.argmax(xa, 1)]))
    return cases


def layout_cases() -> list[Case]:
    cases = []
    x = _floats((2, 3, 4))
    p = P("reshape transpose slice tile reverse", x=x)
    p.shape("s", [4, 6])
    p.op("r", "reshape", "x", "s", result=ttype((4, 6), "f32"))
    p.op("t", "transpose", "x", result=ttype((4, 2, 3), "f32"),
         attrs="perms = array<i32: 2, 0, 1>")
    p.shape("start", [1, 0, 1])
    p.shape("size", [1, 2, 3])
    p.op("sl", "slice", "x", "start", "size", result=ttype((1, 2, 3), "f32"))
    p.shape("m", [2, 1, 3])
    p.op("ti", "tile", "x", "m", result=ttype((4, 3, 12), "f32"))
    p.op("rv", "reverse", "x", result=p.types["x"], attrs="axis = 1 : i32")
    p.op("id", "identity", "x", result=p.types["x"])
    cases.append(p.case(["r", "t", "sl", "ti", "rv", "id"],
                        [x.reshape(4, 6), x.transpose(2, 0, 1), x[1:2, 0:2, 1:4],
                         np.tile(x, (2, 1, 3)), x[:, ::-1], x]))
    xi = _ints(np.int8, (2, 3))
    p = P("pad with pad_const and concat", x=xi, y=_ints(np.int8, (2, 2)))
    p.shape("pads", [1, 0, 2, 1])
    p.const("v", [-7], np.int8)
    p.op("pd", "pad", "x", "pads", "v", result=ttype((3, 6), "i8"))
    p.op("cc", "concat", "x", "y", "x", result=ttype((2, 8), "i8"), attrs="axis = 1 : i32")
    cases.append(p.case(["pd", "cc"], [np.pad(xi, ((1, 0), (2, 1)), constant_values=-7),
                                       np.concatenate([xi, p.inputs["y"], xi], 1)]))
    values = _floats((2, 5, 3))
    idx = np.array([[4, 0, 4, 2], [1, 1, 3, 0]], np.int32)
    p = P("gather", v=values, i=idx)
    p.op("g", "gather", "v", "i", result=ttype((2, 4, 3), "f32"))
    cases.append(p.case(["g"], [np.stack([values[n, idx[n]] for n in range(2)])]))
    p = P("const")
    c = _ints(np.int16, (2, 2))
    p.const("c", c)
    p.op("y", "identity", "c", result=p.types["c"])
    cases.append(p.case(["y"], [c]))
    return cases


def resize_cases() -> list[Case]:
    cases = []
    x = _floats((1, 3, 4, 2))
    for mode, scale, offset, border, out_hw in (
            ("NEAREST_NEIGHBOR", (4, 2, 2, 1), (-1, 0), (1, 0), (6, 7)),
            ("BILINEAR", (4, 2, 4, 2), (-1, -1), (1, 1), (6, 8)),
            ("BILINEAR", (3, 2, 5, 3), (0, 1), (0, -2), (4, 5))):
        p = P(f"float resize {mode} scale {scale}", x=x)
        p.shape("sc", scale)
        p.shape("of", offset)
        p.shape("bo", border)
        p.op("y", "resize", "x", "sc", "of", "bo", result=ttype((1, *out_hw, 2), "f32"),
             attrs=f"mode = {mode}")
        cases.append(p.case(["y"], [spec.resize(x, scale, offset, border, mode, out_hw)]))
    xi = _ints(np.int8, (1, 3, 3, 2), [-128, 127])
    for mode, out_dt in (("BILINEAR", "i32"), ("NEAREST_NEIGHBOR", "i8")):
        p = P(f"i8 resize {mode}", x=xi)
        p.shape("sc", (6, 2, 4, 2))
        p.shape("of", (-2, 0))
        p.shape("bo", (2, 0))
        p.op("y", "resize", "x", "sc", "of", "bo", result=ttype((1, 9, 5, 2), out_dt),
             attrs=f"mode = {mode}")
        cases.append(p.case(["y"], [spec.resize(xi, (6, 2, 4, 2), (-2, 0), (2, 0), mode,
                                                (9, 5))]))
    return cases


# ---------------------------------------------------------------------- scatter


def scatter_cases() -> list[Case]:
    """SCATTER on floats and integers, including what the spec leaves undefined and
    minirt defines (tosa_spec.scatter): a repeated index (the last write wins) and an
    index outside [0, K) (no write)."""
    cases = []
    for name, values, idx, dt in (
            ("float scatter with a repeated and an out-of-range index", _floats((2, 5, 3)),
             np.array([[4, 0, 4], [1, 7, -1]], np.int32), np.float32),
            ("i8 scatter, a permutation", _ints(np.int8, (1, 4, 2), [-128, 127]),
             np.array([[2, 3, 0, 1]], np.int32), np.int8),
            ("i32 scatter, one channel", _ints(np.int32, (3, 2, 1), [I32_MIN, I32_MAX]),
             np.array([[1], [0], [1]], np.int32), np.int32)):
        n, _, c = values.shape
        w = idx.shape[1]
        updates = (_floats((n, w, c)) if dt == np.float32
                   else _ints(dt, (n, w, c), [np.iinfo(dt).min]))
        p = P(name, v=values, i=idx, u=updates)
        p.op("s", "scatter", "v", "i", "u", result=p.types["v"])
        cases.append(p.case(["s"], [spec.scatter(values, idx, updates)]))
    return cases


# ---------------------------------------------------------------------- control flow


def _if_captures(p: P, out: str, cond: str, amount: str) -> None:
    """IREE's form: no input list, the then branch reads an outer value."""
    p.body += [
        f"%{out} = tosa.cond_if %{cond} : tensor<i1> -> tensor<i32> {{",
        f"  %{out}_s = tosa.add %x, %{amount} : (tensor<i32>, tensor<i32>) -> tensor<i32>",
        f"  tosa.yield %{out}_s : tensor<i32>",
        "} else {",
        "  tosa.yield %x : tensor<i32>",
        "}"]
    p.types[out] = "tensor<i32>"


def _count_up(p: P, out: str, start: str, step: int) -> None:
    """while (3 >= i) i += step, the loop IREE's while test runs."""
    p.body += [
        f"%{out} = tosa.while_loop (%{out}_i = %{start}) : (tensor<i32>) -> tensor<i32> {{",
        f'  %{out}_t = "tosa.const"() <{{values = dense<3> : tensor<i32>}}> : () -> '
        "tensor<i32>",
        f"  %{out}_g = tosa.greater_equal %{out}_t, %{out}_i : (tensor<i32>, tensor<i32>) "
        "-> tensor<i1>",
        f"  tosa.yield %{out}_g : tensor<i1>",
        "} do {",
        f"^bb0(%{out}_i: tensor<i32>):",
        f'  %{out}_d = "tosa.const"() <{{values = dense<{step}> : tensor<i32>}}> : () -> '
        "tensor<i32>",
        f"  %{out}_n = tosa.add %{out}_i, %{out}_d : (tensor<i32>, tensor<i32>) -> tensor<i32>",
        f"  tosa.yield %{out}_n : tensor<i32>",
        "}"]
    p.types[out] = "tensor<i32>"


def _if_list(p: P, out: str, x: str) -> None:
    """An input list, a tensor<1xi1> condition computed from the data (sum(x) > 0)."""
    f4 = "tensor<4xf32>"
    p.body += [
        f"%{out}_s = tosa.reduce_sum %{x} {{axis = 0 : i32}} : ({f4}) -> tensor<1xf32>",
        f"%{out}_g = tosa.greater %{out}_s, %zero : (tensor<1xf32>, tensor<1xf32>) -> "
        "tensor<1xi1>",
        f"%{out} = tosa.cond_if %{out}_g (%{out}_p = %{x}) : tensor<1xi1> ({f4}) -> {f4} {{",
        f"^bb0(%{out}_p: {f4}):",
        f"  %{out}_e = tosa.exp %{out}_p : ({f4}) -> {f4}",
        f"  tosa.yield %{out}_e : {f4}",
        "} else {",
        f"^bb0(%{out}_p: {f4}):",
        f"  %{out}_m = tosa.sub %{out}_p, %one : ({f4}, tensor<1xf32>) -> {f4}",
        f"  tosa.yield %{out}_m : {f4}",
        "}"]
    p.types[out] = f4


def _if_nested(p: P, out: str, cond: str) -> None:
    """Two results; the then branch doubles v in a while_loop until sum(v) > 100 and
    counts the rounds, the else branch yields its inputs."""
    v3 = "tensor<3xi32>"
    p.body += [
        f"%{out}:2 = tosa.cond_if %{cond} (%{out}_v = %v, %{out}_k = %k) : tensor<i1> "
        f"({v3}, tensor<i32>) -> ({v3}, tensor<i32>) {{",
        f"^bb0(%{out}_v: {v3}, %{out}_k: tensor<i32>):",
        f"  %{out}_w:2 = tosa.while_loop (%{out}_a = %{out}_v, %{out}_n = %{out}_k) : "
        f"({v3}, tensor<i32>) -> ({v3}, tensor<i32>) {{",
        f"  ^bb0(%{out}_a: {v3}, %{out}_n: tensor<i32>):",
        f"    %{out}_s = tosa.reduce_sum %{out}_a {{axis = 0 : i32}} : ({v3}) -> "
        "tensor<1xi32>",
        f"    %{out}_g = tosa.greater_equal %hundred, %{out}_s : (tensor<1xi32>, "
        "tensor<1xi32>) -> tensor<1xi1>",
        f"    tosa.yield %{out}_g : tensor<1xi1>",
        "  } do {",
        f"  ^bb0(%{out}_a: {v3}, %{out}_n: tensor<i32>):",
        f"    %{out}_b = tosa.add %{out}_a, %{out}_a : ({v3}, {v3}) -> {v3}",
        f"    %{out}_m = tosa.add %{out}_n, %ione : (tensor<i32>, tensor<i32>) -> tensor<i32>",
        f"    tosa.yield %{out}_b, %{out}_m : {v3}, tensor<i32>",
        "  }",
        f"  tosa.yield %{out}_w#0, %{out}_w#1 : {v3}, tensor<i32>",
        "} else {",
        f"^bb0(%{out}_v: {v3}, %{out}_k: tensor<i32>):",
        f"  tosa.yield %{out}_v, %{out}_k : {v3}, tensor<i32>",
        "}"]
    p.types[f"{out}#0"], p.types[f"{out}#1"] = v3, "tensor<i32>"


def control_cases() -> list[Case]:
    """COND_IF and WHILE_LOOP, against tosa_spec.cond_if / while_loop running the same
    graphs written in Python."""
    cases = []
    p = P("cond_if on captured values, both ways", ct=np.array(True), cf=np.array(False),
          x=np.array(10, np.int32))
    p.const("ten", np.array(10, np.int32))
    _if_captures(p, "a", "ct", "ten")
    _if_captures(p, "b", "cf", "ten")
    then, other = (lambda: np.int32(20)), (lambda: np.int32(10))
    cases.append(p.case(["a", "b"], [spec.cond_if(np.array([True]), then, other),
                                     spec.cond_if(np.array([False]), then, other)]))

    starts = {"i0": 4, "i1": 2, "i2": 0, "i3": 0}
    p = P("while_loop counts up (zero, one and more rounds)",
          **{k: np.array(v, np.int32) for k, v in starts.items()})
    for k, step in zip(starts, (2, 2, 2, 1)):
        _count_up(p, f"w{k}", k, step)
    cases.append(p.case([f"w{k}" for k in starts], [
        spec.while_loop(lambda i: i <= 3, lambda i, s=step: (i + s,), np.int64(v))[0]
        for (k, v), step in zip(starts.items(), (2, 2, 2, 1))]))

    xp = np.array([0.5, -0.25, 1.0, 0.125], np.float32)
    xn = np.array([-0.5, 0.25, -1.0, 0.125], np.float32)
    p = P("cond_if with an input list and a tensor<1xi1> condition", xp=xp, xn=xn)
    p.const("zero", np.zeros(1, np.float32))
    p.const("one", np.ones(1, np.float32))
    _if_list(p, "yp", "xp")
    _if_list(p, "yn", "xn")
    branches = (lambda a: np.exp(a.astype(np.float64)), lambda a: a - 1.0)
    cases.append(p.case(["yp", "yn"], [spec.cond_if(np.array([a.sum() > 0]), *branches, a)
                                       for a in (xp, xn)]))

    v = np.array([3, -1, 5], np.int32)
    p = P("cond_if with two results and a while_loop inside", ct=np.array(True),
          cf=np.array(False), v=v, k=np.array(0, np.int32))
    p.const("hundred", np.array([100], np.int32))
    p.const("ione", np.array(1, np.int32))
    _if_nested(p, "r", "ct")
    _if_nested(p, "q", "cf")

    def doubling(a, n):
        return spec.while_loop(lambda a, n: a.sum() <= 100, lambda a, n: (a + a, n + 1),
                               a, n)

    want = [spec.cond_if(np.array([c]), doubling, lambda a, n: (a, n), v.astype(np.int64), 0)
            for c in (True, False)]
    cases.append(p.case(["r#0", "r#1", "q#0", "q#1"], [*want[0], *want[1]]))

    x = np.array([[7.5, 0.25, 3.0], [-6.0, 1.0, 0.5]], np.float32)
    p = P("while_loop on a tensor, a captured operand, a tensor<1xi1> condition", x=x)
    p.const("half", np.full((1, 1), 0.5, np.float32))
    p.const("lim", np.ones((1, 1), np.float32))
    p.const("zero", np.array(0, np.int32))
    p.const("inc", np.array(1, np.int32))
    f23, f11 = "tensor<2x3xf32>", "tensor<1x1xf32>"
    p.body += [
        f"%h:2 = tosa.while_loop (%hv = %x, %hi = %zero) : ({f23}, tensor<i32>) -> "
        f"({f23}, tensor<i32>) {{",
        f"^bb0(%hv: {f23}, %hi: tensor<i32>):",
        f"  %ha = tosa.abs %hv : ({f23}) -> {f23}",
        f"  %hr = tosa.reduce_max %ha {{axis = 0 : i32}} : ({f23}) -> tensor<1x3xf32>",
        f"  %hm = tosa.reduce_max %hr {{axis = 1 : i32}} : (tensor<1x3xf32>) -> {f11}",
        f"  %hg = tosa.greater_equal %hm, %lim : ({f11}, {f11}) -> tensor<1x1xi1>",
        "  %hs = tosa.const_shape {values = dense<[1]> : tensor<1xindex>} : () -> "
        "!tosa.shape<1>",
        "  %hc = tosa.reshape %hg, %hs : (tensor<1x1xi1>, !tosa.shape<1>) -> tensor<1xi1>",
        "  tosa.yield %hc : tensor<1xi1>",
        "} do {",
        f"^bb0(%hv: {f23}, %hi: tensor<i32>):",
        '  %hz = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>',
        f"  %hn = tosa.mul %hv, %half, %hz : ({f23}, {f11}, tensor<1xi8>) -> {f23}",
        "  %hj = tosa.add %hi, %inc : (tensor<i32>, tensor<i32>) -> tensor<i32>",
        f"  tosa.yield %hn, %hj : {f23}, tensor<i32>",
        "}"]
    p.types["h#0"], p.types["h#1"] = f23, "tensor<i32>"
    want = spec.while_loop(lambda a, i: np.abs(a).max() >= 1, lambda a, i: (a * 0.5, i + 1),
                           x.astype(np.float64), 0)
    cases.append(p.case(["h#0", "h#1"], want))
    return cases


# ---------------------------------------------------------------------- quant storage


def quant_storage_cases() -> list[Case]:
    """`!quant.uniform<u8:...>` / `<u16:...>` storage (upstream MLIR's TOSA tests use
    them): unsigned integers underneath, so RESCALE reads them zero-extended."""
    u8q, i8q = "!quant.uniform<u8:f32, 0.0235:128>", "!quant.uniform<i8:f32, 0.0235:-3>"
    u16q = "!quant.uniform<u16:f32, 0.5:32768>"
    x = np.array([0, 1, 127, 128, 200, 255], np.uint8)
    y = np.array([0, 1, 32767, 32768, 40000, 65535], np.uint16)
    types = {"x": f"tensor<6x{u8q}>", "y": f"tensor<6x{u16q}>"}
    p = P("u8 and u16 quantized storage", x=x, y=y)
    p.types.update(types)
    p.const("m", [1518500250], np.int32)  # about sqrt(2) / 2 * 2^31
    p.const("s", [31], np.int8)
    p.const("zx", [-128], np.int8)  # 128 as u8 bits
    p.const("zo", [-3], np.int8)
    p.const("zy", [-32768], np.int16)  # 32768 as u16 bits
    p.const("zi", [0], np.int32)
    rescale = ("rounding_mode = SINGLE_ROUND, scale32 = true, per_channel = false, "
               "input_unsigned = true, output_unsigned = false")
    p.op("a", "rescale", "x", "m", "s", "zx", "zo", result=f"tensor<6x{i8q}>",
         attrs=rescale)
    p.op("b", "rescale", "y", "m", "s", "zy", "zi", result="tensor<6xi32>", attrs=rescale)
    p.op("c", "clamp", "x", result=types["x"], attrs="min_val = 50 : ui8, max_val = 200 : ui8")
    common = {"scale32": True, "double_round": False, "per_channel": False,
              "input_unsigned": True, "output_unsigned": False}
    return [p.case(["a", "b", "c"], [
        spec.rescale(x.astype(np.int8), 1518500250, 31, -128, -3, in_bits=8, out_bits=8,
                     **common),
        spec.rescale(y.astype(np.int16), 1518500250, 31, -32768, 0, in_bits=16,
                     out_bits=32, **common),
        np.clip(x, 50, 200)], input_types=types)]


def all_cases() -> list[Case]:
    """Every case, in a fixed order (the random inputs are seeded)."""
    return (float_unary() + float_binary() + nan_modes() + select_logical()
            + integer_binary() + mul_cases() + shift_cases() + negate_clamp_cases()
            + table_cases() + cast_cases() + rescale_cases() + conv_cases()
            + matmul_cases() + pool_cases() + reduce_cases() + layout_cases()
            + resize_cases() + scatter_cases() + control_cases() + quant_storage_cases())


CASES = all_cases()
