"""The table of code generators for the dispatch kinds other than the generic Kernel.

Each kind has its own small emitter file (codegen/branch.py, reduction.py, sort.py, ...)
that registers its function here under the kind's type; emit.emit_kernel hands any
non-Kernel over to `emit_other_kind`, which looks it up. The table sits below both
sides: the kinds' emitters run their scalar work as generic kernels (codegen/slots.py
calls emit.emit_kernel), so emit may not import them. The package's __init__ imports
every kind's file, which fills the table before any code is generated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from toolchain.codegen.errors import EmitError

KindEmitter = Callable[[ir.Module, Any], ir.Function]

_EMITTERS: dict[type, KindEmitter] = {}


def register(kind: type) -> Callable[[KindEmitter], KindEmitter]:
    """Decorator: the function generates the code of dispatches of type `kind`."""

    def add(emitter: KindEmitter) -> KindEmitter:
        _EMITTERS[kind] = emitter
        return emitter

    return add


def emit_other_kind(module: ir.Module, kernel: Any) -> ir.Function:
    """Adds the function of a branch / multi-result / in-place dispatch to `module`."""
    emitter = _EMITTERS.get(type(kernel))
    if emitter is None:
        raise EmitError(f"no code generator for {type(kernel).__name__} {kernel.name!r}")
    return emitter(module, kernel)
