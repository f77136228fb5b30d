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
from toolchain.passes.fft import error_bound
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
# fft: the firmware computes passes/fft.py's decomposition in the parts' type, the
# reference numpy's FFT in float64 rounded once; their distance is the decomposition's
# normwise error bound, passes/fft.py's error_bound (ERROR_C eps log2(m) ||x||_2 per
# transformed dim, checked by tests/passes/test_fft.py), plus the result's rounding.
# The linear-algebra ops (passes/linalg.py; reference/linalg.py in float64). Their
# budgets are the classical first-order bounds, with u the rounding unit the firmware
# computes in (f16 and bf16 matrices are factored and solved in f32; f64's sqrt is
# f32-accurate on boards without an f64 FPU, so cholesky and the batch norms use
# STEP_EPS, where f64 is 2**-24):
# - triangular_solve: substitution is backward stable, (T + dT) x = b with
#   |dT| <= gamma_n |T| (Higham, Accuracy and Stability, thm. 8.5), so componentwise
#   |x - x^| <= (n + 2) u |T^-1| |T| |x| (|x| |T| |T^-1| for a right-side solve);
# - cholesky: the computed factor is exact for A + dA with |dA| <= gamma_(n+1) |L| |L^T|
#   (thm. 10.3), ||dA||_2 <= (n + 1) n u ||A||_2, and the factor moves by at most
#   kappa_2(A) ||dA||_2 / ||A||_2 times ||L||_2 = sqrt(lambda_max) (normwise, thm. 10.8
#   to first order), with a factor 2 for the second-order rest; the generator keeps
#   kappa_2(A) <= 7 (op_gens.cholesky) but the budget reads it from the operand;
# - the batch norms: a running error bound of the lowering's steps (passes/linalg.py,
#   the spec's decomposition in the element type): each sum of m terms within
#   m ua of the sum of |terms| (ua: ACC_EPS, the accumulator's unit; f16 and bf16 sum
#   in f32), each elementwise step and each rounding of a sum to the element type
#   within u, and the variance's error carried through 1 / sqrt(var + epsilon) to
#   first order (see _norm_budget).
LINALG_OPS = frozenset({"cholesky", "triangular_solve", "batch_norm_training",
                        "batch_norm_grad"})
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


