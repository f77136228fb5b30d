"""LLVM code generation: generic kernels -> IR functions -> target objects.

- `emit_kernel(module, kernel)`: one `void NAME(ptr bindings)` function per kernel (emit);
  the other dispatch kinds' emitters (branch, reduction, scatter, ...) are found in the
  table of codegen/kinds.py, which importing their files here fills.
- mathlib: our own polynomial math functions in IR, never libm calls.
- `TargetInfo`: target descriptor -> llvmlite TargetMachine, pass pipeline, objects.
- `emit_image_object(...)`: the per-image object with dispatch table and image symbols.
"""

# The other kinds' emitters register themselves in codegen/kinds.py when imported.
from toolchain.codegen import (  # noqa: F401
    branch,
    custom_call,
    reduction,
    scatter,
    select_and_scatter,
    sort,
)
from toolchain.codegen.emit import EmitError, emit_kernel
from toolchain.codegen.image import build_image_module, emit_image_object
from toolchain.codegen.mathlib import TargetFeatures
from toolchain.codegen.target_machine import TargetInfo, emit_object

__all__ = [
    "EmitError",
    "TargetFeatures",
    "TargetInfo",
    "build_image_module",
    "emit_image_object",
    "emit_kernel",
    "emit_object",
]
