"""Index expressions as affine forms and value intervals, and their simplification.

The kernel form writes every index as an expression over loop indices (kernel/form.py).
Most are affine: `2*i1 + i4 - 1` for a strided, padded window. Knowing that, the loop
stage can prove a load in bounds over a region (its interval lies inside the operand's
shape), split a loop where that proof starts to hold, and the code generator can compute
addresses as a loop-invariant base plus constant offsets.

- `affine_of(e)`: `Affine` (sum of coefficient x loop index, plus a constant) or None.
- `interval_of(e, ranges, operands)`: the closed interval an integer expression takes
  when each loop dimension d ranges over `ranges[d]`, or None when unknown.
- `simplify(root, ranges, operands)`: folds what the ranges decide: `(64*i0 + i2) / 64`
  with i2 in [0, 63] is i0 (reshapes), `(2*q + 1) % 2 == 0` is false (transposed
  convolutions by phase), a load whose `valid` is false is its pad value.

Division and remainder are StableHLO's, truncating toward zero; they are only rewritten
where that agrees with the exact or floored result (exact division, or a dividend that
cannot be negative).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from toolchain.kernel.form import (
    INDEX,
    Apply,
    Const,
    Expr,
    Index,
    Load,
    expr_dtype,
    postorder,
    rewrite,
    with_children,
)
from toolchain.types import DType, TensorType, dtype

__all__ = ["Affine", "Interval", "affine_of", "as_expr", "interval_of", "simplify"]

Interval = tuple[int, int]  # closed: lo <= value <= hi
I1 = dtype("i1")
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class Affine:
    """sum(coeff * Index(dim) for dim, coeff in terms) + const; terms sorted by dim,
    no zero coefficients."""

    terms: tuple[tuple[int, int], ...]
    const: int

    @staticmethod
    def of(coeffs: dict[int, int], const: int) -> Affine:
        """The form with these coefficients (zeros dropped)."""
        return Affine(tuple(sorted((d, c) for d, c in coeffs.items() if c)), const)

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(d for d, _ in self.terms)

    def coeff(self, dim: int) -> int:
        """The coefficient of Index(dim) (0 when absent)."""
        return dict(self.terms).get(dim, 0)

    def plus(self, other: Affine) -> Affine:
        coeffs = dict(self.terms)
        for d, c in other.terms:
            coeffs[d] = coeffs.get(d, 0) + c
        return Affine.of(coeffs, self.const + other.const)

    def times(self, k: int) -> Affine:
        return Affine.of({d: c * k for d, c in self.terms}, self.const * k)

    def interval(self, ranges: dict[int, Interval]) -> Interval:
        """The values the form takes with each dim in its range (dims without a range
        are taken as 0)."""
        lo = hi = self.const
        for d, c in self.terms:
            a, b = ranges.get(d, (0, 0))
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi


def affine_of(e: Expr) -> Affine | None:
    """The affine form of an INDEX expression, or None when it is not affine (a
    division, a load, a clamp, ...)."""
    forms: dict[int, Affine | None] = {}
    for node in postorder(e):
        forms[id(node)] = _affine_node(node, forms)
    return forms[id(e)]


def _affine_node(e: Expr, forms: dict[int, Affine | None]) -> Affine | None:
    if isinstance(e, Index):
        return Affine(((e.dim, 1),), 0)
    if isinstance(e, Const):
        return Affine((), int(e.value)) if e.dtype == INDEX else None
    if not isinstance(e, Apply) or e.dtype != INDEX:
        return None
    args = [forms[id(a)] for a in e.args]
    if any(a is None for a in args):
        return None
    if e.op == "add":
        return args[0].plus(args[1])
    if e.op == "subtract":
        return args[0].plus(args[1].times(-1))
    if e.op == "negate":
        return args[0].times(-1)
    if e.op == "multiply":
        a, b = args
        if not b.terms:
            return a.times(b.const)
        if not a.terms:
            return b.times(a.const)
    return None


def as_expr(a: Affine) -> Expr:
    """An INDEX expression computing `a` (terms in dim order, then the constant)."""
    out: Expr | None = None
    for d, c in a.terms:
        term: Expr = Index(d) if c == 1 else Apply("multiply", (Index(d), Const(c, INDEX)), INDEX)
        out = term if out is None else Apply("add", (out, term), INDEX)
    if out is None:
        return Const(a.const, INDEX)
    return out if a.const == 0 else Apply("add", (out, Const(a.const, INDEX)), INDEX)


# --------------------------------------------------------------------------- intervals


def _type_range(dt: DType) -> Interval | None:
    if dt.kind == "b":
        return 0, 1
    if dt.kind == "i":
        return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
    if dt.kind == "u":
        return 0, (1 << dt.bits) - 1
    return None


def _trunc_div(a: int, k: int) -> int:
    q = abs(a) // abs(k)
    return q if (a >= 0) == (k > 0) else -q


def _interval_node(e: Expr, iv: dict[int, Interval | None], ranges: dict[int, Interval],
                   operands: tuple[TensorType, ...]) -> Interval | None:
    if isinstance(e, Index):
        return ranges.get(e.dim)
    if isinstance(e, Const):
        if e.dtype.is_float:
            return None
        v = int(e.value)
        return v, v
    if isinstance(e, Load):
        return _type_range(operands[e.operand].dtype)
    if not isinstance(e, Apply):
        return None
    dt = e.dtype
    own = _type_range(dt)
    if own is None:
        return None
    args = [iv[id(a)] for a in e.args]
    r = _apply_interval(e, args)
    if r is None or r[0] < own[0] or r[1] > own[1]:
        # It may wrap in its own type: only the type's whole range is certain (and not
        # even that for INDEX arithmetic, which is where the intervals matter).
        return None if dt == INDEX else own
    return r


def _apply_interval(e: Apply, args: list[Interval | None]) -> Interval | None:
    op = e.op
    if op == "convert":
        return args[0]
    if any(a is None for a in args):
        return None
    if op == "add":
        (a, b), (c, d) = args
        return a + c, b + d
    if op == "subtract":
        (a, b), (c, d) = args
        return a - d, b - c
    if op == "negate":
        a, b = args[0]
        return -b, -a
    if op == "multiply":
        (a, b), (c, d) = args
        products = (a * c, a * d, b * c, b * d)
        return min(products), max(products)
    if op in ("maximum", "minimum"):
        (a, b), (c, d) = args
        return (max(a, c), max(b, d)) if op == "maximum" else (min(a, c), min(b, d))
    if op == "clamp":
        (l1, l2), (a, b), (h1, h2) = args
        return min(max(a, l1), h1), min(max(b, l2), h2)
    if op == "select":
        _, (a, b), (c, d) = args
        return min(a, c), max(b, d)
    if op in ("divide", "remainder"):
        (a, b), (k, k2) = args
        if k != k2 or k <= 0:
            return None
        if op == "divide":
            return _trunc_div(a, k), _trunc_div(b, k)
        if a >= 0:
            return (a, b) if b < k else (0, min(b, k - 1))
        return (max(a, 1 - k), min(b, k - 1)) if b > 0 else (max(a, 1 - k), 0)
    return None


def interval_of(e: Expr, ranges: dict[int, Interval],
                operands: tuple[TensorType, ...]) -> Interval | None:
    """The closed interval of an integer expression's values over `ranges` (loop dim ->
    interval; a dim without one is unknown), or None."""
    iv: dict[int, Interval | None] = {}
    for node in postorder(e):
        iv[id(node)] = _interval_node(node, iv, ranges, operands)
    return iv[id(e)]


# --------------------------------------------------------------------------- simplify


def _split_by(a: Affine, k: int) -> tuple[Affine, Affine]:
    """a = k * q + r with every coefficient of r in [0, k) (floored)."""
    q = Affine.of({d: c // k for d, c in a.terms}, a.const // k)
    r = Affine.of({d: c % k for d, c in a.terms}, a.const % k)
    return q, r


def _divmod_affine(a: Affine, k: int, ranges: dict[int, Interval]) -> tuple[Affine, Affine] | None:
    """(a / k, a % k) as affine forms under StableHLO's truncating semantics, when the
    ranges make them affine: the division is exact, or a is never negative and its
    floored remainder part stays in [0, k)."""
    if k <= 0:
        return None
    if all(c % k == 0 for _, c in a.terms) and a.const % k == 0:
        return Affine.of({d: c // k for d, c in a.terms}, a.const // k), Affine((), 0)
    if any(d not in ranges for d in a.dims):
        return None
    lo, _ = a.interval(ranges)
    if lo < 0:
        return None
    q, r = _split_by(a, k)
    rlo, rhi = r.interval(ranges)
    if rlo >= 0 and rhi < k:
        return q, r
    return None


def _fold(e: Expr, kids: tuple[Expr, ...], ranges: dict[int, Interval],
          operands: tuple[TensorType, ...]) -> Expr:
    node = with_children(e, kids)
    if isinstance(node, Load):
        return _fold_load(node, operands)
    if not isinstance(node, Apply):
        return node
    if node.dtype == INDEX and node.op in ("divide", "remainder"):
        x, k = node.args
        a = affine_of(x)
        if a is not None and isinstance(k, Const):
            qr = _divmod_affine(a, int(k.value), ranges)
            if qr is not None:
                return as_expr(qr[0] if node.op == "divide" else qr[1])
        return node
    if node.dtype == INDEX and node.op in ("add", "subtract", "multiply"):
        a = affine_of(node)
        return node if a is None else as_expr(a)
    if node.op in ("compare.EQ", "compare.NE") and _divisible_test(node) is not None:
        return Const(_divisible_test(node) == (node.op == "compare.EQ"), I1)
    if node.op.startswith("compare.") and expr_dtype(node.args[0], operands) == INDEX:
        x, y = (interval_of(a, ranges, operands) for a in node.args)
        decided = _decide(node.op.split(".", 1)[1], x, y)
        return node if decided is None else Const(decided, I1)
    if node.dtype == I1 and node.op in ("and", "or"):
        return _fold_logic(node)
    return node


def _divisible_test(node: Apply) -> bool | None:
    """For `(a % k) == 0` where every coefficient of a is a multiple of k: whether a is a
    multiple of k (its constant decides, whatever the sign of a)."""
    rem, zero = node.args
    if not (isinstance(zero, Const) and zero.value == 0 and isinstance(rem, Apply)
            and rem.op == "remainder" and rem.dtype == INDEX and isinstance(rem.args[1], Const)):
        return None
    a, k = affine_of(rem.args[0]), int(rem.args[1].value)
    if a is None or k <= 0 or any(c % k for _, c in a.terms):
        return None
    return a.const % k == 0


def _decide(direction: str, x: Interval | None, y: Interval | None) -> bool | None:
    """The comparison's value when the intervals decide it, else None."""
    if x is None or y is None:
        return None
    (a, b), (c, d) = x, y
    table = {
        "EQ": (a == b == c == d, b < c or d < a),
        "NE": (b < c or d < a, a == b == c == d),
        "LT": (b < c, a >= d),
        "LE": (b <= c, a > d),
        "GT": (a > d, b <= c),
        "GE": (a >= d, b < c),
    }
    if direction not in table:
        return None
    true, false = table[direction]
    return True if true else False if false else None


def _fold_logic(node: Apply) -> Expr:
    x, y = node.args
    absorbing, neutral = (False, True) if node.op == "and" else (True, False)
    for a, b in ((x, y), (y, x)):
        if isinstance(a, Const):
            if bool(a.value) == absorbing:
                return Const(absorbing, I1)
            if bool(a.value) == neutral:
                return b
    return node


def _fold_load(ld: Load, operands: tuple[TensorType, ...]) -> Expr:
    """A padded load whose `valid` is a constant: false is the pad value (converted to
    the operand's type, as the load would), true drops the `valid` test."""
    if ld.valid is None or not isinstance(ld.valid, Const):
        return ld
    if bool(ld.valid.value):
        return replace(ld, valid=None)
    assert ld.pad is not None
    dt = operands[ld.operand].dtype
    return ld.pad if expr_dtype(ld.pad, operands) == dt else Apply("convert", (ld.pad,), dt)


def simplify(root: Expr, ranges: dict[int, Interval],
             operands: tuple[TensorType, ...]) -> Expr:
    """`root` with index arithmetic folded as `ranges` allow (see the module doc)."""
    return rewrite(root, lambda e, kids: _fold(e, kids, ranges, operands))
