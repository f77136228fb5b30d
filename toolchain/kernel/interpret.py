"""Evaluates a Kernel with numpy, vectorized over its whole iteration domain.

This is the kernel form's executable meaning on the host: lowering and fusion are
tested by comparing it with the graph reference, independently of code generation.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from toolchain.kernel.form import Acc, Apply, Const, Expr, Index, Kernel, Load
from toolchain.kernel.paired import from_paired, from_paired_rows
from toolchain.kernel.sub_byte import unpack_bits
from toolchain.reference import kernels as ref

_REDUCE = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
           "minimum": np.minimum, "and": np.logical_and, "or": np.logical_or}
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
            "LE": np.less_equal, "LT": np.less}


def _apply(op: str, args: list[np.ndarray], dt: np.dtype) -> np.ndarray:
    if op.startswith("compare."):
        if op.endswith(".total") and np.asarray(args[0]).dtype.kind == "f":
            args = [ref.total_order_key(np.asarray(a)) for a in args]
        return _COMPARE[op.split(".")[1]](*args)
    if op == "select":
        return np.where(args[0], args[1], args[2])
    if op == "clamp":
        return np.minimum(np.maximum(args[1], args[0]), args[2])
    if op == "convert":
        x = args[0]
        if x.dtype.kind == "f" and dt.kind in "iu":
            info = np.iinfo(dt)
            x = np.nan_to_num(np.clip(np.trunc(x.astype(np.float64)), info.min, info.max),
                              nan=0)
        return (x != 0) if dt.kind == "b" else x.astype(dt)
    if op == "bitcast_convert":  # same width only (kernel/lower.py)
        return np.ascontiguousarray(args[0]).view(dt)
    kernel = ref.KERNELS[op]
    arrays = [np.asarray(a) for a in args]
    if op in ("divide", "remainder") and arrays[0].dtype.kind in "iu":
        a, b = np.broadcast_arrays(*arrays)
        return ref._int_div(a, b) if op == "divide" else ref._int_rem(a, b)

    # The reference's elementwise kernels read only the output dtype from their node.
    node = SimpleNamespace(outputs=[SimpleNamespace(type=SimpleNamespace(
        dtype=SimpleNamespace(np_dtype=dt)))], attrs={})
    with np.errstate(all="ignore"):
        return kernel(node, *np.broadcast_arrays(*arrays))


def _eval(e: Expr, k: Kernel, grids: list[np.ndarray], ops: list[np.ndarray],
          memo: dict[int, np.ndarray] | None = None, acc: np.ndarray | None = None
          ) -> np.ndarray:
    """The value of `e` over the domain (`acc`: the folded values an epilogue reads as
    Acc). Fused bodies share subexpressions (an index expression read at every Index(d)
    of the producer), so each distinct node is evaluated once: without `memo` a chain of
    reshapes costs exponential time."""
    if memo is None:
        memo = {}
    hit = memo.get(id(e))
    if hit is None:
        hit = memo[id(e)] = _eval_node(e, k, grids, ops, memo, acc)
    return hit


def _eval_node(e: Expr, k: Kernel, grids: list[np.ndarray], ops: list[np.ndarray],
               memo: dict[int, np.ndarray], acc: np.ndarray | None) -> np.ndarray:
    if isinstance(e, Acc):
        assert acc is not None, "Acc outside an epilogue"
        return acc
    if isinstance(e, Index):
        return grids[e.dim]
    if isinstance(e, Const):
        return np.asarray(e.value, dtype=np.int64 if e.dtype.name == "i32" else
                          e.dtype.np_dtype)
    if isinstance(e, Load):
        arr = ops[e.operand]
        idx = [np.asarray(_eval(i, k, grids, ops, memo, acc), dtype=np.int64) for i in e.index]
        if not idx:
            value = arr[()]
            return np.asarray(value)
        idx = list(np.broadcast_arrays(*idx))
        if e.pad is None:
            return arr[tuple(idx)]
        ok = np.ones(idx[0].shape, dtype=bool)
        for d, i in enumerate(idx):
            ok &= (i >= 0) & (i < arr.shape[d])
        if e.valid is not None:
            ok &= np.asarray(_eval(e.valid, k, grids, ops, memo, acc), dtype=bool)
        clipped = tuple(np.clip(i, 0, arr.shape[d] - 1) for d, i in enumerate(idx))
        return np.where(ok, arr[clipped], _eval(e.pad, k, grids, ops, memo, acc))
    assert isinstance(e, Apply)
    args = [_eval(a, k, grids, ops, memo, acc) for a in e.args]
    dt = np.dtype(np.int64) if e.dtype.name == "i32" and all(
        np.asarray(a).dtype == np.int64 for a in args) else e.dtype.np_dtype
    return np.asarray(_apply(e.op, args, dt))


def run_kernel(k: Kernel, operands: list[np.ndarray]) -> np.ndarray:
    """The kernel's result for the given operand arrays (those in `k.paired` as they are
    stored: in the paired layout; those in `k.bit_packed` as their packed bytes)."""
    if k.bit_packed:
        operands = [unpack_bits(a, k.operands[j].dtype, k.operands[j].shape)
                    if j in k.bit_packed else a for j, a in enumerate(operands)]
    if k.paired:
        operands = [(from_paired_rows(a) if j in k.interleaved else from_paired(a))
                    .astype(np.int16) if j in k.paired else a
                    for j, a in enumerate(operands)]
    grids = list(np.indices(k.domain, sparse=True)) if k.domain else []
    value = np.broadcast_to(_eval(k.body, k, grids, operands), k.domain)
    out_dt = k.result.dtype.np_dtype
    if k.combine is None:
        return np.asarray(value, dtype=out_dt).reshape(k.result.shape).copy()
    ufunc = _REDUCE[k.combine]
    acc_dt = k.acc_dtype.np_dtype
    axes = tuple(range(k.n_parallel, len(k.domain)))
    wide = value.astype(np.float64) if acc_dt.kind == "f" and k.combine in ("add", "multiply") \
        else value
    r = ufunc.reduce(wide, axis=axes) if axes else wide
    # The init may depend on the output's index (an int8 sum that starts from its bias).
    par = list(np.indices(k.domain[:k.n_parallel], sparse=True)) if k.n_parallel else []
    zeros = [np.zeros(1, dtype=np.int64)] * (len(k.domain) - k.n_parallel)
    init = _eval(k.init, k, par + zeros, operands)
    folded = np.asarray(ufunc(init, r), dtype=acc_dt)
    if k.epilogue is None:
        return np.asarray(folded, dtype=out_dt).reshape(k.result.shape)
    stored = np.broadcast_to(_eval(k.epilogue, k, par, operands, acc=folded),
                             k.domain[:k.n_parallel])
    return np.asarray(stored, dtype=out_dt).reshape(k.result.shape).copy()
