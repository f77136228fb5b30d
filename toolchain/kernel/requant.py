"""Folded int8 requantization: TFLite's two rounding steps as one 64-bit add and shift.

The graph (and so the numpy reference that `--check` compares with) keeps TFLite's
`rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, M), s) + zp`. Per
output that is a 64-bit product, a nudge chosen by sign, a division toward zero, the
saturation test, then a mask, a remainder and a threshold for the rounding shift by a
per-channel exponent read at run time: ~20 instructions on Armv7E-M. When M, s and zp
are constants this module rewrites a kernel's epilogue into the equivalent

    y = hi32(x * M + K[c] + sign(x) * 2**31) >> (s - 1)        sign(x) = x >> 31 (0 or -1)
    K[c] = 2**30 + 2**(s+30) + zp * 2**(31+s)                   (per channel, at build time)

which on Armv7-M is SMLAL onto K, an ADDS/ADC for the sign term and one ASR.

Why it is exact, for M in [0, 2**31) (never INT32_MIN, so SRDHM cannot saturate) and
t = x * M:
- SRDHM(x, M) = (t + (t >= 0 ? 2**30 : 1 - 2**30)) / 2**31, truncated, equals
  q = floor((t + 2**30) / 2**31) for every t (codegen/emit.py's _srdhm says why);
- RDBP(q, s) for s >= 1 rounds half away from zero: floor((q + 2**(s-1) - [q < 0]) / 2**s).
  [q < 0] may be read as [x < 0]: with M >= 0 they differ only where q = 0 and x < 0,
  and there both give floor((2**(s-1) - 1 or 2**(s-1)) / 2**s) = 0;
- nested floors fold, floor((floor(a / 2**31) + c) / 2**s) = floor((a + c * 2**31) / 2**(31+s))
  for an integer c, and adding zp * 2**(31+s) before the floor adds zp after it.
So y = floor((t + 2**30 + 2**(s+30) - [x < 0] * 2**31 + zp * 2**(31+s)) / 2**(31+s)), and
since 31 + s >= 32 that is the high word shifted by s - 1. tests/kernel/test_requant.py
checks the identity exhaustively on small ranges and on random and extreme int32 x.

A kernel qualifies only when the fold is exact for every int32 x: every s in [1, 31]
(a channel with s = 0 or a left shift keeps TFLite's steps, as does the whole kernel),
every M in [0, 2**31), and the 64-bit sum and the int32 result cannot overflow (zp
large against a large s could). Decided per kernel at build time from the constants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from toolchain.kernel.form import (
    Apply,
    Const,
    Expr,
    Kernel,
    Load,
    postorder,
    rewrite,
    with_children,
)
from toolchain.types import TensorType, dtype

__all__ = ["fold_requantization", "folded_constants", "folded_reference"]

I32, I64 = dtype("i32"), dtype("i64")
SRDHM, RDBP = "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot"
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1

# What a constant operand of the kernel holds (None: not a constant).
ConstantOf = Callable[[int], "np.ndarray | None"]


def folded_constants(multiplier: int, exponent: int, zero_point: int) -> int | None:
    """K for one channel (module docstring), or None when the fold is not exact for
    every int32 x: M outside [0, 2**31), s outside [1, 31], or a 64-bit sum or int32
    result that could overflow."""
    m, s, zp = int(multiplier), int(exponent), int(zero_point)
    if not (0 <= m <= _I32_MAX and 1 <= s <= 31):
        return None
    k = (1 << 30) + (1 << (s + 30)) + zp * (1 << (31 + s))
    low = _I32_MIN * m + k - (1 << 31)  # the extremes of x * M + K + sign(x) * 2**31
    high = _I32_MAX * m + k
    if low < _I64_MIN or high > _I64_MAX:
        return None
    if (low >> (31 + s)) < _I32_MIN or (high >> (31 + s)) > _I32_MAX:
        return None
    return k


def folded_reference(x: np.ndarray, multiplier: int, exponent: int, zero_point: int
                     ) -> np.ndarray:
    """The folded form in numpy int64 (what the rewritten kernel computes), for tests:
    hi32(x * M + K + sign(x) * 2**31) >> (s - 1)."""
    k = folded_constants(multiplier, exponent, zero_point)
    if k is None:
        raise ValueError(f"requantization (M={multiplier}, s={exponent}, zp={zero_point}) "
                         "does not fold")
    x = np.asarray(x, dtype=np.int64)
    total = x * np.int64(multiplier) + np.int64(k) + ((x >> 31) << 31)
    return ((total >> 32).astype(np.int32) >> (exponent - 1)).astype(np.int32)


def _values(e: Expr, constant_of: ConstantOf) -> np.ndarray | int | None:
    """A Const's value, a constant operand's array for a load of it, else None."""
    if isinstance(e, Const) and e.dtype.kind == "i":
        return int(e.value)
    if isinstance(e, Load) and e.pad is None and e.valid is None:
        arr = constant_of(e.operand)
        return None if arr is None else np.asarray(arr, dtype=np.int64)
    return None


def _pattern(e: Expr) -> tuple[Expr, Expr, Expr] | None:
    """(x, M, s) when `e` is rounding_divide_by_pot(srdhm(x, M), s) on i32."""
    if not (isinstance(e, Apply) and e.op == RDBP and e.dtype == I32):
        return None
    inner, s = e.args
    if not (isinstance(inner, Apply) and inner.op == SRDHM and inner.dtype == I32):
        return None
    return inner.args[0], inner.args[1], s


def _zero_point_add(e: Expr) -> tuple[Expr, int] | None:
    """(the rounding shift, zp) when `e` is `rdbpot(srdhm(...)) + zp` with zp a Const."""
    if not (isinstance(e, Apply) and e.op == "add" and e.dtype == I32):
        return None
    for a, b in (e.args, e.args[::-1]):
        if _pattern(a) is not None and isinstance(b, Const):
            return a, int(b.value)
    return None


class _Folder:
    """Builds the folded expression for one matched site, collecting the constant
    operands it adds to the kernel."""

    def __init__(self, kernel: Kernel, constant_of: ConstantOf) -> None:
        self.kernel = kernel
        self.constant_of = constant_of
        self.new: list[tuple[TensorType, np.ndarray]] = []
        self.folds = 0

    def fold(self, site: Expr, zp: int, x: Expr) -> Expr | None:
        """The folded form of `site` (= rdbpot(srdhm(_, M), s)) + zp, over the already
        rewritten `x`; None when it does not qualify."""
        _, m_expr, s_expr = _pattern(site)
        m, s = _values(m_expr, self.constant_of), _values(s_expr, self.constant_of)
        if m is None or s is None:
            return None
        # The per-channel arrays: both loads at one index, or one of them a scalar.
        loads = [e for e, v in ((m_expr, m), (s_expr, s)) if not isinstance(v, int)]
        if len(loads) == 2 and (loads[0].index != loads[1].index
                                or np.shape(m) != np.shape(s)):
            return None
        shape = np.shape(m) if not isinstance(m, int) else np.shape(s)
        m_arr = np.broadcast_to(np.asarray(m, dtype=np.int64), shape)
        s_arr = np.broadcast_to(np.asarray(s, dtype=np.int64), shape)
        pairs = list(zip(m_arr.ravel().tolist(), s_arr.ravel().tolist(), strict=True))
        ks = [folded_constants(mi, si, zp) for mi, si in pairs]
        after = 0  # a zero point that would overflow K is added after the shift
        if zp and any(k is None for k in ks):
            ks, after = [folded_constants(mi, si, 0) for mi, si in pairs], zp
        if any(k is None for k in ks):
            return None
        k_arr = np.asarray(ks, dtype=np.int64).reshape(shape)
        self.folds += 1
        shift_arr = (s_arr - 1).astype(np.int32)

        def per_channel(values: np.ndarray, dt) -> Expr:
            if values.size == 0 or np.all(values == values.ravel()[0]):
                return Const(int(values.ravel()[0]) if values.size else 0, dt)
            self.new.append((TensorType(tuple(values.shape), dt), values.astype(dt.np_dtype)))
            index = loads[0].index
            return Load(len(self.kernel.operands) + len(self.new) - 1, index)

        wide_x = Apply("convert", (x,), I64)
        product = Apply("multiply", (wide_x, Apply("convert", (m_expr,), I64)), I64)
        sign = Apply("shift_right_arithmetic", (x, Const(31, I32)), I32)
        sign_term = Apply("shift_left", (Apply("convert", (sign,), I64), Const(31, I64)), I64)
        # K + the sign term first, then the product: LLVM accumulates the product onto
        # that pair with one SMLAL.
        offset = Apply("add", (per_channel(k_arr, I64), sign_term), I64)
        total = Apply("add", (product, offset), I64)
        high = Apply("convert", (Apply("shift_right_arithmetic", (total, Const(32, I64)), I64),),
                     I32)
        shift = per_channel(shift_arr, I32)
        if isinstance(shift, Const):
            out = high if shift.value == 0 else \
                Apply("shift_right_arithmetic", (high, shift), I32)
        else:
            # Every amount is in [0, 30]: `and 31` lets LLVM drop the out-of-range guard
            # the generic shift carries (one AND instead of a compare and a select).
            masked = Apply("and", (shift, Const(31, I32)), I32)
            out = Apply("shift_right_arithmetic", (high, masked), I32)
        return Apply("add", (out, Const(after, I32)), I32) if after else out


def fold_requantization(kernel: Kernel, constant_of: ConstantOf
                        ) -> tuple[Kernel, list[tuple[TensorType, np.ndarray]]]:
    """`kernel` with each qualifying requantization in its epilogue folded (module
    docstring), and the constant operands the folded form adds, to bind after the
    kernel's existing ones in order. Unchanged (and no new operands) when nothing
    qualifies."""
    if kernel.epilogue is None:
        return kernel, []
    nodes = postorder(kernel.epilogue)
    # A rounding shift whose only consumer is `+ zp` folds together with it.
    with_zp: dict[int, tuple[Expr, int]] = {}
    for e in nodes:
        hit = _zero_point_add(e)
        if hit is not None:
            with_zp[id(e)] = hit
    absorbed = {id(site) for site, _ in with_zp.values()}
    users: dict[int, int] = {}
    for e in nodes:
        for k in (e.args if isinstance(e, Apply) else ()):
            users[id(k)] = users.get(id(k), 0) + 1
    folder = _Folder(kernel, constant_of)
    done: dict[int, Expr] = {}

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if id(e) in with_zp:
            site, zp = with_zp[id(e)]
            if users.get(id(site), 0) == 1:
                x = done[id(_pattern(site)[0])]
                folded = folder.fold(site, zp, x)
                if folded is not None:
                    return folded
        elif _pattern(e) is not None and not (id(e) in absorbed
                                              and users.get(id(e), 0) == 1):
            folded = folder.fold(e, 0, done[id(_pattern(e)[0])])
            if folded is not None:
                return folded
        return with_children(e, kids)

    def record(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        out = fn(e, kids)
        done[id(e)] = out
        return out

    epilogue = rewrite(kernel.epilogue, record)
    if not folder.folds:
        return kernel, []
    operands = kernel.operands + tuple(t for t, _ in folder.new)
    return replace(kernel, epilogue=epilogue, operands=operands), folder.new
