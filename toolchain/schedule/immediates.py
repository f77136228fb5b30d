"""Constants read as immediates: a dispatch's scalar and splat constant operands become
constants in its code (schedule/program.py applies it to every dispatch before the
requantization is folded)."""

from __future__ import annotations

import numpy as np

from toolchain.kernel.form import (
    Apply,
    Const,
    Expr,
    Kernel,
    Load,
    postorder,
    rewrite_kernel,
    with_children,
)
from toolchain.kernel.requant import RDBP, SRDHM
from toolchain.schedule.fuse import Dispatch, drop_unused_operands

__all__ = ["scalars_as_immediates"]


def scalars_as_immediates(d: Dispatch, constants: dict[int, np.ndarray]) -> Dispatch:
    """Loads of scalar constants (zero points, clamp bounds, a splat zero) become
    constants in the code: an immediate instead of a binding and a load per element.
    A one-element constant of any shape counts: constant folding leaves broadcasts of a
    scalar to [1] (TFLite's int8 softmax divides an i64 by such a 2: loaded, the divisor
    is unknown and the division a __divdi3 call, 648 B of helper on Cortex-M). So does
    a splat (every element the same) read without a pad: folding broadcasts a small
    layer's zero point to a table of its outputs ([1, 10] for a dense layer to 10), which
    kernel/requant.py could not fold into its constant (an add after the shift and a
    load per output: dense 64 -> 10 on cortex-m4 ~2 instructions an output)."""
    splats = _splat_candidates(d.kernel)
    scalar = {i: constants[id(t)] for i, t in enumerate(d.operands)
              if id(t) in constants and (t.type.num_elements == 1 or (
                  (splats is None or i in splats) and _splat(constants[id(t)])))}
    if not scalar:
        return d

    def fn(e: Expr, kids: tuple[Expr, ...]) -> Expr:
        if isinstance(e, Load) and e.operand in scalar and (
                d.operands[e.operand].type.num_elements == 1 or e.pad is None):
            return Const(np.asarray(scalar[e.operand]).flat[0].item(),
                         d.operands[e.operand].type.dtype)
        return with_children(e, kids)

    return drop_unused_operands(Dispatch(rewrite_kernel(d.kernel, fn), d.operands, d.output))


def _splat_candidates(k: Kernel) -> set[int] | None:
    """The operands whose splat tables may become immediates: any (None) in an
    element-wise kernel; in a reduction only the requantization's (the multiplier and
    exponent of TFLite's two rounding steps and the zero point added after them), which
    kernel/requant.py then folds as per-layer constants. A reduction's other splats stay
    loads: as immediates they changed LLVM's registers in the reduction loop (riscv32:
    dtln_noise_suppression's dense layers, whose zero bias became a constant, ~12 %
    slower)."""
    if not k.is_reduction:
        return None
    out: set[int] = set()
    for root in (k.body, k.init, k.epilogue):
        if root is None:
            continue
        for e in postorder(root):
            if isinstance(e, Apply) and e.op in (SRDHM, RDBP):
                out.update(a.operand for a in e.args if isinstance(a, Load))
            if isinstance(e, Apply) and e.op == "add" and len(e.args) == 2:
                a, b = e.args
                for shift, zp in ((a, b), (b, a)):
                    if isinstance(shift, Apply) and shift.op == RDBP and isinstance(zp, Load):
                        out.add(zp.operand)
    return out


def _splat(values: np.ndarray) -> bool:
    """Whether a constant's elements are all one integer value."""
    arr = np.asarray(values)
    return arr.size > 1 and arr.dtype.kind in "iu" and bool(np.all(arr == arr.flat[0]))
