"""The C name of a model library: `<name>_run`, `<NAME>_IN0_SHAPE`, libminirt_<name>.a.

A default comes from the model's file name, sanitized to a C identifier; a name the
user gives must already be one, and one that cannot clash with C or with the runtime.
"""

from __future__ import annotations

import re
from pathlib import Path

from toolchain.loader import UsageError

__all__ = ["MAX_NAME", "check_name", "default_name"]

# C11 guarantees 31 significant characters in external identifiers; the longest one we
# derive is <name>_init, so the name keeps to 26.
MAX_NAME = 26

# C11 keywords and the identifiers the generated code or the C library already use.
_RESERVED = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic",
    "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "main", "memcpy", "memmove", "memset", "memcmp", "minirt", "mrt",
))

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_name(name: str, what: str = "--name", hint: str = "pick another") -> str:
    """`name` if it is a usable library name; UsageError saying what is wrong otherwise
    (`what` names where the name came from, `hint` what to do)."""
    if not _IDENTIFIER.match(name):
        bad = next((c for c in name if not (c.isascii() and (c.isalnum() or c == "_"))), None)
        why = (f"it contains {bad!r}" if bad is not None else
               "it is empty" if not name else "it starts with a digit")
        raise UsageError(f"{what} {name!r} is not a C identifier ({why}): use letters, "
                         f"digits and '_', not starting with a digit; {hint}")
    if name in _RESERVED or name.lower().startswith("mrt_"):
        raise UsageError(f"{what} {name!r} would clash with C or the minirt runtime "
                         f"(a C keyword, a libc or mrt_ name); {hint}")
    if name.startswith("__") or re.match(r"_[A-Z]", name):
        raise UsageError(f"{what} {name!r} is reserved to the C implementation (it starts "
                         f"with '__' or '_' and a capital); {hint}")
    if len(name) > MAX_NAME:
        raise UsageError(f"{what} {name!r} is {len(name)} characters long; at most "
                         f"{MAX_NAME} keep every generated symbol within C's 31 significant "
                         f"characters; {hint}")
    return name


def default_name(model: str | Path) -> str:
    """The library name for a model file: its stem with every character that cannot be
    in a C identifier replaced by '_' ('kws-ref.model.tflite' -> 'kws_ref_model'), with
    'm_' in front of a leading digit, lower-cased, and checked like a given name."""
    stem = Path(model).stem
    name = re.sub(r"[^0-9A-Za-z_]", "_", stem).lower().strip("_") or "model"
    name = re.sub(r"_+", "_", name)
    if name[0].isdigit():
        name = f"m_{name}"
    return check_name(name[:MAX_NAME].rstrip("_"),
                      what=f"the library name derived from {Path(model).name},",
                      hint="give one with --name")
