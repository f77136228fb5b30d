"""Operators of the user's own: a C kernel compiled into the firmware and a Python
reference the check compares it with (docs/custom-ops.md).

A `CustomOp` says where both live; the frontends turn an operator the user registered
(a TFLite `CUSTOM:<code>`, an ONNX node of a custom domain) into one graph
`custom_call` node whose attributes hold the CustomOp, the operator's options bytes,
its ordinal (the firmware's exit status names a failing kernel by it) and the result
types the model declares. The element-type codes of the C ABI
(runtime_c/include/mrt_custom_op.h) are this file's table: the header and the code
generator read the same numbers (a test compares them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from toolchain.types import TensorType

# MRT_CUSTOM_<NAME> in mrt_custom_op.h: graph element type -> (code, C name).
TYPE_CODES: dict[str, tuple[int, str]] = {
    "f32": (1, "F32"), "i8": (2, "I8"), "ui8": (3, "U8"), "i16": (4, "I16"),
    "i32": (5, "I32"), "f16": (6, "F16"), "ui16": (7, "U16"), "ui32": (8, "U32"),
    "i64": (9, "I64"), "f64": (10, "F64"), "i1": (11, "BOOL"),
}
# The firmware's exit status when the kernel of custom operator k (its ordinal) returns
# non-zero: MRT_HARNESS_EXIT_CUSTOM_BASE + k (runtime_c/harness/harness.h).
EXIT_CUSTOM_BASE = 64
MAX_CUSTOM_OPS = 64  # ordinals 0..63: exit statuses 64..127

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CustomOpError(Exception):
    """A --custom-op that cannot be used: a missing file, a function not defined, a
    reference that raised or returned the wrong thing. One line naming the op."""


@dataclass(frozen=True)
class CustomOp:
    """One registered operator: its code (TFLite's custom code, or an ONNX op type), the
    C source and the kernel function in it, the Python file and the reference function."""

    code: str
    source: Path
    c_function: str
    reference: Path
    py_function: str

    def __str__(self) -> str:  # how the graph printer shows the attribute
        return (f"{self.code}({self.source.name}:{self.c_function}, "
                f"{self.reference.name}:{self.py_function})")


def default_function(code: str) -> str:
    """The function name a code gets when --custom-op names none: the code in snake case,
    every character a C identifier cannot hold made `_` (`SoftsignGain` ->
    `softsign_gain`, `CLIP_SCALE` -> `clip_scale`)."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", code)
    name = re.sub(r"[^A-Za-z0-9_]", "_", name).lower()
    return name if name and not name[0].isdigit() else f"op_{name}"


def _file_and_function(text: str, suffix: str, code: str, what: str) -> tuple[Path, str]:
    path, sep, fn = text.rpartition(":")
    if not sep or not path or not fn.isidentifier():
        path, fn = text, default_function(code)
    if not path.endswith(suffix):
        raise CustomOpError(f"--custom-op {code}: the {what} must be a {suffix} file, got "
                            f"{path!r}")
    if not _IDENT.fullmatch(fn):
        raise CustomOpError(f"--custom-op {code}: {fn!r} is not a function name")
    if not Path(path).is_file():
        raise CustomOpError(f"--custom-op {code}: {path}: no such file")
    return Path(path), fn


def parse_custom_op(text: str) -> CustomOp:
    """`CODE=kernel.c[:c_function],reference.py[:py_function]` (the --custom-op syntax)
    as a CustomOp; each function name defaults to default_function(CODE)."""
    code, sep, rest = text.partition("=")
    parts = rest.split(",")
    if not sep or not code or len(parts) != 2:
        raise CustomOpError(f"--custom-op {text}: expected "
                            "CODE=KERNEL.c[:C_FUNCTION],REFERENCE.py[:PY_FUNCTION]")
    source, c_function = _file_and_function(parts[0], ".c", code, "kernel")
    reference, py_function = _file_and_function(parts[1], ".py", code, "reference")
    return CustomOp(code, source.resolve(), c_function, reference.resolve(), py_function)


def custom_ops_by_code(texts: list[str]) -> dict[str, CustomOp]:
    """The --custom-op options by code; CustomOpError for a bad one or a code twice."""
    ops: dict[str, CustomOp] = {}
    for text in texts:
        op = parse_custom_op(text)
        if op.code in ops:
            raise CustomOpError(f"--custom-op gives operator {op.code} twice")
        ops[op.code] = op
    return ops


def type_code(t: TensorType, where: str) -> int:
    """The ABI's element-type code of `t`; CustomOpError for a type the ABI lacks."""
    row = TYPE_CODES.get(t.dtype.name)
    if row is None:
        raise CustomOpError(f"{where}: element type {t.dtype} has no code in the custom-op "
                            "ABI (mrt_custom_op.h)")
    return row[0]


def quant_of(t: TensorType) -> tuple[float, int] | None:
    """(scale, zero point) of a per-tensor quantized type, None for an unquantized one."""
    if t.quant is None:
        return None
    return float(t.quant.scales[0]), int(t.quant.zero_points[0])


__all__ = ["CustomOp", "CustomOpError", "EXIT_CUSTOM_BASE", "MAX_CUSTOM_OPS", "TYPE_CODES",
           "custom_ops_by_code", "default_function", "parse_custom_op", "quant_of",
           "type_code"]
