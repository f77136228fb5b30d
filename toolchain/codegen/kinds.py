"""Code generation for the dispatch kinds other than the generic Kernel: each kind has
its own small emitter file, found here by the kind's type (emit.emit_kernel hands any
non-Kernel over)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir


def _emitters() -> dict[type, Callable[[ir.Module, Any], ir.Function]]:
    from toolchain.codegen.branch import emit_branch
    from toolchain.codegen.reduction import emit_reduction
    from toolchain.codegen.scatter import emit_scatter
    from toolchain.codegen.select_and_scatter import emit_select_and_scatter
    from toolchain.codegen.sort import emit_sort
    from toolchain.kernel.branch import Branch
    from toolchain.kernel.reduction import Reduction
    from toolchain.kernel.scatter import Scatter
    from toolchain.kernel.select_and_scatter import SelectAndScatter
    from toolchain.kernel.sort import Sort

    return {Branch: emit_branch, Reduction: emit_reduction, Sort: emit_sort,
            Scatter: emit_scatter, SelectAndScatter: emit_select_and_scatter}


def emit_other_kind(module: ir.Module, kernel: Any) -> ir.Function:
    """Adds the function of a branch / multi-result / in-place dispatch to `module`."""
    emitter = _emitters().get(type(kernel))
    if emitter is None:
        from toolchain.codegen.emit import EmitError

        raise EmitError(f"no code generator for {type(kernel).__name__} {kernel.name!r}")
    return emitter(module, kernel)
