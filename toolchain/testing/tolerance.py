"""The tolerance of each output of a random graph, from the error budget of every op on
its path.

The firmware may differ from the reference where an op is not exact (random_graphs.py):
a math function is our polynomial against numpy's, a sum runs in f32 in some order
against float64 rounded once, a product by a constant may be regrouped by affine
folding. Each such op has a budget (below, with its reason); how far the budgets can
move an output depends on everything after them (a sum that cancels, a tan near its
pole, a divide), which is measured rather than guessed: the reference is run again
with every inexact result moved by its budget, all up, all down and twice with random
signs per element, and an output's tolerance per element is SAFETY times the largest
move seen. Exact outputs get no tolerance at all: they compare equal (integers, and
floats like numpy.isclose with rtol = atol = 0, NaN equal to NaN).

f64 math functions run in f32 (codegen/mathlib.py): their operands are moved by
2**-24 relative (the rounding to f32) and their results by an f32 budget.
"""

from __future__ import annotations

import math

import numpy as np

from toolchain.graph.ir import Graph, Node
from toolchain.reference.kernels import KERNELS
from toolchain.testing.op_gens import MATH_OPS
from toolchain.testing.random_graphs import exactness, node_info
from toolchain.types import DTYPES, DType, complex_part, to_dtype

__all__ = ["ULPS", "SAFETY", "tolerances", "compare_outputs"]

F32, F64 = DTYPES["f32"], DTYPES["f64"]