def _fft_budget(node: Node, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """passes/fft.py's error_bound for the operand's norm over the transformed dims,
    broadcast over its outputs, plus the result's own rounding."""
    lengths = tuple(node.attrs["fft_length"])
    axes = tuple(range(-len(lengths), 0))
    part = complex_part(node.outputs[0].type.dtype)
    eps = ACC_EPS.get(part.name, ACC_EPS_DEFAULT)
    x64 = np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    norm = np.sqrt(np.sum(x64 * x64, axis=axes, keepdims=True))
    bound = error_bound(node.attrs["fft_type"], lengths, norm, eps)
    mag = np.abs(out.astype(np.complex128 if out.dtype.kind == "c" else np.float64))
    bound = np.broadcast_to(bound, out.shape) + 2 * _spacing(mag, part)
    return np.where(np.isfinite(bound), bound, 0.0)


def _unspecified_fft_lines(node: Node, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The fft's results moved to another non-finite value wherever their line (the
    transformed dims) reads a non-finite operand. No result there is finite, but which
    are NaN and which an infinity of what sign depends on the order of the sums: the
    spec leaves it open, and numpy's FFT and passes/fft.py's decomposition differ. The
    move makes those elements (and what depends on them) infinitely uncertain, so they
    get an infinite tolerance, which compare_outputs reads as "any value"."""
    axes = tuple(range(-len(node.attrs["fft_length"]), 0))
    line = ~np.isfinite(x).all(axis=axes, keepdims=True)
    if not line.any():
        return out

    def other(part: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(part), np.inf, np.nan).astype(part.dtype)

    moved = other(out.real) + 1j * other(out.imag) if out.dtype.kind == "c" else other(out)
    return np.where(np.broadcast_to(line, out.shape), moved, out).astype(out.dtype)


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


def _read_matrix(a: np.ndarray, lower: bool, unit: bool = False) -> np.ndarray:
    """The triangle `lower` names (the diagonal 1 when `unit`), the rest 0."""
    m = np.tril(a) if lower else np.triu(a)
    if unit:
        np.fill_diagonal(m, 1.0)
    return m


def _cholesky_budget(node: Node, a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """2 (n + 1) n u kappa_2(A) sqrt(lambda_max) on the triangle the factor fills (see
    LINALG_OPS above); 0 on a matrix that is not positive definite (NaN on both sides)
    and on the other triangle (0 on both sides)."""
    dt = node.outputs[0].type.dtype
    u = STEP_EPS.get(dt.name, ACC_EPS_DEFAULT)
    lower = node.attrs["lower"]
    n = a.shape[-1]
    bound = np.zeros(out.shape)
    for idx in np.ndindex(*a.shape[:-2]):
        tri = _read_matrix(a[idx].astype(np.float64), True) if lower else \
            _read_matrix(a[idx].astype(np.float64), False).T
        sym = tri + np.tril(tri, -1).T
        if not np.all(np.isfinite(sym)):
            continue
        lam = np.linalg.eigvalsh(sym)
        if lam[0] <= 0:
            continue
        b = 2 * (n + 1) * n * u * (lam[-1] / lam[0]) * math.sqrt(lam[-1])
        bound[idx] = _read_matrix(np.full((n, n), b), lower)
    return bound


def _solve_budget(node: Node, a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """(n + 2) u |T^-1| |T| |x| (left side) or |x| |T| |T^-1| (right side), T = op(A)
    as read (see LINALG_OPS above)."""
    at = node.attrs
    dt = node.outputs[0].type.dtype
    u = ACC_EPS.get(dt.name, ACC_EPS_DEFAULT)
    n = a.shape[-1]
    # An element that is not finite is so on both sides; the finite ones never read it.
    x = np.abs(out.astype(np.float64))
    x = np.where(np.isfinite(x), x, 0.0)
    bound = np.zeros(out.shape)
    for idx in np.ndindex(*a.shape[:-2]):
        t = _read_matrix(a[idx].astype(np.float64), at["lower"], at["unit_diagonal"])
        if at["transpose_a"] != "NO_TRANSPOSE":
            t = t.T
        if not np.all(np.isfinite(t)):
            continue
        try:
            tinv = np.abs(np.linalg.inv(t))
        except np.linalg.LinAlgError:
            continue
        g = tinv @ np.abs(t) if at["left_side"] else np.abs(t) @ tinv
        bound[idx] = (n + 2) * u * (g @ x[idx] if at["left_side"] else x[idx] @ g)
    return bound


def _norm_budget(node: Node, args: list[np.ndarray], index: int) -> np.ndarray:
    """Result `index` of a batch norm: a running error bound of passes/linalg.py's
    steps, m the elements per feature, u = STEP_EPS of the element type (a step) and
    ua = ACC_EPS (a sum's accumulator): batch_norm_training: mean within Em = (m ua +
    2 u) mean|x|; the variance (the mean of (x - mean)**2) within Ev = (m ua + 4 u)
    mean((|x| + |mean|)**2) + 2 mean|x - mean| Em; the output y = (x - mean) scale / s
    + offset (s = sqrt(var + eps)) within |scale| / s (Em + 8 u (|x| + |mean|)) +
    |x - mean| |scale| Ev / (2 s (var + eps)) + 8 u |y|'s terms. batch_norm_grad
    (operands x, scale, mean, var, dy): d offset = sum dy within (m ua + u) sum|dy|;
    d scale = sum(dy (x - mean) / s) within (m ua + 5 u) sum(|dy| (|x| + |mean|) / s);
    d x = scale / (s m) (m dy - sum dy - sum(dy (x - mean)) (x - mean) / (var + eps))
    within (m ua + 10 u) |scale| / (s m) times the same with every term taken by its
    magnitude."""
    dt = node.outputs[0].type.dtype
    u = STEP_EPS.get(dt.name, ACC_EPS_DEFAULT)
    ua = ACC_EPS.get(dt.name, ACC_EPS_DEFAULT)
    fi, eps = node.attrs["feature_index"], node.attrs["epsilon"]
    x = args[0].astype(np.float64)
    axes = tuple(i for i in range(x.ndim) if i != fi)
    shape = [-1 if i == fi else 1 for i in range(x.ndim)]
    m = max(1, math.prod(x.shape[i] for i in axes))

    def r(v: np.ndarray) -> np.ndarray:
        return v.reshape(shape)

    ax = np.abs(x)
    if node.op == "batch_norm_training":
        scale, offset = (np.abs(a.astype(np.float64)) for a in args[1:3])
        mean = x.sum(axis=axes) / m
        c = x - r(mean)
        var = (c * c).sum(axis=axes) / m
        em = (m * ua + 2 * u) * ax.sum(axis=axes) / m
        mag = ax + np.abs(r(mean))
        ev = (m * ua + 4 * u) * (mag * mag).sum(axis=axes) / m + \
            2 * np.abs(c).sum(axis=axes) / m * em
        if index == 1:
            return np.broadcast_to(em, var.shape)
        if index == 2:
            return ev
        s = np.sqrt(np.abs(r(var)) + eps)
        return (r(scale) / s * (r(em) + 8 * u * mag)
                + np.abs(c) * r(scale) * r(ev) / (2 * s * (np.abs(r(var)) + eps))
                + 8 * u * (np.abs(c) * r(scale) / s + r(offset)))
    scale, mean, var = (a.astype(np.float64) for a in args[1:4])
    dy = np.abs(args[4].astype(np.float64))
    s = np.sqrt(np.abs(var) + eps)
    mag = ax + np.abs(r(mean))
    if index == 2:
        return (m * ua + u) * dy.sum(axis=axes)
    if index == 1:
        return (m * ua + 5 * u) * (dy * mag / r(s)).sum(axis=axes)
    terms = m * dy + r(dy.sum(axis=axes)) + r((dy * mag).sum(axis=axes)) * mag / r(
        np.abs(var) + eps)
    return (m * ua + 10 * u) * r(np.abs(scale) / (s * m)) * terms


def _linalg_budget(node: Node, args: list[np.ndarray], out: np.ndarray,
                   index: int) -> np.ndarray:
    """The budget of result `index` of a linear-algebra op (LINALG_OPS), plus the
    rounding of the result to its type (twice for f16 and bf16: their result is
    rounded once from f32, and the reference's once from float64)."""
    dt = node.outputs[index].type.dtype
    if node.op == "cholesky":
        bound = _cholesky_budget(node, args[0], out)
    elif node.op == "triangular_solve":
        bound = _solve_budget(node, args[0], out)
    else:
        bound = _norm_budget(node, args, index)
    bound = np.broadcast_to(bound, out.shape) + (1 + (dt.name in NARROW)) * _spacing(out, dt)
    if node.op == "cholesky":  # the other triangle is 0 on both sides
        lower = node.attrs["lower"]
        n = out.shape[-1]
        bound = bound * _read_matrix(np.ones((n, n)), lower)
    return np.where(np.isfinite(bound), bound, 0.0)


def _budget(node: Node, args: list[np.ndarray], out: np.ndarray, const: bool,
            index: int = 0) -> np.ndarray:
    """How far the firmware's result may be from the reference's, per element (of
    result `index` of the node)."""
    dt = node.outputs[0].type.dtype
    op = node.op
    if op in LINALG_OPS:
        return _linalg_budget(node, args, out, index)
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
        for index, (t, v, i) in enumerate(zip(node.outputs, outs, outs_info)):
            v = np.asarray(v).reshape(t.type.shape)
            info[id(t)] = i
            cplx = t.type.dtype.is_complex
            if (t.type.dtype.is_float or cplx) and not i.exact:
                with np.errstate(all="ignore"):
                    budget = _budget(node, args, v, any(info[id(x)].const
                                                        for x in node.inputs), index)
                    if cplx:  # each part moved by the budget, with signs of its own
                        moved = v.astype(np.complex128) + budget * (
                            sign(v.shape, k) + 1j * sign(v.shape, k + 1))
                    else:
                        moved = v.astype(np.float64) + sign(v.shape, k) * budget
                v = to_dtype(np.where(np.isfinite(v), moved, v), t.type.dtype)
                if node.op == "fft":
                    v = _unspecified_fft_lines(node, args[0], v)
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
    exactly (toolchain/cli/run.py's report format). An infinite tolerance means the
    spec leaves the value open (an fft line with a non-finite operand): any value
    passes there."""
    from toolchain.cli.run import compare

    problems: list[str] = []
    for i, (g, w, a) in enumerate(zip(got, want, atol)):
        if a is not None and np.isinf(a).any():
            open_ = np.isinf(a)
            g, w = (np.where(open_, 0.0, _parts(x)) for x in (g, w))
            a = np.where(open_, 0.0, a)
        lines = compare([g], [w], rtol=0.0, atol=0.0 if a is None else a)
        problems += [line.replace("output_0", f"output_{i}", 1) for line in lines]
    return problems
