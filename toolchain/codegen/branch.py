"""Branch commands (toolchain/kernel/branch.py) as LLVM functions:
`i32 NAME(ptr bindings)` returns the command byte offset to continue at."""

from __future__ import annotations

from llvmlite import ir

from toolchain.codegen.kinds import register
from toolchain.kernel.branch import Branch

I8, I32 = ir.IntType(8), ir.IntType(32)
PTR = ir.PointerType()


@register(Branch)
def emit_branch(module: ir.Module, branch: Branch) -> ir.Function:
    """Adds the branch's function to `module` and returns it (hidden, in its own
    section, like every dispatch)."""
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), branch.name)
    fn.linkage = "hidden"
    fn.section = f".text.{branch.name}"
    fn.attributes.add("nounwind")
    fn.attributes.add("norecurse")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    targets = [ir.Constant(I32, t) for t in branch.targets]
    if not branch.operands:
        b.ret(targets[0])
        return fn
    (sel,) = branch.operands
    ptr = b.load(fn.args[0], typ=PTR, name="selector")
    if sel.dtype.kind == "b":
        flag = b.icmp_unsigned("!=", b.load(ptr, typ=I8), ir.Constant(I8, 0))
        b.ret(b.select(flag, targets[-1], targets[0]) if len(targets) > 1 else targets[0])
        return fn
    width = sel.dtype.np_dtype.itemsize * 8
    value = b.load(ptr, typ=ir.IntType(width))
    # Every value outside [0, n) (negative ones too, compared unsigned) picks the last.
    out = fn.append_basic_block("last")
    switch = b.switch(value, out)
    for i, t in enumerate(targets[:-1]):
        case = fn.append_basic_block(f"case{i}")
        switch.add_case(ir.Constant(value.type, i), case)
        ir.IRBuilder(case).ret(t)
    ir.IRBuilder(out).ret(targets[-1])
    return fn
