"""Shapes of kernels the schedule rules (and the code that follows them) recognize."""

from __future__ import annotations

from toolchain.kernel.form import Apply, Kernel, Load

__all__ = ["dot_operands"]


def dot_operands(k: Kernel) -> tuple[Load, Load] | None:
    """The two int8 loads of a kernel that sums `convert(x) * convert(w)` into i32 (an
    int8 convolution or dense layer), else None. An operand in the paired layout
    (kernel/paired.py: int8 values stored as i16) counts as int8."""
    body = k.body
    if k.combine != "add" or k.acc_dtype.name != "i32" or not isinstance(body, Apply) \
            or body.op != "multiply" or body.dtype.name != "i32":
        return None
    loads = []
    for a in body.args:
        if not (isinstance(a, Apply) and a.op == "convert" and isinstance(a.args[0], Load)):
            return None
        ld = a.args[0]
        name = k.operands[ld.operand].dtype.name
        if not (name == "i8" or (name == "i16" and ld.operand in k.paired)):
            return None
        loads.append(ld)
    return loads[0], loads[1]
