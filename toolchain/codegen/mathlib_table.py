"""The table of math functions (name -> argument count, whether generic over f32 / f64,
body builder) and the emission of a function from it.

Each family file registers its functions with `_define` when it is imported; mathlib.py
imports every family (which fills the table) and dispatches calls through it. A
function that calls another one goes through `math_function` by name, so that no family
needs to import the file of the function it calls, and no family imports the
dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from toolchain.codegen.mathlib_ir import F32, PREFIX, SECTION_PREFIX, _suffix

# name -> (argument count, generic over f32/f64?, body builder)
_Body = Callable[..., ir.Value]
_DEFS: dict[str, tuple[int, bool, _Body]] = {}


def _define(name: str, nargs: int = 1, generic: bool = False) -> Callable[[_Body], _Body]:
    def register(fn: _Body) -> _Body:
        _DEFS[name] = (nargs, generic, fn)
        return fn

    return register


MATH_FUNCTIONS = _DEFS  # exported for tests and documentation


def math_function(module: ir.Module, name: str, t: ir.Type = F32) -> ir.Function:
    """The module's definition of math function `name` for float type t, emitted on demand."""
    nargs, generic, body = _DEFS[name]
    if not generic:
        t = F32
    fname = f"{PREFIX}{name}_{_suffix(t)}"
    existing = module.globals.get(fname)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(t, [t] * nargs), fname)
    fn.linkage = "internal"
    fn.section = SECTION_PREFIX + fname
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(body(b, *fn.args))
    return fn
