"""Shapes of kernels the schedule rules (and the code that follows them) recognize."""

from __future__ import annotations

from toolchain.kernel.form import Apply, Kernel, Load

__all__ = ["dot_operands", "int16_by_int8", "int16_dot"]


# The sums a dot product's packed steps accumulate: int32 (SMLAD); int64 for int16
# operands only (SMLALD: a 16x8 layer whose sums can leave int32, quant/build16.py).
_ACC = {"i32": ("i8", "i16"), "i64": ("i16",)}


def _dot_loads(k: Kernel) -> list[Load] | None:
    """The two loads of a kernel that sums `convert(x) * convert(w)` into i32 or i64,
    else None."""
    body = k.body
    acc = k.acc_dtype.name
    if k.combine != "add" or acc not in _ACC or not isinstance(body, Apply) \
            or body.op != "multiply" or body.dtype.name != acc:
        return None
    loads = []
    for a in body.args:
        if not (isinstance(a, Apply) and a.op == "convert" and isinstance(a.args[0], Load)):
            return None
        loads.append(a.args[0])
    return loads


def _kind(k: Kernel, ld: Load) -> str:
    """'i8' for an int8 operand (or one in the paired layout, kernel/paired.py: int8
    values stored as i16), 'i16' for an int16 one in its own layout, else ''."""
    name = k.operands[ld.operand].dtype.name
    if name == "i8" or (name == "i16" and ld.operand in k.paired):
        return "i8"
    return "i16" if name == "i16" else ""


def dot_operands(k: Kernel) -> tuple[Load, Load] | None:
    """The two loads of a kernel that sums `convert(x) * convert(w)` into i32 with both
    operands int8 (an int8 convolution or dense layer; an operand in the paired layout
    counts as int8), or into i32 or i64 with both int16 in their own layout (a 16x8 one
    whose int8 weights were stored widened: schedule/widen16.py), else None. A mix of
    the two is None: the packed steps pair both operands' elements alike."""
    loads = _dot_loads(k)
    if loads is None:
        return None
    kinds = {_kind(k, ld) for ld in loads}
    if len(kinds) != 1 or "" in kinds or kinds.pop() not in _ACC[k.acc_dtype.name]:
        return None
    return loads[0], loads[1]


def int16_dot(k: Kernel) -> bool:
    """Whether `k` is a dot product of two int16 operands (dot_operands), whose packed
    steps read 16-bit pairs as stored (codegen/dot.py `dsp16`)."""
    ops = dot_operands(k)
    return ops is not None and _kind(k, ops[0]) == "i16"


def int16_by_int8(k: Kernel) -> tuple[Load, Load] | None:
    """(int16 load, int8 load) of a kernel summing `convert(x) * convert(w)` into i32
    or i64 with x int16 and w int8 in its own layout (a 16x8 convolution or dense layer before
    its weights are widened), else None."""
    loads = _dot_loads(k)
    if loads is None:
        return None
    names = [k.operands[ld.operand].dtype.name if ld.operand not in k.paired else ""
             for ld in loads]
    if sorted(names) != ["i16", "i8"]:
        return None
    return (loads[0], loads[1]) if names[0] == "i16" else (loads[1], loads[0])
