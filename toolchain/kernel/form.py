"""The generic kernel form (in the spirit of `linalg.generic`).

A Kernel is a loop nest over `domain`. The first `n_parallel` loop dimensions index
the result; the rest are reduced. Each iteration evaluates `body`, a scalar
expression tree whose leaves are loop indices, constants and loads from the kernel's
operands (each load's index is itself an expression, so broadcasts, transposes,
strided windows, padding and gathers are all just index expressions). Without
reductions the body's value is stored; with them, values are folded with `combine`
starting from `init`, and the folded value (of type `accumulator`) is stored, or, when
the kernel has an `epilogue`, that expression is stored: it sees the folded value as
the leaf `Acc` and may load other operands at the parallel indices (a bias add and a
requantization fused into a convolution, so its wide accumulator never reaches RAM).

Buffers a kernel is called with, in order: one per operand, then the result.
Tensors are dense, row-major, with the element type of their TensorType.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from toolchain.types import DType, TensorType, dtype

INDEX = dtype("i32")  # loop and index arithmetic: every tensor here has < 2**31 elements


@dataclass(frozen=True)
class Index:
    """The current value of loop dimension `dim` (an INDEX)."""

    dim: int


@dataclass(frozen=True)
class Const:
    value: float | int | bool
    dtype: DType


@dataclass(frozen=True)
class Load:
    """Element `index` of operand `operand`.

    With `pad` set, the load is bounds-checked: when any index is outside the
    operand's shape, or `valid` (an i1 expression) is false, the value is `pad`.
    Without `pad`, indices are trusted to be in bounds.
    """

    operand: int
    index: tuple[Expr, ...]
    pad: Expr | None = None
    valid: Expr | None = None
    # [lo, hi]: every value the operand holds where this load reads is in it (a build-
    # time fact about a constant, which the code generator may pass on to LLVM).
    bounds: tuple[int, int] | None = None


@dataclass(frozen=True)
class Acc:
    """In a reduction's epilogue: the folded value, of element type `dtype` (the kernel's
    accumulator type)."""

    dtype: DType


@dataclass(frozen=True)
class Apply:
    """`op(*args)` with result element type `dtype`.

    `op` is a graph elementwise op name (`add`, `exponential`, `select`, `clamp`,
    `convert`, ...) or `compare.<DIR>` (e.g. `compare.LT`; `compare.LT.total` orders
    floats by IEEE totalOrder, StableHLO's TOTALORDER), with the same semantics as
    the reference executor. Index arithmetic uses the same ops on INDEX values.
    """

    op: str
    args: tuple[Expr, ...]
    dtype: DType


Expr = Index | Const | Load | Apply | Acc


@dataclass(frozen=True)
class Kernel:
    name: str
    domain: tuple[int, ...]
    n_parallel: int
    operands: tuple[TensorType, ...]
    result: TensorType
    body: Expr
    combine: str | None = None  # add / multiply / maximum / minimum / and / or
    init: Expr | None = None
    epilogue: Expr | None = None  # reductions only: what is stored, from Acc
    accumulator: DType | None = None  # the folded value's type; None: the result's
    # Operands stored in the paired layout (kernel/paired.py): int8 values kept as i16,
    # each aligned group of 4 elements of the row-major array in the order 0, 2, 1, 3.
    # Loads still index the logical shape; only where the values sit differs.
    paired: tuple[int, ...] = ()
    # Of those, the ones whose rows are interleaved 4 by 4 as well (kernel/paired.py
    # `to_paired_rows`): read only by the 2x4 microkernel, whole groups of 4 rows.
    interleaved: tuple[int, ...] = ()
    # Sub-byte integer operands (i2, i4, ui2, ui4) stored bit-packed (kernel/sub_byte.py):
    # 8 // bits elements a byte, row-major, the first in the low bits. Loads index the
    # logical shape; the code loads the byte and shifts the element down.
    bit_packed: tuple[int, ...] = ()
    # The operand holding the per-channel records of the depthwise row-pair microkernel
    # (schedule/row_pair_records.py), read by that kernel only; -1: none.
    records: int = -1
    # Those records' per-channel requantization shifts, where a per-layer assembly kernel
    # takes them as immediates (codegen/depthwise_asm.py); (): not known to the code.
    record_shifts: tuple[int, ...] = ()

    @property
    def is_reduction(self) -> bool:
        return self.combine is not None

    @property
    def acc_dtype(self) -> DType:
        """The type the reduction folds in: f16 / bf16 results fold in f32."""
        dt = self.accumulator or self.result.dtype
        return dtype("f32") if dt.is_float and dt.bits < 32 else dt

    @property
    def roots(self) -> tuple[Expr, ...]:
        """body, then init and epilogue where present: every expression of the kernel."""
        return tuple(e for e in (self.body, self.init, self.epilogue) if e is not None)


def expr_dtype(e: Expr, operands: tuple[TensorType, ...]) -> DType:
    """The element type an expression evaluates to."""
    if isinstance(e, Index):
        return INDEX
    if isinstance(e, Load):
        return operands[e.operand].dtype
    return e.dtype  # Const, Apply, Acc


# --------------------------------------------------------------------------- walking bodies

# A body is an expression DAG: fusion substitutes one index expression wherever the
# producer reads its Index(d), so subtrees are shared, and a walk that revisits them
# costs exponential time on chains of reshapes. The helpers below visit each distinct
# node once and never recurse, so no walk here depends on the model's size.
#
# The code generator and the interpreter do recurse over bodies (a few Python frames
# per level), so the form also keeps bodies shallow: fusion does not inline a producer
# when the result would be deeper than MAX_DEPTH, and lowering builds balanced trees.
# The deepest fused body of the shared models is 6 levels; 64 leaves 4x headroom in
# Python's default recursion limit of 1000 for codegen's 4 frames per level.
MAX_DEPTH = 64

# A dispatch binds each operand and its result; a module command holds at most 16
# bindings (MAX_BINDINGS in module/format.py, MRT_MAX_BINDINGS in runtime_c's minirt.h;
# tests/kernel/test_form.py checks they agree). Fusion keeps kernels within this, and
# schedule splits a concatenate of more tensors.
MAX_OPERANDS = 15


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct subexpressions of `e`: a load's indices, then its pad and valid."""
    if isinstance(e, Load):
        return e.index + tuple(x for x in (e.pad, e.valid) if x is not None)
    if isinstance(e, Apply):
        return e.args
    return ()


def with_children(e: Expr, kids: tuple[Expr, ...], operand: int | None = None) -> Expr:
    """`e` rebuilt over new children (in `children` order); a load may also be
    renumbered to `operand`."""
    if isinstance(e, Load):
        n = len(e.index)
        rest = iter(kids[n:])
        pad = None if e.pad is None else next(rest)
        valid = None if e.valid is None else next(rest)
        return replace(e, operand=e.operand if operand is None else operand, index=kids[:n],
                       pad=pad, valid=valid)
    if isinstance(e, Apply):
        return Apply(e.op, kids, e.dtype)
    return e


def postorder(root: Expr) -> list[Expr]:
    """Every distinct node of `root` once, children before their parents."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        e, expanded = stack.pop()
        if expanded:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        stack.extend((k, False) for k in children(e) if id(k) not in seen)
    return order


def rewrite(root: Expr, fn: Callable[[Expr, tuple[Expr, ...]], Expr]) -> Expr:
    """Rebuilds `root` bottom-up: `fn(node, new_children)` gives each distinct node's
    replacement, so shared subexpressions stay shared."""
    done: dict[int, Expr] = {}
    for e in postorder(root):
        done[id(e)] = fn(e, tuple(done[id(k)] for k in children(e)))
    return done[id(root)]


def rewrite_kernel(k: Kernel, fn: Callable[[Expr, tuple[Expr, ...]], Expr]) -> Kernel:
    """`k` with `rewrite(root, fn)` applied to each of its expressions (body, init,
    epilogue)."""
    return replace(k, body=rewrite(k.body, fn),
                   init=None if k.init is None else rewrite(k.init, fn),
                   epilogue=None if k.epilogue is None else rewrite(k.epilogue, fn))


def depth(*roots: Expr | None) -> int:
    """Levels of the deepest path from any of `roots` to a leaf (a leaf is 1; None is 0)."""
    best = 0
    levels: dict[int, int] = {}
    for root in roots:
        if root is None:
            continue
        for e in postorder(root):
            levels[id(e)] = 1 + max((levels[id(k)] for k in children(e)), default=0)
        best = max(best, levels[id(root)])
    return best