# Budgets in ulps of the result type at the result (f32 ulps for f64 math functions).
# Math functions: codegen/mathlib.py's measured bound, plus 2 for numpy's own f32
# functions (the reference), which are not correctly rounded either.
ULPS: dict[str, float] = {
    "exponential": 4, "exponential_minus_one": 5, "log": 4, "log_plus_one": 5,
    "logistic": 5, "sqrt": 3, "rsqrt": 4, "cbrt": 4, "tanh": 6, "sine": 4, "cosine": 4,
    "tan": 6, "atan2": 5, "power": 4,
    # CHLO's functions (codegen/mathlib_special.py): tests/frontend/test_chlo.py holds
    # them to 8 * 2**-23 relative on the boards, 8 to 16 ulps; their reference is
    # float64 rounded once.
    **{op: 16 for op in ("erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i1e",
                         "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                         "zeta", "polygamma")},
    # One rounding of operands that already differ: the result may round the other way.
    "add": 1, "subtract": 1, "multiply": 1, "divide": 1, "convert": 1, "dequantize": 1,
    "remainder": 1,
}
# Affine folding regroups x * a * b + c: one rounding more per op than written.
AFFINE_ULPS = 2
# Sums (dot_general, convolution, reduce and reduce_window add): an f32 accumulator (f16
# and bf16 accumulate in f32 too) in any order is off the float64 sum by at most
# (n - 1) * 2**-24 * sum(|terms|); f64 by (n - 1) * 2**-53 * sum(|terms|); then the
# result's own rounding.
ACC_EPS = {"f64": 2.0**-53}
ACC_EPS_DEFAULT = 2.0**-24
# batch_norm_inference's steps: the rounding unit of each step's type.
STEP_EPS = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24, "f64": 2.0**-24}
# fft (passes/fft.py, the same algorithm on the reference, in the parts' type): its
# error is normwise, |X - X_exact| <= FFT_C * eps * log2(m) * ||x||_2 over each
# transform (tests/passes/test_fft.py states and checks this bound, c = 2; m is the
# length actually transformed: Bluestein's power of two for big primes). Several dims
# are transformed one after another, so their log2(m) add; inverses carry their 1 / n,
# and IRFFT's Hermitian half spectrum holds up to sqrt(2) ||x|| of norm.
FFT_C = 2.0
# Measured moves are multiplied by this: the compiled error need not have the sign
# pattern of any trial, and a first-order estimate may undershoot a little.
SAFETY = 3.0
# The trials: every move up; every move down; then the moves of consecutive ops (and an
# f64 math function's operand rounding against its result) in opposite directions, both
# ways round, so that two moves that cancel in the first two trials (a decreasing
# function after an op moved up: logistic of an operand rounded to f32) add up in one
# of these; then two with a random sign per element. (sign of op k's result, sign of
# its rounded operands) for op k: sign * (-1)**k when ALTERNATE.
TRIALS = ((1, 1, False), (-1, -1, False), (1, -1, True), (-1, 1, True), None, None)
# Narrow floats compute in f32 and round at every result: an inexact op may land one
# ulp of the narrow type away whatever its f32 error.
NARROW = ("f16", "bf16")


def _spacing(x: np.ndarray, dt: DType) -> np.ndarray:
    """The ulp of type `dt` at each |x| (bf16: 2**-7 relative, by its exponent)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    a = np.where(np.isfinite(a), a, 0.0)
    if dt.name == "bf16":
        e = np.floor(np.log2(np.maximum(a, 2.0**-126)))
        return 2.0 ** (e - 7)
    return np.spacing(a.astype(dt.np_dtype)).astype(np.float64)


def _abs_run(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """The op on |operands| in float64: sum(|terms|) of a dot, a convolution or an add
    reduction."""
    wide = [np.abs(a.astype(np.float64)) if a.dtype.kind == "f" else a for a in args]
    with np.errstate(all="ignore"):
        return np.asarray(KERNELS[node.op](_F64Node(node), *wide), dtype=np.float64)


class _F64Node:
    """A node's stand-in whose results are float64, so the reference kernel does not
    round sum(|terms|) to the result type."""

    def __init__(self, node: Node) -> None:
        self.op, self.inputs, self.attrs = node.op, node.inputs, node.attrs
        self.regions = node.regions
        self.outputs = [type(t)(t.type.with_dtype(F64), t.name) for t in node.outputs]


def _terms(node: Node) -> int:
    """How many terms each result element of a sum adds (the init value included)."""
    at = node.attrs
    if node.op == "dot_general":
        return int(np.prod([node.inputs[0].type.shape[d] for d in at["lhs_contract"]]))
    if node.op == "convolution":
        k = node.inputs[1].type.shape
        return int(k[at["kernel_input"]] * np.prod([k[d] for d in at["kernel_spatial"]]))
    if node.op == "reduce":
        return 1 + int(np.prod([node.inputs[0].type.shape[d] for d in at["dims"]]))
    if node.op == "reduce_window":
        return 1 + int(np.prod(at["window"]))
    return 1


def _fft_levels(n: int) -> float:
    """log2 of the length passes/fft.py transforms for length n (at least 1)."""
    from toolchain.passes.fft import MAX_DFT, smallest_prime_factor

    rest, big = n, 1
    while rest > 1:
        p = smallest_prime_factor(rest)
        big, rest = max(big, p), rest // p
    m = 1 << (2 * n - 2).bit_length() if big > MAX_DFT else n
    return max(1.0, math.log2(max(m, 2)))


def _fft_budget(node: Node, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """FFT_C * eps * sum(log2 m) * ||x|| per transform (FFT_C above), broadcast over its
    outputs, plus the result's own rounding."""
    lengths = tuple(node.attrs["fft_length"])
    axes = tuple(range(-len(lengths), 0))
    part = complex_part(node.outputs[0].type.dtype)
    eps = ACC_EPS.get(part.name, ACC_EPS_DEFAULT)
    x64 = np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    norm = np.sqrt(np.sum(x64 * x64, axis=axes, keepdims=True))
    kind = node.attrs["fft_type"]
    if kind == "IRFFT":
        norm = norm * math.sqrt(2)
    if kind in ("IFFT", "IRFFT"):
        norm = norm / math.prod(lengths)
    bound = FFT_C * eps * sum(_fft_levels(n) for n in lengths) * norm
    mag = np.abs(out.astype(np.complex128 if out.dtype.kind == "c" else np.float64))
    bound = np.broadcast_to(bound, out.shape) + 2 * _spacing(mag, part)
    return np.where(np.isfinite(bound), bound, 0.0)


def _negative_axis_scale(node: Node, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """What lgamma's and digamma's ulps are counted in: for x < 0 their reflection
    formulas subtract terms that cancel near the functions' zeros on the negative axis,
    so only an absolute bound holds there, in ulps of max(|lgamma(x)|, 1) and of
    max(|digamma(x)|, |digamma(1 - x)|) (bench/results/mathlib_special.md; the random
    graph campaign found lgamma(-2.75) = 0.00449, near a zero, 130 ulps off its own
    value on cortex-m4, within 1 ulp of 1)."""
    mag = np.abs(out.astype(np.float64))
    neg = np.asarray(x) < 0
    if not neg.any():
        return out
    if node.op == "lgamma":
        other = np.ones_like(mag)
    else:
        with np.errstate(all="ignore"):
            other = np.abs(np.asarray(KERNELS["digamma"](node, np.asarray(1 - x)),
                                      dtype=np.float64))
    return np.where(neg, np.fmax(mag, other), mag)


def _budget(node: Node, args: list[np.ndarray], out: np.ndarray, const: bool) -> np.ndarray:
    """How far the firmware's result may be from the reference's, per element."""
    dt = node.outputs[0].type.dtype
    op = node.op
    if op == "fft":
        return _fft_budget(node, args[0], out)
    if op in ("complex", "real", "imag"):  # parts moved, not rounded: no error of its own
        return np.zeros(out.shape)
    sums = op in ("dot_general", "convolution") or (
        op in ("reduce", "reduce_window") and node.attrs["kind"] == "add")
    if sums:
        eps = ACC_EPS.get(dt.name, ACC_EPS_DEFAULT)
        return (_terms(node) * eps * _abs_run(node, args)
                + (1 + (dt.name in NARROW)) * _spacing(out, dt))
    if op in ("reduce", "reduce_window"):  # multiply: a relative error per factor
        eps = ACC_EPS.get(dt.name, ACC_EPS_DEFAULT)
        return _terms(node) * eps * np.abs(out.astype(np.float64)) + _spacing(out, dt)
    if op == "batch_norm_inference":
        x, scale, offset, mean, var = (a.astype(np.float64) for a in args)
        fi = node.attrs["feature_index"]
        shape = [-1 if i == fi else 1 for i in range(x.ndim)]
        r = lambda v: v.reshape(shape)  # noqa: E731
        mag = ((np.abs(x) + np.abs(r(mean))) * np.abs(r(scale))
               / np.sqrt(np.abs(r(var)) + node.attrs["epsilon"]) + np.abs(r(offset)))
        # Lowered to elementwise steps, each rounded in the element type (as the spec's
        # decomposition does); f64's sqrt is f32-accurate on boards without an f64 FPU
        # (codegen/mathlib.py).
        return 8 * STEP_EPS.get(dt.name, ACC_EPS_DEFAULT) * mag + _spacing(out, dt)
    ulps = AFFINE_ULPS if const and op in ("add", "subtract", "multiply", "divide") \
        else ULPS.get(op, 1)
    if op in ("lgamma", "digamma"):
        out = _negative_axis_scale(node, args[0], out)
    if dt.name == "f64" and op in MATH_OPS:
        return ulps * _spacing(out, F32)
    if dt.name in NARROW:
        return np.maximum(1.0, ulps * 2.0**-13) * _spacing(out, dt)
    return ulps * _spacing(out, dt)


def _noisy_run(graph: Graph, inputs: list[np.ndarray],
               signs: np.random.Generator | tuple[int, int, bool]) -> list[np.ndarray]:
    """The reference with every inexact float result moved by its budget: by a fixed
    sign pattern (a row of TRIALS) or by a random sign per element (a Generator)."""
    info = exactness(graph)
    env = {id(t): to_dtype(np.asarray(x), t.type.dtype) for t, x in zip(graph.inputs, inputs)}

    def sign(shape: tuple[int, ...], k: int, operand: bool = False) -> np.ndarray | int:
        if isinstance(signs, tuple):
            result, rounded, alternate = signs
            return (rounded if operand else result) * (-1 if alternate and k % 2 else 1)
        return signs.choice([-1.0, 1.0], size=shape)

    for k, node in enumerate(graph.nodes):
        args = [env[id(t)] for t in node.inputs]
        outs_info = node_info(node, info)
        inexact = any(t.type.dtype.is_float and not i.exact
                      for t, i in zip(node.outputs, outs_info))
        if inexact and node.op in MATH_OPS and node.outputs[0].type.dtype.name == "f64":
            # Rounded to f32 and back before the function: a relative move of 2**-24.
            args = [a * (1 + sign(a.shape, k, True) * 2.0**-24) if a.dtype.kind == "f"
                    else a for a in args]
        with np.errstate(all="ignore"):
            result = KERNELS[node.op](node, *args)
        outs = result if isinstance(result, tuple | list) else [result]
        for t, v, i in zip(node.outputs, outs, outs_info):
            v = np.asarray(v).reshape(t.type.shape)
            info[id(t)] = i
            cplx = t.type.dtype.is_complex
            if (t.type.dtype.is_float or cplx) and not i.exact:
                with np.errstate(all="ignore"):
                    budget = _budget(node, args, v, any(info[id(x)].const
                                                        for x in node.inputs))
                    if cplx:  # each part moved by the budget, with signs of its own
                        moved = v.astype(np.complex128) + budget * (
                            sign(v.shape, k) + 1j * sign(v.shape, k + 1))
                    else:
                        moved = v.astype(np.float64) + sign(v.shape, k) * budget
                v = to_dtype(np.where(np.isfinite(v), moved, v), t.type.dtype)
            env[id(t)] = v
    return [env[id(t)] for t in graph.outputs]


def _move(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| per element, 0 where both are the same non-finite value, inf where only
    one is NaN or they are different infinities."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(a64 - b64)
    same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    return np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))


def _parts(x: np.ndarray) -> np.ndarray:
    """A complex array as its real and imaginary parts on a last axis of 2 (how
    cli/run.py's compare judges it: each part like a float); others unchanged."""
    return np.stack([x.real, x.imag], axis=-1) if x.dtype.kind == "c" else x


def tolerances(graph: Graph, inputs: list[np.ndarray], want: list[np.ndarray],
               seed: int = 0) -> list[np.ndarray | None]:
    """Per output: the absolute tolerance per element (None for integer outputs, which
    compare exactly; a complex output's has a last axis of 2: real part, imaginary
    part)."""
    rng = np.random.default_rng([seed, 0x701])
    trials = [_noisy_run(graph, inputs, rng if s is None else s) for s in TRIALS]
    out: list[np.ndarray | None] = []
    for i, w in enumerate(want):
        if w.dtype.kind not in "fc":
            out.append(None)
            continue
        moves = np.max([_move(*(_parts(x) for x in (t[i], w))) for t in trials], axis=0)
        out.append(SAFETY * moves)
    return out


def compare_outputs(got: list[np.ndarray], want: list[np.ndarray],
                    atol: list[np.ndarray | None]) -> list[str]:
    """Report lines for every output outside its tolerance (empty when all match):
    floats like numpy.isclose(rtol=0, atol=tolerance per element, equal_nan), integers
    exactly (toolchain/cli/run.py's report format)."""
    from toolchain.cli.run import compare

    problems: list[str] = []
    for i, (g, w, a) in enumerate(zip(got, want, atol)):
        lines = compare([g], [w], rtol=0.0, atol=0.0 if a is None else a)
        problems += [line.replace("output_0", f"output_{i}", 1) for line in lines]
    return problems
