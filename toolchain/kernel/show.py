"""Kernels as text: one line per kernel header, expressions in a compact prefix form.

`format_expr(Load(0, (Index(1), Const(2, INDEX))))` is `x0[i1, 2]`; a padded load is
`x0[...]?pad`; an Apply is `op(args)` with its dtype after a colon when it is not the
index type. Shared subexpressions are printed where they occur (bodies are shallow:
form.MAX_DEPTH), so this is for people reading a dump, not for parsing back.
"""

from __future__ import annotations

from toolchain.kernel.form import INDEX, Acc, Apply, Const, Expr, Index, Kernel, Load

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "remainder": "%"}


def format_expr(e: Expr) -> str:
    """`e` as a one-line string (index arithmetic infix, everything else prefix)."""
    if isinstance(e, Index):
        return f"i{e.dim}"
    if isinstance(e, Const):
        return str(e.value) if e.dtype == INDEX else f"{e.value}:{e.dtype.name}"
    if isinstance(e, Acc):
        return "acc"
    if isinstance(e, Load):
        idx = ", ".join(format_expr(i) for i in e.index)
        text = f"x{e.operand}[{idx}]"
        if e.valid is not None:
            text += f"?if({format_expr(e.valid)})"
        if e.pad is not None:
            text += f"?else({format_expr(e.pad)})"
        return text
    if isinstance(e, Apply):
        if e.dtype == INDEX and e.op in _INFIX and len(e.args) == 2:
            a, b = (format_expr(x) for x in e.args)
            return f"({a} {_INFIX[e.op]} {b})"
        args = ", ".join(format_expr(x) for x in e.args)
        return f"{e.op}({args}):{e.dtype.name}"
    return repr(e)


def format_kernel(k: Kernel) -> str:
    """The kernel's header (name, domain with the reduced dims after `|`, operand and
    result types), then its body, init and epilogue on indented lines."""
    par = "x".join(str(d) for d in k.domain[:k.n_parallel]) or "()"
    red = "x".join(str(d) for d in k.domain[k.n_parallel:])
    dom = par + (f" | {red}" if red else "")
    ops = ", ".join(str(t) for t in k.operands)
    lines = [f"{k.name}: domain {dom}, ({ops}) -> {k.result}"]
    lines.append(f"  body: {format_expr(k.body)}")
    if k.combine is not None:
        lines.append(f"  combine: {k.combine} from {format_expr(k.init)}"
                     if k.init is not None else f"  combine: {k.combine}")
    if k.epilogue is not None:
        lines.append(f"  epilogue: {format_expr(k.epilogue)}")
    return "\n".join(lines)
